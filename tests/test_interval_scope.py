"""Every interval says which question it answers (#19 item 4): samples of these identities redrawn, a new population
of identities, or independent comparisons; in results, CSV and the report, which explains why two groups' fixed-
identity intervals can be apart while the identity-level test calls the gap noise."""

from __future__ import annotations

import pandas as pd

import matchaudit as ma
from matchaudit.choices import INTERVAL_METHODS, SCOPE


def test_every_method_has_a_scope_and_every_record_carries_it(tmp_path):
    assert set(SCOPE) == set(INTERVAL_METHODS)
    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    res = ma.audit(data, fmr=1e-2, thresholds=0.3,
                   measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                   intervals=ma.IntervalOptions(method="recentered,double-or-nothing,wilson-naive", n_resamples=40))
    iv = res.intervals
    assert set(iv.method) == {"recentered", "double-or-nothing", "wilson-naive"}
    assert (iv.scope == iv.method.map(SCOPE)).all()
    assert set(iv.scope) == {"these identities", "a new population of identities", "independent comparisons"}
    res.save(tmp_path / "o", figures=False)
    csv = pd.read_csv(tmp_path / "o" / "intervals.csv")
    assert (csv.scope == csv.method.map(SCOPE)).all()
    from matchaudit.report.html import write_report

    html = write_report(tmp_path / "o" / "results.json", tmp_path / "r.html").read_text()
    assert "<b>recentered</b>: these identities" in html and "<b>double-or-nothing</b>: a new population" in html
    assert "indistinguishable from noise" in html  # why the two kinds can disagree


def test_fmr_at_fmr_targets_gets_intervals_in_results_and_report(tmp_path):
    """#19 item 5: each group's FMR at the global threshold of an FMR target carried no interval."""
    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    res = ma.audit(data, fmr=(1e-2, 1e-3), measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                   intervals=ma.IntervalOptions(n_resamples=60))
    iv = res.intervals
    fmr = iv[(iv.metric == "FMR") & (iv.kind == "fmr_target")]
    ops = res.operating_points
    ops = ops[ops.kind == "fmr_target"]
    assert len(fmr) == len(ops)  # every group and target
    merged = fmr.merge(ops, on=["group", "target"], suffixes=("", "_op"))
    assert (merged.estimate == merged.fmr).all() and (merged.low <= merged.estimate).all()
    assert (merged.estimate <= merged.high).all() and (merged.high > merged.low).any()
    res.save(tmp_path / "o", figures=False)
    from matchaudit.report.html import write_report

    html = write_report(tmp_path / "o" / "results.json", tmp_path / "r.html").read_text()
    table = html[html.index("<h2>Operating points"):html.index("<h2>", html.index("<h2>Operating points") + 5)]
    assert table.count("<br>FMR [") + table.count("<br>FMR ≤ ") == len(ops)  # a zero-error group: its bound


def test_fairness_measures_default_to_the_identity_level_question_of_the_tests():
    """#19 item 4, #43 item 4: by default the comparisons between groups (fairness measures) are bootstrapped over
    identities, the question the permutation tests answer, and so are each group's own intervals (one question for
    every record). The default's fairness records are those of an audit asking for double-or-nothing (same seed,
    same numbers); both weightings; any bootstrap asked for applies to all (a closed form alone is no bootstrap:
    the measures and the rates at FMR targets keep the default)."""
    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    kw = {"fmr": (1e-2, 1e-3), "thresholds": 0.3, "measures": ma.MeasureOptions(calibration=False)}
    default = ma.audit(data, intervals=ma.IntervalOptions(n_resamples=60), **kw).intervals
    measures = default.metric.str.contains(":")
    assert measures.any() and set(default[measures].weighting) == {"pooled", "balanced"}
    assert set(default[measures].method) == {"double-or-nothing"}
    assert set(default[measures].scope) == {SCOPE["double-or-nothing"]}
    rates = default[~measures & (default.kind != "threshold")]
    assert set(rates.method) == {"double-or-nothing"} and set(default.scope) == {SCOPE["double-or-nothing"]}
    assert set(default[~measures & (default.kind == "threshold") & (default.weighting == "pooled")].method) == {"wilson"}
    asked = ma.audit(data, intervals=ma.IntervalOptions("double-or-nothing", n_resamples=60), **kw).intervals
    cols = ["weighting", "metric", "target", "estimate", "low", "high"]
    pd.testing.assert_frame_equal(default[measures][cols].reset_index(drop=True),
                                  asked[asked.metric.str.contains(":")][cols].reset_index(drop=True))
    fixed = ma.audit(data, intervals=ma.IntervalOptions("recentered", n_resamples=60), **kw).intervals
    assert set(fixed[fixed.metric.str.contains(":")].method) == {"recentered"}
    # a closed form alone asks for no bootstrap: the measures and the other rates keep the default
    closed = ma.audit(data, intervals=ma.IntervalOptions("wilson", n_resamples=60), **kw).intervals
    assert set(closed[closed.metric.str.contains(":")].method) == {"double-or-nothing"}
    assert set(closed[~closed.metric.str.contains(":") & (closed.kind != "threshold")].method) == {"double-or-nothing"}
