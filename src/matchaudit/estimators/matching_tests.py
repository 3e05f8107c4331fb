"""Is a gap between groups real, on matching data? Identity-level studentized permutation tests.

For matching data the exchangeable unit is the **identity**: all comparisons of an identity (its genuine
pairs and its impostor pairs) stay together, and group labels are permuted across identities (the engine's
:class:`~matchaudit.resampling.GroupPermutation`: group sizes in identities are kept). Permuting labels across
comparisons treats clustered comparisons as independent; it is kept as a labelled baseline
(``unit="comparison"``) and over-rejects when identities differ in size between groups (``bench/matching_level.py``).

Metrics (per group ``a``: its identities' genuine comparisons, its same-group impostor comparisons):

``fnmr``, ``fmr``  at a fixed ``threshold``. Studentized with the identity-clustered plug-in variance
                   (docs/methods.md section 4), recomputed exactly for every relabelling from the per-identity and
                   per-identity-pair counts of :func:`matchaudit.engine.identity_counts`.
``fnmr_at_fmr``    FNMR at the threshold where the reference impostors' FMR reaches ``fmr_target``; the
                   threshold is re-derived in every relabelling from that relabelling's impostors
                   (``fmr_reference="same-group"`` changes with the labels; ``"all"`` does not). Studentized
                   with the clustered FNMR variance at each relabelling's own threshold (``studentize=True``),
                   or by the paper's fast variant.
``auc``, ``eer``   per group against its same-group impostors (grid resolution, as the audit's bootstrap;
                   exact when every distinct score is a grid edge). Fast variant only.

Studentization (:mod:`matchaudit.estimators.permutation`): ``True`` (own variance per relabelling),
``"permutation-sd"`` (``T / se(T)`` against ``T_pi / sd(T_pi)``; ``se(T)`` from the clustered variance or
an identity bootstrap: ``variance="bootstrap"``, double-or-nothing weights through the engine) or ``False``.
Two groups of identities are independent, so ``Var(T) = Var_a + Var_b``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from itertools import combinations
from math import comb
from typing import Literal

import numba as nb
import numpy as np
import scipy.sparse as sp

from matchaudit import resampling as rs
from matchaudit.engine import Counts, Grid, build_grid, chunks, identity_counts, run
from matchaudit.engine.identity import impostor_pair_counts
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.classifier import AllGroupsResult, arrangements, n_arrangements
from matchaudit.estimators.permutation import (
    METHOD, Alternative, PermutationTestResult, Studentize, benjamini_hochberg, comparison_table, holm, mode_of,
    permutation_test,
)
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.model import MatchData
from matchaudit.progress import PASS_UNIT, Meter

MatchingMetric = Literal["fnmr", "fmr", "fnmr_at_fmr", "auc", "eer"]
METRICS: tuple[str, ...] = ("fnmr", "fmr", "fnmr_at_fmr", "auc", "eer")
Unit = Literal["identity", "comparison"]
Variance = Literal["clustered", "bootstrap"]
_BATCH = 256


# ----------------------------------------------------------------------------- relabellings

@dataclass(frozen=True, eq=False)
class Relabel(rs.GroupPermutation):
    """Explicit group labels per replicate (``labels[r - 1]`` for replicate ``r``): feeds enumerations and
    permutations restricted to some identities through the engine's relabel path."""

    labels: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))

    def identity_groups(self, replicates, layout: rs.Layout) -> np.ndarray:
        return self.labels[np.asarray(replicates, np.int64) - 1]


def relabellings(identity_group: np.ndarray, movable: np.ndarray, n_resamples: int | None, seed: int,
                 max_exact: int = 100_000) -> tuple[np.ndarray, bool]:
    """(B, K) group labels: the identities ``movable`` permuted among themselves (all distinct arrangements
    when ``n_resamples`` is None, the observed one included), the others kept. Random permutations come from
    :class:`~matchaudit.resampling.GroupPermutation` (counter-based: same seed, same labels)."""
    g = np.asarray(identity_group, np.int64)
    sub = g[movable]
    if n_resamples is None:
        total = n_arrangements(sub)
        if total > max_exact:
            raise InputError(f"exact enumeration needs {total:,} relabellings of identities (more than max_exact="
                             f"{max_exact:,}); use a Monte-Carlo test (n_resamples=9999).")
        perm = arrangements(sub)
    else:
        if n_resamples < 1:
            raise ValueError("n_resamples must be a positive integer, or 'exact'.")
        perm = rs.GroupPermutation(seed).identity_groups(np.arange(1, n_resamples + 1),
                                                          rs.Layout(identity_group=sub))
    out = np.repeat(g[None, :], perm.shape[0], axis=0)
    out[:, movable] = perm
    return out, n_resamples is None


# ----------------------------------------------------------------------------- clustered rates per labelling

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
    def at(cls, data: MatchData, threshold: float, rule: Rule) -> ClusterTerms:
        ic = identity_counts(data, [threshold], rule)
        K = data.n_identities
        k, l, e = ic.pair_k[0], ic.pair_l[0], ic.pair_e[0].astype(float)
        E = sp.coo_matrix((np.concatenate([e, e]), (np.concatenate([k, l]), np.concatenate([l, k]))),
                          shape=(K, K)).tocsr()
        M = None
        if data.protocol == "listed":
            data.table("the group tests")  # in memory (a clear error out of core)
            keys, m = impostor_pair_counts(data)
            u, v, m = keys // K, keys % K, m.astype(float)
            M = sp.coo_matrix((np.concatenate([m, m]), (np.concatenate([u, v]), np.concatenate([v, u]))),
                              shape=(K, K)).tocsr()
        return cls(ic.g.astype(float), ic.e[0].astype(float), E, M, data.identity_sizes.astype(float))

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

    @classmethod
    def at(cls, data: MatchData, fmr_target: float, rule: Rule, grid: Grid | None) -> ThresholdError:
        thr = run(data, None, grid=grid or build_grid(data, rule=rule),
                  fmr_targets=[2 * fmr_target, fmr_target, fmr_target / 2]).target_threshold[0]
        thr = np.where(np.isfinite(thr), thr, thr[1])  # a window edge out of reach: that side of the window shut
        ic = identity_counts(data, thr, rule)
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


# ----------------------------------------------------------------------------- statistics

@dataclass(frozen=True)
class MatchingStatistics:
    """Observed differences ``t`` (m,) with variances ``v``, their relabelled copies (B, m), and the names.

    ``v_perm`` is None when only the fast variant / baseline is possible. ``estimates[r, s]``: the metric
    per side on relabelling ``r`` (row 0 observed); a side is a group (the first G), or the rest of group g
    (side ``G + g``) when asked; ``pairs`` are the compared sides. ``df`` (m,), ``df_perm`` (B, m): the effective
    degrees of freedom of each studentized difference (:func:`effective_df`; None: read as normal). ``effect``,
    ``effect_v`` (m,): the difference of the rates and its variance when the test's statistic is on another scale
    (``details["statistic"] == "log ratio"``: ``t`` is the log ratio, :func:`_log_ratio`); None: ``t`` and ``v``.
    """

    t: np.ndarray
    v: np.ndarray
    t_perm: np.ndarray
    v_perm: np.ndarray | None
    exact: bool
    names: list[str]
    labels: list[tuple[str, str]]
    pairs: list[tuple[int, int]]
    estimates: np.ndarray
    details: dict
    df: np.ndarray | None = None
    df_perm: np.ndarray | None = None
    effect: np.ndarray | None = None
    effect_v: np.ndarray | None = None


def _group_index(data: MatchData, name: str) -> int:
    if name not in data.group_names:
        raise InputError(f"no group {name!r}; groups present: {', '.join(data.group_names)}.")
    return data.group_names.index(name)


Comparisons = Literal["pairs", "rest", "both"]


@dataclass(frozen=True)
class _Design:
    """What is compared: sides (S, G) 0/1 (a group, or the rest of one), their names, the compared side pairs
    and the identities whose labels are permuted."""

    sides: np.ndarray
    names: list[str]
    pairs: list[tuple[int, int]]
    movable: np.ndarray

    @classmethod
    def of(cls, data: MatchData, groups: tuple[str, str] | None, comparisons: Comparisons | None) -> _Design:
        names = list(data.group_names)
        G = len(names)
        eye = np.eye(G, dtype=bool)
        everyone = np.arange(data.n_identities)
        if comparisons is None:
            if groups is None:
                if G != 2:
                    raise InputError(f"{G} groups; name the two to compare (groups=(A, B)) or use all pairs.")
                groups = (names[0], names[1])
            a, b = (_group_index(data, x) for x in groups)
            if a == b:
                raise InputError(f"compare two different groups (got {groups[0]!r} twice).")
            return cls(eye, names, [(a, b)], np.flatnonzero(np.isin(data.identity_group, [a, b])))
        if comparisons not in ("pairs", "rest", "both"):
            raise ValueError(f"comparisons={comparisons!r}: use 'pairs', 'rest' or 'both'.")
        if G < 2:
            raise InputError("an all-groups test needs at least two groups (group_by=...).")
        pairs = list(combinations(range(G), 2)) if comparisons != "rest" else []
        if comparisons == "pairs":
            return cls(eye, names, pairs, everyone)
        return cls(np.concatenate([eye, ~eye]), names + ["rest"] * G, pairs + [(g, G + g) for g in range(G)],
                   everyone)

    @property
    def labels(self) -> list[tuple[str, str]]:
        return [(self.names[a], self.names[b]) for a, b in self.pairs]

    @property
    def single_groups(self) -> bool:
        """Every side one group (pairs of groups only)."""
        return self.sides.shape[0] == self.sides.shape[1]


def _check_budget(data: MatchData, design: _Design, n_resamples: int, param: str) -> None:
    """Refuse, naming ``param``, relabellings whose labels and per-side statistics (kept whole) exceed the memory
    budget."""
    chunks.check_budget((n_resamples + 1) * 8 * (data.n_identities + 3 * (len(design.sides) + len(design.pairs))),
                        n_resamples, param)


def check_all_groups_budget(data: MatchData, comparisons: Comparisons, n_resamples: int,
                            param: str = "n_resamples") -> None:
    """Before any work: refuse ``n_resamples`` relabellings of an all-groups test that would not fit the memory
    budget (nothing to check with fewer than two groups or without identities: such tests do not run)."""
    if data.has_identities and data.n_groups >= 2:
        _check_budget(data, _Design.of(data, None, comparisons), n_resamples, param)


def _pair_diffs(x: np.ndarray, vx: np.ndarray | None, pairs: list[tuple[int, int]]):
    t = np.stack([x[:, a] - x[:, b] for a, b in pairs], axis=1)
    v = None if vx is None else np.stack([vx[:, a] + vx[:, b] for a, b in pairs], axis=1)
    return t, v


def effective_df(v: np.ndarray, w: np.ndarray, pairs: list[tuple[int, int]],
                 extra: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """(R, m) effective number of identities behind each pair's clustered variance, ``(sum c)^2 / sum c^2`` over
    the identity shares ``c`` of both groups (Satterthwaite; ``K`` when every identity weighs the same, near 1
    when one identity carries the variance). The studentized statistic is read as a t with these degrees of
    freedom (:func:`matchaudit.estimators.permutation.standardize`): with a few identities with correlated
    errors, ``T / se`` has heavier tails than its relabellings, which mix the groups' identities. ``extra``: (R, m)
    terms added to each pair's variance and squared shares (:meth:`ThresholdError.pair_terms`)."""
    vs = np.stack([v[:, a] + v[:, b] for a, b in pairs], axis=1)
    ws = np.stack([w[:, a] + w[:, b] for a, b in pairs], axis=1)
    if extra is not None:
        vs, ws = np.maximum(vs + extra[0], 0.0), ws + extra[1]
    return _degrees(vs, ws)


def _engine_metric(counts: Counts, metric: str, sides: np.ndarray) -> np.ndarray:
    """(R, S) metric per side (AUC and EER: sides that are single groups) from engine counts."""
    if metric == "fnmr_at_fmr":
        return bs.fnmr_at_targets(counts, sides)[:, 0, 1:]
    auc, eer = bs.auc_eer(bs.grid_curves(counts))
    return (auc if metric == "auc" else eer)[:, 1:]


def _check_args(metric: str, threshold, fmr_target, studentize, variance, unit) -> str:
    if metric not in METRICS:
        raise InputError(f"unknown matching metric {metric!r}: use one of {', '.join(METRICS)}.")
    if metric in ("fnmr", "fmr") and threshold is None:
        raise InputError(f"metric {metric!r} needs a threshold.", param="threshold")
    if metric == "fnmr_at_fmr" and fmr_target is None:
        raise InputError("metric 'fnmr_at_fmr' needs an FMR target.", param="fmr")
    mode = mode_of(studentize)
    if variance not in ("clustered", "bootstrap"):
        raise ValueError(f"variance={variance!r}: use 'clustered' or 'bootstrap'.")
    if mode == "studentized" and metric in ("auc", "eer"):
        raise InputError(f"{metric}: no closed-form clustered variance per relabelling; use "
                         "studentize='permutation-sd' (with variance='bootstrap').")
    if mode == "studentized" and variance == "bootstrap":
        raise ValueError("variance='bootstrap' with studentize=True would bootstrap every relabelling; use "
                         "studentize='permutation-sd'.")
    if metric in ("auc", "eer") and variance == "clustered" and mode != "none":
        raise InputError(f"{metric}: use variance='bootstrap' (identity bootstrap) to studentize.")
    if unit not in ("identity", "comparison"):
        raise ValueError(f"unit={unit!r}: use 'identity' or 'comparison'.")
    return mode


def matching_statistics(
    data: MatchData, metric: MatchingMetric = "fnmr", groups: tuple[str, str] | None = None, *,
    comparisons: Comparisons | None = None, threshold: float | None = None, fmr_target: float | None = None,
    fmr_reference: ThresholdImpostors = "all", rule: Rule = ">=", unit: Unit = "identity",
    studentize: Studentize = True, variance: Variance = "clustered", n_bootstrap: int = 200,
    n_resamples: int | str | None = 999, seed: int = 0, grid: Grid | None = None, max_exact: int = 100_000,
    progress: bool = False, resamples_param: str = "n_resamples", threshold_error: bool = True,
    scale: Literal["log", "difference"] = "log", sparse_rule: bool = True,
) -> MatchingStatistics:
    """Observed and relabelled group differences of ``metric`` (the inputs of the permutation test).

    ``groups=(A, B)``: one comparison, identities of A and B relabelled among themselves (default: the only
    two groups). ``comparisons``: on joint relabellings of all identities (for Holm and max-T), every pair of
    groups (``"pairs"``), each group against the rest (``"rest"``: its rate against the pooled rate of all other
    groups, FNMR and FMR only, clustered variance) or both. ``unit="comparison"``: the baseline permuting labels across comparisons (fixed-threshold rates
    only; binomial variance). ``n_resamples``: random relabellings, or ``"exact"``/``None`` to enumerate.
    ``progress``: a display of the relabellings (identity unit). ``resamples_param``: the name of ``n_resamples``
    in the caller's terms, for the refusal of a number of relabellings over the memory budget.
    ``threshold_error``: FNMR@FMR with ``fmr_reference="all"`` adds the threshold's sampling error to the variance
    (:class:`ThresholdError`; False: the threshold treated as known, as before #43). ``scale``: the studentized
    test's statistic, the log ratio of the rates (default, :func:`_log_ratio`) or their difference (before #43); the
    reported effect is the difference either way. ``sparse_rule``: pairs too sparse to test are "not testable"
    (:func:`testable`); False tests every pair (to check the permutation machinery on a handful of identities).
    """
    mode = _check_args(metric, threshold, fmr_target, studentize, variance, unit)
    if not data.has_identities:
        raise InputError("identity-level tests need identities; this comparison table has labels only.")
    design = _Design.of(data, groups, comparisons)
    if not design.single_groups and (metric in ("auc", "eer") or unit == "comparison"
                                     or (variance == "bootstrap" and mode != "none")):
        raise InputError("each group against the rest: FNMR and FMR with the identity-level test and the clustered "
                         "variance only; compare pairs of groups for AUC, EER, the bootstrap variance or the "
                         "comparison-level baseline.", param="comparisons")
    names, pairs, sides = data.group_names, design.pairs, design.sides
    exact = n_resamples is None or n_resamples == "exact"
    if isinstance(n_resamples, str) and not exact:
        raise ValueError(f"n_resamples={n_resamples!r}: give an integer, or 'exact' / None.")
    details = {"metric": metric, "unit": unit, "threshold": threshold, "fmr_target": fmr_target,
               "fmr_reference": fmr_reference, "rule": rule, "seed": seed, "studentize": mode,
               "variance": variance if mode != "none" else None,
               "n_bootstrap": n_bootstrap if variance == "bootstrap" and mode != "none" else None,
               "groups_identities": {n: int((data.identity_group == g).sum()) for g, n in enumerate(names)}}
    if unit == "comparison":
        return _comparison_level(data, metric, pairs, threshold, fmr_target, fmr_reference, rule, exact,
                                 n_resamples, seed, grid, details)
    G = data.n_groups
    if not exact:
        _check_budget(data, design, int(n_resamples), resamples_param)
    labels, exact = relabellings(data.identity_group, design.movable, None if exact else int(n_resamples), seed,
                                 max_exact)
    fixed = metric in ("fnmr", "fmr") or (metric == "fnmr_at_fmr" and fmr_reference == "all")
    if metric == "fnmr_at_fmr" and fixed:
        # every relabelling has the observed threshold (no group label moves it): the fixed-threshold test there,
        # closed form per relabelling instead of G x G engine entries per impostor comparison
        threshold = details["observed_threshold"] = _observed_threshold(data, fmr_target, grid, rule)
    slope = None
    if metric == "fnmr_at_fmr" and fixed and threshold_error:
        slope = ThresholdError.at(data, fmr_target, rule, grid)
    obs = data.identity_group[None, :]
    vx = vp = wx = wp = nx = n_p = None
    if fixed:
        terms = ClusterTerms.at(data, float(threshold), rule)
        def fn(lab: np.ndarray) -> tuple[np.ndarray, ...]:
            return terms.fmr(lab, sides) if metric == "fmr" else _masked(terms.fnmr, lab, sides)
        x, vx, wx, nx = fn(obs)
        parts = []
        with Meter(progress, "relabellings", labels.shape[0], "relabellings") as meter:
            for r0 in range(0, labels.shape[0], _BATCH):
                parts.append(fn(labels[r0:r0 + _BATCH]))
                meter.advance(parts[-1][0].shape[0])
        xp, vp, wp, n_p = (np.concatenate(z) for z in zip(*parts))
    else:
        grid = grid or build_grid(data, rule=rule)
        targets = [fmr_target] if metric == "fnmr_at_fmr" else []
        B = labels.shape[0]
        chunk = chunks.chunk_size(chunks.group_table_bytes(G, grid.n_cells), B, None)
        with Meter(progress, "relabellings", chunks.work(data.n_comparisons(), B, chunk), PASS_UNIT) as meter:
            plug, per_rep = chunks.reduce_in_chunks(
                lambda reps: run(data, Relabel(seed, labels=labels), reps, grid=grid, fmr_targets=targets,
                                 fmr_reference=fmr_reference, progress=meter),
                B, chunk, lambda c: {"x": _engine_metric(c, metric, sides), "threshold": c.target_threshold})
        allx = per_rep["x"]
        x, xp = allx[:1], allx[1:]
        details["grid_resolution"] = plug.resolution
        if metric == "fnmr_at_fmr":
            thr = per_rep["threshold"][:, 0]
            details["observed_threshold"] = float(thr[0])
            if mode == "studentized" or variance == "clustered":
                vx, vp, wx, wp, nx, n_p = _fnmr_variances(data, thr, labels, rule, sides,
                                                          need_perm=mode == "studentized")
    if vx is not None and nx is not None:
        details["expected_errors"], details["effective_errors"] = _sparse(x[0], vx[0], nx[0], pairs)
        details["sparse_rule"] = sparse_rule
    t, v = _pair_diffs(x, vx, pairs)  # the effect and its variance: the difference of the rates
    t_perm, v_perm = _pair_diffs(xp, vp, pairs)
    # the threshold's own sampling error (ThresholdError), in the observed statistic only: every relabelling shares
    # the observed threshold, and mixing the groups' identities takes their slopes apart (D ~ 0), so a term there
    # would only add the noise of its estimate (measured: relabelled tails too light, 0.08 at 0.05)
    ex = None if slope is None else slope.pair_terms(obs, sides, pairs)
    if ex is not None:
        v = np.maximum(v + ex[0], 0.0)
        details["threshold_variance"] = ex[0][0].tolist()
    df = df_perm = effect = None
    if mode == "studentized" and vp is not None and scale == "log":
        effect = (t[0], v[0])
        # the test's statistic: the log ratio of the rates (see _log_ratio); the effect stays the difference
        t, v, w = _log_ratio(x, vx, wx, nx, pairs)
        t_perm, v_perm, w_perm = _log_ratio(xp, vp, wp, n_p, pairs)
        df, df_perm = _degrees(v, w), _degrees(v_perm, w_perm)
        if slope is not None:
            ex = slope.pair_terms(obs, sides, pairs, 1 / _half_error_rate(x, nx))
            v, w = np.maximum(v + ex[0], 0.0), w + ex[1]
            df = np.minimum(df, _degrees(v, w))  # see below
    elif vx is not None and vp is not None:
        # the threshold's term never raises the df (a well-spread FMR term would lift a few identities' df and with it
        # the statistic: measured 0.076 at 0.05, sparse FNMR), so it only ever makes the observed statistic smaller
        df = np.minimum(effective_df(vx, wx, pairs), effective_df(vx, wx, pairs, ex))
        df_perm = effective_df(vp, wp, pairs)
    details["statistic"] = ("log ratio" if mode == "studentized" and scale == "log" and df is not None
                            else "difference")
    if mode != "none" and (variance == "bootstrap" or v is None):
        v = _bootstrap_variance(data, metric, pairs, threshold, fmr_target, fmr_reference, rule, n_bootstrap,
                                seed, grid)[None, :]
    if v is None:
        v = np.full_like(t, np.nan)
    studentized = mode == "studentized" and df is not None and df_perm is not None
    return MatchingStatistics(t[0], v[0], t_perm, v_perm if mode == "studentized" else None, exact,
                              [f"{a} vs {b}" for a, b in design.labels], design.labels,
                              pairs, np.concatenate([x, xp]), details | {"n_resamples": int(t_perm.shape[0])},
                              df[0] if studentized else None, df_perm if studentized else None,
                              *(effect or (None, None)))


def _log_ratio(x: np.ndarray, v: np.ndarray, w: np.ndarray, n: np.ndarray, pairs: list[tuple[int, int]]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair (R, m): ``log q_a - log q_b`` with ``q = (errors + 1/2) / comparisons`` per side (0 when the two
    rates are equal, both zero included), its delta-method variance ``v_a / q_a^2 + v_b / q_b^2`` and squared
    shares ``w_a / q_a^4 + w_b / q_b^4`` (:func:`effective_df`), from the per-side rates ``x``, clustered variances
    ``v``, squared shares ``w`` and comparisons ``n`` (R, S).

    Why (#43 item 3): a small group whose errors sit in a few identities has a right-skewed rate; when its hard
    identities are absent, rate and clustered variance are both low, and ``(p_a - p_b) / se`` has a long tail that
    the relabellings, which mix the groups' identities, do not show (FNMR 150 x 3 independent vs 25 x 15
    Beta(0.1, 1.9): 0.09 at 0.05). On the log scale the skew of a rate is mostly gone (bench/test_level.py)."""
    q = _half_error_rate(x, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        lq = np.log(q)
        t = np.stack([np.where(x[:, a] == x[:, b], 0.0, lq[:, a] - lq[:, b]) for a, b in pairs], axis=1)
        vs = np.stack([v[:, a] / q[:, a] ** 2 + v[:, b] / q[:, b] ** 2 for a, b in pairs], axis=1)
        ws = np.stack([w[:, a] / q[:, a] ** 4 + w[:, b] / q[:, b] ** 4 for a, b in pairs], axis=1)
    return t, vs, ws


def _half_error_rate(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``q = (errors + 1/2) / comparisons`` from rates ``x`` of ``n`` comparisons: the rate the log ratio takes
    (finite at zero errors)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x * n + 0.5) / n


def _degrees(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``v^2 / w`` (infinite where ``w`` is 0): the effective number of identities (:func:`effective_df`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w > 0, v**2 / w, np.inf)


def _observed_threshold(data: MatchData, fmr_target: float, grid: Grid | None, rule: Rule) -> float:
    """The plug-in threshold at ``fmr_target`` over all impostors (the engine's exact definition)."""
    return float(run(data, None, grid=grid or build_grid(data, rule=rule), fmr_targets=[fmr_target]
                     ).target_threshold[0, 0])


def _masked(fn, labels: np.ndarray, sides: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-side metric, variance, sum of squared identity shares and comparisons, each (R, S), for label matrices
    (R, K): ``fn`` of each side's (R, K) identity mask (a side: the groups of a row of the (S, G) 0/1 ``sides``)."""
    out = [fn(side[labels].astype(float)) for side in np.asarray(sides, bool)]
    return tuple(np.stack([o[i] for o in out], axis=1) for i in range(len(out[0])))


MIN_EXPECTED_ERRORS = 5
MIN_EFFECTIVE_ERRORS = 2
"""A pair of groups is tested only if the sparser one would show at least :data:`MIN_EXPECTED_ERRORS` errors at the
pair's pooled rate, and at least :data:`MIN_EFFECTIVE_ERRORS` once divided by the design effect within the groups
(:func:`_sparse`): with fewer, the identity-level permutation test has no valid level. The raw count is the classical
rule for a count approximation (1-2 expected independent false matches: 0.10-0.12 at 0.05; from 3: at or under).
The effective count catches errors that sit in one identity or one look-alike pair: with listed same-group impostors
and Beta propensities, 3-10 false matches of one or two pairs rejected a true null 0.16-0.25 at 0.05 while every raw
count passed. Measured over 21 designs and 6,300 data sets (``bench/test_level.py``, ``docs/tests.md``): rejection
0.26 with at most 1 effective error, 0.028-0.031 from 1 to 7, 0.05-0.08 above (the hard-identity designs, which
:func:`small_group_caveat` covers). Both rules only remove rejections; a row below either is "not testable": no
p-value, never significant, left out of the family's Holm and BH."""


def _sparse(x: np.ndarray, v: np.ndarray, n: np.ndarray, pairs: list[tuple[int, int]]
            ) -> tuple[list[float], list[float]]:
    """Per compared pair (a, b): the errors the sparser side would show at the pair's pooled rate ``p`` (``p`` x its
    comparisons), and the same divided by the design effect within the two groups, ``(v_a + v_b) / (x_a (1 - x_a) /
    n_a + x_b (1 - x_b) / n_b)``: the identity-clustered variance of the difference over its binomial value (from the
    side with errors when the other has none; a design effect below 1 is taken as 1, so the effective count never
    exceeds the raw one). Within groups, so that a real gap between the groups does not count as clustering.
    ``x``, ``v``, ``n``: rate, clustered variance and comparisons per side."""
    expected, effective = [], []
    for a, b in pairs:
        total = n[a] + n[b]
        p = (x[a] * n[a] + x[b] * n[b]) / total if total > 0 else 0.0
        e = float(p * min(n[a], n[b]))
        with np.errstate(divide="ignore", invalid="ignore"):
            binomial = sum(x[s] * (1 - x[s]) / n[s] for s in (a, b) if n[s] > 0)
        deff = max(1.0, float((v[a] + v[b]) / binomial)) if binomial > 0 else 1.0
        expected.append(e)
        effective.append(e / deff)
    return expected, effective


def testable(details: dict, j: int) -> str | None:
    """None when compared pair ``j`` of a test has the errors to test (:data:`MIN_EXPECTED_ERRORS` at the pooled rate,
    :data:`MIN_EFFECTIVE_ERRORS` of them effective; always when ``details["sparse_rule"]`` is off), else why it is not
    testable (pairs the rule cannot measure, AUC and EER, are testable)."""
    if "effective_errors" not in details or not details.get("sparse_rule", True):
        return None
    e, f = details["expected_errors"][j], details["effective_errors"][j]
    if e >= MIN_EXPECTED_ERRORS and f >= MIN_EFFECTIVE_ERRORS:
        return None
    why = (f"{e:.2g} errors, fewer than {MIN_EXPECTED_ERRORS}" if e < MIN_EXPECTED_ERRORS else
           f"{e:.2g} errors but {f:.2g} effective (they sit in one or two identities or identity pairs), fewer than "
           f"{MIN_EFFECTIVE_ERRORS}")
    return (f"not testable: at the pooled rate the sparser group would show {why}; no identity-level test has a "
            "valid level there")


def _fnmr_variances(data: MatchData, thr: np.ndarray, labels: np.ndarray, rule: Rule, sides: np.ndarray,
                    need_perm: bool):
    """Clustered FNMR variance and squared identity shares per side at each relabelling's own threshold
    (observed: row 0 of ``thr``), and the comparisons: (v, v_perm, w, w_perm, n, n_perm), the relabelled ones None
    unless ``need_perm``."""
    uniq = np.unique(thr if need_perm else thr[:1])
    ic = identity_counts(data, uniq, rule)
    idx = np.searchsorted(uniq, thr)
    all_labels = np.concatenate([data.identity_group[None, :], labels])
    rows = thr.size if need_perm else 1
    v, w, n = (np.empty((rows, len(sides))) for _ in range(3))
    for u in np.unique(idx[:rows]):
        at = np.flatnonzero(idx[:rows] == u)
        terms = ClusterTerms(ic.g.astype(float), ic.e[u].astype(float), sp.csr_matrix((1, 1)), None, ic.g)
        _, v[at], w[at], n[at] = _masked(terms.fnmr, all_labels[at], sides)
    rest = lambda a: a[1:] if need_perm else None  # noqa: E731
    return v[:1], rest(v), w[:1], rest(w), n[:1], rest(n)


def _bootstrap_variance(data, metric, pairs, threshold, fmr_target, fmr_reference, rule, n_bootstrap, seed, grid):
    """Variance of each group difference over double-or-nothing identity replicates (engine)."""
    if metric in ("fnmr", "fmr"):
        g = Grid(np.unique(np.append(build_grid(data, rule=rule).edges, threshold)), rule) if grid is None else grid
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=g, thresholds=[threshold])
        fnmr, fmr, _, _ = bs.rates_at_threshold(c, float(threshold))
        x = (fnmr if metric == "fnmr" else fmr)[1:, 1:]
    else:
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=grid or build_grid(data, rule=rule),
                fmr_targets=[fmr_target] if metric == "fnmr_at_fmr" else [], fmr_reference=fmr_reference)
        x = _engine_metric(c, metric, np.eye(data.n_groups, dtype=bool))[1:]
    d, _ = _pair_diffs(x, None, pairs)
    with np.errstate(invalid="ignore"):
        return np.nanvar(np.where(np.isfinite(d), d, np.nan), axis=0, ddof=1)


def _comparison_level(data, metric, pairs, threshold, fmr_target, fmr_reference, rule, exact, n_resamples, seed,
                      grid, details):
    """Baseline: group labels permuted across comparisons (multivariate hypergeometric error counts)."""
    if exact:
        raise InputError("the comparison-level baseline has no exact enumeration; give n_resamples.")
    if metric == "fnmr_at_fmr":
        if fmr_reference != "all":
            raise InputError("comparison-level baseline for fnmr_at_fmr: only with fmr_reference='all' "
                             "(then the threshold does not depend on the labels).")
        threshold = details["observed_threshold"] = _observed_threshold(data, fmr_target, grid, rule)
        metric = "fnmr"
    elif metric not in ("fnmr", "fmr"):
        raise InputError(f"the comparison-level baseline supports fnmr, fmr and fnmr_at_fmr, not {metric!r}.")
    terms = ClusterTerms.at(data, float(threshold), rule)
    G = data.n_groups
    onehot = (data.identity_group[None, :] == np.arange(G)[:, None]).astype(float)
    if metric == "fnmr":
        n = onehot @ terms.g
        err = onehot @ terms.e
    else:
        m2, e2 = _same_group_rows(terms, onehot)
        n, err = 0.5 * m2, 0.5 * e2
    involved = sorted({g for p in pairs for g in p})
    n_i = np.round(n[involved]).astype(np.int64)
    e_tot = int(round(err[involved].sum()))
    gen = np.random.default_rng(seed)
    draws = gen.multivariate_hypergeometric(n_i, e_tot, size=int(n_resamples)).astype(float)
    xp = np.full((draws.shape[0], G), np.nan)
    xp[:, involved] = draws / n_i
    x = (err / n)[None, :]
    binom = lambda p: p * (1 - p) / n  # noqa: E731
    t, v = _pair_diffs(x, binom(x), pairs)
    tp, vp = _pair_diffs(xp, binom(xp), pairs)
    names = data.group_names
    return MatchingStatistics(t[0], v[0], tp, vp, False, [f"{names[a]} vs {names[b]}" for a, b in pairs],
                              [(names[a], names[b]) for a, b in pairs], pairs, np.concatenate([x, xp]),
                              details | {"n_resamples": int(tp.shape[0]), "variance": "binomial (independence)"})


def _same_group_rows(terms: ClusterTerms, onehot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group: twice the same-group impostor comparisons and twice the accepted ones."""
    mt = onehot.T
    e_row = np.asarray(terms.E @ mt).T * onehot
    if terms.M is None:
        n = terms.sizes
        S = onehot @ n
        m_row = onehot * n * (S[:, None] - n)
    else:
        m_row = np.asarray(terms.M @ mt).T * onehot
    return m_row.sum(axis=1), e_row.sum(axis=1)


# ----------------------------------------------------------------------------- results

SMALL_GROUP = 50
"""Fewer identities than this in a tested group: the test's level holds only if the group's errors are not carried
by a few identities that this sample may lack. If a tenth of a population's identities carry most of its errors,
a sample of ``k`` identities lacks all of them with probability ``0.9^k`` (25: 7%; 50: 0.5%), and then its rate and
clustered variance both look low and well behaved: no statistic can tell it from a group whose rate is that low
(``bench/test_level.py``: 150 x 3 against 25 x 15 with 10% hard identities rejects 0.084 at 0.05)."""


def small_group_caveat(sizes: dict[str, int]) -> str | None:
    """The caveat a significant gap carries when a group has fewer than :data:`SMALL_GROUP` identities (None
    otherwise); ``sizes``: identities per tested group."""
    small = {g: k for g, k in sizes.items() if k < SMALL_GROUP}
    if not small:
        return None
    g, k = min(small.items(), key=lambda x: x[1])
    return (f"group {g} has {k} identities: if a tenth of its population's identities carry most of its errors, a "
            f"sample this size lacks them all with probability {0.9 ** k:.0%}, and no test can tell (level measured "
            f"up to 0.084 at 0.05); confirm with more identities")


def _sizes(data: MatchData, a: str, b: str) -> dict[str, int]:
    """Identities per tested group (``rest``: every group but the other)."""
    count = dict(zip(data.group_names, np.bincount(data.identity_group, minlength=data.n_groups).tolist()))
    total = sum(count.values())
    return {a: count[a] if a in count else total - count[b], b: count[b] if b in count else total - count[a]}


def matching_group_test(data: MatchData, metric: MatchingMetric = "fnmr", groups: tuple[str, str] | None = None, *,
                        alternative: Alternative = "two-sided", confidence_level: float = 0.95,
                        **kwargs) -> PermutationTestResult:
    """Test ``metric(A) == metric(B)`` on matching data (weak null) by an identity-level permutation test.

    Keyword arguments as :func:`matching_statistics`; the result is the classifier tests' class.
    """
    st = matching_statistics(data, metric, groups, **kwargs)
    studentize = kwargs.get("studentize", True)
    details = st.details | {"groups": list(st.labels[0]),
                            "estimates": dict(zip(st.labels[0], map(float, st.estimates[0, list(st.pairs[0])]))),
                            "caveat": small_group_caveat(_sizes(data, *st.labels[0]))}
    res = permutation_test(float(st.t[0]), float(st.v[0]), st.t_perm[:, 0],
                           None if st.v_perm is None else st.v_perm[:, 0], studentize=studentize,
                           effect=None if st.effect is None else (float(st.effect[0]), float(st.effect_v[0])),
                           df=None if st.df is None else float(st.df[0]),
                           df_perm=None if st.df_perm is None else st.df_perm[:, 0],
                           alternative=alternative, exact=st.exact, confidence_level=confidence_level,
                           labels=st.labels[0], details=details)
    why = testable(st.details, 0)
    return res if why is None else replace(res, pvalue=math.nan, reason=why)


def _not_testable(rows: list[dict], reasons: list[str | None], level: float) -> None:
    """Mark the rows with a reason (:func:`testable`): no p-value, never significant; the others' Holm p-values and
    BH q-values are recomputed without them (their max-T p-values, over the whole family, stay: conservative)."""
    if not any(reasons):
        return
    for r, why in zip(rows, reasons):
        if why:
            r.update(pvalue=math.nan, pvalue_holm=math.nan, pvalue_maxt=math.nan, qvalue_bh=math.nan,
                     significant=False, significant_holm=False, significant_maxt=False, significant_bh=False,
                     reason=why)
    keep = [r for r, why in zip(rows, reasons) if not why]
    if keep:
        raw = np.array([r["pvalue"] for r in keep], float)
        for r, h, q in zip(keep, holm(raw), benjamini_hochberg(raw)):
            r.update(pvalue_holm=float(h), qvalue_bh=float(q), significant_holm=bool(h <= level),
                     significant_bh=bool(q <= level))


def matching_all_groups_test(data: MatchData, metric: MatchingMetric = "fnmr", *, comparisons: Comparisons = "pairs",
                             level: float = 0.05, confidence_level: float = 0.95, **kwargs) -> AllGroupsResult:
    """Every pair of groups (``comparisons="pairs"``), each group against the rest (``"rest"``: FNMR and FMR) or both,
    on the same joint relabellings of all identities: raw, Holm and max-T p-values and BH q-values over the rows."""
    st = matching_statistics(data, metric, None, comparisons=comparisons, **kwargs)
    studentize = kwargs.get("studentize", True)
    rows, z = comparison_table(st.names, st.t, st.v, st.t_perm, st.v_perm, studentize=studentize, exact=st.exact,
                               df=st.df, df_perm=st.df_perm,
                               effect=None if st.effect is None else (st.effect, st.effect_v),
                               level=level, confidence_level=confidence_level, labels=st.labels)
    G = data.n_groups
    est = {n: float(x) for n, x in zip(data.group_names, st.estimates[0, :G])}
    for j, (row, (a, b), (sa, sb)) in enumerate(zip(rows, st.labels, st.pairs)):
        row.update(kind="pair" if sb < G else "one-vs-rest", group_a=a, group_b=b, estimate_a=float(st.estimates[0, sa]),
                   estimate_b=float(st.estimates[0, sb]), caveat=small_group_caveat(_sizes(data, a, b)))
        if "effective_errors" in st.details:
            row.update(expected_errors=st.details["expected_errors"][j],
                       effective_errors=st.details["effective_errors"][j])
    _not_testable(rows, [testable(st.details, j) for j in range(len(rows))], level)
    return AllGroupsResult(rows, z.null, z.statistic, level, int(st.t_perm.shape[0]), st.exact, METHOD[z.mode],
                           st.details | {"estimates": est, "comparisons": comparisons})


__all__ = ["METRICS", "MIN_EFFECTIVE_ERRORS", "MIN_EXPECTED_ERRORS", "SMALL_GROUP", "ClusterTerms", "ThresholdError", "Comparisons", "check_all_groups_budget", "MatchingStatistics", "Relabel", "effective_df", "matching_all_groups_test",
           "matching_group_test", "matching_statistics", "relabellings", "small_group_caveat", "testable"]
