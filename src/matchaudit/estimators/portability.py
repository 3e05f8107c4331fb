"""Thresholds carried to a new population (#45 item 4): per carried threshold and view, the view's FMR and FNMR at it
with their intervals, the ratio of its FMR to the target the threshold was set for, and the threshold the view itself
would need for that target (its *own* threshold: the overall view over the audit's threshold impostors, each group over
its same-group impostors) with a percentile interval of the identity bootstrap's replicate thresholds.

A function of the audit's records and the bootstrap's replicate thresholds (``Counts.view_threshold``), nothing else:
which passes run is :mod:`matchaudit.auditing.portability`'s. The intervals of the rates are conditional on the
carried threshold (it is the number deployed, not re-estimated here: docs/intervals.md, "Thresholds carried to a new
population").
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from matchaudit.definitions import Alternative
from matchaudit.estimators import bootstrap as bs
from matchaudit.metrics.small_groups import GRID_MIN_ERRORS

SAME_GROUP = "same-group"  # the impostors of a group's own threshold (the overall view's: the threshold impostors)


def own_threshold_interval(estimate: float, replicates: np.ndarray | None, method: str, level: float,
                           alternative: Alternative, seed: int | None) -> tuple[float, float, str | None]:
    """``(low, high, note)``: the percentile interval of a view's own threshold from its bootstrap ``replicates``
    (B,), the plug-in excluded (:func:`bs.interval_from_replicates`: NaN replicates dropped, +inf ones kept, the
    estimate inside); NaN bounds without replicates. A threshold is a quantile of the impostor scores, so the
    percentile interval is invariant under any monotone map of the scores (a studentized one is not)."""
    if replicates is None or not np.isfinite(estimate):
        return math.nan, math.nan, None
    r = bs.interval_from_replicates("naive" if method in bs.RECENTRED else method, estimate, replicates, None,
                                    level, alternative, seed=seed)
    return float(r.confidence_interval.low), float(r.confidence_interval.high), r.note


def unresolved(target: float, impostors: int, who: str) -> str | None:
    """Why a view has no own threshold at ``target`` from ``impostors`` comparisons (None when it has one): none at
    all, or fewer than ``1 / target``, so that no false match at all is the only FMR at most the target."""
    if impostors <= 0:
        return f"no {who} impostor comparisons: no threshold can be set on them"
    if target * impostors < 1:
        return (f"{impostors:,} {who} impostor comparisons: FMR {target:g} is below one false match (needs at least "
                f"{math.ceil(1 / target):,}), so no threshold reaches it except one above every impostor score")
    return None


def status(fmr_low: float, fmr_high: float, target: float) -> str:
    """What the view's FMR interval says about the target the threshold was set for."""
    if not (np.isfinite(fmr_low) and np.isfinite(fmr_high)):
        return "no interval"
    return "above target" if fmr_low > target else "at or below target" if fmr_high <= target else "undetermined"


def portability_records(carried: Sequence[tuple[float, float]], views: Sequence[str], ops: dict[tuple, dict],
                        rates: dict[tuple, dict], own: np.ndarray, own_replicates: np.ndarray | None,
                        impostors: Sequence[int], *, source: str | None, threshold_impostors: str, method: str | None,
                        level: float, alternative: Alternative, n_resamples: int | None, seed: int | None
                        ) -> list[dict[str, Any]]:
    """One record per carried ``(threshold, target)`` and view (``views``: all, then the groups).

    ``ops[(threshold, view)]``: the audit's pooled operating point at the fixed threshold; ``rates[(metric, threshold,
    view)]``: its interval record of FMR or FNMR there (the first method; absent without intervals). ``own`` (T, V):
    each view's own threshold at the carried targets ``sorted(set(targets))`` (index T), ``own_replicates`` (B, T, V)
    the bootstrap's (``method``; None without intervals); ``impostors`` (V,): the comparisons that set each view's own
    threshold."""
    targets = sorted({float(a) for _, a in carried})
    out = []
    for t, a in carried:
        ti = targets.index(float(a))
        for j, view in enumerate(views):
            op = ops[(float(t), view)]
            fm, fn = rates.get(("FMR", float(t), view), {}), rates.get(("FNMR", float(t), view), {})
            fm_lo, fm_hi = fm.get("low", math.nan), fm.get("high", math.nan)
            who = threshold_impostors if j == 0 else SAME_GROUP
            why = unresolved(float(a), int(impostors[j]), f"threshold ({who})" if j == 0 else who)
            req = math.nan if why else float(own[ti, j])
            lo, hi, note = own_threshold_interval(req, None if own_replicates is None or why else
                                                  own_replicates[:, ti, j], method or "", level, alternative, seed)
            expected = float(a) * int(impostors[j])  # false matches behind the own threshold
            out.append({
                "source": source, "threshold": float(t), "target": float(a), "group": view, "impostors": who,
                "fmr": op["fmr"], "fmr_errors": op["fmr_errors"], "fmr_comparisons": op["fmr_comparisons"],
                "fmr_low": fm_lo, "fmr_high": fm_hi,
                "fnmr": op["fnmr"], "fnmr_errors": op["fnmr_errors"], "fnmr_comparisons": op["fnmr_comparisons"],
                "fnmr_low": fn.get("low", math.nan), "fnmr_high": fn.get("high", math.nan),
                "rate_method": fm.get("method"),
                "fmr_ratio": op["fmr"] / float(a) if a > 0 else math.nan,
                "ratio_low": fm_lo / float(a) if a > 0 else math.nan,
                "ratio_high": fm_hi / float(a) if a > 0 else math.nan,
                "status": status(fm_lo, fm_hi, float(a)),
                "required_threshold": req, "required_low": lo, "required_high": hi,
                "threshold_method": None if own_replicates is None or why else method,
                "impostor_comparisons": int(impostors[j]),
                "indicative": bool(not why and expected < GRID_MIN_ERRORS),
                "level": level, "n_resamples": n_resamples, "seed": seed,
                "note": "; ".join(n for n in (why, note, f"about {expected:.3g} false matches behind the required "
                                              f"threshold (fewer than {GRID_MIN_ERRORS}: indicative)"
                                              if not why and expected < GRID_MIN_ERRORS else None) if n) or None,
            })
    return out


__all__ = ["SAME_GROUP", "own_threshold_interval", "portability_records", "status", "unresolved"]
