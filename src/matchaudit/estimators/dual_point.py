"""Rates at FNMR targets (the dual operating point) on every replicate of the score views, exactly: the
threshold is re-derived in each replicate from its own weighted genuine comparisons.

At FNMR target beta the audit's threshold (:meth:`matchaudit.metrics.rates.Rates.threshold_at_fnmr`) accepts
exactly the comparisons scoring at least ``c``, the lowest distinct genuine score whose cumulative genuine
weight ``W(s <= c)`` over the total ``G`` fails ``W / G <= beta`` — under either decision rule: with ``>=``
the threshold is ``c`` itself, with ``>`` the highest observed score below ``c``, and no comparison scores in
between. So one ascending pass over the genuine comparisons finds ``c`` per replicate and a second reads, at
``c``, each view's genuine weight below it (FNMR) and impostor weight from it up (FMR): the overall view over the
threshold impostors (``threshold_impostors``), a group over its same-group impostors, as the audit's records.
Weights follow the score views' units (:mod:`.score_views`); the plug-in (every weight 1) is the audit's own
numbers, tested equal. The second pass runs over every comparison, unless the calibration sweep of the same
weights gave each view's totals and the weights are whole (every bootstrap's): then every sum is exact, and it runs
down from the top score to the lowest ``c`` only (the demo's bootstrap at B = 1,000: 4.4 -> 0.17 s).
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
    for l in range(w.shape[0]):
        if also_all:
            acc[0, l] += w[l]
        if g > 0:
            acc[g, l] += w[l]


@nb.njit(cache=True)
def _cuts(gpos: np.ndarray, gstart: np.ndarray, kind: np.ndarray, u: np.ndarray, v: np.ndarray, UT: np.ndarray,
          betas: np.ndarray, gen_all: np.ndarray, n: int, cut: np.ndarray) -> None:
    """``cut[t * L + l]`` (``L`` lanes): the start of the first tie block at which lane ``l``'s cumulative genuine
    weight over ``gen_all[l]`` fails ``<= betas[t]`` (``n``: none; 0 without genuine weight: rates NaN). ``gpos``:
    the genuine comparisons' positions (scores ascending), ``gstart``: the start of each one's tie block; blocks
    without genuine comparisons leave the sum as it was, so only blocks with some are checked."""
    T, L, G = betas.shape[0], UT.shape[1], gpos.shape[0]
    wl = np.empty(L)
    cum = np.zeros(L)
    for t in range(T):
        for l in range(L):
            cut[t * L + l] = 0 if gen_all[l] <= 0 else n
    k = 0
    while k < G:
        start = gstart[k]
        while k < G and gstart[k] == start:
            p = gpos[k]
            cal.lane_weights(kind[p], u[p], v[p], UT, wl)
            for l in range(L):
                cum[l] += wl[l]
            k += 1
        for t in range(T):
            for l in range(L):
                if cut[t * L + l] == n and not cum[l] / gen_all[l] <= betas[t]:
                    cut[t * L + l] = start


@nb.njit(cache=True)
def _snap(cut: np.ndarray, order: np.ndarray, p: int, i: int, acc_g: np.ndarray, acc_i: np.ndarray,
          at_g: np.ndarray, at_i: np.ndarray) -> int:
    """Copy each view's sums ``acc`` (V, L) to ``at`` (T, V, L) for every (target, lane) whose cut-off is
    position ``i``; ``order`` visits the cut-offs in the pass's direction, from its ``p``-th. Returns the next."""
    L = acc_g.shape[1]
    while p < cut.shape[0] and cut[order[p]] == i:
        t, l = order[p] // L, order[p] % L
        at_g[t, :, l] = acc_g[:, l]
        at_i[t, :, l] = acc_i[:, l]
        p += 1
    return p


@nb.njit(cache=True)
def dual_sweep(score: np.ndarray, gen: np.ndarray, view: np.ndarray, ref: np.ndarray, kind: np.ndarray,
               u: np.ndarray, v: np.ndarray, UT: np.ndarray, n_views: int, gpos: np.ndarray, gstart: np.ndarray,
               betas: np.ndarray, totals: np.ndarray, out: np.ndarray) -> None:
    """FMR and FNMR of every view at each FNMR target's threshold, for the columns (lanes) of unit weights ``UT``
    (units, lanes); ``out`` (lanes, V, T, 2), NaN where a view has no weight in a class. Comparisons
    sorted by ``score`` ascending; ``ref`` marks the overall view's threshold impostors (module doc).

    ``totals`` (lanes, V, 2) empty: one pass up from the lowest score adds each view's weight below every cut-off
    and, at its end, the views' totals. Else it holds each view's genuine and impostor totals (the calibration
    sweep's, summed in the same order) and the weights are integers, so every sum is exact: the pass runs down from
    the top score to the lowest cut-off only, and ``total - above`` is the weight below, to the bit."""
    n, T, L = score.shape[0], betas.shape[0], UT.shape[1]
    given = totals.shape[0] == L
    wl = np.empty(L)
    gen_all = np.zeros(L)
    if given:
        gen_all[:] = totals[:, 0, 0]
    else:
        for k in range(gpos.shape[0]):
            p = gpos[k]
            cal.lane_weights(kind[p], u[p], v[p], UT, wl)
            for l in range(L):
                gen_all[l] += wl[l]
    cut = np.empty(T * L, np.int64)
    _cuts(gpos, gstart, kind, u, v, UT, betas, gen_all, n, cut)
    at_g = np.zeros((T, n_views, L))  # the sums at each cut-off, then the weights below it
    at_i = np.zeros((T, n_views, L))
    acc_g = np.zeros((n_views, L))
    acc_i = np.zeros((n_views, L))
    if given:  # down from the top: acc = the weights at and above position i
        order = np.argsort(cut)[::-1]
        p = _snap(cut, order, 0, n, acc_g, acc_i, at_g, at_i)
        for i in range(n - 1, (cut.min() if cut.size else n) - 1, -1):
            cal.lane_weights(kind[i], u[i], v[i], UT, wl)
            _add(wl, view[i], acc_g if gen[i] else acc_i, gen[i] or ref[i])
            if p < cut.shape[0] and cut[order[p]] == i:  # tested here: a call per comparison doubled the pass
                p = _snap(cut, order, p, i, acc_g, acc_i, at_g, at_i)
        tot_g, tot_i = totals[:, :, 0].T.copy(), totals[:, :, 1].T.copy()
        at_g, at_i = tot_g - at_g, tot_i - at_i
    else:  # up from the bottom: acc = the weights below position i, the totals at the end
        order = np.argsort(cut)
        p = 0
        for i in range(n):
            if p < cut.shape[0] and cut[order[p]] == i:
                p = _snap(cut, order, p, i, acc_g, acc_i, at_g, at_i)
            cal.lane_weights(kind[i], u[i], v[i], UT, wl)
            _add(wl, view[i], acc_g if gen[i] else acc_i, gen[i] or ref[i])
        _snap(cut, order, p, n, acc_g, acc_i, at_g, at_i)
        tot_g, tot_i = acc_g, acc_i
    for t in range(T):
        for vv in range(n_views):
            for l in range(L):
                it, gt = tot_i[vv, l], tot_g[vv, l]
                out[l, vv, t, FMR] = (it - at_i[t, vv, l]) / it if it > 0 else np.nan
                out[l, vv, t, FNMR] = at_g[t, vv, l] / gt if gt > 0 else np.nan


@nb.njit(parallel=True, cache=True)
def _lanes(score, gen, view, ref, kind, u, v, UT, n_views, gpos, gstart, betas, totals, out) -> None:
    L = UT.shape[2]
    for c in nb.prange(UT.shape[0]):
        dual_sweep(score, gen, view, ref, kind, u, v, UT[c], n_views, gpos, gstart, betas, totals[c * L:(c + 1) * L],
                   out[c * L:(c + 1) * L])


def dual_rates(views: ScoreViews, betas: np.ndarray, U: np.ndarray, kind: np.ndarray | None = None,
               u: np.ndarray | None = None, summaries: np.ndarray | None = None) -> np.ndarray:
    """(R, V, T, 2) FMR and FNMR per replicate (unit weights ``U``, (R, units)), view and FNMR target;
    ``kind``/``u`` replace the views' own (per-comparison weights, as :meth:`.score_views.Runner.run`).
    ``summaries``: the calibration sweep's (R, V, S) of the same weights; where the weights are integers (every
    bootstrap's) and every impostor is a threshold impostor, their totals let the pass stop at the cut-offs."""
    betas = np.asarray(betas, np.float64)
    kind = views.kind if kind is None else kind
    u = views.u if u is None else u
    UT = views.weight_blocks(U)
    V, L = len(views.names), UT.shape[2]
    gpos, gstart = views.genuine_blocks
    totals = np.zeros((0, V, 2))
    if summaries is not None and _exact(U, views.n) and views.every_impostor_is_reference:
        totals = np.zeros((UT.shape[0] * L, V, 2))
        totals[:U.shape[0]] = summaries[..., [cal.W_TAR, cal.W_NON]]
    out = np.empty((UT.shape[0] * L, V, betas.size, 2))
    _lanes(views.score, views.genuine, views.view, views.reference, kind, u, views.v, UT, V, gpos, gstart, betas,
           totals, out)
    return out[:U.shape[0]]


def _exact(U: np.ndarray, n: int) -> bool:
    """Whole unit weights whose comparison weights (at most max(U)^2) sum exactly in float64 over ``n``."""
    top = float(np.abs(U).max()) if U.size else 0.0
    return bool(np.all(U == np.round(U))) and n * max(top, 1.0) ** 2 < 2.0 ** 53


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
