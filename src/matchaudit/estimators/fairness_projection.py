"""Fairness-measure intervals that reach parity: a simultaneous box for the groups' rates, projected onto each
measure (docs/intervals.md, "Fairness measures at parity").

A fairness measure (max/min ratio, Gini, max-min difference, ...) is a non-regular functional at parity: every
bootstrap replicate re-picks its own extreme groups, so a replicate's measure is at least the parity value and a
percentile interval of the measure cannot contain parity (0-4 of 60 intervals did, for identical groups). Here the
bootstrap is used only for what it does well, each group's rate: the replicates give a box of per-group intervals
holding *simultaneously* at the level (every group's percentile interval at one common per-group level, chosen
so that the share of replicates lying inside the whole box is the level: a max-T calibration on ranks). If the
box covers the true rates, every measure of the true rates lies between the measure's minimum and maximum over
the box: the projection is an interval for every measure at once, by construction. It reaches parity exactly when
the groups' intervals share a point — when no pair of groups is told apart — so the table and a simultaneous
test of the groups agree. The extremes over the box are exact: each measure is Schur-convex (symmetric, and
larger for more spread-out rates), so its minimum lies on the path ``clip(c, low, high)`` at one of its kinks, and
its maximum at a corner of the box (closed forms for the max-based measures, corners searched for Gini and the
log-geomean sum). Intervals of every pair's contrast (Tukey's question) would be tighter for max - min and
max/min, but their identity-bootstrap percentile intervals contained parity in only 0.89-0.93 of data sets from
one law (4 and 8 groups, bench/fairness_parity.py), the box in all: the box serves every measure.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from matchaudit.metrics import fairness

EXHAUSTIVE_GROUPS = 14
"""Up to this many groups, the maximum of Gini and the log-geomean sum is found over every corner of the box
(2^m); beyond, by a local search from the corners that split the groups by their intervals' midpoints."""

CONSTRUCTION = "simultaneous projection"
"""How the fairness measures' intervals are built (recorded as each record's ``construction``)."""


@dataclass(frozen=True)
class Box:
    """Per-group intervals ``low``/``high`` (T, m) that hold simultaneously at ``level``; ``group_level`` (T,) is
    each group's own (percentile) level within it."""

    low: np.ndarray
    high: np.ndarray
    level: float
    group_level: np.ndarray


def simultaneous_box(replicates: np.ndarray, level: float, floors: np.ndarray | None = None) -> Box:
    """The box of per-group percentile intervals that contains a share ``level`` of the replicates ``(R, T, m)``
    whole (NaN entries, a group absent from a replicate, count as inside), per target. The common per-group tail
    probability lies between Bonferroni's ``(1 - level) / m`` (the box always holds at least that level) and
    ``1 - level`` (one group alone). ``floors`` (T, m): a least upper end per group (a group without errors has
    every replicate at 0: its zero-error bound stands in)."""
    reps = np.asarray(replicates, float)
    _, n_targets, m = reps.shape
    alpha = 1.0 - level
    low, high = np.empty((n_targets, m)), np.empty((n_targets, m))
    group_level = np.empty(n_targets)
    for t in range(n_targets):
        x = reps[:, t, :]
        missing = np.isnan(x)

        def box(tail: float) -> tuple[np.ndarray, np.ndarray]:
            return _quantiles(x, tail)

        def covered(tail: float) -> float:
            lo, hi = box(tail)
            with np.errstate(invalid="ignore"):
                inside = ((x >= lo) & (x <= hi)) | missing
            return float(inside.all(axis=1).mean())

        # covered(a) >= level (Bonferroni) is taken as given; find the largest tail that keeps it
        a, b = alpha / m, alpha
        if covered(b) >= level:
            a = b
        else:
            for _ in range(24):
                mid = (a + b) / 2
                a, b = (mid, b) if covered(mid) >= level else (a, mid)
        low[t], high[t] = box(a)
        group_level[t] = 1.0 - a
    if floors is not None:
        high = np.fmax(high, np.asarray(floors, float))
    return Box(low, high, level, group_level)


def _quantiles(x: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Each column's percentile interval with ``tail`` outside, outward on ties (NaN: a column without a defined
    replicate)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: NaN, said by the caller's note
        return (np.nanquantile(x, tail / 2, axis=0, method="lower"),
                np.nanquantile(x, 1 - tail / 2, axis=0, method="higher"))


def _clip_path(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The points ``clip(c, low, high)`` at every c where a measure along that path can turn: (n, m). The most
    equal rates in the box lie on this path for every Schur-convex measure. Along it each measure is monotone
    between kinks: the intervals' ends (for all), and for the log-geomean sum also where a rate crosses the
    geometric mean, found per segment between ends (on the log scale the mean is linear in log c there)."""
    ends = np.unique(np.concatenate([low, high]))
    c = [ends]
    pos = ends[ends > 0]
    if low.min() > 0 and pos.size > 1:
        u_ends, ly, lh = np.log(pos), np.log(low), np.log(high)
        for u0, u1 in zip(u_ends[:-1], u_ends[1:]):
            mid = (u0 + u1) / 2
            free = (ly <= mid) & (lh >= mid)  # rates at c on this segment; the others fixed at an end
            k, fixed = int(free.sum()), np.where(ly > mid, ly, lh)[~free]
            total, m = fixed.sum(), low.size
            kinks = [(m * y - total) / k for y in fixed] if k else []
            if k < m:
                kinks.append(total / (m - k))  # the free rates cross the mean
            c.append(np.exp([u for u in kinks if u0 < u < u1]))
    c = np.concatenate(c)
    return np.clip(c[:, None], low[None, :], high[None, :])


def _corners(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Candidate corners of the box: all 2^m up to :data:`EXHAUSTIVE_GROUPS` groups, else the splits of the groups
    by their midpoints (the k highest at ``high``, the rest at ``low``) and by their lower and upper ends."""
    m = low.size
    if m <= EXHAUSTIVE_GROUPS:
        up = np.array(list(itertools.product((False, True), repeat=m)))
    else:
        rows = []
        for key in ((low + high) / 2, low, high):
            order = np.argsort(-key, kind="stable")
            for k in range(m + 1):
                row = np.zeros(m, bool)
                row[order[:k]] = True
                rows.append(row)
        up = np.array(rows)
    return np.where(up, high, low)


def _corner_max(fn, low: np.ndarray, high: np.ndarray) -> float:
    """The largest value of ``fn`` (vectorised over rows) over the box's corners: exhaustive, or the best
    candidate corner improved by flipping one group at a time while that raises it."""
    corners = _corners(low, high)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = fn(corners)
    if np.isnan(values).all():
        return float("nan")
    best = corners[int(np.nanargmax(values))].copy()
    top = float(np.nanmax(values))
    if low.size <= EXHAUSTIVE_GROUPS:
        return top
    improved = True
    while improved:
        flips = np.repeat(best[None, :], low.size, axis=0)
        idx = np.arange(low.size)
        flips[idx, idx] = np.where(best == high, low, high)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = fn(flips)
        improved = bool(np.nanmax(vals) > top) if not np.isnan(vals).all() else False
        if improved:
            k = int(np.nanargmax(vals))
            best, top = flips[k].copy(), float(vals[k])
    return top


def _max_geomean_high(low: np.ndarray, high: np.ndarray) -> float:
    """Largest max/geomean ratio over the box: group a at its upper end, every other at its lower end, best a
    (infinite when another group's lower end is 0)."""
    m = low.size
    vals = np.empty(m)
    for a in range(m):
        others = np.delete(low, a)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals[a] = np.inf if (others == 0).any() else high[a] ** (1 - 1 / m) / np.exp(np.log(others).sum() / m)
    return float(np.nanmax(vals)) if not np.isnan(vals).all() else float("nan")


def measure_bounds(low: np.ndarray, high: np.ndarray) -> dict[str, tuple[float, float]]:
    """The range of each single-rate measure (:data:`matchaudit.metrics.fairness.MEASURES`) over the box of rates
    ``low``/``high`` (m,): {measure: (minimum, maximum)}."""
    path = fairness.summary_measures(_clip_path(low, high))
    other = ~np.eye(low.size, dtype=bool)  # the max and the min are two different groups
    with np.errstate(divide="ignore", invalid="ignore"):
        highs = {
            "max_min_difference": float((high[:, None] - low[None, :])[other].max()),
            "max_min_ratio": float(np.nanmax(fairness.ratio(high[:, None], low[None, :])[other])),
            "max_geomean_ratio": _max_geomean_high(low, high),
            "log_geomean_sum": _corner_max(fairness.log_geomean_sum, low, high),
            "gini": _corner_max(fairness.gini, low, high),
        }
    out = {}
    for name in fairness.MEASURES:
        vals = path[name]
        lo = float(np.nanmin(vals)) if not np.isnan(vals).all() else float("nan")
        out[name] = (lo, highs[name])
    return out


def combined_bounds(fmr: dict[str, tuple[float, float]], fnmr: dict[str, tuple[float, float]]
                    ) -> dict[str, tuple[float, float]]:
    """The range of each combined measure (:data:`matchaudit.metrics.fairness.COMBINED`) from the ranges of its
    parts over one box of both rates: each is monotone in its parts (FDR decreasing in the differences)."""
    def at(side: int, fdr_side: int) -> dict[str, float]:
        return fairness.combined_from_measures(
            fmr_difference=fmr["max_min_difference"][fdr_side], fnmr_difference=fnmr["max_min_difference"][fdr_side],
            fmr_ratio=fmr["max_min_ratio"][side], fnmr_ratio=fnmr["max_min_ratio"][side],
            fmr_gini=fmr["gini"][side], fnmr_gini=fnmr["gini"][side])
    lows, highs = at(0, 1), at(1, 0)
    return {name: (float(lows[name]), float(highs[name])) for name in fairness.COMBINED}


def projected_intervals(fmr: np.ndarray, fnmr: np.ndarray, level: float, fmr_floor: np.ndarray | None = None,
                        fnmr_floor: np.ndarray | None = None) -> tuple[dict[tuple[str, str], np.ndarray], dict]:
    """Intervals ``(T, 2)`` of every fairness measure from the groups' replicate rates ``(R, T, m)``:
    {(rate, measure): bounds} with rate FMR, FNMR or combined (FMR and FNMR in one box), and the boxes
    ({"FMR"|"FNMR"|"combined": :class:`Box`}). ``*_floor`` (T, m): the least upper ends of groups without errors
    (:func:`simultaneous_box`)."""
    n_targets, m = fmr.shape[1], fmr.shape[2]
    boxes = {"FMR": simultaneous_box(fmr, level, fmr_floor), "FNMR": simultaneous_box(fnmr, level, fnmr_floor)}
    both_floor = None if fmr_floor is None or fnmr_floor is None else np.concatenate([fmr_floor, fnmr_floor], -1)
    boxes["combined"] = simultaneous_box(np.concatenate([fmr, fnmr], axis=-1), level, both_floor)
    out: dict[tuple[str, str], np.ndarray] = {}
    for t in range(n_targets):
        single = {rate: measure_bounds(boxes[rate].low[t], boxes[rate].high[t]) for rate in ("FMR", "FNMR")}
        joint = boxes["combined"]
        parts = [measure_bounds(joint.low[t, k * m:(k + 1) * m], joint.high[t, k * m:(k + 1) * m]) for k in (0, 1)]
        cells = {**{(rate, name): b for rate, d in single.items() for name, b in d.items()},
                 **{("combined", name): b for name, b in combined_bounds(*parts).items()}}
        for key, bounds in cells.items():
            out.setdefault(key, np.full((n_targets, 2), np.nan))[t] = bounds
    return out, boxes


__all__ = ["Box", "CONSTRUCTION", "combined_bounds", "measure_bounds", "projected_intervals", "simultaneous_box"]
