"""Bootstrap intervals and bands from the engine's replicate counts (methods.md sections 3-4).

Everything here is a pure function of :class:`matchaudit.engine.Counts` (replicate 0 = the plug-in) and, for
the recentered bootstrap, of the V-statistic counts (:func:`v_statistic`). Rates are **pooled** (every
comparison weighs the same): with the within-identity bootstrap each identity's genuine and impostor
denominators are fixed (``C(n_k, 2)`` and ``n_k n_l``), so with equal identity sizes the pooled and the
identity-balanced (paper's) rates coincide.

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
from scipy.stats import norm

from matchaudit.engine import Counts, run
from matchaudit.engine.grid import Grid
from matchaudit.estimators.intervals import Alternative, ConfidenceInterval, IntervalResult
from matchaudit.model import MatchData
from matchaudit.scores import self_score

BOOTSTRAP = ("recentered", "naive", "gaussian", "vertex", "double-or-nothing", "subsets", "two-level")
SCHEME_OF = {"recentered": "within-identity", "naive": "within-identity", "gaussian": "within-identity",
             "vertex": "vertex", "double-or-nothing": "double-or-nothing", "subsets": "subsets",
             "two-level": "two-level"}


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


# ----------------------------------------------------------------------------- V-statistic counts

@dataclass(frozen=True)
class VStatistic:
    """Expected genuine counts under the within-identity bootstrap (the V-statistic version), float.

    ``genuine``: (G, C+1) on the main grid's cells; ``target_genuine_accepted``: (T, G) at the ORIGINAL
    (plug-in) thresholds of the FMR targets; ``threshold_genuine_accepted``: (len(thresholds), G).
    """

    genuine: np.ndarray
    target_genuine_accepted: np.ndarray
    thresholds: np.ndarray
    threshold_genuine_accepted: np.ndarray
    note: str | None = None


def v_statistic(data: MatchData, counts: Counts, thresholds=()) -> VStatistic:
    """The V-statistic genuine counts: ``sum_k (n_k-1)/n_k [E_k(t) + S_k(t)/2]`` per group (methods.md 3).

    Exact: one plug-in engine pass over the data with identities relabelled into (group, identity size)
    classes gives the per-class genuine histogram; self-pairs add ``(n_k-1)/2`` at the self-score. A listed
    protocol has no self-pairs: the V-version is the plug-in and recentering changes nothing (noted).
    """
    thresholds = np.asarray(thresholds, float)
    G = data.n_groups
    t_hat = counts.target_threshold[0]
    if data.protocol != "all-pairs":
        gen = counts.genuine[0].astype(float)
        thr = np.array([counts.accepted_at(t)[0][0] for t in thresholds]).reshape(-1, G).astype(float)
        return VStatistic(gen, counts.target_genuine_accepted[0].astype(float), thresholds, thr,
                          note="listed protocol: no self-pairs, the V-statistic equals the plug-in")
    sizes = data.identity_sizes
    group = data.identity_group.astype(np.int64)
    keys = np.unique(np.stack([group, sizes], axis=1), axis=0)
    if keys.shape[0] > 64:
        raise ValueError(f"{keys.shape[0]} (group, identity size) classes: too many for the exact V-statistic pass")
    cls = np.array([np.flatnonzero((keys == (g, n)).all(axis=1))[0] for g, n in zip(group, sizes)], np.int64)
    relabelled = dataclasses.replace(data, identity_group=cls, group_names=tuple(f"c{i}" for i in range(len(keys))))
    main = counts.grid.edges
    extra = np.concatenate([t_hat[np.isfinite(t_hat)], thresholds[np.isfinite(thresholds)]])
    fine = Grid(edges=np.unique(np.concatenate([main, extra])), rule=counts.grid.rule)
    c = run(relabelled, None, grid=fine)
    factor = (keys[:, 1] - 1) / np.maximum(keys[:, 1], 1)
    fine_gen = np.zeros((G, fine.n_cells))
    np.add.at(fine_gen, keys[:, 0], c.genuine[0] * factor[:, None])
    s = self_score(data.metric)
    half_self = np.bincount(group, weights=(sizes - 1) / 2.0, minlength=G)
    fine_gen[:, int(fine.cell_of(s))] += half_self
    # fine cell f lies in main cell #(main edges <= fine edge f-1)
    owner = np.concatenate([[0], np.searchsorted(main, fine.edges, side="right")])
    gen = np.zeros((G, counts.grid.n_cells))
    np.add.at(gen.T, owner, fine_gen.T)

    def acc(t: float) -> np.ndarray:
        if not np.isfinite(t):
            return np.zeros(G) if t > 0 else fine_gen.sum(axis=1)
        return fine_gen[:, fine.edge_index(t) + 1:].sum(axis=1)

    return VStatistic(gen, np.array([acc(t) for t in t_hat]).reshape(-1, G), thresholds,
                      np.array([acc(t) for t in thresholds]).reshape(-1, G))


# ----------------------------------------------------------------------------- replicate statistics

def view_names(counts: Counts) -> tuple[str, ...]:
    """Columns of every replicate array below: ``"all"`` then the groups."""
    return ("all",) + tuple(counts.group_names)


def _ref_mask(counts: Counts) -> np.ndarray:
    G = len(counts.group_names)
    m = np.zeros(len(counts.categories), bool)
    m[:G if counts.fmr_reference == "same-group" else len(m)] = True
    return m


def _views_gen(x: np.ndarray) -> np.ndarray:
    """(..., G) -> (..., 1+G): all then groups."""
    return np.concatenate([x.sum(axis=-1, keepdims=True), x], axis=-1)


def _views_imp(x: np.ndarray, counts: Counts) -> np.ndarray:
    G = len(counts.group_names)
    return np.concatenate([x[..., _ref_mask(counts)].sum(axis=-1, keepdims=True), x[..., :G]], axis=-1)


def rates_at_threshold(counts: Counts, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per replicate at threshold ``t`` (a grid edge): FNMR (R, 1+G), FMR (R, 1+G), and the plug-in counts
    (FNMR errors, comparisons, FMR errors, comparisons) as (1+G,) arrays in ``.info``-free tuples."""
    ga, ia = counts.accepted_at(t)
    gt, it = _views_gen(counts.genuine_total), _views_imp(counts.impostor_total, counts)
    ga, ia = _views_gen(ga), _views_imp(ia, counts)
    return 1 - _div(ga, gt), _div(ia, it), gt - ga, gt


def fnmr_at_targets(counts: Counts) -> np.ndarray:
    """FNMR at each replicate's own threshold for each FMR target: (R, T, 1+G)."""
    gt = _views_gen(counts.genuine_total)[:, None, :]
    return 1 - _div(_views_gen(counts.target_genuine_accepted), gt)


def fmr_at_targets(counts: Counts) -> np.ndarray:
    """Achieved FMR at each replicate's own threshold (same-group impostors per group): (R, T, 1+G)."""
    it = _views_imp(counts.impostor_total, counts)[:, None, :]
    return _div(_views_imp(counts.target_impostor_accepted, counts), it)


def fnmr_v_at_targets(counts: Counts, v: VStatistic) -> np.ndarray:
    """FNMR~ at the original thresholds: (T, 1+G)."""
    return 1 - _div(_views_gen(v.target_genuine_accepted), _views_gen(counts.genuine_total[0])[None, :])


def _curves(counts: Counts, gen_hist: np.ndarray, imp_hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FMR and FNMR at every edge per view, each (R, 1+G, C), from histograms (R, G, C+1), (R, n_cat, C+1)."""
    def tail(x):
        return np.cumsum(x[..., ::-1], axis=-1)[..., ::-1][..., 1:]
    g = np.moveaxis(_views_gen(np.moveaxis(gen_hist.astype(float), 1, -1)), -1, 1)
    i = np.moveaxis(_views_imp(np.moveaxis(imp_hist.astype(float), 1, -1), counts), -1, 1)
    return _div(tail(i), i.sum(axis=-1)[..., None]), 1 - _div(tail(g), g.sum(axis=-1)[..., None])


def fnmr_at_fmr_grid(fmr: np.ndarray, fnmr: np.ndarray, grid_fmr: np.ndarray) -> np.ndarray:
    """FNMR at the lowest edge whose FMR <= x for each x of ``grid_fmr`` ((..., C) -> (..., X)); 1 if none."""
    e = (fmr[..., None, :] > grid_fmr[:, None]).sum(axis=-1)  # FMR is non-increasing along the edges
    pad = np.concatenate([fnmr, np.ones(fnmr.shape[:-1] + (1,))], axis=-1)
    return np.take_along_axis(pad, e, axis=-1)


def det_replicates(counts: Counts, grid_fmr: np.ndarray, v: VStatistic | None = None):
    """DET curves as FNMR at ``grid_fmr``: replicates (R, 1+G, X) and, with ``v``, the V-version (1+G, X)
    at the plug-in's thresholds (per view: each group against its same-group impostors)."""
    fmr, fnmr = _curves(counts, counts.genuine, counts.impostor)
    reps = fnmr_at_fmr_grid(fmr, fnmr, grid_fmr)
    if v is None:
        return reps, None
    _, fnmr_v = _curves(counts, v.genuine[None], counts.impostor[:1])
    return reps, fnmr_at_fmr_grid(fmr[0], fnmr_v[0], grid_fmr)


def auc_eer(counts: Counts, gen_hist: np.ndarray, imp_hist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cell-level AUC (pairs in one cell count 1/2) and EER (linearly interpolated crossing of FNMR - FMR
    along the grid edges) per replicate and view: each (R, 1+G). Resolution-limited by the grid."""
    g = np.moveaxis(_views_gen(np.moveaxis(gen_hist.astype(float), 1, -1)), -1, 1)
    i = np.moveaxis(_views_imp(np.moveaxis(imp_hist.astype(float), 1, -1), counts), -1, 1)
    below = np.cumsum(i, axis=-1) - i
    auc = _div((g * (below + 0.5 * i)).sum(axis=-1), g.sum(axis=-1) * i.sum(axis=-1))
    fmr, fnmr = _curves(counts, gen_hist, imp_hist)
    d = fnmr - fmr  # non-decreasing along the edges
    C = d.shape[-1]
    k = np.clip((d < 0).sum(axis=-1), 1, max(C - 1, 1))[..., None]
    d0, d1 = np.take_along_axis(d, k - 1, -1)[..., 0], np.take_along_axis(d, k, -1)[..., 0]
    x0, x1 = np.take_along_axis(fmr, k - 1, -1)[..., 0], np.take_along_axis(fmr, k, -1)[..., 0]
    y0 = np.take_along_axis(fnmr, k - 1, -1)[..., 0]
    lam = np.nan_to_num(np.clip(_div(-d0, d1 - d0), 0, 1))
    eer = x0 + lam * (x1 - x0)
    return auc, np.where(np.isfinite(eer), eer, y0)


# ----------------------------------------------------------------------------- intervals from replicates

def _mean(x: np.ndarray) -> np.ndarray:
    """Mean over axis 0 of the finite values; NaN (no warning) where there are none."""
    fin = np.isfinite(x)
    n = fin.sum(axis=0)
    return np.where(n > 0, np.where(fin, x, 0.0).sum(axis=0) / np.maximum(n, 1), np.nan)


def _q(x: np.ndarray, p: float) -> np.ndarray:
    """Quantile over axis 0 of the finite values; NaN (no warning) where there are none."""
    if not x.shape[0]:
        return np.full(x.shape[1:], np.nan)
    ok = np.isfinite(x).any(axis=0)
    return np.where(ok, np.nanquantile(np.where(ok, x, 0.0), p, axis=0), np.nan)


def _sd(x: np.ndarray) -> np.ndarray:
    """Standard deviation (ddof 1) over axis 0 of the finite values; NaN (no warning) with fewer than two."""
    fin = np.isfinite(x)
    n = fin.sum(axis=0)
    m = _mean(x)
    d = np.where(fin, x - np.where(np.isfinite(m), m, 0.0), 0.0)
    return np.where(n > 1, np.sqrt((d**2).sum(axis=0) / np.maximum(n - 1, 1)), np.nan)


def _clean(x: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(x), x, np.nan)


def interval_from_replicates(method: str, estimate, replicates: np.ndarray, v_estimate=None, level: float = 0.95,
                             alternative: Alternative = "two-sided", *, seed: int | None = None,
                             resolution: dict | None = None, errors=None, comparisons=None,
                             bounds: tuple[float, float] | None = None) -> IntervalResult:
    """Interval of ``method`` from replicates ``(B, ...)`` (replicate 0, the plug-in, excluded by the caller).

    ``v_estimate``: the V-statistic version (recentered/gaussian; defaults to ``estimate``: no correction).
    Non-finite replicates (e.g. a resample without comparisons of a group) are ignored and counted; with no
    finite replicate (or a NaN estimate: no comparisons) the bounds are NaN and the note says why.
    ``bounds``: the parameter's range (``(0, 1)`` for rates); the interval is clipped to it.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    theta = np.asarray(estimate, float)
    reps = _clean(np.asarray(replicates, float))
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    lo_p, hi_p = ((0.0, level) if alternative == "less" else ((1 - level) / 2, (1 + level) / 2))
    if method in ("recentered", "gaussian"):
        err = reps - tv
        sd = _sd(err)
        if method == "recentered":
            lo, hi = theta + _q(err, lo_p), theta + _q(err, hi_p)
        else:
            z = norm.ppf(level if alternative == "less" else (1 + level) / 2)
            centre = theta + _mean(err) if err.shape[0] else theta
            lo, hi = centre - z * sd, centre + z * sd
    elif method in BOOTSTRAP:
        sd = _sd(reps)
        lo, hi = _q(reps, lo_p), _q(reps, hi_p)
    else:
        raise ValueError(f"unknown bootstrap method {method!r}; choose from {BOOTSTRAP}")
    if bounds is not None:
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    if alternative == "less":
        lo = np.where(np.isnan(hi), np.nan, 0.0 if bounds is None else bounds[0])
    n_bad = int(np.sum(~np.isfinite(reps))) if reps.size else 0
    note = f"{n_bad} non-finite replicate values ignored" if n_bad else None
    if not np.any(np.isfinite(theta)):
        note = "no comparisons (or an undefined estimate): NaN"
    elif not np.any(np.isfinite(reps)):
        note = "no finite replicate (e.g. a group without comparisons in every resample): NaN"
    if method in ("recentered", "gaussian") and v_estimate is None:
        note = (note + "; " if note else "") + "no V-statistic correction (theta~ = theta)"
    def sc(x):
        x = np.asarray(x, float)
        return float(x) if x.ndim == 0 else x
    return IntervalResult(sc(theta), ConfidenceInterval(sc(lo), sc(hi)), method, level, sc(sd), errors, comparisons,
                          alternative, n_resamples=int(reps.shape[0]), seed=seed, resolution=resolution,
                          bootstrap_distribution=reps, note=note,
                          extra={} if v_estimate is None else {"v_statistic": sc(tv)})


def normalized_uncertainty(estimate, replicates: np.ndarray, v_estimate=None) -> np.ndarray:
    """The similarity-scoring paper's eq. 11: ``sd(theta* - theta~) / theta`` (inf/NaN when theta is 0)."""
    theta = np.asarray(estimate, float)
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    sd = _sd(_clean(np.asarray(replicates, float)) - tv)
    with np.errstate(divide="ignore", invalid="ignore"):
        return sd / np.abs(theta)


def sup_t_band(estimate: np.ndarray, replicates: np.ndarray, v_estimate: np.ndarray | None = None,
               level: float = 0.95) -> tuple[np.ndarray, np.ndarray, float]:
    """Simultaneous band over the last axis (see module doc): (lower, upper, critical value c)."""
    theta = np.asarray(estimate, float)
    tv = theta if v_estimate is None else np.asarray(v_estimate, float)
    err = _clean(np.asarray(replicates, float)) - tv
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
    """Fairness measures of per-group rates ``(..., m)``: {(rate, measure): (...)} for FMR, FNMR, combined."""
    from matchaudit.metrics import fairness

    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for rate, x in (("FMR", fmr), ("FNMR", fnmr)):
            for name, val in fairness.summary_measures(x).items():
                out[(rate, name)] = val
        for name, val in fairness.combined_measures(fmr, fnmr).items():
            out[("combined", name)] = val
    return out


__all__ = ["BOOTSTRAP", "SCHEME_OF", "VStatistic", "auc_eer", "det_replicates", "fmr_at_targets",
           "fnmr_at_fmr_grid", "fnmr_at_targets", "fnmr_v_at_targets", "interval_from_replicates",
           "measure_replicates", "normalized_uncertainty", "rates_at_threshold", "sup_t_band", "v_statistic",
           "view_names"]
