"""Failures to acquire (--fta-policy): refuse, exclude and report, or count as errors (transaction-level rates)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import matchaudit as ma
from matchaudit.cli import app
from matchaudit.data.comparisons import from_scores
from matchaudit.errors import InputError
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.failures import fta_records
from typer.testing import CliRunner


def _trials(seed: int = 0, k: int = 30, fail: float = 0.06):
    """A listed trial set in two groups: 3 genuine per identity, random impostors, some scores missing."""
    rng = np.random.default_rng(seed)
    a = np.r_[np.repeat(np.arange(k), 3), rng.integers(0, k, 1500)]
    b = np.r_[np.repeat(np.arange(k), 3), rng.integers(0, k, 1500)]
    keep = (np.arange(a.size) < 3 * k) | (a != b)
    a, b = a[keep], b[keep]
    score = np.where(a == b, rng.normal(2, 1, a.size), rng.normal(0, 1, a.size))
    missing = rng.random(a.size) < fail
    missing[0] = True  # a genuine failure, whatever the seed
    score[missing] = np.nan
    group = np.where(np.arange(k) < k // 2, "F", "M")
    ids = np.array([f"id{i:02d}" for i in range(k)])
    return score, ids[a], ids[b], {"sex": group[a]}, {"sex": group[b]}, missing


def _data(policy: str, **kw):
    s, ia, ib, ga, gb, _ = _trials(**kw)
    return from_scores(s, ia, ib, attributes_a=ga, attributes_b=gb, group_by="sex", fta_policy=policy)


def test_refuse_names_the_rows_and_the_policy():
    s, ia, ib, ga, gb, missing = _trials()
    with pytest.raises(InputError, match=r"fta_policy='exclude'.*'count'") as e:
        from_scores(s, ia, ib)
    assert "positions 0," in str(e.value)
    with pytest.raises(InputError, match="non-zero return code"):
        from_scores(np.ones(4), ["a", "a", "b", "b"], ["a", "b", "b", "a"], failed=np.array([0, 1, 0, 0], bool))
    with pytest.raises(InputError, match="booleans"):
        from_scores(np.ones(2), ["a", "a"], ["a", "b"], failed=[0, 1], fta_policy="exclude")
    with pytest.raises(InputError, match="every comparison failed"):
        from_scores([np.nan, np.nan], ["a", "a"], ["a", "b"], fta_policy="count")
    with pytest.raises(InputError, match="fta_policy"):
        from_scores([1.0, 0.0], ["a", "a"], ["a", "b"], fta_policy="drop")


def test_exclude_is_the_audit_of_the_scored_rows():
    s, ia, ib, ga, gb, missing = _trials()
    excl = ma.audit(_data("exclude"), fmr=(1e-1, 1e-2), intervals=False)
    ok = ~missing
    plain = ma.audit(from_scores(s[ok], ia[ok], ib[ok], attributes_a={"sex": ga["sex"][ok]},
                                 attributes_b={"sex": gb["sex"][ok]}, group_by="sex"), fmr=(1e-1, 1e-2),
                     intervals=False)
    pd.testing.assert_frame_equal(excl.operating_points, plain.operating_points)
    f = excl.failures.set_index(["group", "class"])
    gen = ia == ib
    assert f.loc[("all", "genuine"), "failures"] == (missing & gen).sum()
    assert f.loc[("all", "genuine"), "attempts"] == gen.sum()
    assert f.loc[("all", "impostor"), "attempts"] == (~gen).sum()
    same_m = (~gen) & (ga["sex"] == "M") & (gb["sex"] == "M")
    assert f.loc[("M", "impostor"), "attempts"] == same_m.sum()
    assert f.loc[("M", "impostor"), "fta"] == pytest.approx((missing & same_m).sum() / same_m.sum(), abs=0)
    assert any("were excluded" in w for w in excl.warnings)


def test_count_gives_transaction_level_rates():
    """At fixed thresholds: FNMR(count) = FTA + FNMR(exclude) (1 - FTA), FMR(count) = FMR(exclude) (1 - FTA)."""
    s, ia, ib, ga, gb, missing = _trials(seed=3)
    ts = (-0.5, 0.7, 1.9)
    count = ma.audit(_data("count", seed=3), fmr=(), thresholds=ts, measures=ma.MeasureOptions(weightings=["pooled"]),
                     intervals=False)
    excl = ma.audit(_data("exclude", seed=3), fmr=(), thresholds=ts, measures=ma.MeasureOptions(weightings=["pooled"]),
                    intervals=False)
    fta = count.failures.set_index(["group", "class"])["fta"]
    for t in ts:
        c, e = count.at_threshold(t), excl.at_threshold(t)
        for g in ("all", "F", "M"):
            fg, fi = fta[(g, "genuine")], fta[(g, "impostor")]
            assert c.loc[g, "fnmr"] == pytest.approx(fg + e.loc[g, "fnmr"] * (1 - fg), rel=1e-12)
            assert c.loc[g, "fmr"] == pytest.approx(e.loc[g, "fmr"] * (1 - fi), rel=1e-12)
    data = _data("count", seed=3)
    assert data.failures.floor < np.nanmin(s)
    assert np.sum(data.pairs.score == data.failures.floor) == missing.sum()


def test_intervals_are_identity_clustered_wilson():
    data = _data("exclude", seed=5)
    s, ia, ib, ga, gb, missing = _trials(seed=5)
    rec = next(r for r in fta_records(data) if r["group"] == "F" and r["class"] == "genuine")
    gen_f = (ia == ib) & (ga["sex"] == "F")
    names = np.unique(ia[gen_f])
    g = np.array([np.sum(gen_f & (ia == n)) for n in names])
    e = np.array([np.sum(gen_f & missing & (ia == n)) for n in names])
    ref = iv.fnmr_interval("wilson", g, e)
    assert (rec["low"], rec["high"], rec["fta"]) == pytest.approx(  # identities of the other group add zeros
        (ref.confidence_interval.low, ref.confidence_interval.high, ref.estimate), rel=1e-13)
    # clustered: a failure pattern concentrated in few identities gives a wider interval than independence
    assert rec["high"] - rec["low"] >= 0
    naive = iv.wilson(int(e.sum()), int(g.sum()))
    conc = iv.fnmr_interval("wilson", g, np.where(np.arange(g.size) < 2, g, 0))
    spread = iv.wilson(int(conc.errors), int(conc.comparisons))
    assert conc.confidence_interval.high - conc.confidence_interval.low > \
        spread.confidence_interval.high - spread.confidence_interval.low
    assert naive.method == "wilson-naive"


def test_labels_only_are_independent_and_no_failure_gives_no_record():
    score = np.array([0.9, np.nan, 0.1, 0.2, 0.8, 0.3])
    data = from_scores(score, label=[1, 1, 0, 0, 1, 0], fta_policy="exclude")
    (rec_g, rec_i) = [r for r in fta_records(data) if r["group"] == "all"]
    assert (rec_g["failures"], rec_g["attempts"], rec_g["method"]) == (1, 3, "wilson-naive")
    assert "independent" in rec_g["note"]
    assert fta_records(from_scores([0.9, 0.1], label=[1, 0], fta_policy="exclude")) == []


def test_cli_return_code_column_and_report(tmp_path):
    s, ia, ib, ga, gb, missing = _trials(seed=7)
    rows = np.arange(ia.size)
    table = pd.DataFrame({"sample_a": [f"{x}_a{i}" for x, i in zip(ia, rows)],
                          "sample_b": [f"{x}_b{i}" for x, i in zip(ib, rows)],
                          "identity_a": ia, "identity_b": ib, "sex_a": ga["sex"], "sex_b": gb["sex"],
                          "score": np.where(missing, 0.0, s), "rc": np.where(missing, 4, 0)})
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    before = path.read_bytes()
    runner = CliRunner()
    base = ["audit", "--comparisons", str(path), "--group-by", "sex", "--fmr", "1e-1",
            "--return-code-col", "rc", "--n-resamples", "50"]
    r = runner.invoke(app, base + ["--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--fta-policy" in r.output and "non-zero return code" in r.output
    r = runner.invoke(app, base + ["--fta-policy", "count", "--out", str(tmp_path / "o"),
                                   "--report", str(tmp_path / "o" / "r.html")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {(f["group"], f["class"]) for f in doc["failures"]} == {(g, c) for g in ("all", "F", "M")
                                                                  for c in ("genuine", "impostor")}
    assert sum(f["failures"] for f in doc["failures"] if f["group"] == "all") == missing.sum()
    assert (tmp_path / "o" / "failures.csv").exists()
    html = (tmp_path / "o" / "r.html").read_text()
    assert "Failures to acquire" in html and "transaction-level" in html
    assert path.read_bytes() == before
    table["rc"] = table["rc"].astype(object)
    table.loc[3, "rc"] = "x"
    table.to_csv(path, index=False)
    r = runner.invoke(app, base + ["--fta-policy", "exclude", "--out", str(tmp_path / "y")])
    assert r.exit_code == 2 and "--return-code-col" in r.output and "row 4" in r.output.replace("rows", "row")
