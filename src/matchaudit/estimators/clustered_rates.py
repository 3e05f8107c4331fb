"""Identity-clustered rates under any group labelling: the sufficient statistics of FNMR and same-group FMR at one
threshold (per identity and per identity pair), from which every relabelling's rates, clustered variances and
identity shares follow in closed form (docs/methods.md section 4), and the sampling error of a threshold set on all
impostors (:class:`ThresholdError`), each from the identity-level counts of a pass (made by
:mod:`matchaudit.auditing.matching_passes`). The identity-level group tests (:mod:`matchaudit.estimators.matching_tests`)
evaluate these for the observed labels and every relabelling."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numba as nb
import numpy as np
import scipy.sparse as sp

from matchaudit.engine import IdentityCounts
from matchaudit.estimators import intervals as iv


@dataclass(frozen=True)
class ClusterTerms:
    """Per-identity and per-identity-pair sufficient statistics of FNMR and same-group FMR at one threshold.

    Genuine: ``g``, ``e`` (K,). Impostor: sparse symmetric K x K ``E`` (accepted) and, for listed data, ``M``
    (comparisons); all-pairs data has ``m_kl = n_k n_l`` (``sizes``) and no ``M``.
    """

    g: np.ndarray
    e: np.ndarray
    E: sp.csr_matrix
    M: sp.csr_matrix | None
    sizes: np.ndarray

    @classmethod
    def of(cls, ic: IdentityCounts, sizes: np.ndarray, pair_comparisons: tuple[np.ndarray, np.ndarray] | None = None
           ) -> ClusterTerms:
        """From the identity counts at one threshold, the samples per identity and, for listed data, the impostor
        comparisons per identity pair (keys ``k * K + l`` and counts, :func:`~matchaudit.engine.identity.
        impostor_pair_counts`; all-pairs data: None)."""
        K = sizes.size
        k, l, e = ic.pair_k[0], ic.pair_l[0], ic.pair_e[0].astype(float)
        E = sp.coo_matrix((np.concatenate([e, e]), (np.concatenate([k, l]), np.concatenate([l, k]))),
                          shape=(K, K)).tocsr()
        M = None
        if pair_comparisons is not None:
            keys, m = pair_comparisons
            u, v, m = keys // K, keys % K, m.astype(float)
            M = sp.coo_matrix((np.concatenate([m, m]), (np.concatenate([u, v]), np.concatenate([v, u]))),
                              shape=(K, K)).tocsr()
        return cls(ic.g.astype(float), ic.e[0].astype(float), E, M, sizes.astype(float))

    def fnmr(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """FNMR, its clustered variance ``sum_k c_k``, ``sum_k c_k^2`` (``c_k = (e_k - p g_k)^2 / G^2``, identity
        k's share of the variance: :func:`effective_df`) and the comparisons ``G``, for each row of the (B, K) 0/1
        ``mask``."""
        g, e = self.g, self.e
        G = mask @ g
        p, v = iv.weighted_fnmr_variance(g, e, mask)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = (e[None, :] - p[:, None] * g[None, :]) ** 2 / (G**2)[:, None]
            w = np.einsum("bk,bk->b", mask, c * c)
        return p, v, w, G

    def fmr(self, labels: np.ndarray, sides: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Same-group FMR of every side (a set of groups, row of the (S, G) 0/1 ``sides``: its groups' same-group
        impostors pooled), its clustered variance (docs/methods.md section 4) and the sum of squared per-identity
        shares ``(row_k / M)^4`` (:func:`effective_df`; ``row_k`` = identity k's accepted minus expected impostors
        at the side's rate) and the comparisons ``M``, each (R, S), for the (R, K) group labels ``labels``. One pass
        over the identity pairs per relabelling (a pair counts for group g when both identities are labelled g):
        O(R x pairs), whatever G; a side sums its groups' terms, O(R x G x S)."""
        R, K = labels.shape
        G = sides.shape[1]
        lab = labels.astype(np.int64)
        rr = np.arange(R)[:, None]
        E = sp.triu(self.E, 1).tocoo()  # each identity pair once
        e_row, q_e2 = self._same_group(lab, E, G)
        if self.M is None:
            n = self.sizes
            S = _by_group(lab, np.broadcast_to(n, lab.shape), G)
            m_row = n * (S[rr, lab] - n)
            s2, s4 = _by_group(lab, np.broadcast_to(n**2, lab.shape), G), _by_group(lab, np.broadcast_to(n**4, lab.shape), G)
            q_m2 = 0.5 * (s2**2 - s4)
            _, q_em = self._same_group(lab, sp.coo_matrix((E.data * n[E.row] * n[E.col], (E.row, E.col)), E.shape), G,
                                       rows=False, power=1)
        else:
            m_row, q_m2 = self._same_group(lab, sp.triu(self.M, 1).tocoo(), G)
            EM = sp.triu(self.E.multiply(self.M), 1).tocoo()
            _, q_em = self._same_group(lab, EM, G, rows=False, power=1)
        A = np.asarray(sides, float)  # (S, G)
        M_g = 0.5 * _by_group(lab, m_row, G)
        E_g = 0.5 * _by_group(lab, e_row, G)
        Mtot = M_g @ A.T
        with np.errstate(divide="ignore", invalid="ignore"):
            p = E_g @ A.T / Mtot
            s = np.maximum(q_e2 @ A.T - 2 * p * (q_em @ A.T) + p * p * (q_m2 @ A.T), 0.0)
            # row_k = e_row_k - p m_row_k = a_k + d m_k: a_k at k's own group's rate (computed directly, so that a
            # group whose pairs all sit at its rate has exact zeros), d = own rate - the side's (0 for a group)
            own = np.where(M_g > 0, E_g / M_g, 0.0)
            a = e_row - own[rr, lab] * m_row
            d = own[:, :, None] - p[:, None, :]  # (R, G, S)

            def power(j: int) -> np.ndarray:  # (R, S): sum over each side's identities of row_k^j
                per_group = sum(comb(j, i) * d**i * _by_group(lab, a ** (j - i) * m_row**i, G)[:, :, None]
                                for i in range(j + 1))
                return np.einsum("rgs,sg->rs", per_group, A)

            cov = power(2) - 2 * s
            v = (s + np.maximum(cov, 0.0)) / Mtot**2
            w = power(4) / (2 * Mtot) ** 4
        return p, v, w, Mtot

    @staticmethod
    def _same_group(lab: np.ndarray, pairs: sp.coo_matrix, G: int, rows: bool = True, power: int = 2
                    ) -> tuple[np.ndarray | None, np.ndarray]:
        """For identity pairs k < l with values x_kl: per relabelling, each identity's sum of x over its same-label
        partners (R, K; None unless ``rows``) and each group's sum of x^power over its same-label pairs (R, G)."""
        R, K = lab.shape
        row_k, row_l = (np.zeros((R, K)), np.zeros((R, K))) if rows else (np.zeros((0, K)), np.zeros((0, K)))
        sq = np.zeros((R, G))
        _same_group_sums(np.ascontiguousarray(lab, np.int64), pairs.row.astype(np.int64),
                         pairs.col.astype(np.int64), pairs.data.astype(float), power, rows, row_k, row_l, sq)
        return (row_k + row_l if rows else None), sq


@nb.njit(parallel=True, cache=True)
def _same_group_sums(lab, k, l, x, power, rows, row_k, row_l, sq):
    """Per relabelling ``r`` (in parallel), in the pairs' order: ``sq[r, g] += x^power`` and ``row_k[r, k] +=
    x``, ``row_l[r, l] += x`` for every pair labelled ``g`` on both sides (the sums NumPy's ``bincount`` over the
    masked pairs made, in the same order: the same numbers)."""
    for r in nb.prange(lab.shape[0]):
        for j in range(k.size):
            g = lab[r, k[j]]
            if g != lab[r, l[j]]:
                continue
            sq[r, g] += x[j] * x[j] if power == 2 else x[j]
            if rows:
                row_k[r, k[j]] += x[j]
                row_l[r, l[j]] += x[j]


def _by_group(lab: np.ndarray, x: np.ndarray, G: int) -> np.ndarray:
    """(R, G): per relabelling, the sum of ``x`` (R, K) over the identities labelled g."""
    R = lab.shape[0]
    return np.bincount((np.arange(R)[:, None] * G + lab).ravel(), weights=np.asarray(x, float).ravel(),
                       minlength=R * G).reshape(R, G)


@dataclass(frozen=True)
class ThresholdError:
    """The sampling error of a threshold set on all impostors at an FMR target, carried into the variance of an FNMR
    difference at that threshold (delta method, #43 item 3).

    ``t`` solves ``FMR(t) = alpha`` on the impostors, so ``t_hat - t ~ (FMR_hat(t) - alpha) / f_imp(t)`` and
    ``T(t_hat) ~ T(t) + D (FMR_hat(t) - alpha)`` for ``T = FNMR_a - FNMR_b``, with ``D = (f_a - f_b) / f_imp`` the
    difference of the two sides' ROC slopes ``dFNMR / dFMR``, read over the thresholds of FMR ``2 alpha`` and
    ``alpha / 2`` (``de``: each identity's genuine errors between them; ``dfmr``: the FMR between them; ``D^2`` less
    the clustered variance of that estimate). Hence ``Var T(t_hat) = Var T(t) + D^2 Var FMR_hat + 2 D Cov(T,
    FMR_hat)``: ``v`` is the clustered FMR variance of all impostors (:func:`intervals.fmr_variance`) and the
    covariance pairs each identity's FNMR share with its FMR influence ``r_k = row_k / M`` (accepted minus expected
    impostors of identity k, over the impostor comparisons). ``w = sum_k r_k^4`` feeds :func:`effective_df`.
    """

    g: np.ndarray
    e: np.ndarray
    de: np.ndarray
    dfmr: float
    r: np.ndarray
    v: float
    w: float

    @staticmethod
    def targets(fmr_target: float) -> list[float]:
        """The FMR targets whose thresholds it reads: the slope between twice and half the target, and the target."""
        return [2 * fmr_target, fmr_target, fmr_target / 2]

    @staticmethod
    def window(thresholds: np.ndarray) -> np.ndarray:
        """The thresholds it reads the identity counts at, from the plug-in thresholds at :meth:`targets`: a window
        edge out of reach (not finite) shuts that side of the window (the target's own threshold)."""
        return np.where(np.isfinite(thresholds), thresholds, thresholds[1])

    @classmethod
    def of(cls, ic: IdentityCounts) -> ThresholdError:
        """From the identity counts at the :meth:`window` thresholds."""
        fmr = [2 * float(ic.pair_e[i].sum()) / float(ic.m_row.sum()) for i in range(3)]
        tot = iv.ImpostorTotals(ic.m_row.astype(float), ic.e_row[1].astype(float), ic.pair_m[1].astype(float),
                                ic.pair_e[1].astype(float), float(ic.sum_m2))
        M = float(ic.m_row.sum()) / 2
        r = (tot.row_errors - fmr[1] * tot.row_comparisons) / M
        return cls(ic.g.astype(float), ic.e[1].astype(float), (ic.e[2] - ic.e[0]).astype(float), fmr[0] - fmr[2],
                   r, float(iv.fmr_variance(tot)), float((r**4).sum()))

    def pair_terms(self, labels: np.ndarray, sides: np.ndarray, pairs: list[tuple[int, int]],
                   per_side: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(R, m) variance added to each pair's FNMR difference, ``max(D^2 v + 2 D (C_a - C_b), 0)``, and ``D^4 w``,
        for the (R, K) group labels ``labels`` (``C_s = sum_{k in s} (e_k - p_s g_k) r_k / G_s``). ``per_side``
        (R, S): the derivative of each side's statistic in its rate (the log ratio: ``1 / q``; None: 1, the
        difference)."""
        g, e, de, r = self.g, self.e, self.de, self.r
        slope, noise, cov = [], [], []
        for j, side in enumerate(np.asarray(sides, bool)):
            mask = side[labels].astype(float)
            n = mask @ g
            f = 1.0 if per_side is None else per_side[:, j]
            # the side's share of genuine errors between the window's thresholds and its clustered variance
            q, spread = iv.weighted_fnmr_variance(g, de, mask)
            slope.append(f * q)
            noise.append(f * f * spread)
            with np.errstate(divide="ignore", invalid="ignore"):
                cov.append(f * (mask @ (e * r) - (mask @ e) / n * (mask @ (g * r))) / n)
        scale = 1 / self.dfmr if self.dfmr > 0 else 0.0
        d = np.stack([(slope[a] - slope[b]) * scale for a, b in pairs], 1)
        # D^2 less its own clustered sampling variance (a noisy slope would inflate D^2: conservative tests)
        d2 = np.maximum(d * d - np.stack([noise[a] + noise[b] for a, b in pairs], 1) * scale**2, 0.0)
        c = np.stack([cov[a] - cov[b] for a, b in pairs], 1)
        # never below 0: the term only ever makes the observed statistic smaller, so the test stays conservative
        # under the strong null, where the unadjusted statistic is exact
        return np.maximum(d2 * self.v + 2 * d * c, 0.0), d2**2 * self.w


def masked(fn, labels: np.ndarray, sides: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-side metric, variance, sum of squared identity shares and comparisons, each (R, S), for label matrices
    (R, K): ``fn`` of each side's (R, K) identity mask (a side: the groups of a row of the (S, G) 0/1 ``sides``)."""
    out = [fn(side[labels].astype(float)) for side in np.asarray(sides, bool)]
    return tuple(np.stack([o[i] for o in out], axis=1) for i in range(len(out[0])))


__all__ = ["ClusterTerms", "ThresholdError", "masked"]
