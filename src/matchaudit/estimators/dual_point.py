"""Rates at FNMR targets (the dual operating point) on every replicate of the score views, exactly: the
threshold is re-derived in each replicate from its own weighted genuine comparisons.

At FNMR target beta the audit's threshold (:meth:`matchaudit.metrics.rates.Rates.threshold_at_fnmr`) accepts
exactly the comparisons scoring at least ``c``, the lowest distinct genuine score whose cumulative genuine
weight ``W(s <= c)`` over the total ``G`` fails ``W / G <= beta`` — under either decision rule: with ``>=``
the threshold is ``c`` itself, with ``>`` the highest observed score below ``c``, and no comparison scores in
between. So one ascending pass finds ``c`` per replicate and a second reads, at ``c``, each view's genuine
weight below it (FNMR) and impostor weight from it up (FMR): the overall view over the threshold impostors
(``threshold_impostors``), a group over its same-group impostors, as the audit's records. Weights follow the
score views' units (:mod:`.score_views`); the plug-in (every weight 1) is the audit's own numbers, tested equal.
"""

from __future__ import annotations

from typing import Any, Callable

import numba as nb
import numpy as np

from matchaudit.definitions import Alternative
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.score_views import ScoreViews, Summaries
from matchaudit.metrics import calibration as cal

FMR, FNMR = 0, 1
"""Columns of the rates (last axis)."""


@nb.njit(cache=True)
def _add(w: np.ndarray, g: int, acc: np.ndarray, also_all: bool) -> None:
    for l in range(cal.LANES):
        if also_all:
            acc[0, l] += w[l]
        if g > 0:
            acc[g, l] += w[l]


@nb.njit(cache=True)
def dual_sweep(score: np.ndarray, gen: np.ndarray, view: np.ndarray, ref: np.ndarray, kind: np.ndarray,
               u: np.ndarray, v: np.ndarray, UT: np.ndarray, n_views: int, betas: np.ndarray, out: np.ndarray) -> None:
    """FMR and FNMR of every view at each FNMR target's threshold, for ``LANES`` columns of unit weights
    ``UT`` (units, LANES); ``out`` (LANES, V, T, 2), NaN where a view has no weight in a class. Comparisons
    sorted by ``score`` ascending; ``ref`` marks the overall view's threshold impostors (module doc)."""
    n, T, L = score.shape[0], betas.shape[0], cal.LANES
    wl = np.empty(L)
    gen_all = np.zeros(L)  # the genuine weight, the cutoffs' denominator (the views' totals come from the last pass)
    for i in range(n):
        if gen[i]:
            cal._weights(kind[i], u[i], v[i], UT, wl)
            for l in range(L):
                gen_all[l] += wl[l]
    cut = np.full(T * L, n, np.int64)  # first position of the cutoff's tie block (n: none)
    cum = np.zeros(L)
    i = 0
    while i < n:
        j = i
        while j < n and score[j] == score[i]:
            if gen[j]:
                cal._weights(kind[j], u[j], v[j], UT, wl)
                for l in range(L):
                    cum[l] += wl[l]
            j += 1
        for t in range(T):
            for l in range(L):
                fails = gen_all[l] <= 0 or not cum[l] / gen_all[l] <= betas[t]  # no genuine weight: rates NaN
                if cut[t * L + l] == n and fails:
                    cut[t * L + l] = i
        i = j
    order = np.argsort(cut)
    below_g = np.zeros((n_views, L))  # after the pass: each view's totals, summed in the same order as the cuts'
    below_i = np.zeros((n_views, L))
    at_g = np.zeros((T, n_views, L))  # the weights below each cutoff
    at_i = np.zeros((T, n_views, L))
    p = 0
    for i in range(n + 1):
        while p < T * L and cut[order[p]] == i:
            t, l = order[p] // L, order[p] % L
            for vv in range(n_views):
                at_g[t, vv, l] = below_g[vv, l]
                at_i[t, vv, l] = below_i[vv, l]
            p += 1
        if i == n:
            break
        cal._weights(kind[i], u[i], v[i], UT, wl)
        _add(wl, view[i], below_g if gen[i] else below_i, gen[i] or ref[i])
    for t in range(T):
        for vv in range(n_views):
            for l in range(L):
                it, gt = below_i[vv, l], below_g[vv, l]
                out[l, vv, t, FMR] = (it - at_i[t, vv, l]) / it if it > 0 else np.nan
                out[l, vv, t, FNMR] = at_g[t, vv, l] / gt if gt > 0 else np.nan


@nb.njit(parallel=True, cache=True)
def _lanes(score, gen, view, ref, kind, u, v, UT, n_views, betas, out) -> None:
    L = cal.LANES
    for c in nb.prange(UT.shape[0]):
        dual_sweep(score, gen, view, ref, kind, u, v, UT[c], n_views, betas, out[c * L:(c + 1) * L])


def dual_rates(views: ScoreViews, betas: np.ndarray, U: np.ndarray, kind: np.ndarray | None = None,
               u: np.ndarray | None = None) -> np.ndarray:
    """(R, V, T, 2) FMR and FNMR per replicate (unit weights ``U``, (R, units)), view and FNMR target;
    ``kind``/``u`` replace the views' own (per-comparison weights, as :meth:`.score_views.Runner.run`)."""
    betas = np.asarray(betas, np.float64)
    kind = views.kind if kind is None else kind
    u = views.u if u is None else u
    UT = np.stack(cal.lanes(U))
    out = np.empty((UT.shape[0] * cal.LANES, len(views.names), betas.size, 2))
    _lanes(views.score, views.genuine, views.view, views.reference, kind, u, views.v, UT, len(views.names), betas,
           out)
    return out[:U.shape[0]]


def interval_records(s: Summaries, names: tuple[str, ...], betas: tuple[float, ...], method: str, level: float,
                     alternative: Alternative, n_resamples: int, seed: int,
                     point: Callable[[float, str], dict[str, Any]], base: dict[str, Any],
                     zero: Callable[[str, int, str, int], Any]) -> list[dict[str, Any]]:
    """Interval records at each FNMR target (the audit's ``kind="fnmr_target"`` rows): FMR of every view and
    FNMR of each group, from the bootstrap ``s`` of the views (``s.dual``): percentile for the identity
    bootstraps, centred on the V-statistic version for ``recentered``; a rate without errors gets
    ``zero(metric, view, method, comparisons)``, its zero-error bound, as at the other operating points.
    ``point(beta, view)``: the exact audit's operating-point record there (threshold, counts); ``base``: keys
    every record carries."""
    est, v_est, reps = s.dual
    out = []
    for t, beta in enumerate(betas):
        for k, name in enumerate(names):
            op = point(beta, name)
            for metric, col in (("FMR", FMR), ("FNMR", FNMR)):
                if metric == "FNMR" and k == 0:
                    continue  # at most the target by construction, as FMR overall at an FMR target
                m = metric.lower()
                errors, comparisons = op[f"{m}_errors"], op[f"{m}_comparisons"]
                if errors == 0 and comparisons:
                    r = zero(metric, k, method, comparisons)
                else:
                    r = bs.interval_from_replicates(method, est[k, t, col], reps[:, k, t, col],
                                                    None if v_est is None else v_est[k, t, col], level,
                                                    alternative, seed=seed, bounds=(0.0, 1.0), errors=errors,
                                                    comparisons=comparisons)
                r.n_resamples, r.seed, r.weighting = n_resamples, seed, "pooled"
                out.append({**base, "metric": metric, "kind": "fnmr_target", "target": float(beta),
                            "threshold": op["threshold"], "group": name, **r.to_dict()})
    return out


__all__ = ["FMR", "FNMR", "dual_rates", "dual_sweep", "interval_records"]
