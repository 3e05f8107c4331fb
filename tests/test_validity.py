"""Intervals where real evaluations live: infinite replicates, zero errors, too few replicates, small groups.

Each test reproduces a defect measured on the earlier code (issue "intervals and tests that hold where users
actually are", items 2-4) and fails there."""

from __future__ import annotations

import numpy as np
import pytest

import matchaudit as ma
from matchaudit import resampling as rs
from matchaudit.engine import build_grid, run
from matchaudit.estimators import bootstrap as bs
from matchaudit.auditing.options import IntervalOptions
from tests.engine_reference import make_data


def test_infinite_replicates_are_kept_and_the_estimate_is_inside():
    """The measured case: a max/min ratio of 69.0 whose resamples put a zero rate in the denominator 235 times
    out of 400. Dropping those gave [13.5, 59.9], which excludes the estimate; kept, the upper bound is +inf
    and the note counts them."""
    rng = np.random.default_rng(0)
    reps = np.concatenate([np.full(235, np.inf), rng.uniform(13.0, 60.0, 165)])
    for method in ("double-or-nothing", "recentered"):
        r = bs.interval_from_replicates(method, 69.0, reps)
        lo, hi = r.confidence_interval
        assert hi == np.inf and lo <= 69.0, method
        assert "235 infinite" in r.note
    few = np.concatenate([np.full(5, np.inf), rng.uniform(13.0, 60.0, 395)])  # 1.25% < alpha/2: finite bound
    assert np.isfinite(bs.interval_from_replicates("double-or-nothing", 30.0, few).confidence_interval.high)


def test_quantile_with_infinities_matches_numpy_where_finite():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(101, 4))
    x[:3, 1] = np.inf
    x[:60, 2] = np.inf
    x[:2, 3] = np.nan
    for p in (0.025, 0.5, 0.975):
        q = bs._q(x, p)
        assert q[0] == np.quantile(x[:, 0], p) and q[3] == np.quantile(x[2:, 3], p)
        assert q[1] == (np.inf if p > 1 - 3.5 / 101 else np.quantile(np.sort(x[:, 1])[:101], p))
        assert q[2] == (np.inf if p > 40 / 100 else np.quantile(x[60:, 2], p * 2.5))


def test_an_interval_never_excludes_its_estimate():
    """Replicates all above the estimate (a skewed statistic): the percentile interval is widened to it."""
    r = bs.interval_from_replicates("double-or-nothing", 0.1, np.linspace(0.2, 0.3, 100), bounds=(0, 1))
    assert r.confidence_interval.low == 0.1 and "widened" in r.note


def test_float_residue_is_zero():
    r = bs.interval_from_replicates("recentered", 0.0, np.full(100, 2.22e-16), bounds=(0, 1))
    assert r.confidence_interval == (0.0, 0.0) or r.confidence_interval.high == 0.0


@pytest.fixture(scope="module")
def zero_error_audit():
    """A threshold so low that group A makes no FNMR error (and so high that no impostor is accepted)."""
    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    return data, ma.audit(data, fmr=1e-2, thresholds=(-1.0, 1.0),
                          intervals=ma.IntervalOptions(n_resamples=200, method="recentered"))


def test_zero_errors_never_give_a_zero_width_interval(zero_error_audit):
    """The demo showed FNMR 0% (0/4,500) -> [0%, 0%]. Zero errors now get the identity-clustered one-sided bound
    (about 3/K), stated in the note."""
    data, audit = zero_error_audit
    iv = audit.intervals
    zero = iv[(iv["errors"] == 0) & (iv["comparisons"] > 0)]
    assert len(zero) >= 2 and set(zero["metric"]) >= {"FNMR", "FMR"}
    assert (zero["high"] > 0).all() and (zero["low"] == 0).all()
    assert zero["note"].str.contains("zero errors: one-sided").all()
    fnmr_all = zero[(zero["metric"] == "FNMR") & (zero["group"] == "all")].iloc[0]
    assert fnmr_all["high"] == pytest.approx(1 - 0.05 ** (1 / data.n_identities))  # identities of 4 samples each


@pytest.mark.parametrize("n,level,ok", [(1, 0.95, False), (39, 0.95, False), (40, 0.95, True), (19, 0.9, False),
                                        (20, 0.9, True)])
def test_minimum_number_of_replicates(n, level, ok):
    """``--n-resamples 1`` gave a zero-width "95%" interval that excluded the estimate."""
    if ok:
        IntervalOptions(n_resamples=n, level=level)
        return
    with pytest.raises(ma.InputError, match="need at least") as e:
        IntervalOptions(n_resamples=n, level=level)
    assert e.value.param == "n_resamples"


def test_det_band_drops_resamples_without_impostors():
    """A 2-identity group: vertex resamples that draw one identity twice have no same-group impostors. Their
    DET curve is undefined (NaN, dropped like the point intervals drop them), not FNMR 0 or 1 everywhere."""
    data = make_data(seed=2, sizes=(3, 4, 3, 2, 4, 3), groups=(0, 0, 1, 1, 1, 1))
    grid = build_grid(data, n_cells=32)
    counts = run(data, rs.Vertex(3), 200, grid=grid)
    reps, _ = bs.det_replicates(counts, np.geomspace(0.01, 0.5, 8))
    no_imp = counts.impostor_total[:, 0] == 0  # category 0: group a with itself
    assert no_imp[1:].sum() > 20
    assert np.isnan(reps[no_imp, 1]).all() and np.isfinite(reps[~no_imp, 1]).all()


def test_audit_warns_about_its_regime():
    """#14: the audit says when the data sit outside the validated regime (estimators/regime.py): identities of 2
    samples under recentered intervals, groups of few identities, rates resting on 1-4 errors."""
    import matchaudit as ma
    from matchaudit.estimators.regime import regime_warnings
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(40, (100.0, 300.0)), "B": GroupSpec(6, (100.0, 300.0))},
                       samples_per_identity=2, dim=32, seed=3).as_data()
    result = ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=50, method="recentered"))
    text = " ".join(result.warnings)
    assert "identities with 2 samples: group A 40 of 40, group B 6 of 6;" in text
    assert "group B (6) has fewer than 10 identities" in text
    assert result.to_dict()["summary"]["warnings"] == result.warnings
    recs = [{"weighting": "pooled", "metric": "FNMR", "kind": "fmr_target", "target": 1e-3, "group": "C",
             "errors": 1, "comparisons": 1800, "method": "vertex"}]
    (w,) = [x for x in regime_warnings(data, recs) if "rests on" in x]
    assert "FNMR of group C (FMR 0.001: 1/1,800) rests on fewer than 5 errors" in w
    assert not [x for x in regime_warnings(data, [dict(recs[0], errors=0)]) if "rests on" in x]  # zero: a bound
    many = [dict(recs[0], group=g, metric=m) for g in "CDEFG" for m in ("FNMR", "FMR")]
    (w,) = [x for x in regime_warnings(data, many) if "on fewer than" in x]  # C2: one warning, not one per group
    assert "FNMR of group C (FMR 0.001: 1/1,800), FMR of group C" in w and "FMR of group G" in w
    (w,) = [x for x in regime_warnings(data, [dict(recs[0], group="L" * 5000)]) if "rests on" in x]
    assert "(5,000 characters)" in w and "L" * 200 not in w  # a 5,000-character name filled the warnings
    reasons = {(r["metric"], r["kind"], r["group"], r["weighting"]): r["method_reason"]
               for r in result.interval_records}
    assert reasons[("FNMR", "fmr_target", "A", "pooled")].startswith(
        "recentered: requested (--ci-method); answers for these identities; regime 40 "
        "identities, 2 samples per identity")
    assert "not covered by the regime grid" in reasons[("AUC", "curve", "all", "pooled")]


def test_method_reason_reads_the_regime_grid():
    """Every record says why its method and whether the grid validates it: few errors, few identities, few samples
    per identity and a requested method each change the verdict."""
    import matchaudit as ma
    from matchaudit.estimators.regime import assess, method_reason
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(300, (100.0, 300.0)), "B": GroupSpec(30, (100.0, 300.0))},
                       samples_per_identity=4, dim=32, seed=3).as_data()
    rec = {"metric": "FMR", "kind": "threshold", "group": "A", "method": "wilson", "errors": 50,
           "weighting": "pooled"}
    assert method_reason(data, rec, ()).endswith("regime 300 identities, 4 samples per identity, 50 errors: "
                                                   "within 1.5 points of nominal in the regime grid")
    assert "requested (--ci-method)" in method_reason(data, rec, ("wilson",))
    assert "(fewer than 20 errors)" in method_reason(data, dict(rec, errors=7), ())
    assert "(fewer than 300 identities)" in method_reason(data, dict(rec, group="B"), ())
    assert "(fewer than 1000 identities)" in method_reason(data, dict(rec, metric="FNMR"), ())
    assert method_reason(data, dict(rec, errors=0), ()).endswith("zero-error bound (conservative by construction)")
    small = ma.simulate({"A": GroupSpec(300, (100.0, 300.0))}, samples_per_identity=3, dim=32, seed=3).as_data()
    assert method_reason(small, dict(rec, metric="FNMR", method="recentered"), ()).endswith(
        "conservative: the within-identity variance of identities with 2-3 samples is bounded")
    assert "not covered" in method_reason(data, dict(rec, weighting="balanced"), ())
    roc = dict(rec, metric="FNMR", kind="fmr_target", method="recentered", target=1e-4)
    assert "(a threshold set by fewer than 20 impostor errors)" in method_reason(data, roc, (), impostors=19_900)
    assert method_reason(data, roc, (), impostors=318_400).endswith("within 1.5 points of nominal in the regime grid")
    # identity bootstraps of a new population's FNMR (bootstrap-t, #43 item 4): from 100 identities x 4 samples
    for metric, kind in (("FNMR", "threshold"), ("FNMR", "fmr_target")):
        boot = dict(rec, metric=metric, kind=kind, method="double-or-nothing")
        assert assess(data, boot, ()) == (
            "double-or-nothing: the default for this metric; answers for a new population of identities; regime 300 "
            "identities, 4 samples per identity, 50 errors: within 1.5 points of nominal in the regime grid", False)
        thin = assess(small, boot, ())  # 3 samples per identity: held at FMR targets, not at fixed thresholds
        assert thin[1] == (kind == "threshold") and ("0.915-0.96" in thin[0]) == (kind == "threshold")
    # fairness measures: the simultaneous projection, conservative by construction (#43), not flagged
    for method in ("vertex", "recentered"):
        for metric in ("FNMR:max_min_ratio", "FMR:gini", "combined:garbe"):
            m = dict(rec, metric=metric, kind="fmr_target", method=method, group="all", errors=None)
            reason, indicative = assess(data, m, ())
            assert "simultaneous projection" in reason and reason.endswith("conservative") and not indicative
    big = ma.simulate({"A": GroupSpec(1000, (100.0, 300.0))}, samples_per_identity=2, dim=32, seed=3).as_data()
    wil = dict(rec, metric="FNMR", level=0.95)
    assert method_reason(big, wil, ()).endswith("within 1.5 points of nominal in the regime grid")
    assert method_reason(big, dict(wil, level=0.9), ()).endswith("0.86-0.91 at 1,000 identities: indicative")


def test_unvalidated_intervals_are_flagged_in_warnings_and_report(tmp_path):
    """Where the regime grid validates no method (a new population's rates at an FNMR target by identity
    bootstraps), the audit says so in its warnings and the report marks the interval."""
    import matchaudit as ma
    from matchaudit.report.html import write_report

    data = ma.simulate(samples_per_identity=4, dim=32, seed=3).as_data()
    result = ma.audit(data, fmr=1e-2, fnmr=0.05, intervals=ma.IntervalOptions(method="vertex", n_resamples=50))
    assert any("FNMR intervals by vertex at FNMR targets answer for a new population of identities;"
               in w for w in result.warnings)
    result.save(tmp_path)
    page = write_report(tmp_path / "results.json").read_text()
    assert "† indicative" in page and "read it as indicative" in page


def test_regime_warning_cutoffs_at_exactly_min_errors_and_min_identities():
    """Pins ``regime_warnings``' boundaries ``0 < e < MIN_ERRORS`` and ``0 < k < MIN_IDENTITIES``: a rate resting on
    exactly MIN_ERRORS errors and a group of exactly MIN_IDENTITIES identities draw no warning (``<=`` would warn);
    one error fewer and one identity fewer do."""
    import matchaudit as ma
    from matchaudit.estimators.regime import MIN_ERRORS, MIN_IDENTITIES, regime_warnings
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(MIN_IDENTITIES, (100.0, 300.0)),
                        "B": GroupSpec(MIN_IDENTITIES - 1, (100.0, 300.0))},
                       samples_per_identity=3, dim=16, seed=3).as_data()
    rec = {"weighting": "pooled", "metric": "FNMR", "kind": "fmr_target", "target": 1e-3, "group": "A",
           "errors": MIN_ERRORS, "comparisons": 1800, "method": "vertex"}
    warns = regime_warnings(data, [rec])
    assert not [w for w in warns if "rests on" in w]
    (small,) = [w for w in warns if "identities (in brackets)" in w]
    assert small.startswith(f"group B ({MIN_IDENTITIES - 1}) has fewer than {MIN_IDENTITIES} identities")
    (few,) = [w for w in regime_warnings(data, [dict(rec, errors=MIN_ERRORS - 1)]) if "rests on" in w]
    assert f"FNMR of group A (FMR 0.001: {MIN_ERRORS - 1}/1,800)" in few


def test_method_reason_cutoffs_at_exactly_min_errors_and_threshold_errors():
    """Pins ``assess``' boundaries ``e < rule.min_errors`` and ``target * impostors < MIN_THRESHOLD_ERRORS``: exactly
    the grid's minimum of errors (20) and a threshold set by exactly 20 expected impostor errors (FMR 1e-4 of
    200,000) are within the grid (``<=`` would call them indicative); one fewer of either is not."""
    import matchaudit as ma
    from matchaudit.estimators.regime import MIN_THRESHOLD_ERRORS, assess
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(300, (100.0, 300.0))}, samples_per_identity=4, dim=16, seed=3).as_data()
    rec = {"metric": "FMR", "kind": "threshold", "group": "A", "method": "wilson", "errors": 20,
           "weighting": "pooled"}
    assert assess(data, rec, ())[1] is False
    reason, indicative = assess(data, dict(rec, errors=19), ())
    assert indicative and "(fewer than 20 errors)" in reason
    assert MIN_THRESHOLD_ERRORS == 20 and 1e-4 * 200_000 == 20
    roc = dict(rec, metric="FNMR", kind="fmr_target", method="recentered", target=1e-4)
    reason, indicative = assess(data, roc, (), impostors=200_000)
    assert not indicative and reason.endswith("within 1.5 points of nominal in the regime grid")
    reason, indicative = assess(data, roc, (), impostors=199_999)
    assert indicative and "(a threshold set by fewer than 20 impostor errors)" in reason
