"""Bootstrap intervals and bands from the engine's replicate counts (docs/methods.md sections 3-4).

Everything here is a pure function of :class:`matchaudit.engine.Counts` (replicate 0 = the plug-in) and, for
the recentered bootstrap, of the V-statistic counts (:func:`v_statistic`). The engine's counts give
**pooled** rates (every comparison weighs the same); the unit-weighted counts of
:func:`matchaudit.estimators.balanced.unit_weighted` give **identity-balanced** rates through the same
functions (its replicates' thresholds at FMR targets are grid edges: :func:`targets_on_grid`). With the
within-identity bootstrap each identity's genuine and impostor denominators are fixed (``C(n_k, 2)`` and
``n_k n_l``), so with equal identity sizes the two weightings coincide.

Methods (``--ci-method``):

``recentered``  (within-identity bootstrap) ``theta + [q_{a/2}, q_{1-a/2}]`` of ``theta* - theta~``, where
                ``theta~`` is the V-statistic version at the ORIGINAL threshold (FNMR~ keeps the diagonal
                self-pairs; FMR needs no correction). Fairness measures: each replicate's groups at the
                replicate's own global threshold; ``theta~`` = the measure of (FNMR~_a, FMR_a) at the original.
``naive``       percentile of ``theta*`` (the baseline the paper shows failing: centred on theta~).
``gaussian``    ``theta + mean(theta*-theta~) +- z sd(theta*-theta~)``.
``vertex``, ``double-or-nothing``, ``subsets``, ``two-level``: percentile of the identity bootstrap's
                ``theta*`` (as the reference code).
Normalized uncertainty (the paper's eq. 11): ``sd(theta* - theta~) / theta``.

Curves: FNMR at a grid of FMR values, each replicate at its own threshold (the lowest grid edge whose FMR
is at most the target), so their resolution is the grid's (``Counts.resolution``, recorded). Simultaneous
bands (our choice, beyond the seeds): sup-t over the FMR range from the same replicates,
``theta(x) + mean e(x) +- c sd e(x)`` with ``c`` the ``level`` quantile of ``max_x |e_b(x) - mean e(x)| / sd e(x)``
(``e = theta* - theta~`` for recentered, ``theta* - theta`` otherwise; points with ``sd = 0`` are left out of
the max and get a zero-width band).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from matchaudit.choices import BOOTSTRAP
from matchaudit.definitions import Alternative, lowest_passing
from matchaudit.engine import Counts
from matchaudit.engine.grid import Grid
from matchaudit.errors import InputError
from matchaudit.estimators.balanced import MAX_CLASSES, size_classes
from matchaudit.estimators.grid_curves import fill as fill_curves
from matchaudit.estimators.within_variance import correction
from matchaudit.estimators.intervals import (
    ConfidenceInterval,
    IntervalResult,
    z_quantile,
)
from matchaudit.metrics.rates import closest_eer_rows, fvc2000_eer_rows, interpolated_eer_rows, rocch_eer_rows, safe_ratio
from matchaudit.model import MatchData
from matchaudit.model import view_names as model_views
from matchaudit.scores import self_score

RECENTRED = ("recentered", "gaussian")  # the methods centred on the V-statistic (and small-sample corrected)
SCHEME_OF = {"recentered": "within-identity", "naive": "within-identity", "gaussian": "within-identity",
             "vertex": "vertex", "double-or-nothing": "double-or-nothing", "subsets": "subsets",
             "two-level": "two-level"}


# ----------------------------------------------------------------------------- V-statistic counts

@dataclass(frozen=True)
class VStatistic:
    """Expected genuine counts under the within-identity bootstrap (the V-statistic version), float.

    ``genuine``: (G, C+1) on the main grid's cells; ``target_genuine_accepted``: (T, G) at the ORIGINAL
    (plug-in) thresholds of the FMR targets; ``threshold_genuine_accepted``: (len(thresholds), G).
    ``balanced``: the same for identity-balanced rates (unit-weighted as :mod:`balanced`: identity k counts
    ``1 - FNMR~_k``, so ``1 - accepted / identities`` is the balanced FNMR~), with its targets at the balanced
    plug-in thresholds; None unless asked for.
    """

    genuine: np.ndarray
    target_genuine_accepted: np.ndarray
    thresholds: np.ndarray
    threshold_genuine_accepted: np.ndarray
    note: str | None = None
    balanced: VStatistic | None = None


def v_statistic_grid(data: MatchData, counts: Counts, thresholds=(), balanced_targets=None) -> Grid | None:
    """The grid of the plug-in pass behind :func:`v_statistic` (over the data relabelled into (group, identity size)
    classes): the main grid's edges, the plug-in thresholds at the FMR targets, ``thresholds`` and
    ``balanced_targets``; None for a listed protocol (no pass needed). Refuses too many classes."""
    if data.protocol != "all-pairs":
        return None
    keys, _ = size_classes(data)
    if keys.shape[0] > MAX_CLASSES:
        raise ValueError(f"{keys.shape[0]} (group, identity size) classes: too many for the exact V-statistic pass")
    bal_t = np.zeros(0) if balanced_targets is None else np.asarray(balanced_targets, float)
    extra = np.concatenate([counts.target_threshold[0], np.asarray(thresholds, float), bal_t])
    return Grid(edges=np.unique(np.concatenate([counts.grid.edges, extra[np.isfinite(extra)]])), rule=counts.grid.rule)


def v_statistic(data: MatchData, counts: Counts, class_counts: Counts | None, thresholds=(), balanced_targets=None
                ) -> VStatistic:
    """The V-statistic genuine counts: ``sum_k (n_k-1)/n_k [E_k(t) + S_k(t)/2]`` per group (docs/methods.md section 3).

    Exact: the plug-in ``class_counts`` over the data with identities relabelled into (group, identity size)
    classes, on :func:`v_statistic_grid`, give the per-class genuine histogram; self-pairs add ``(n_k-1)/2`` at the
    self-score. A listed protocol has no self-pairs: the V-version is the plug-in and recentering changes nothing
    (noted; ``class_counts`` None). ``balanced_targets``: the balanced plug-in thresholds at the FMR targets; given,
    ``.balanced`` is filled (each class's counts divided by ``C(n, 2)``; all-pairs only).
    """
    thresholds = np.asarray(thresholds, float)
    G = data.n_groups
    t_hat = counts.target_threshold[0]
    if class_counts is None:
        gen = counts.genuine[0].astype(float)
        thr = np.array([counts.accepted_at(t)[0][0] for t in thresholds]).reshape(-1, G).astype(float)
        return VStatistic(gen, counts.target_genuine_accepted[0].astype(float), thresholds, thr,
                          note="listed protocol: no self-pairs, the V-statistic equals the plug-in")
    keys, _ = size_classes(data)
    bal_t = np.zeros(0) if balanced_targets is None else np.asarray(balanced_targets, float)
    main, c, fine = counts.grid.edges, class_counts, class_counts.grid
    n = keys[:, 1].astype(float)
    pairs = n * (n - 1) / 2
    s = int(fine.cell_of(self_score(data.metric)))
    owner = np.concatenate([[0], np.searchsorted(main, fine.edges, side="right")])  # fine cell -> main cell

    def version(per_class: np.ndarray, self_per_identity: np.ndarray, targets: np.ndarray) -> VStatistic:
        fine_gen = np.zeros((G, fine.n_cells))
        np.add.at(fine_gen, keys[:, 0], c.genuine[0] * per_class[:, None])
        fine_gen[:, s] += np.bincount(data.identity_group.astype(np.int64), weights=self_per_identity, minlength=G)
        gen = np.zeros((G, counts.grid.n_cells))
        np.add.at(gen.T, owner, fine_gen.T)

        def acc(t: float) -> np.ndarray:  # an infinite t too: Grid.edge_index puts it before or after every cell
            return fine_gen[:, fine.edge_index(t) + 1:].sum(axis=1)

        return VStatistic(gen, np.array([acc(t) for t in targets]).reshape(-1, G), thresholds,
                          np.array([acc(t) for t in thresholds]).reshape(-1, G))

    sizes = data.identity_sizes.astype(float)
    pooled = version((n - 1) / np.maximum(n, 1), (sizes - 1) / 2.0, t_hat)
    if balanced_targets is None:
        return pooled
    per_pair = np.where(pairs > 0, (n - 1) / np.maximum(n, 1) / np.where(pairs > 0, pairs, 1), 0.0)
    bal = version(per_pair, np.where(sizes >= 2, 1 / np.maximum(sizes, 1), 0.0), bal_t)
    return dataclasses.replace(pooled, balanced=bal)


# ----------------------------------------------------------------------------- replicate statistics

def view_names(counts: Counts) -> tuple[str, ...]:
    """Columns of every replicate array below (``"all"`` then the groups) that are reported
    (:func:`model.view_names`: the overall only for ungrouped data)."""
    return model_views(tuple(counts.group_names))


def views_gen(x: np.ndarray) -> np.ndarray:
    """(..., G) -> (..., 1+G): all then groups."""
    return np.concatenate([x.sum(axis=-1, keepdims=True), x], axis=-1)


def views_imp(x: np.ndarray, counts: Counts) -> np.ndarray:
    G = len(counts.group_names)
    return np.concatenate([x[..., counts.threshold_categories].sum(axis=-1, keepdims=True), x[..., :G]], axis=-1)


def rates_at_threshold(counts: Counts, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per replicate at threshold ``t`` (a grid edge): FNMR (R, 1+G), FMR (R, 1+G), and the plug-in counts
    (FNMR errors, comparisons, FMR errors, comparisons) as (1+G,) arrays in ``.info``-free tuples."""
    ga, ia = counts.accepted_at(t)
    gt, it = views_gen(counts.genuine_total), views_imp(counts.impostor_total, counts)
    ga, ia = views_gen(ga), views_imp(ia, counts)
    return 1 - safe_ratio(ga, gt), safe_ratio(ia, it), gt - ga, gt


def fnmr_at_targets(counts: Counts, sides: np.ndarray | None = None) -> np.ndarray:
    """FNMR at each replicate's own threshold for each FMR target: (R, T, 1+G); with ``sides`` (S, G) 0/1, per set
    of groups (a row's groups' genuine comparisons pooled): (R, T, 1+S)."""
    total, accepted = views_gen(counts.genuine_total), views_gen(counts.target_genuine_accepted)
    if sides is not None:  # all, then each side's groups summed (integers: exact)
        pick = np.concatenate([np.eye(1, total.shape[-1], dtype=np.int64),
                               np.pad(np.asarray(sides, np.int64), ((0, 0), (1, 0)))]).T
        total, accepted = total @ pick, accepted @ pick
    return 1 - safe_ratio(accepted, total[:, None, :])


def fmr_at_targets(counts: Counts) -> np.ndarray:
    """Achieved FMR at each replicate's own threshold (same-group impostors per group): (R, T, 1+G)."""
    it = views_imp(counts.impostor_total, counts)[:, None, :]
    return safe_ratio(views_imp(counts.target_impostor_accepted, counts), it)


def fnmr_v_at_targets(counts: Counts, v: VStatistic) -> np.ndarray:
    """FNMR~ at the original thresholds: (T, 1+G)."""
    return 1 - safe_ratio(views_gen(v.target_genuine_accepted), views_gen(counts.genuine_total[0])[None, :])


@dataclass(frozen=True)
class GridCurves:
    """Every replicate's grid curve per view (all, then the groups against their same-group impostors): ``x``,
    ``y`` (R, 1+G, C+2) the (FMR, FNMR) points at every edge between the end points (1, 0) and (0, 1); ``auc``
    (R, 1+G) the cell-level AUC (pairs in one cell count 1/2); ``ties`` (R, 1+G) the share of (genuine, impostor)
    pairs sharing a cell. NaN where a replicate drew no comparisons of a class."""

    x: np.ndarray
    y: np.ndarray
    auc: np.ndarray
    ties: np.ndarray

    @property
    def fmr(self) -> np.ndarray:
        """FMR at every edge (R, 1+G, C)."""
        return self.x[..., 1:-1]

    @property
    def fnmr(self) -> np.ndarray:
        """FNMR at every edge (R, 1+G, C)."""
        return self.y[..., 1:-1]


def grid_curves(counts: Counts, gen_hist: np.ndarray | None = None, imp_hist: np.ndarray | None = None,
                reported: bool = False) -> GridCurves:
    """:class:`GridCurves` of histograms ``gen_hist`` (R, G, C+1) and ``imp_hist`` (R, n_cat, C+1), by default
    the counts' own, in one compiled pass (:mod:`.grid_curves`). ``reported``: only the views of
    :func:`view_names` (ungrouped data's one group is the overall view: its curves are not made twice)."""
    gen = counts.genuine if gen_hist is None else gen_hist
    imp = counts.impostor if imp_hist is None else imp_hist
    views = len(view_names(counts)) if reported else None
    return GridCurves(*fill_curves(gen, imp, counts.threshold_categories, views))


def v_curves(counts: Counts, v: VStatistic) -> GridCurves:
    """The V-statistic version's :class:`GridCurves` (one row): its genuine histogram against the plug-in's
    impostors (FMR needs no correction)."""
    return grid_curves(counts, v.genuine[None], counts.impostor[:1])


def fnmr_at_fmr_grid(fmr: np.ndarray, fnmr: np.ndarray, grid_fmr: np.ndarray) -> np.ndarray:
    """FNMR at the lowest edge whose FMR <= x for each x of ``grid_fmr`` ((..., C) -> (..., X)); 1 if none
    (:func:`matchaudit.definitions.lowest_passing`: an undefined FMR never passes). A curve without impostors
    or without genuine comparisons (all FMR or all FNMR undefined: a resample that drew none) is NaN, dropped
    by the intervals and bands as every other undefined replicate."""
    e = lowest_passing(fmr, grid_fmr)
    last = fnmr.shape[-1]  # none passes: threshold +inf, FNMR 1
    out = np.where(e == last, 1.0, np.take_along_axis(fnmr, np.minimum(e, last - 1), axis=-1))
    undefined = np.isnan(fmr).all(axis=-1) | np.isnan(fnmr).all(axis=-1)
    return np.where(undefined[..., None], np.nan, out)


def det_replicates(counts: Counts, grid_fmr: np.ndarray, v: VStatistic | None = None,
                   curves: GridCurves | None = None):
    """DET curves as FNMR at ``grid_fmr``: replicates (R, 1+G, X) and, with ``v``, the V-version (1+G, X)
    at the plug-in's thresholds (per view: each group against its same-group impostors). ``curves``: the
    counts' :func:`grid_curves` when already computed."""
    curves = grid_curves(counts) if curves is None else curves
    reps = fnmr_at_fmr_grid(curves.fmr, curves.fnmr, grid_fmr)
    if v is None:
        return reps, None
    return reps, fnmr_at_fmr_grid(curves.fmr[0], v_curves(counts, v).fnmr[0], grid_fmr)


def targets_on_grid(counts: Counts, targets, curves: GridCurves | None = None) -> tuple[np.ndarray, np.ndarray]:
    """FNMR and FMR of every view, each (R, T, 1+G), at each replicate's lowest grid edge whose threshold FMR
    (view 0: the reference impostors) is at most each target; beyond the last edge (+inf) FNMR is 1 and FMR 0.
    For counts without exact target thresholds (identity-balanced): resolution is the grid's. ``curves``: the
    counts' :func:`grid_curves` when already computed."""
    curves = grid_curves(counts) if curves is None else curves
    fmr, fnmr = curves.fmr, curves.fnmr
    t = np.asarray(targets, float)
    e = lowest_passing(fmr[:, :1], t)  # (R, 1, T)
    e = np.broadcast_to(e, fmr.shape[:2] + (t.size,))
    inside, at = e < fmr.shape[-1], np.minimum(e, fmr.shape[-1] - 1)
    # beyond the last edge: FNMR 1 and FMR 0, NaN (no comparisons) staying NaN
    fn = np.where(inside, np.take_along_axis(fnmr, at, -1), fnmr[..., -1:] * 0 + 1)
    fm = np.where(inside, np.take_along_axis(fmr, at, -1), fmr[..., -1:] * 0)
    return np.swapaxes(fn, 1, 2), np.swapaxes(fm, 1, 2)


def auc_eer(curves: GridCurves, eer_method: str = "rocch") -> tuple[np.ndarray, np.ndarray]:
    """Per replicate and view, each (R, 1+G): cell-level AUC and the ROCCH-EER of the grid curve
    (:func:`matchaudit.metrics.rates.rocch_eer_rows` on its points with the end points, as the audit's EER).
    Resolution-limited by the grid: the grid's points are exact points of the empirical ROC, so with the
    plug-in's hull vertices as edges the plug-in EER is exact; the AUC is within :func:`auc_grid_bound`."""
    eer = {"rocch": rocch_eer_rows, "interpolated": interpolated_eer_rows, "closest": closest_eer_rows,
           "fvc2000": fvc2000_eer_rows}[eer_method]
    return curves.auc, eer(curves.x, curves.y)


def auc_grid_bound(counts: Counts) -> np.ndarray:
    """|cell-level AUC - exact AUC| of the plug-in per view (1+G,): half the share of (genuine, impostor) pairs
    sharing a cell (those are counted 1/2 on the grid, 0, 1/2 or 1 exactly)."""
    return 0.5 * grid_curves(counts, counts.genuine[:1], counts.impostor[:1]).ties[0]


# ----------------------------------------------------------------------------- intervals from replicates

def _mean(x: np.ndarray) -> np.ndarray:
    """Mean over axis 0 of the finite values; NaN (no warning) where there are none."""
    fin = np.isfinite(x)
    n = fin.sum(axis=0)
    return np.where(n > 0, np.where(fin, x, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)


def _q(x: np.ndarray, p: float) -> np.ndarray:
    """Quantile over axis 0 (numpy's linear rule) of the defined values, infinities included: a quantile that
    falls on or interpolates towards +inf (-inf) is +inf (-inf). NaN values are dropped; NaN (no warning)
    where none is left."""
    if not x.shape[0]:
        return np.full(x.shape[1:], np.nan)
    defined = ~np.isnan(x)
    n = defined.sum(axis=0)
    with np.errstate(invalid="ignore"):
        q = np.nanquantile(np.where(defined.any(axis=0), x, 0.0), p, axis=0)
    if not np.isinf(x).any():  # the usual case: numpy's quantile is the answer
        return np.where(n > 0, q, np.nan)
    srt = np.sort(x, axis=0)  # NaN last
    h = np.maximum(n - 1, 0) * p
    i0 = np.floor(h).astype(np.int64)
    i1 = np.minimum(i0 + 1, np.maximum(n - 1, 0))
    v0 = np.take_along_axis(srt, i0[None], axis=0)[0]
    v1 = np.take_along_axis(srt, i1[None], axis=0)[0]
    q = np.where(np.isinf(v0), v0, np.where((h > i0) & np.isinf(v1), v1, q))
    return np.where(n > 0, q, np.nan)


def _sd(x: np.ndarray) -> np.ndarray:
    """Standard deviation (ddof 1) over axis 0 of the finite values; NaN (no warning) with fewer than two."""
    fin = np.isfinite(x)
    n = fin.sum(axis=0)
    m = _mean(x)
    d = np.where(fin, x - np.where(np.isfinite(m), m, 0.0), 0.0)
    return np.where(n > 1, np.sqrt((d**2).sum(axis=0) / np.maximum(n - 1, 1)), np.nan)


def _asin_fwd(x):
    return np.arcsin(np.sqrt(np.clip(x, 0.0, 1.0)))


def _asin_back(y):
    return np.where(np.isnan(y), np.nan, np.sin(np.clip(y, 0.0, np.pi / 2)) ** 2)


def _asin_slope2(x):
    """Squared derivative of arcsin(sqrt(x)): 1 / (4 x (1 - x)) (inf at 0 and 1: no correction there)."""
    with np.errstate(divide="ignore"):
        return 1.0 / (4.0 * np.asarray(x, float) * (1.0 - np.asarray(x, float)))




def _within_scale(err: np.ndarray, theta, within: tuple) -> np.ndarray:
    """Small-sample correction of deviations ``err`` taken on the arcsine-sqrt scale (:mod:`within_variance`):
    the within-identity variances ``within`` = (estimate, bootstrap) mapped to that scale at ``theta``."""
    slope2 = _asin_slope2(theta)
    return correction(np.asarray(within[0]) * slope2, np.asarray(within[1]) * slope2, _sd(err) ** 2)


def corrected_replicates(replicates: np.ndarray, v_estimate, estimate, var_estimate, var_bootstrap) -> np.ndarray:
    """FNMR replicates ``(R, ...)`` (row 0 the plug-in, kept) whose deviations from ``v_estimate`` carry the
    small-sample correction, on the arcsine-sqrt scale (as :func:`interval_from_replicates` with ``within``):
    for statistics of several rates, such as the fairness measures."""
    reps = np.asarray(replicates, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = _asin_fwd(reps[1:]) - _asin_fwd(v_estimate)
        scale = _within_scale(err, estimate, (var_estimate, var_bootstrap))
        out = _asin_back(_asin_fwd(v_estimate) + scale * err)
    return np.concatenate([reps[:1], np.where(np.isnan(reps[1:]), np.nan, out)])


RESIDUE = 1e-12  # a rate bound within this of 0 or 1 is floating-point residue of sums of ratios: shown as 0 or 1


def snap(x, bounds: tuple[float, float]) -> np.ndarray:
    """``x`` clipped to the range ``bounds``, and floating-point residue within :data:`RESIDUE` of either end that
    end (an end may be inf): the one rule for bounds of rates and measures."""
    x = np.clip(np.asarray(x, float), *bounds)
    with np.errstate(invalid="ignore"):
        near_lo, near_hi = np.abs(x - bounds[0]) < RESIDUE, np.abs(x - bounds[1]) < RESIDUE
    return np.where(near_lo, bounds[0], np.where(near_hi, bounds[1], x))


def min_resamples(level: float, alternative: Alternative = "two-sided") -> int:
    """Fewest replicates whose quantiles can bound a ``level`` interval: the tail probability times B must
    reach one replicate (40 at 95% two-sided, 20 one-sided)."""
    tail = (1 - level) / (1 if alternative == "less" else 2)
    return math.ceil(1 / tail - 1e-9)


def check_resamples(n_resamples: int, level: float, alternative: Alternative = "two-sided") -> int:
    """``n_resamples`` if it reaches :func:`min_resamples`, else an :class:`InputError` naming the minimum."""
    need = min_resamples(level, alternative)
    if n_resamples < need:
        raise InputError(f"{n_resamples} resamples cannot bound a {level:g} interval: its bounds are replicate "
                         f"quantiles, which need at least {need} resamples (1,000 or more is usual).",
                         param="n_resamples")
    return n_resamples


def interval_from_replicates(method: str, estimate, replicates: np.ndarray, v_estimate=None, level: float = 0.95,
                             alternative: Alternative = "two-sided", *, seed: int | None = None,
                             resolution: dict | None = None, errors=None, comparisons=None,
                             bounds: tuple[float, float] | None = None,
                             within: tuple[np.ndarray, np.ndarray] | None = None,
                             studentized: tuple[float, np.ndarray] | None = None) -> IntervalResult:
    """Interval of ``method`` from replicates ``(B, ...)`` (replicate 0, the plug-in, excluded by the caller).

    ``v_estimate``: the V-statistic version (recentered/gaussian; defaults to ``estimate``: no correction).
    Non-finite replicates, one convention (docs/intervals.md): NaN (undefined: a resample without comparisons
    of a group, 0/0) is dropped and counted; +-inf (a ratio over a zero rate) is kept, so a bound whose quantile
    falls among infinite replicates is infinite. The interval always contains the estimate (widened, with a
    note, when the replicate quantiles exclude it). ``bounds``: the parameter's range (``(0, 1)`` for rates);
    the interval is clipped to it and residue within ``RESIDUE`` of its ends is rounded onto them. ``within``
    (recentered/gaussian FNMR): the (estimated, bootstrap) within-identity variances of the statistic's genuine
    side (:mod:`within_variance`); the deviations are scaled by its small-sample correction. ``studentized``
    (identity bootstraps, a rate at a fixed threshold): ``(se, t*)``, the estimate's identity-clustered standard
    error and the replicates' studentized deviations (:mod:`studentized`); the bounds are the bootstrap-t
    ones, ``theta - q(t*) se``. With no
    defined replicate (or a NaN estimate: no comparisons) the bounds are NaN and the note says why.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    theta = np.asarray(estimate, float)
    reps = np.asarray(replicates, float)
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    lo_p, hi_p = ((0.0, level) if alternative == "less" else ((1 - level) / 2, (1 + level) / 2))
    student = False
    if method in RECENTRED:
        # the corrected FNMR intervals live on the variance-stabilising arcsine-sqrt scale
        fwd, back = (_asin_fwd, _asin_back) if within is not None else (np.asarray, np.asarray)
        with np.errstate(invalid="ignore", divide="ignore"):  # inf - inf (an infinite estimate): dropped
            err = fwd(reps) - fwd(tv)
            sd = _sd(reps - tv)
            if within is not None:
                scale = _within_scale(err, theta, within)
                err, sd = err * scale, sd * scale
            if method == "recentered":
                lo, hi = back(fwd(theta) + _q(err, lo_p)), back(fwd(theta) + _q(err, hi_p))
        if method == "gaussian":
            z = z_quantile(level, alternative)
            centre = fwd(theta) + _mean(err) if err.shape[0] else fwd(theta)
            half = z * _sd(err)
            lo = np.where(np.any(err == -np.inf, axis=0), -np.inf, back(centre - half))
            hi = np.where(np.any(err == np.inf, axis=0), np.inf, back(centre + half))
    elif method in BOOTSTRAP:
        sd = _sd(reps)
        lo, hi = _q(reps, lo_p), _q(reps, hi_p)
        student = studentized is not None and studentized[0] > 0  # se = 0: nothing to studentize
        if student:
            se, t = studentized
            lo_t, hi_t = theta - _q(t, 1 - lo_p) * se, theta - _q(t, 1 - hi_p) * se
            student = bool(np.isfinite(lo_t) and np.isfinite(hi_t))  # else too many resamples without errors
            lo, hi = (lo_t, hi_t) if student else (lo, hi)
    else:
        raise ValueError(f"unknown bootstrap method {method!r}; choose from {BOOTSTRAP}")
    notes = []
    n_nan = int(np.sum(np.isnan(reps))) if reps.size else 0
    n_inf = int(np.sum(np.isinf(reps))) if reps.size else 0
    if n_nan:
        notes.append(f"{n_nan} undefined (NaN) replicate values dropped")
    if n_inf:
        notes.append(f"{n_inf} infinite replicate values kept (a bound among them is infinite)")
    if bounds is not None:
        lo, hi = snap(lo, bounds), snap(hi, bounds)
    if alternative == "less":
        lo = np.where(np.isnan(hi), np.nan, 0.0 if bounds is None else bounds[0])
    inner = theta if bounds is None else np.clip(theta, *bounds)
    outside = np.isfinite(inner) & ((lo > inner) | (hi < inner))
    if np.any(outside):
        lo, hi = np.where(outside, np.fmin(lo, inner), lo), np.where(outside, np.fmax(hi, inner), hi)
        notes.append("the replicate quantiles exclude the estimate: the interval is widened to contain it")
    if within is not None and method in RECENTRED:
        notes.append(_correction_note(scale))
    if studentized is not None and method in BOOTSTRAP and method not in RECENTRED:
        notes.append("bootstrap-t with the identity-clustered standard error (docs/intervals.md)" if student else
                     "percentile interval: too many resamples without an error (or no spread) for the bootstrap-t")
    note = "; ".join(notes) or None
    if not np.any(np.isfinite(theta)):
        note = "no comparisons (or an undefined estimate): NaN"
    elif reps.size and not np.any(~np.isnan(reps)):
        note = "no defined replicate (e.g. a group without comparisons in every resample): NaN"
    if method in RECENTRED and v_estimate is None:
        note = (note + "; " if note else "") + "no V-statistic correction (theta~ = theta)"
    def sc(x):
        x = np.asarray(x, float)
        return float(x) if x.ndim == 0 else x
    return IntervalResult(sc(theta), ConfidenceInterval(sc(lo), sc(hi)), method, level, sc(sd), errors, comparisons,
                          alternative, n_resamples=int(reps.shape[0]), seed=seed, resolution=resolution,
                          bootstrap_distribution=reps, note=note,
                          extra={} if v_estimate is None else {"v_statistic": sc(tv)})


def _correction_note(scale: np.ndarray) -> str:
    s = np.atleast_1d(scale)
    s = s[np.isfinite(s)]
    if not s.size:
        return "small-sample variance correction: none (no spread)"
    span = f"x{s.min():.3g}" if np.ptp(s) < 5e-4 else f"x{s.min():.3g} to x{s.max():.3g}"
    return f"small-sample variance correction {span} on the arcsine-sqrt scale (docs/intervals.md)"


def normalized_uncertainty(estimate, replicates: np.ndarray, v_estimate=None) -> np.ndarray:
    """The similarity-scoring paper's eq. 11: ``sd(theta* - theta~) / theta`` (inf/NaN when theta is 0; inf when a
    replicate is infinite, as the intervals keep them)."""
    theta = np.asarray(estimate, float)
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    reps = np.asarray(replicates, float)
    with np.errstate(divide="ignore", invalid="ignore"):  # inf - inf (an infinite estimate): not finite, skipped
        sd = _sd(reps - tv)
        sd = np.where(np.isinf(reps).any(axis=0), np.inf, sd) if reps.shape[0] else sd
        return sd / np.abs(theta)


def sup_t_band(estimate: np.ndarray, replicates: np.ndarray, v_estimate: np.ndarray | None = None,
               level: float = 0.95) -> tuple[np.ndarray, np.ndarray, float]:
    """Simultaneous band over the last axis (see module doc): (lower, upper, critical value c)."""
    theta = np.asarray(estimate, float)
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    err = np.asarray(replicates, float) - tv  # rates: NaN (undefined) replicates are skipped by _mean/_sd
    mean = _mean(err)
    sd = _sd(err)
    ok = np.isfinite(sd) & (sd > 0)
    if not ok.any():
        return theta + mean, theta + mean, math.nan
    dev = np.abs(err[:, ok] - mean[ok]) / sd[ok]
    worst = np.max(np.where(np.isfinite(dev), dev, -np.inf), axis=1)
    worst = worst[np.isfinite(worst)]
    if not worst.size:
        return theta + mean, theta + mean, math.nan
    c = float(np.quantile(worst, level))
    half = np.where(ok, c * np.nan_to_num(sd), 0.0)
    return np.clip(theta + mean - half, 0, 1), np.clip(theta + mean + half, 0, 1), c


def measure_replicates(fmr: np.ndarray, fnmr: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
    """Fairness measures of per-group rates ``(..., m)``: {(rate, measure): (...)} for FMR, FNMR, combined; NaN
    throughout with fewer than two groups (nothing to compare: every group but one excluded as small)."""
    from matchaudit.metrics import fairness

    if fmr.shape[-1] < 2:  # two undefined rates: every measure NaN, with the same keys
        fmr = fnmr = np.full(fmr.shape[:-1] + (2,), np.nan)
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for rate, x in (("FMR", fmr), ("FNMR", fnmr)):
            for name, val in fairness.summary_measures(x).items():
                out[(rate, name)] = val
        for name, val in fairness.combined_measures(fmr, fnmr).items():
            out[("combined", name)] = val
    return out


def group_replicates(method: str, fmr: np.ndarray, fnmr: np.ndarray, fnmr_v: np.ndarray | None = None,
                     within: tuple[np.ndarray, np.ndarray] | None = None, keep: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Each group's FMR and FNMR pseudo-replicates ``(R, T, k)`` at the FMR targets, from per-view rates
    ``(R+1, T, 1+G)`` (view 0 overall, row 0 the plug-in): replicates whose percentile interval is ``method``'s
    interval of the group's rate — the replicates themselves for the percentile bootstraps; for the recentered
    ones each deviation from the V-statistic rates ``fnmr_v`` (T, 1+G) added to the plug-in, with the
    small-sample correction ``within`` (estimate, bootstrap variances, each (T, 1+G); :func:`corrected_replicates`).
    ``keep``: (G,) bool, the groups kept (default all). The input of the fairness measures' intervals
    (:mod:`matchaudit.estimators.fairness_projection`)."""
    k = slice(None) if keep is None else np.asarray(keep, bool)
    fm = fmr[1:, :, 1:][..., k]
    fn = fnmr[..., 1:]
    if method in RECENTRED and fnmr_v is not None:
        if within is not None:
            fn = corrected_replicates(fn, fnmr_v[:, 1:], fnmr[0, :, 1:], within[0][:, 1:], within[1][:, 1:])
        with np.errstate(invalid="ignore"):
            fn = np.clip(fnmr[0, :, 1:] + (fn[1:] - fnmr_v[:, 1:]), 0.0, 1.0)
    else:
        fn = fn[1:]
    return snap(fm, (0.0, 1.0)), snap(fn[..., k], (0.0, 1.0))  # residue of 1 - accepted/total: exact 0


__all__ = [
    "auc_eer", "auc_grid_bound", "BOOTSTRAP", "check_resamples", "corrected_replicates", "det_replicates",
    "fmr_at_targets", "fnmr_at_fmr_grid", "fnmr_at_targets", "fnmr_v_at_targets", "grid_curves", "GridCurves",
    "group_replicates", "interval_from_replicates", "measure_replicates", "min_resamples", "normalized_uncertainty",
    "rates_at_threshold", "RECENTRED", "SCHEME_OF", "snap", "sup_t_band", "targets_on_grid", "v_curves",
    "v_statistic", "v_statistic_grid", "view_names", "views_gen", "VStatistic",
]
