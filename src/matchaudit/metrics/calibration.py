"""Calibration and cost metrics of target (genuine) and non-target (impostor) scores, exact, as the BOSARIS
toolkit, bob.measure and the NIST SRE scorers define them (docs/calibration.md).

* ``cllr``: 0.5 (mean log2(1 + e^-s) over targets + mean log2(1 + e^s) over non-targets), s natural-log LLRs;
* ``min_cllr``: the Cllr of the optimally calibrated scores: weighted PAV of the pooled scores sorted, comparisons
  of equal score in one block (BOSARIS ``opt_loglr``), PAV posteriors to LLRs by subtracting the prior log-odds
  log(W_tar / W_non);
* ``act_dcf``: the normalised DCF at the Bayes threshold ``-log(p/(1-p) c_miss/c_fa)``, accept iff ``s >= t``
  (the project's rule, :mod:`matchaudit.definitions`);
* ``min_dcf``: the normalised DCF minimised over every threshold (:func:`normalized_dcf`, the one definition);
* ``ape_curve``: actual and minimum normalised Bayes error against the prior log-odds (BOSARIS ``ape_plot``,
  Brümmer's NBER plot), ``p_target = sigmoid(eta)``, ``c_miss = c_fa = 1``, with the DR30 line.

Every comparison may carry a float weight (a resample's multiplicity): all metrics are those of the list with each
comparison repeated by its weight. One compiled pass, :func:`sweep`, computes them all, for the plug-ins here and
for every bootstrap replicate (:mod:`matchaudit.estimators.score_views`).

Infinities: a PAV block holding only targets has posterior LLR +inf and one holding only non-targets -inf; their
terms are ``weight x log(1 + e^-inf) = 0`` (the limit), and no target can fall in a target-free block, so minCllr
is always finite. Scores of +-inf are accepted (cllr is then infinite if a target scores -inf or a non-target
+inf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np

LN2 = math.log(2.0)
SINGLE, PRODUCT, SELF = 0, 1, 2
"""How a comparison's weight follows from its units' weights ``U``: ``U[u]``, ``U[u] U[v]``, or ``C(U[u], 2)``
(self-pairs of the within-identity bootstrap)."""

# columns of a sweep's summaries (then act DCF and min DCF at each operating point)
W_TAR, W_NON, CLLR, MIN_CLLR, MEAN_TAR, SD_TAR, MEAN_NON, SD_NON = range(8)
N_FIXED = 8


def normalized_dcf(fnmr, fmr, p_target, c_miss=1.0, c_fa=1.0):
    """Normalised detection cost (NIST SRE): ``(c_miss p FNMR + c_fa (1-p) FMR) / min(c_miss p, c_fa (1-p))``,
    of scalars or arrays; 1 is the cost of the better of accepting all or rejecting all."""
    return (c_miss * p_target * fnmr + c_fa * (1 - p_target) * fmr) / min(c_miss * p_target, c_fa * (1 - p_target))


_ndcf = nb.njit(cache=True)(normalized_dcf)


def bayes_threshold(p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
    """The Bayes decision threshold for LLR scores: ``-log(p/(1-p) c_miss/c_fa)`` (accept iff ``s >= t``)."""
    return -(math.log(p_target / (1 - p_target)) + math.log(c_miss / c_fa))


def dr30(prior_log_odds: np.ndarray, n_tar: int, n_non: int) -> np.ndarray:
    """The DR30 line of a normalised Bayes error plot (Doddington's rule of 30): below it an error rate rests on
    fewer than 30 misses and fewer than 30 false alarms, ``min(p min(1, 30/N_tar), (1-p) min(1, 30/N_non)) /
    min(p, 1-p)`` with ``p = sigmoid(eta)``."""
    p = 1 / (1 + np.exp(-np.asarray(prior_log_odds, float)))
    with np.errstate(divide="ignore", invalid="ignore"):
        miss, fa = min(1.0, 30 / n_tar) if n_tar else np.nan, min(1.0, 30 / n_non) if n_non else np.nan
        return np.minimum(p * miss, (1 - p) * fa) / np.minimum(p, 1 - p)


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + e^x)`` without overflow."""
    return np.logaddexp(0.0, x)


@nb.njit(cache=True)
def _softplus(x: float) -> float:
    if x > 0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


LANES, MAX_LANES = 8, 64
"""Weight rows swept together (lanes; :func:`lane_width`): the per-lane updates are contiguous, so the compiler
vectorises them, and the per-comparison work (loads, the weights' indices, the PAV branches) is shared by every
lane. The demo's views (2.0e6 comparisons), a batch of 128 rows on two threads: 0.55 s in blocks of 8 lanes,
0.39 in 16, 0.23 in 32, 0.17-0.19 in 64, 0.30 in one block of 128."""
PAV_BYTES = 256 << 20
"""Budget of one thread's PAV stacks (16 bytes per lane and entry): above it a bootstrap's blocks stay narrow."""
_TT, _TN, _S1T, _S1N, _S2T, _S2N, _CT, _CN, _TOPA, _TOPB, _TIEB = range(11)  # per (view, lane) accumulators


@nb.njit(cache=True)
def lane_weights(kind: int, u: int, v: int, UT: np.ndarray, wl: np.ndarray) -> None:
    """The comparison's weight in every lane: ``U[u]``, ``U[u] U[v]`` or ``C(U[u], 2)`` (``UT`` is units x lanes)."""
    L = wl.shape[0]
    if kind == SINGLE:
        for l in range(L):
            wl[l] = UT[u, l]
    elif kind == PRODUCT:
        for l in range(L):
            wl[l] = UT[u, l] * UT[v, l]
    else:
        for l in range(L):
            wl[l] = UT[u, l] * (UT[u, l] - 1.0) * 0.5


@nb.njit(cache=True)
def _push(a: float, b: float, sa: np.ndarray, sb: np.ndarray, lane: int, base: int, depth: int) -> int:
    """Push block (a, b) (target, non-target weight) on lane ``lane``'s PAV stack at ``base`` and pool adjacent
    violators (previous posterior a/(a+b) >= this one's); returns the new depth. The stack's posteriors stay
    strictly increasing, so every block but the first holds a target: depth <= targets + 1."""
    if a + b == 0:
        return depth
    sa[lane, base + depth] = a
    sb[lane, base + depth] = b
    depth += 1
    while depth >= 2:
        top, below = base + depth - 1, base + depth - 2
        if sa[lane, below] * sb[lane, top] < sa[lane, top] * sb[lane, below]:
            break
        sa[lane, below] += sa[lane, top]
        sb[lane, below] += sb[lane, top]
        depth -= 1
    return depth


@nb.njit(cache=True)
def sweep(score: np.ndarray, gen: np.ndarray, view: np.ndarray, sp: np.ndarray, kind: np.ndarray, u: np.ndarray,
          v: np.ndarray, UT: np.ndarray, n_views: int, cut: np.ndarray, ops: np.ndarray, shift: float, calib: bool,
          bound: np.ndarray, out: np.ndarray) -> None:
    """Summaries of every view for the columns (lanes) of unit weights ``UT`` (units, lanes) in one pass. Each
    lane's sums are added in the same order whatever the number of lanes, so its summaries are the same bits.

    Comparisons are sorted by ``score`` ascending; ``gen`` marks targets; each is in view 0 and in view
    ``view[i]`` when that is > 0; its weight in lane l follows from ``kind``, ``u``, ``v`` (:func:`lane_weights`).
    ``sp``: ``log(1 + e^-s)`` of targets, ``log(1 + e^s)`` of non-targets (empty: no Cllr). ``cut[t]``: the first
    position whose score reaches operating point t's threshold (act DCF); ``ops`` (T, 3): (p, c_miss, c_fa).
    ``calib`` False skips the costs (moments only). ``bound`` (V,): PAV stack room per view (targets + 2).
    ``out`` (lanes, V, N_FIXED + 2T): see the column constants; undefined values (a class without weight) NaN.
    Moments are of ``s - shift`` (less cancellation), population SD (ddof 0).

    PAV: comparisons of equal score form one block; a block without targets always pools into the block before
    it, so non-targets are added to an open top block (``_TOPA``/``_TOPB``) and the stack is pushed and pooled
    at targets only; non-targets tied with a later target's score (``_TIEB``) are moved into its block.
    """
    n, T, L = score.shape[0], cut.shape[0], UT.shape[1]
    has_sp = sp.shape[0] == n
    acc = np.zeros((n_views, 11, L))
    gscore = np.full(n_views, np.nan)  # score of the target block open on top
    cur = np.full(n_views, np.nan)  # last score seen
    snap = np.zeros((T, n_views, 2, L))
    off = np.zeros(n_views + 1, np.int64)
    for k in range(n_views):
        off[k + 1] = off[k] + bound[k]
    sa = np.empty((L, off[n_views]))
    sb = np.empty((L, off[n_views]))
    depth = np.zeros((n_views, L), np.int64)
    wl = np.empty(L)
    order = np.argsort(cut)
    nxt = 0
    for i in range(n):
        while nxt < T and cut[order[nxt]] == i:
            snap[order[nxt], :, 0, :] = acc[:, _TT, :]
            snap[order[nxt], :, 1, :] = acc[:, _TN, :]
            nxt += 1
        s = score[i]
        d = s - shift
        g = view[i]
        lane_weights(kind[i], u[i], v[i], UT, wl)
        c = 0 if gen[i] else 1
        x = sp[i] if has_sp else 0.0
        for k in range(2 if g > 0 else 1):
            vv = 0 if k == 0 else g
            for l in range(L):
                w = wl[l]
                acc[vv, _TT + c, l] += w
                acc[vv, _S1T + c, l] += w * d
                acc[vv, _S2T + c, l] += w * d * d
            if has_sp:  # the Cllr sums (LLR scores only)
                for l in range(L):
                    acc[vv, _CT + c, l] += wl[l] * x
            if not calib:
                continue
            if c == 1:
                if s != cur[vv]:
                    cur[vv] = s
                    for l in range(L):
                        acc[vv, _TIEB, l] = 0.0
                for l in range(L):
                    acc[vv, _TOPB, l] += wl[l]
                    acc[vv, _TIEB, l] += wl[l]
            elif s == gscore[vv]:
                for l in range(L):
                    acc[vv, _TOPA, l] += wl[l]
            else:
                tie = s == cur[vv]
                for l in range(L):
                    tb = acc[vv, _TIEB, l] if tie else 0.0
                    depth[vv, l] = _push(acc[vv, _TOPA, l], acc[vv, _TOPB, l] - tb, sa, sb, l, off[vv], depth[vv, l])
                    acc[vv, _TOPA, l] = wl[l]
                    acc[vv, _TOPB, l] = tb
                gscore[vv] = s
                if not tie:
                    cur[vv] = s
                    for l in range(L):
                        acc[vv, _TIEB, l] = 0.0
    while nxt < T:
        snap[order[nxt], :, 0, :] = acc[:, _TT, :]
        snap[order[nxt], :, 1, :] = acc[:, _TN, :]
        nxt += 1
    out[:] = np.nan
    for l in range(L):
        for vv in range(n_views):
            a = acc[vv]
            wt, wn = a[_TT, l], a[_TN, l]
            out[l, vv, W_TAR] = wt
            out[l, vv, W_NON] = wn
            for c in range(2):
                w = a[_TT + c, l]
                if w > 0:
                    m = a[_S1T + c, l] / w
                    out[l, vv, MEAN_TAR + 2 * c] = shift + m
                    out[l, vv, SD_TAR + 2 * c] = math.sqrt(max(a[_S2T + c, l] / w - m * m, 0.0))
            if not (wt > 0 and wn > 0):
                continue
            if has_sp:
                out[l, vv, CLLR] = (a[_CT, l] / wt + a[_CN, l] / wn) / (2 * LN2)
            if not calib:
                continue
            depth[vv, l] = _push(a[_TOPA, l], a[_TOPB, l], sa, sb, l, off[vv], depth[vv, l])
            prior = math.log(wt / wn)
            ct, cn = 0.0, 0.0
            for j in range(off[vv], off[vv] + depth[vv, l]):
                pa, pb = sa[l, j], sb[l, j]
                if pa > 0 and pb > 0:
                    llr = math.log(pa / pb) - prior
                    ct += pa * _softplus(-llr)
                    cn += pb * _softplus(llr)
            out[l, vv, MIN_CLLR] = (ct / wt + cn / wn) / (2 * LN2)
            for t in range(T):
                p, cm, cf = ops[t, 0], ops[t, 1], ops[t, 2]
                out[l, vv, N_FIXED + t] = _ndcf(snap[t, vv, 0, l] / wt, (wn - snap[t, vv, 1, l]) / wn, p, cm, cf)
                best = _ndcf(0.0, 1.0, p, cm, cf)  # threshold -inf: accept all
                pa, pb = 0.0, 0.0
                for j in range(off[vv], off[vv] + depth[vv, l]):  # PAV block ends = the ROC convex hull's vertices
                    pa += sa[l, j]
                    pb += sb[l, j]
                    best = min(best, _ndcf(pa / wt, (wn - pb) / wn, p, cm, cf))
                out[l, vv, N_FIXED + T + t] = best


def lane_width(rows: int, stack: int, threads: int | None = None) -> int:
    """Lanes per block for a sweep of ``rows`` weight rows whose PAV stacks hold ``stack`` entries per lane (the
    views' bounds summed), blocks running on ``threads`` (default: Numba's): fewer rows than ``LANES`` take a lane
    each (a plug-in's one row: one lane, not ``LANES`` of which all but one weigh nothing: the V-statistic's
    per-comparison weights of 8.0e6 comparisons, padded to 8 lanes, took 0.5 GB twice and 1.2 s to lay out); more
    rows a multiple of ``LANES``, as wide as gives every thread a block, at most ``MAX_LANES`` and what fits
    ``PAV_BYTES``. Only the speed and the memory depend on it (:func:`sweep`)."""
    if rows < LANES:
        return max(rows, 1)
    threads = nb.get_num_threads() if threads is None else threads
    share = -(-rows // (max(threads, 1) * LANES)) * LANES  # rows per thread, rounded up to whole LANES
    fits = PAV_BYTES // (16 * max(stack, 1)) // LANES * LANES
    return max(LANES, min(MAX_LANES, share, fits))


def lanes(U: np.ndarray, width: int) -> np.ndarray:
    """Unit weights (R, units) as the sweep takes them: (blocks, units, width), the last padded with zero rows."""
    R = U.shape[0]
    pad = np.zeros((-(-R // width) * width, U.shape[1]))
    pad[:R] = U
    return np.ascontiguousarray(pad.reshape(-1, width, U.shape[1]).transpose(0, 2, 1))


def operating_array(operating_points) -> np.ndarray:
    """Operating points ((p_target, c_miss, c_fa), ...) as a (T, 3) float array."""
    return np.asarray(operating_points, float).reshape(-1, 3)


def cuts(sorted_scores: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """Position of each operating point's Bayes threshold among ascending scores: scores before it are rejected."""
    t = np.array([bayes_threshold(*op) for op in ops])
    return np.searchsorted(sorted_scores, t, side="left").astype(np.int64)


def summaries(tar, non, ops=(), tar_weights=None, non_weights=None, llr: bool = True) -> np.ndarray:
    """The sweep's summaries (N_FIXED + 2T,) of one list of weighted target and non-target scores."""
    tar, non = np.asarray(tar, float).ravel(), np.asarray(non, float).ravel()
    w = np.concatenate([np.ones(tar.size) if tar_weights is None else np.asarray(tar_weights, float),
                        np.ones(non.size) if non_weights is None else np.asarray(non_weights, float)])
    if w.size != tar.size + non.size or np.any(~(w >= 0)) or np.any(np.isinf(w)):
        raise ValueError("weights: one finite non-negative weight per score")
    s = np.concatenate([tar, non])
    gen = np.arange(s.size) < tar.size
    order = np.argsort(s, kind="stable")
    s, gen, w = s[order], gen[order], w[order]
    sp = softplus(np.where(gen, -s, s)) if llr else np.zeros(0)
    o = operating_array(ops)
    finite = s[np.isfinite(s)]
    bound = np.array([int(gen.sum()) + 2])
    width = lane_width(1, int(bound[0]))
    out = np.empty((width, 1, N_FIXED + 2 * o.shape[0]))
    sweep(s, gen, np.zeros(s.size, np.int32), sp, np.zeros(s.size, np.int8), np.arange(s.size), np.zeros(s.size, np.int64),
          lanes(w[None], width)[0], 1, cuts(s, o), o, float(finite.mean()) if finite.size else 0.0, True, bound, out)
    return out[0, 0]


def cllr(tar, non, tar_weights=None, non_weights=None) -> float:
    """Cllr (BOSARIS): 0.5 (weighted mean log2(1 + e^-s) over targets + over non-targets log2(1 + e^s)), bits;
    NaN without targets or non-targets."""
    return float(summaries(tar, non, (), tar_weights, non_weights)[CLLR])


def min_cllr(tar, non, tar_weights=None, non_weights=None) -> float:
    """minCllr (BOSARIS ``min_cllr``): Cllr after the optimal monotone recalibration (weighted PAV, ties pooled,
    prior log-odds removed); 0 for separated scores, 1 when the scores carry no information."""
    return float(summaries(tar, non, (), tar_weights, non_weights, llr=False)[MIN_CLLR])


def act_dcf(tar, non, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0, tar_weights=None,
            non_weights=None) -> float:
    """Actual normalised DCF: LLR scores decided at :func:`bayes_threshold`, accept iff ``s >= t``."""
    return float(summaries(tar, non, [(p_target, c_miss, c_fa)], tar_weights, non_weights, llr=False)[N_FIXED])


def min_dcf(tar, non, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0, tar_weights=None,
            non_weights=None) -> float:
    """Minimum normalised DCF over all thresholds (-inf and +inf included)."""
    return float(summaries(tar, non, [(p_target, c_miss, c_fa)], tar_weights, non_weights, llr=False)[N_FIXED + 1])


DEFAULT_PRIOR_LOG_ODDS = np.round(np.linspace(-7.0, 7.0, 71), 10)
"""The APE plot's default grid of prior log-odds (step 0.2)."""


@dataclass(frozen=True)
class ApeCurve:
    """Normalised Bayes error (C_miss = C_fa = 1, p = sigmoid(eta)) against the prior log-odds eta of one view:
    ``actual`` (scores as LLRs at the Bayes threshold; None when the scores are not LLRs), ``minimum`` (the best
    threshold) and the ``dr30`` line (:func:`dr30`)."""

    group: str
    prior_log_odds: np.ndarray
    actual: np.ndarray | None
    minimum: np.ndarray
    dr30: np.ndarray


def ape_ops(prior_log_odds) -> np.ndarray:
    """The operating points (sigmoid(eta), 1, 1) of an APE curve's grid."""
    eta = np.asarray(prior_log_odds, float)
    return np.stack([1 / (1 + np.exp(-eta)), np.ones(eta.size), np.ones(eta.size)], axis=1)


def ape_curve(tar, non, prior_log_odds=DEFAULT_PRIOR_LOG_ODDS, tar_weights=None, non_weights=None,
              group: str = "all") -> ApeCurve:
    """The APE / normalised Bayes error-rate curve (BOSARIS ``ape_plot``) of one list of LLR scores."""
    eta = np.asarray(prior_log_odds, float)
    s = summaries(tar, non, ape_ops(eta), tar_weights, non_weights, llr=False)
    T = eta.size
    return ApeCurve(group, eta, s[N_FIXED:N_FIXED + T], s[N_FIXED + T:], dr30(eta, np.size(tar), np.size(non)))


__all__ = [
    "act_dcf", "ape_curve", "ApeCurve", "bayes_threshold", "cllr", "DEFAULT_PRIOR_LOG_ODDS", "dr30", "lane_weights",
    "min_cllr", "min_dcf", "normalized_dcf", "summaries", "sweep",
]
