"""From posterior draws to error rates: population (parametric) and finite-sample (labels drawn) versions.

Decision rule: accept iff ``s >= t`` (default) or ``s > t``. Threshold at FMR target ``alpha``: the lowest
candidate threshold (a score value, or +inf) whose FMR is at most ``alpha`` (the "at most" rule); for the
parametric model ``t = ISF_0(alpha)`` exactly (ties have probability 0, so the rule does not matter there);
for counted rates the rule is :func:`matchaudit.definitions.lowest_passing`, the one the exact metrics use.

* population: ``FMR(t) = S_0(t)``, ``FNMR(t) = F_1(t)`` of the fitted two-piece components, per draw;
* finite-sample: per draw, unlabelled pairs get labels drawn from their posterior match probability and
  labelled pairs keep theirs; rates are then counted on the actual pairs, as ground truth would be.
  :func:`empirical_at_fmr` accepts fractional match weights too (the Bayesian Calibration baseline uses them).
"""

from __future__ import annotations

import warnings

import numpy as np

from matchaudit.definitions import Rule, lowest_passing
from matchaudit.labelfree.model import Distribution



def band(x: np.ndarray, level: float, axis: int = 0) -> dict[str, np.ndarray]:
    """Posterior median and equal-tailed credible band at ``level`` along ``axis`` (NaN draws ignored)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):  # +inf thresholds, all-NaN rates
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, med, hi = np.nanquantile(x, [(1.0 - level) / 2.0, 0.5, (1.0 + level) / 2.0], axis=axis)
    return {"median": med, "lower": lo, "upper": hi}


# ----------------------------------------------------------------------------- population (parametric)
def population_at_fmr(d0: Distribution, d1: Distribution, alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds and FNMR at each FMR target: arrays (draws, targets). ``d0``/``d1``: the non-match and match
    distributions of the draws (:func:`matchaudit.labelfree.model.distribution`)."""
    a = np.asarray(alphas, dtype=float)[None, :]
    t = d0.column().isf(a)
    return t, d1.column().cdf(t)


def population_global(d0s: list[Distribution], d1s: list[Distribution], weights: np.ndarray, alpha: float,
                      iters: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One threshold per draw whose pooled non-match survival ``sum_g w_g S_0g(t)`` equals ``alpha``
    (``weights`` (draws, groups) sum to 1: each group's share of non-matches), and every group's FMR and FNMR
    there. Bisection between the groups' own thresholds, which bracket the pooled one."""
    own = np.stack([d.isf(alpha) for d in d0s], axis=1)
    lo, hi = own.min(axis=1), own.max(axis=1)

    def pooled(t: np.ndarray) -> np.ndarray:
        return sum(weights[:, g] * d.sf(t) for g, d in enumerate(d0s))

    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = pooled(mid) > alpha
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    t = 0.5 * (lo + hi)
    fmr = np.stack([d.sf(t) for d in d0s], axis=1)
    fnmr = np.stack([d.cdf(t) for d in d1s], axis=1)
    return t, fmr, fnmr


# ----------------------------------------------------------------------------- finite-sample (counted)
def empirical_at_fmr(scores: np.ndarray, match: np.ndarray, alphas: np.ndarray, rule: Rule = ">=",
                     counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold, achieved FMR and FNMR at each target for every row of ``match`` (draws, pairs) in [0, 1].

    Returns arrays (draws, targets); the threshold is +inf when no score qualifies. Exact for 0/1 labels.
    ``counts``: pairs per entry (entries = distinct scores or bins, :func:`binned.compress`); ``match`` is then
    the number of matches among them (0 to count), and each entry counts like that many pairs at its score.
    """
    scores = np.asarray(scores, dtype=float)
    match = np.atleast_2d(np.asarray(match, dtype=float))
    alphas = np.asarray(alphas, dtype=float)
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    u = np.r_[np.inf, s[starts]]  # candidate thresholds, descending; index 0 = +inf
    m1 = np.add.reduceat(match[:, order], starts, axis=1)
    if counts is None:
        m0 = np.add.reduceat(1.0 - match[:, order], starts, axis=1)
    else:
        m0 = np.add.reduceat(np.asarray(counts, dtype=float)[order][None, :] - match[:, order], starts, axis=1)
    c1 = np.concatenate([np.zeros((match.shape[0], 1)), np.cumsum(m1, axis=1)], axis=1)
    c0 = np.concatenate([np.zeros((match.shape[0], 1)), np.cumsum(m0, axis=1)], axis=1)
    if rule == ">":  # threshold u_k accepts only the k-1 larger values
        c1 = np.concatenate([c1[:, :1], c1[:, :-1]], axis=1)
        c0 = np.concatenate([c0[:, :1], c0[:, :-1]], axis=1)
    n0, n1 = m0.sum(axis=1, keepdims=True), m1.sum(axis=1, keepdims=True)
    last = u.size - 1
    with np.errstate(invalid="ignore", divide="ignore"):  # ascending thresholds: the project rule of metrics.rates
        pos = lowest_passing(c0[:, ::-1] / n0, alphas)  # ascending candidates; u.size: none passes (+inf)
        k = np.where(pos == u.size, 0, last - pos)
        rows = np.arange(c0.shape[0])[:, None]
        return u[k], c0[rows, k] / n0, (n1 - c1[rows, k]) / n1


def rates_at(scores: np.ndarray, match: np.ndarray, thresholds: np.ndarray, rule: Rule = ">=",
             counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """FMR and FNMR (draws,) of match weights (draws, pairs) at one threshold per draw (``counts``: pairs per
    entry, ``match`` the matches among them, as in :func:`empirical_at_fmr`)."""
    t = np.asarray(thresholds, dtype=float)[:, None]
    accept = scores[None, :] >= t if rule == ">=" else scores[None, :] > t
    non = 1.0 - match if counts is None else np.asarray(counts, dtype=float)[None, :] - match
    with np.errstate(invalid="ignore", divide="ignore"):
        fmr = (non * accept).sum(axis=1) / non.sum(axis=1)
        fnmr = (match * ~accept).sum(axis=1) / match.sum(axis=1)
    return fmr, fnmr
