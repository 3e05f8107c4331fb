"""Bootstrap-t (studentized) intervals for a clustered rate under an identity bootstrap (#14 item 5).

A rate at a fixed threshold is a ratio of identity sums, ``p = sum_k e_k / sum_k g_k`` (``e_k`` errors among
identity k's ``g_k`` comparisons). Under vertex or double-or-nothing the replicate is ``p* = sum_k w_k e_k /
sum_k w_k g_k`` with the scheme's integer identity weights ``w`` (so it is recomputed here exactly, without the
engine), and its identity-clustered standard error is ``se*^2 = sum_k w_k (e_k - p* g_k)^2 / (sum_k w_k g_k)^2``,
the corrected Wilson's FNMR variance of the resample (``w = 1`` gives the estimate's own ``se``; a constant
factor such as K/(K-1) would cancel between ``se`` and ``t*``). The
interval is ``[p - t*_(1-a/2) se, p - t*_(a/2) se]`` from the quantiles of ``t* = (p* - p) / se*``, clipped to
[0, 1] (:func:`matchaudit.estimators.bootstrap.interval_from_replicates` with ``studentized=``).

Why: with a few dozen errors spread over identities whose rates are very unequal, the percentile interval of
``p*`` is too short on the side where the truth lies (its misses are almost all a truth above the interval:
coverage 0.89-0.92 at nominal 0.95, 100 identities x 4 samples, FNMR 3.6%); the studentized replicates carry
the link between a low rate and a low standard error that the percentile interval ignores. A replicate
without errors has ``se* = 0`` and ``t* = -inf``; when such resamples exceed a/2 the bootstrap-t bound is undefined
and the interval falls back to the percentile one (with a note).
"""

from __future__ import annotations

import numpy as np

from matchaudit import resampling as rs
from matchaudit.definitions import Rule
from matchaudit.estimators import intervals as iv
from matchaudit.engine.weights import layout_of
from matchaudit.metrics.tally import GenuineScores
from matchaudit.model import MatchData

STUDENTIZED = ("vertex", "double-or-nothing")  # identity bootstraps whose fixed-threshold rates are studentized


def studentize(estimate: float, replicates: np.ndarray, replicate_se: np.ndarray) -> np.ndarray:
    """``t* = (p* - p) / se*``; a replicate equal to the estimate with ``se* = 0`` gives 0, one below it with
    ``se* = 0`` (no error in the resample) -inf; NaN replicates stay NaN (dropped by the quantiles)."""
    reps, rse = np.asarray(replicates, float), np.asarray(replicate_se, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (reps - estimate) / rse
    return np.where((reps == estimate) & (rse == 0), 0.0, t)


def rate_studentization(scheme: rs.Scheme, data: MatchData, errors: np.ndarray, totals: np.ndarray,
                        n_resamples: int, chunk: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(se, t*, p*)`` of the rates ``sum errors / sum totals`` (per identity: (K,), or (M, K) for M rates at
    once) under replicates 1..B of an identity ``scheme``: its genuine weights, drawn again from the same
    counter-based keys as the engine's (so ``p*`` equals the engine's replicates), ``chunk`` replicates at a time
    (memory chunk x K); ``se`` from :func:`intervals.fnmr_variance`'s clustered variance, unweighted and per
    replicate (:func:`intervals.weighted_fnmr_variance`). Shapes: se (M,), t* and p* (B, M) (M dropped for (K,))."""
    e, g = np.asarray(errors, float), np.asarray(totals, float)
    p, v = iv.weighted_fnmr_variance(g, e, np.ones((1, g.shape[-1])))
    layout = layout_of(data)
    parts = [iv.weighted_fnmr_variance(g, e, scheme.identity_weights(np.arange(r0, min(n_resamples, r0 + chunk - 1)
                                                                               + 1), layout)[0])
             for r0 in range(1, n_resamples + 1, chunk)]
    reps = np.concatenate([x for x, _ in parts])
    rse = np.sqrt(np.concatenate([x for _, x in parts]))
    return np.sqrt(v[0]), studentize(p[0], reps, rse), reps


def target_studentization(scheme: rs.Scheme, data: MatchData, genuine: GenuineScores, t_hat: float,
                          thresholds: np.ndarray, rule: Rule, inside: np.ndarray, chunk: int = 64
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(se, t*, p*)`` of FNMR at an FMR target, each replicate at its own threshold (``thresholds`` (B,): the
    engine's exact replicate thresholds, replicates 1..B), per view (``inside`` (V, K): the identities of each
    view): identity k's errors ``e_k(t_b)`` at replicate b's threshold, its scheme weights drawn again from the
    same keys, ``p*_b = sum w e(t_b) / sum w g`` and ``se*_b`` its clustered standard error; ``se`` that of the
    estimate at ``t_hat``. The threshold's own variation is in ``p*`` (and so in the spread of ``t*``), not in
    ``se*``: what is studentized is the link between few errors and a small spread. Replicates are taken in the
    order of their thresholds, so each identity's errors are counted incrementally (one pass over the genuine
    scores). Shapes: se (V,), t* and p* (B, V)."""
    k = data.n_identities
    order = np.argsort(genuine.score, kind="stable")
    score, ident = genuine.score[order], genuine.identity[order]
    g = np.bincount(ident, minlength=k).astype(float)
    side = "left" if rule == ">=" else "right"  # errors: s < t under '>=', s <= t under '>'

    def errors_below(pos: int) -> np.ndarray:
        return np.bincount(ident[:pos], minlength=k).astype(float)

    e_hat = errors_below(int(np.searchsorted(score, t_hat, side)))
    p_hat, v = iv.weighted_fnmr_variance(g[None, :] * inside, e_hat[None, :] * inside, np.ones((1, k)))
    layout = layout_of(data)
    b = np.asarray(thresholds, float).size
    by = np.argsort(thresholds, kind="stable")
    pos = np.searchsorted(score, np.asarray(thresholds, float)[by], side)
    reps, rse = np.full((b, inside.shape[0]), np.nan), np.full((b, inside.shape[0]), np.nan)
    running, done = np.zeros(k), 0
    for c0 in range(0, b, chunk):
        idx = by[c0:c0 + chunk]
        w = scheme.identity_weights(idx + 1, layout)[0].astype(float)
        e = np.empty((idx.size, k))
        for i, p_end in enumerate(pos[c0:c0 + chunk]):
            running += np.bincount(ident[done:p_end], minlength=k)
            done = p_end
            e[i] = running
        for j, view in enumerate(inside):
            reps[idx, j], var = iv.rowwise_fnmr_variance(g * view, e * view, w)
            rse[idx, j] = np.sqrt(var)
    reps[np.isnan(thresholds)] = np.nan  # a replicate without a threshold has no rate (as the engine's)
    return np.sqrt(v[0]), studentize(p_hat, reps, rse), reps


__all__ = ["STUDENTIZED", "rate_studentization", "studentize", "target_studentization"]
