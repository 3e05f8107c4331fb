"""Small-sample correction of the within-identity (recentered) bootstrap (docs/intervals.md, "Few samples per
identity").

With identities fixed, identity k's genuine error count ``G_k = sum_{i<j} h_ij`` (``h`` = 1 for a rejected
genuine comparison) is a degree-2 U-statistic sum over its ``n_k`` samples, so
``Var(G_k) = m_k zeta2 + s_k zeta1`` with ``m_k`` its genuine comparisons, ``s_k = sum_i d_i (d_i - 1)``
(ordered pairs of comparisons sharing one sample; ``n(n-1)(n-2)`` for all pairs), ``zeta2 = p - p^2`` and
``zeta1 = E[h_12 h_13] - p^2``. The within-identity bootstrap's variance of the same count is exactly the
U-statistic variance of the empirical distribution (a kernel that is 0 on self-pairs), which at 3-4 samples
nearly loses ``zeta1``: at ``n = 4`` it is about ``9/8 p`` whatever ``zeta1`` is, against the true
``p + 4 zeta1`` (ratios of 0.5-0.8 were measured), and more identities do not help.

The correction (:func:`correction`) scales the bootstrap deviations ``theta* - theta~`` (on the arcsine-sqrt
scale, :func:`matchaudit.estimators.bootstrap.interval_from_replicates`) by
``c = sqrt(max(1, 1 + (V_hat - V_boot) / Var*(theta* - theta~)))``: the variance the bootstrap misses on the
genuine side is added, the rest of the replicate spread (the threshold's, for FNMR at an FMR target) is kept.
``V_hat`` is the unbiased estimate of the pooled (or identity-balanced) FNMR's within-identity variance
(``p``, ``E[h_12 h_13]`` and ``p^2`` each by its U-statistic over the identity's comparisons; ``p^2`` needs
two disjoint comparisons, i.e. 4 samples); ``V_boot`` the bootstrap's exact variance of the same statistic.
Identities with 2 or 3 samples cannot estimate ``p^2``: it is taken as 0, which bounds their variance from
above (conservative by ``(m + s) p^2``, small at low error rates) and is counted in :attr:`WithinVariance.bounded`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from matchaudit.definitions import Rule, accepts
from matchaudit.model import MatchData, PairBlock
from matchaudit.scores import pair_scores


@dataclass(frozen=True)
class GenuinePairs:
    """Every genuine comparison with its two samples and identity."""

    a: np.ndarray  # (m,) sample index
    b: np.ndarray  # (m,)
    identity: np.ndarray  # (m,)
    score: np.ndarray  # (m,)


def genuine_pairs(data: MatchData) -> GenuinePairs:
    """All-pairs: every within-identity pair of samples, scored as the engine scores it; listed: the genuine rows
    that name their samples (read a block at a time when the table is out of core)."""
    if data.protocol == "all-pairs":
        assert data.samples is not None and data.samples.embeddings is not None
        ident = data.samples.identity
        order = np.argsort(ident, kind="stable")
        sizes = np.bincount(ident, minlength=data.n_identities)
        start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        a, b = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for n in np.unique(sizes[sizes >= 2]):
            pos = start[sizes == n][:, None] + np.arange(n)[None, :]
            i, j = np.triu_indices(int(n), 1)
            a.append(order[pos[:, i]].ravel())
            b.append(order[pos[:, j]].ravel())
        sa, sb = np.concatenate(a), np.concatenate(b)
        return GenuinePairs(sa, sb, ident[sa].astype(np.int64),
                            pair_scores(data.samples.embeddings, sa, sb, data.metric))
    blocks = [data.pairs] if data.pairs is not None else data.blocks()
    parts = []
    for blk in blocks:
        assert isinstance(blk, PairBlock)
        keep = blk.genuine & (blk.sample_a >= 0) & (blk.identity_a >= 0)
        parts.append((blk.sample_a[keep], blk.sample_b[keep], blk.identity_a[keep], blk.score[keep]))
    cols = [np.concatenate([p[c] for p in parts]) if parts else np.zeros(0) for c in range(4)]
    return GenuinePairs(cols[0].astype(np.int64), cols[1].astype(np.int64), cols[2].astype(np.int64),
                        cols[3].astype(float))


@dataclass(frozen=True)
class WithinVariance:
    """Per threshold and view (``"all"`` then the groups), each (T, 1+G): ``estimate``, the estimated variance of
    the FNMR with identities fixed (unbiased; bounded above for identities of 2-3 samples), and ``bootstrap``,
    the within-identity bootstrap's exact variance of the same FNMR. ``bounded`` (1+G,): identities with
    genuine comparisons but fewer than 4 samples, whose variance is bounded rather than estimated."""

    thresholds: np.ndarray
    estimate: np.ndarray
    bootstrap: np.ndarray
    bounded: np.ndarray


def _per_identity(x: np.ndarray, gp: GenuinePairs, n_samples: int, sample_identity: np.ndarray, K: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel values ``x`` on the genuine pairs -> per identity (sum x, sum x^2, sum_i R_i^2), ``R_i`` the sum of
    ``x`` over the comparisons of sample i."""
    r = np.bincount(gp.a, x, n_samples) + np.bincount(gp.b, x, n_samples)
    return (np.bincount(gp.identity, x, K), np.bincount(gp.identity, x * x, K),
            np.bincount(sample_identity, r * r, K))


def count_variance(g, q, m, s) -> np.ndarray:
    """Estimated ``Var(G_k)`` per identity from its error count ``g``, ``q = sum_i r_i^2`` (``r_i``: errors of
    sample i), comparisons ``m`` and ``s = sum_i d_i (d_i - 1)``: ``m (p - p^2) + s (E[h_12 h_13] - p^2)``, each
    moment by its U-statistic (unbiased); ``p^2`` is taken as 0 where no two comparisons are disjoint (fewer
    than 4 samples), which bounds the variance from above."""
    g, q, m, s = (np.asarray(x, float) for x in (g, q, m, s))
    disjoint = m * m - m - s  # ordered pairs of comparisons sharing no sample
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(m > 0, g / np.where(m > 0, m, 1), 0.0)
        pp = np.where(s > 0, (q - 2 * g) / np.where(s > 0, s, 1), 0.0)
        p2 = np.where(disjoint > 0, (g * g + g - q) / np.where(disjoint > 0, disjoint, 1), 0.0)
    return m * (p - p2) + s * (pp - p2)


def _bootstrap_var(s1: np.ndarray, s2: np.ndarray, q: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Exact within-identity bootstrap variance of ``sum_{pairs} c_i c_j x_ij`` per identity: the U-statistic
    variance ``C(n,2) [2 (n-2) zeta1 + zeta2]`` of ``n`` draws from the identity's samples with the kernel
    ``x`` (0 on self-pairs and unlisted pairs)."""
    nn = np.maximum(n, 1).astype(float)
    mean = 2 * s1 / nn**2
    z2 = 2 * s2 / nn**2 - mean**2
    z1 = q / nn**3 - mean**2
    return np.where(n >= 2, nn * (nn - 1) / 2 * (2 * (nn - 2) * z1 + z2), 0.0)


def within_variance(data: MatchData, thresholds, rule: Rule, balanced: bool = False,
                    pairs: GenuinePairs | None = None) -> WithinVariance:
    """:class:`WithinVariance` of the pooled FNMR (``balanced``: the identity-balanced FNMR, the mean over
    identities of ``G_k / m_k``) at each threshold."""
    assert data.samples is not None, "the within-identity bootstrap needs samples"
    gp = genuine_pairs(data) if pairs is None else pairs
    t = np.atleast_1d(np.asarray(thresholds, float))
    K, G = data.n_identities, data.n_groups
    sid = data.samples.identity.astype(np.int64)
    ns = sid.shape[0]
    n = np.bincount(sid, minlength=K)
    ones = np.ones(gp.a.shape[0])
    m, _, dd = _per_identity(ones, gp, ns, sid, K)  # dd = sum_i d_i^2
    s = dd - 2 * m  # sum_i d_i (d_i - 1)
    group = data.identity_group.astype(np.int64)
    has = m > 0
    views = [np.ones(K, bool)] + [group == g for g in range(G)]
    bounded = np.array([int(np.sum(v & has & (n < 4))) for v in views])
    # weight of identity k's error count in the view's FNMR: 1/M (pooled) or 1/(m_k K') (balanced)
    if balanced:
        weights = [np.where(v & has, 1 / np.maximum(m, 1) / max(int(np.sum(v & has)), 1), 0.0) for v in views]
    else:
        weights = [np.where(v, 1.0, 0.0) / max(float(m[v].sum()), 1.0) for v in views]
    listed_pooled = data.protocol != "all-pairs" and not balanced  # random denominators: centre the kernel
    est = np.zeros((t.size, 1 + G))
    boot = np.zeros((t.size, 1 + G))
    for ti, thr in enumerate(t):
        h = (~accepts(gp.score, thr, rule)).astype(float)
        g_k, _, q_k = _per_identity(h, gp, ns, sid, K)
        var_k = count_variance(g_k, q_k, m, s)
        if not listed_pooled:
            vb_k = _bootstrap_var(g_k, g_k, q_k, n)
        for j, w in enumerate(weights):
            est[ti, j] = max(float(np.sum(w**2 * var_k)), 0.0)
            if listed_pooled:
                rate = float(np.sum(w * g_k))
                vb_k = _bootstrap_var(*_per_identity(h - rate, gp, ns, sid, K), n)
            boot[ti, j] = float(np.sum(w**2 * vb_k))
    return WithinVariance(t, est, boot, bounded)


def correction(estimate, bootstrap, replicate_var) -> np.ndarray:
    """Scale of the bootstrap deviations: ``sqrt(1 + (estimate - bootstrap) / replicate_var)`` (the missing
    within-identity variance added to the replicates' own spread), never below 1: the estimate is noisy at a
    handful of errors and low exactly when the errors are few, so it only ever widens (1 where the spread is 0
    or undefined)."""
    e, b, r = (np.asarray(x, float) for x in (estimate, bootstrap, replicate_var))
    ok = np.isfinite(r) & (r > 0) & np.isfinite(e) & np.isfinite(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.sqrt(np.maximum(1.0 + (e - b) / np.where(ok, r, 1.0), 1.0))
    return np.where(ok, c, 1.0)


__all__ = ["GenuinePairs", "WithinVariance", "correction", "count_variance", "genuine_pairs", "within_variance"]
