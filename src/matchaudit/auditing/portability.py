"""The portability table of an audit with carried thresholds (:class:`~matchaudit.auditing.options.CarriedThresholds`):
which numbers it reads (the audit's pooled operating points and interval records at the carried thresholds) and where
each view's own threshold comes from (the pooled bootstrap's pass, which finds them in every replicate:
:class:`~matchaudit.auditing.replicates.OwnThresholds`; without intervals, one plug-in pass). The records are
:func:`matchaudit.estimators.portability.portability_records`'."""

from __future__ import annotations

from typing import Any

from matchaudit.auditing.options import CarriedThresholds, IntervalOptions
from matchaudit.auditing.replicates import OwnThresholds
from matchaudit.engine import build_grid, run
from matchaudit.estimators.portability import portability_records
from matchaudit.metrics.evaluate import AuditResult
from matchaudit.model import MatchData, view_names


def own_thresholds(carried: CarriedThresholds) -> OwnThresholds:
    """What the bootstrap's pass is asked for: each view's own threshold at the carried targets (sorted, once each)."""
    return OwnThresholds(tuple(sorted(set(carried.targets))))


def portability_table(data: MatchData, exact: AuditResult, carried: CarriedThresholds,
                      interval_records: list[dict[str, Any]] | None, own: OwnThresholds | None,
                      options: IntervalOptions | None) -> list[dict[str, Any]]:
    """One record per carried threshold and view (all, then the groups), pooled rates (see module doc). ``own``: the
    bootstrap's replicate thresholds when the audit computed intervals (None, or unfilled, otherwise)."""
    config = exact.config
    targets = own_thresholds(carried).targets
    if own is not None and own.thresholds is not None:
        plug, reps, method = own.thresholds[0], own.thresholds[1:], own.method
    else:
        plug = run(data, None, grid=build_grid(data, rule=config.rule), view_targets=targets,
                   threshold_impostors=config.threshold_impostors).view_threshold[0]
        reps, method = None, None
    views = view_names(data.group_names)
    ops = {(float(p["target"]), p["group"]): p for p in exact.operating_points
           if p["kind"] == "threshold" and p["weighting"] == "pooled"}
    rates: dict[tuple, dict] = {}
    for r in interval_records or []:  # the first method given, as the audit's views show
        if r["kind"] == "threshold" and r["weighting"] == "pooled":
            rates.setdefault((r["metric"], float(r["target"]), r["group"]), r)
    impostors = [ops[(carried.thresholds[0], v)]["fmr_comparisons"] for v in views]
    return portability_records(
        carried.pairs, views, ops, rates, plug, reps, impostors, source=carried.source,
        threshold_impostors=config.threshold_impostors, method=method,
        level=(options or IntervalOptions()).level, alternative=(options or IntervalOptions()).alternative,
        n_resamples=None if reps is None else int(reps.shape[0]), seed=None if reps is None else options.seed)


__all__ = ["own_thresholds", "portability_table"]
