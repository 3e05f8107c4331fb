"""Small groups (#18): one rule flags them in the summary (always), and the fairness measures leave them out,
exact values and bootstrap intervals alike, only when the audit is asked to."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.cli import app
from matchaudit.metrics import fairness
from matchaudit.metrics.small_groups import SmallGroupRule
from matchaudit.encoding import schema
from matchaudit.simulation import GroupSpec, simulate_vmf

FMR = (1e-1, 1e-2)


def trials(sizes: dict[str, int], genuine_mean: dict[str, float], seed: int = 0, per_identity: int = 5,
           shift: dict[str, float] | None = None) -> pd.DataFrame:
    """A scored trial list: ``per_identity`` genuine comparisons per identity scoring N(mean of its group, 1), and
    two impostor comparisons per pair of identities scoring N(0, 1). ``shift`` moves one group's genuine scores
    only (the impostors, which set the thresholds at FMR targets, and every other group stay as they are)."""
    rng = np.random.default_rng(seed)
    ident = [f"{g}{i}" for g, k in sizes.items() for i in range(k)]
    group = [g for g, k in sizes.items() for _ in range(k)]
    a, b, score = [], [], []
    for i, (who, g) in enumerate(zip(ident, group)):
        s = rng.normal(genuine_mean[g], 1.0, per_identity) + (shift or {}).get(g, 0.0)
        a += [i] * per_identity
        b += [i] * per_identity
        score += s.tolist()
    for i in range(len(ident)):
        for j in range(i + 1, len(ident)):
            a += [i, i]
            b += [j, j]
            score += rng.normal(0.0, 1.0, 2).tolist()
    a, b = np.array(a), np.array(b)
    ids, grp = np.array(ident), np.array(group)
    return pd.DataFrame({"identity_a": ids[a], "identity_b": ids[b], "score": score, "group_a": grp[a],
                         "group_b": grp[b]})


def listed(*args, **kw):
    """:func:`trials` as MatchData, grouped by ``group``."""
    t = trials(*args, **kw)
    return ma.from_scores(t["score"], t["identity_a"], t["identity_b"], attributes_a={"group": t["group_a"]},
                          attributes_b={"group": t["group_b"]}, group_by="group")


SIZES = {"tiny": 3, "few": 8, "A": 30, "B": 40}
MEANS = {"tiny": 0.5, "few": 2.5, "A": 3.0, "B": 2.2}  # tiny: the extreme (highest) FNMR


def _records(res, rate="FNMR", measure="max_min_ratio", weighting="pooled"):
    return {r["target"]: r for r in res.exact.fairness
            if (r["rate"], r["measure"], r["weighting"]) == (rate, measure, weighting)}


def _fairness_intervals(res, metric="FNMR:max_min_ratio"):
    return {r["target"]: r for r in res.interval_records if r["metric"] == metric and r["weighting"] == "pooled"}


def test_summary_flags_small_groups_with_the_failing_counts():
    data = simulate_vmf({"g3": GroupSpec(3, (100.0, 300.0)), "g8": GroupSpec(8, (100.0, 300.0)),
                         "g30": GroupSpec(30, (100.0, 300.0))}, dim=16, samples_per_identity=4, seed=1).as_data()
    res = ma.audit(data, fmr=1e-1, intervals=False)
    groups = {g["group"]: g for g in res.exact.summary["groups"]}
    # 4 samples: 6 genuine comparisons per identity; impostors within g3: C(12, 2) - 18 = 48
    assert groups["g3"]["small"] and groups["g3"]["small_reasons"] == [
        "3 identities (fewer than 10)", "18 genuine comparisons (fewer than 20)"]
    assert groups["g8"]["small"] and groups["g8"]["small_reasons"] == ["8 identities (fewer than 10)"]
    assert not groups["g30"]["small"] and groups["g30"]["small_reasons"] == []
    # the rule is recorded, and a stricter identity threshold flags the 30-identity group too
    assert res.config.to_dict()["small_groups"]["rule"] == SmallGroupRule().describe()
    strict = ma.audit(data, fmr=1e-1, measures=ma.MeasureOptions(small_group_identities=31), intervals=False)
    assert {g["group"]: g["small"] for g in strict.exact.summary["groups"]} == {"g3": True, "g8": True, "g30": True}
    # a listed table: the impostor floor too
    few_impostors = SmallGroupRule().reasons(12, 40, 6)
    assert few_impostors == ["6 same-group impostor comparisons (fewer than 20)"]


def test_exclusion_takes_the_measures_over_the_other_groups_exactly():
    data = listed(SIZES, MEANS, seed=2)
    default = ma.audit(data, fmr=FMR, intervals=False)
    res = ma.audit(data, fmr=FMR, measures=ma.MeasureOptions(exclude_small_groups=True), intervals=False)
    assert res.exact.operating_points == default.exact.operating_points  # per-group numbers untouched
    assert res.exact.cross_group_fmr == default.exact.cross_group_fmr
    rule = SmallGroupRule().describe()
    for w in res.config.weightings:
        for target in FMR:
            ops = {p["group"]: p for p in res.exact.operating_points
                   if (p["weighting"], p["kind"], p["target"]) == (w, "fmr_target", target)}
            fm, fn = (np.array([ops[g][m] for g in ("A", "B")]) for m in ("fmr", "fnmr"))
            want = {("FMR", k): v for k, v in fairness.summary_measures(fm).items()}
            want |= {("FNMR", k): v for k, v in fairness.summary_measures(fn).items()}
            want |= {("combined", k): v for k, v in fairness.combined_measures(fm, fn).items()}
            got = [r for r in res.exact.fairness if (r["weighting"], r["kind"], r["target"]) == (w, "fmr_target", target)]
            assert len(got) == len(want)
            for r in got:
                assert r["value"] == float(want[r["rate"], r["measure"]]) or (
                    np.isnan(r["value"]) and np.isnan(want[r["rate"], r["measure"]])), (r["rate"], r["measure"])
                assert r["excluded_groups"] == ["few", "tiny"] and r["exclusion_rule"] == rule
    for target in FMR:  # tiny holds the highest FNMR: it set the default ratio
        ops = {p["group"]: p["fnmr"] for p in default.exact.operating_points
               if (p["weighting"], p["kind"], p["target"]) == ("pooled", "fmr_target", target)}
        assert max((g for g in SIZES), key=ops.get) == "tiny"
        d, e = _records(default)[target], _records(res)[target]
        assert e["value"] < d["value"]
        assert d["excluded_groups"] == [] and d["exclusion_rule"] is None
        assert res.ratio("fnmr", fmr=target) == e["value"]


def test_intervals_of_the_measures_are_over_the_same_groups():
    kw = dict(fmr=FMR, intervals=ma.IntervalOptions("double-or-nothing", n_resamples=99))
    plain = dict(calibration=False, weightings=("pooled",))
    excluding = ma.MeasureOptions(exclude_small_groups=True, **plain)
    base, moved = listed(SIZES, MEANS, seed=3), listed(SIZES, MEANS, seed=3, shift={"tiny": 1.5})
    with_base = ma.audit(base, measures=excluding, **kw)
    with_moved = ma.audit(moved, measures=excluding, **kw)
    for target in FMR:
        a, b = _fairness_intervals(with_base)[target], _fairness_intervals(with_moved)[target]
        # the estimate is the exact measure over the groups that are not small, and the note says so
        assert a["estimate"] == pytest.approx(_records(with_base)[target]["value"], rel=1e-12)
        assert "excluded: few, tiny" in a["note"]
        # moving only the small group's genuine scores moves neither the estimate nor a bound
        assert (a["estimate"], a["low"], a["high"]) == (b["estimate"], b["low"], b["high"])
    # ... while without the option it moves them (the small group is in every replicate's ratio)
    plain_base, plain_moved = (ma.audit(d, measures=ma.MeasureOptions(**plain), **kw) for d in (base, moved))
    assert any((_fairness_intervals(plain_base)[t]["low"], _fairness_intervals(plain_base)[t]["high"])
               != (_fairness_intervals(plain_moved)[t]["low"], _fairness_intervals(plain_moved)[t]["high"])
               for t in FMR)
    assert any(_fairness_intervals(plain_base)[t]["high"] != _fairness_intervals(with_base)[t]["high"] for t in FMR)


def test_one_group_left_gives_nan_with_a_reason(tmp_path):
    data = listed({"tiny": 3, "few": 8, "A": 30}, {"tiny": 0.5, "few": 2.5, "A": 3.0}, seed=4)
    res = ma.audit(data, fmr=FMR, measures=ma.MeasureOptions(calibration=False, exclude_small_groups=True),
                   intervals=ma.IntervalOptions(n_resamples=99))
    assert res.exact.fairness and all(np.isnan(r["value"]) for r in res.exact.fairness)
    assert all("1 group left after excluding small groups" in r["reason"] for r in res.exact.fairness)
    assert {r["rate"] for r in res.exact.fairness} == {"FMR", "FNMR", "combined"}
    ivs = [r for r in res.interval_records if ":" in r["metric"]]
    assert ivs and all(np.isnan(r["estimate"]) and "1 group left" in r["note"] for r in ivs)
    assert np.isnan(res.ratio("fnmr", fmr=1e-1))
    res.save(tmp_path, figures=False)  # results.json is schema-checked on the way out
    jsonschema.validate(json.loads((tmp_path / "results.json").read_text()), schema())


def test_without_small_groups_the_option_changes_nothing():
    data = listed({"A": 30, "B": 40}, {"A": 3.0, "B": 2.2}, seed=5)
    kw = dict(fmr=FMR, intervals=ma.IntervalOptions(n_resamples=99))
    off = ma.audit(data, measures=ma.MeasureOptions(calibration=False), **kw)
    on = ma.audit(data, measures=ma.MeasureOptions(calibration=False, exclude_small_groups=True), **kw)
    rule = SmallGroupRule().describe()
    assert [r | {"exclusion_rule": None} for r in on.exact.fairness] == off.exact.fairness
    assert all(r["exclusion_rule"] == rule and r["excluded_groups"] == [] for r in on.exact.fairness)
    assert all(r["exclusion_rule"] is None for r in off.exact.fairness)
    assert on.interval_records == off.interval_records
    # and the default measures are those of every group
    ops = {p["group"]: p["fnmr"] for p in off.exact.operating_points
           if (p["weighting"], p["kind"], p["target"]) == ("pooled", "fmr_target", 1e-2)}
    assert _records(off)[1e-2]["value"] == float(fairness.max_min_ratio(np.array([ops["A"], ops["B"]])))


def test_report_states_the_rule_or_names_the_small_groups(tmp_path):
    from matchaudit.report.html import render

    data = listed(SIZES, MEANS, seed=6)
    kept = ma.audit(data, fmr=FMR, intervals=False)
    html = render(kept, tmp_path)
    assert "2 groups are small" in html and "few, tiny" in html and "--exclude-small-groups" in html
    gone = ma.audit(data, fmr=FMR, measures=ma.MeasureOptions(exclude_small_groups=True), intervals=False)
    html = render(gone, tmp_path)
    assert "2 excluded: few, tiny" in html and "fewer than 10 identities" in html


def test_cli_exclude_small_groups_end_to_end_and_bad_values(tmp_path):
    table = tmp_path / "comparisons.csv"
    trials(SIZES, MEANS, seed=7).to_csv(table, index=False)
    runner = CliRunner()
    args = ["audit", "--comparisons", str(table), "--sample-cols", "", "--group-by", "group", "--fmr", "0.1",
            "--no-intervals", "--no-figures", "--quiet",
            "--out", str(tmp_path / "out")]
    res = runner.invoke(app, args + ["--exclude-small-groups", "--small-group-identities", "5"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out/results.json").read_text())
    jsonschema.validate(doc, schema())
    assert {g["group"]: g["small"] for g in doc["summary"]["groups"]} == {"A": False, "B": False, "few": False,
                                                                          "tiny": True}
    assert all(f["excluded_groups"] == ["tiny"] and "fewer than 5 identities" in f["exclusion_rule"]
               for f in doc["fairness"])
    for bad in ("-1", "many", "2.5"):
        out = runner.invoke(app, args + ["--small-group-identities", bad])
        assert out.exit_code == 2 and "--small-group-identities" in out.output, (bad, out.output)


def test_every_reducer_derives_from_one_table_under_every_option():
    """#46 item 3: with small groups excluded (group C at FMR 0.235 was in group_max but not in difference: 0.234 vs
    0.00015) and under either zero policy, difference == group_max - group_min and ratio == group_max / group_min
    exactly (0 / 0 is NaN, x / 0 inf), because all four read Audit.group_values."""
    import itertools

    data = ma.simulate(samples_per_identity=4, dim=32, seed=1).as_data()
    seen = set()
    for exclude, policy in itertools.product((False, True), ("report", "upper-bound")):
        a = ma.audit(data, fmr=(1e-2, 1e-3),
                     measures=ma.MeasureOptions(exclude_small_groups=exclude, small_group_identities=50, zero_policy=policy),
                     intervals=False)
        for metric, fmr, w in itertools.product(("fmr", "fnmr"), (1e-2, 1e-3), ("pooled", "balanced")):
            values = a.group_values(metric, fmr=fmr, weighting=w)
            assert ("C" in values.index) == (not exclude)
            hi, lo = a.group_max(metric, fmr=fmr, weighting=w), a.group_min(metric, fmr=fmr, weighting=w)
            assert a.difference(metric, fmr=fmr, weighting=w) == hi - lo
            with np.errstate(divide="ignore", invalid="ignore"):
                expected = np.float64(hi) / np.float64(lo)
            np.testing.assert_equal(a.ratio(metric, fmr=fmr, weighting=w), expected)
            seen.add((exclude, policy, bool(lo == 0)))
    assert (True, "report", True) in seen and (True, "upper-bound", False) in seen  # zeros met, and bounded


def test_small_group_rule_cutoffs_are_strict():
    """Pins ``SmallGroupRule.reasons``: a group is small with *fewer than* the cutoff (``<``, not ``<=``), for
    identities, genuine and same-group impostor comparisons alike: counts equal to the cutoffs are not small."""
    rule = SmallGroupRule(min_identities=10, min_genuine=20, min_impostor=30)
    assert rule.reasons(10, 20, 30) == []
    assert rule.reasons(None, 20, 30) == []
    assert rule.reasons(9, 20, 30) == ["9 identities (fewer than 10)"]
    assert rule.reasons(10, 19, 30) == ["19 genuine comparisons (fewer than 20)"]
    assert rule.reasons(10, 20, 29) == ["29 same-group impostor comparisons (fewer than 30)"]
