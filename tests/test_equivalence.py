"""Equivalence (TOST on identity resampling): the decision rule by brute force, the rates against the audit, the
level at the margin's edge and the power at parity by simulation with exact truth, and bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.auditing.equivalence import equivalence_tests
from matchaudit.estimators.equivalence import theta, tost
from matchaudit.simulation import GroupSpec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from equivalence_level import group_fnmr, scale_for_ratio, true_threshold  # noqa: E402


def test_tost_p_values_and_interval_agree_with_brute_force():
    """p_lo, p_hi count replicates at or beyond each bound (NaN on both sides); the reported interval lies inside
    the margin exactly when max(p_lo, p_hi) <= alpha, for every alpha the replicate count allows."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(19, 60))
        reps = np.round(np.exp(rng.normal(0, 0.3, n)), 2)
        reps[rng.random(n) < 0.05] = np.nan
        reps[rng.random(n) < 0.03] = np.inf
        margin = (float(rng.choice([0.7, 0.8, 0.9])), float(rng.choice([1.1, 1.25, 1.5])))
        for alpha in (0.05, 0.1, 0.2, 0.5 - 1e-9):
            if (n + 1) * alpha < 1:
                continue
            p_lo, p_hi, undefined, (low, high) = tost(reps, margin, alpha)
            assert p_lo == (1 + sum(1 for r in reps if np.isnan(r) or r <= margin[0])) / (n + 1)
            assert p_hi == (1 + sum(1 for r in reps if np.isnan(r) or r >= margin[1])) / (n + 1)
            assert undefined == int(np.isnan(reps).sum())
            assert (margin[0] < low and high < margin[1]) == (max(p_lo, p_hi) <= alpha)


def test_theta_ratio_and_difference_conventions():
    r = theta(np.array([0.2, 0.1, 0.0, 0.0]), np.array([0.1, 0.0, 0.0, 0.1]), "ratio")
    assert r[0] == 2.0 and r[1] == np.inf and np.isnan(r[2]) and r[3] == 0.0
    assert theta(np.array([0.3]), np.array([0.1]), "difference")[0] == pytest.approx(0.2)


@pytest.fixture(scope="module")
def data():
    return ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()


def test_rates_are_the_audits_and_one_bootstrap_serves_every_pair(data):
    res = equivalence_tests(data, [1e-2, 1e-3], margin=(0.5, 2.0), n_resamples=99, seed=4)
    audit = ma.audit(data, fmr=(1e-2, 1e-3), intervals=False)
    for r in res:
        pts = audit.at_fmr(r.fmr_target)
        # the same counts (the engine forms a rate as 1 - accepted / n: equal to the last bit or two)
        assert (r.rate_a, r.rate_b) == pytest.approx((pts.loc[r.groups[0], r.metric], pts.loc[r.groups[1], r.metric]),
                                                     rel=1e-12, abs=1e-15)
    assert {(r.metric, r.groups) for r in res} == {(m, p) for m in ("fnmr", "fmr")
                                                  for p in (("A", "B"), ("A", "C"), ("B", "C"))}
    one = ma.test_equivalence(data, ("A", "C"), metric="fmr", fmr=1e-3, margin=(0.5, 2.0), n_resamples=99, seed=4)
    same = next(r for r in res if (r.metric, r.groups, r.fmr_target) == ("fmr", ("A", "C"), 1e-3))
    assert one == same


def test_identical_groups_are_equivalent_and_a_planted_gap_is_not():
    """Parity (one population split in two) with a wide margin: equivalent; group C's identities clustered (FMR
    about 30x at FMR 3e-2): not equivalent, on the same margin."""
    sim = ma.simulate({"A": GroupSpec(200, (100.0, 300.0)), "B": GroupSpec(200, (100.0, 300.0)),
                       "C": GroupSpec(200, (100.0, 300.0), centroid_kappa=30.0)}, samples_per_identity=4, dim=32,
                      seed=1).as_data()
    res = {r.groups: r for r in equivalence_tests(sim, 3e-2, metrics=("fmr",), margin=(0.67, 1.5), n_resamples=199)}
    assert res[("A", "B")].equivalent
    assert not res[("A", "C")].equivalent and res[("A", "C")].pvalue > 0.5


@pytest.mark.slow
def test_level_at_the_margin_edge_and_power_at_parity_by_simulation():
    """Exact truth (bench/equivalence_level.py): group B's kappa scaled so that the true FNMR ratio A / B at the
    true threshold of FMR 1e-2 is the margin's lower bound 0.8; 120 data sets of new identities (150 + 80 x 4
    samples). The rate of "equivalent" verdicts must not exceed alpha beyond Monte-Carlo error (0.05 + 3 SE =
    0.11); at parity with margin (0.5, 2) it must find equivalence often (its power here is about a half: FNMR about
    10% on 80 identities is a noisy ratio)."""
    dim, fmr, kappa = 32, 1e-2, (30.0, 100.0)
    t = true_threshold(fmr, dim)
    verdicts = {}
    for ratio, margin in ((1 / 0.8, (0.8, 1.25)), (1.0, (0.5, 2.0))):
        c = scale_for_ratio(t, kappa, ratio, dim)
        assert group_fnmr(t, (c * kappa[0], c * kappa[1]), dim) / group_fnmr(t, kappa, dim) == pytest.approx(ratio)
        groups = {"A": GroupSpec(150, kappa), "B": GroupSpec(80, (c * kappa[0], c * kappa[1]))}
        verdicts[ratio] = np.mean([
            ma.test_equivalence(ma.simulate(groups, samples_per_identity=4, dim=dim, seed=500 + i).as_data(),
                                ("A", "B"), fmr=fmr, margin=margin, n_resamples=99, seed=i).equivalent
            for i in range(120)])
    assert verdicts[1 / 0.8] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 120)
    assert verdicts[1.0] >= 0.3  # 0.49 with these seeds: a test that never finds equivalence fails here


@pytest.mark.parametrize("kw, message, param", [
    (dict(margin=(1.1, 1.5)), "must contain parity", "margin"),
    (dict(margin=(1.25, 0.8)), "lo < hi", "margin"),
    (dict(margin=(-0.5, 2.0)), "positive", "margin"),
    (dict(margin=(-0.01, 0.01)), "must contain parity", "margin"),
    (dict(margin=(-0.01, 0.01), scale="difference", n_resamples=10), "at least 19", "n_resamples"),
    (dict(groups=("A", "Z")), "two different groups", "groups"),
    (dict(groups=("A", "A")), "two different groups", "groups"),
    (dict(ci_method="recentered"), "choose from", "method"),
    (dict(metric="auc"), "choose from", "metric"),
    (dict(fmr=1.5), "give a number in", "fmr"),
])
def test_bad_arguments_are_refused_naming_them(data, kw, message, param):
    kw = {"groups": ("A", "B"), "n_resamples": 99} | kw
    with pytest.raises(ma.InputError, match=message) as e:
        ma.test_equivalence(data, **kw)
    assert e.value.param == param


def test_more_than_two_groups_need_the_pair_named(data):
    with pytest.raises(ma.InputError, match="name the two") as e:
        ma.test_equivalence(data, n_resamples=99)
    assert e.value.param == "groups"


def test_audit_and_test_commands_write_the_verdicts_and_the_report_shows_them(tmp_path):
    """`audit --equivalence` (results.json validated by its schema; the report's Equivalence section and Reading
    say "equivalent within" only for the pairs the test calls equivalent) and `test --equivalence`."""
    import json

    from typer.testing import CliRunner

    from matchaudit.cli import app
    from matchaudit.simulation import simulate_vmf

    files = simulate_vmf(samples_per_identity=4, dim=32, seed=5).write(tmp_path / "data")
    base = ["--samples", str(files.samples), "--embeddings", str(files.embeddings), "--group-by", "group"]
    runner = CliRunner()
    for margin, some in (("0.5,2", True), ("0.99,1.01", False)):
        out = tmp_path / margin
        res = runner.invoke(app, ["audit", *base, "--fmr", "1e-1", "--n-resamples", "199", "--equivalence", margin,
                                  "--out", str(out), "--report", str(out / "r.html"), "--quiet"])
        assert res.exit_code == 0, res.output
        recs = json.loads((out / "results.json").read_text())["equivalence"]
        assert len(recs) == 6 and any(r["equivalent"] for r in recs) == some and not all(r["equivalent"] for r in recs)
        page = (out / "r.html").read_text()
        assert "<h2>Equivalence</h2>" in page
        assert ("<b>equivalent within" in page) == some
    res = runner.invoke(app, ["test", *base, "--fmr", "1e-1", "--metric", "fmr", "--groups", "A,B",
                              "--equivalence", "0.5,2", "--n-resamples", "199", "--out", str(tmp_path / "t"),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads((tmp_path / "t" / "equivalence.json").read_text())["results"]
    assert row["groups"] == ["A", "B"] and row["equivalent"]
    csv = (tmp_path / "t" / "equivalence.csv").read_text()  # the JSON's encoding (records hold tuples in memory)
    assert "['A', 'B']" in csv and "(" not in csv.splitlines()[1].split(",")[1]
    bad = runner.invoke(app, ["audit", *base, "--equivalence", "1.1,2", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "--equivalence" in bad.output and not (tmp_path / "b").exists()


def test_p_equal_to_alpha_is_equivalent(data):
    """Pins the verdict ``equivalent = p <= alpha``: 19 replicates and a margin no difference of rates can reach
    give p = 1 / 20 = alpha exactly, which is equivalent (``p < alpha`` would not be); the interval at 1 - 2 alpha
    (the replicates' extremes) lies inside the margin, the same decision."""
    (r,) = equivalence_tests(data, 1e-2, metrics=("fmr",), pairs=[("A", "B")], scale="difference",
                             margin=(-1.0, 1.0), n_resamples=19, alpha=0.05, seed=3)
    assert r.undefined_replicates == 0 and r.pvalue_lower == r.pvalue_upper == 1 / 20
    assert r.pvalue == r.alpha == 0.05 and r.equivalent
    assert -1.0 < r.confidence_interval[0] <= r.confidence_interval[1] < 1.0
