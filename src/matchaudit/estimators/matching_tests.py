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
                   (``threshold_impostors="same-group"`` changes with the labels; ``"all"`` does not). Studentized
                   with the clustered FNMR variance at each relabelling's own threshold (``studentize=True``),
                   or by the paper's fast variant.
``auc``, ``eer``   per group against its same-group impostors (grid resolution, as the audit's bootstrap;
                   exact when every distinct score is a grid edge). Fast variant only.

Studentization (:mod:`matchaudit.estimators.permutation`): ``True`` (own variance per relabelling),
``"permutation-sd"`` (``T / se(T)`` against ``T_pi / sd(T_pi)``; ``se(T)`` from the clustered variance or
an identity bootstrap: ``variance="bootstrap"``, double-or-nothing weights through the engine) or ``False``.
Two groups of identities are independent, so ``Var(T) = Var_a + Var_b``. The passes behind a test (the identity
counts, the relabelled and bootstrap engine runs) are made by :mod:`matchaudit.auditing.matching_passes`, which hands
their outputs to the functions here (:func:`setup`, :func:`fixed_rates` or :func:`side_metric` and
:func:`fnmr_variances`, :func:`bootstrap_variance`, :func:`statistics`). The clustered rates under any labelling
are :mod:`matchaudit.estimators.clustered_rates`; which pairs get no p-value ("not testable") and which verdicts carry
a caveat, :mod:`matchaudit.estimators.testability`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Literal

import numpy as np
import scipy.sparse as sp

from matchaudit import resampling as rs
from matchaudit.engine import Counts, IdentityCounts
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.classifier import AllGroupsResult, arrangements, n_arrangements
from matchaudit.estimators.clustered_rates import ClusterTerms, ThresholdError, masked
from matchaudit.estimators.testability import group_sizes, not_testable, small_group_caveat, sparse_counts, testable
from matchaudit.estimators.permutation import (
    METHOD, Alternative, PermutationTestResult, Studentize, comparison_table, mode_of, permutation_test,
)
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.model import MatchData
from matchaudit.progress import Meter

MatchingMetric = Literal["fnmr", "fmr", "fnmr_at_fmr", "auc", "eer"]
METRICS: tuple[str, ...] = ("fnmr", "fmr", "fnmr_at_fmr", "auc", "eer")
Unit = Literal["identity", "comparison"]
Variance = Literal["clustered", "bootstrap"]
_BATCH = 256


# ----------------------------------------------------------------------------- relabellings

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
        raise InputError(f"no group {name!r}; groups present: {', '.join(data.group_names)}.", param="groups")
    return data.group_names.index(name)


Comparisons = Literal["pairs", "rest", "both"]


@dataclass(frozen=True)
class Design:
    """What is compared: sides (S, G) 0/1 (a group, or the rest of one), their names, the compared side pairs
    and the identities whose labels are permuted."""

    sides: np.ndarray
    names: list[str]
    pairs: list[tuple[int, int]]
    movable: np.ndarray

    @classmethod
    def of(cls, data: MatchData, groups: tuple[str, str] | None, comparisons: Comparisons | None) -> Design:
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


    def kept_bytes(self, n_identities: int, n_resamples: int) -> int:
        """Bytes of the relabellings' labels and per-side statistics, kept whole (for the memory budget)."""
        return (n_resamples + 1) * 8 * (n_identities + 3 * (len(self.sides) + len(self.pairs)))


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


def side_metric(counts: Counts, metric: str, sides: np.ndarray) -> np.ndarray:
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


@dataclass(frozen=True)
class Setup:
    """A test's checked arguments before any pass: the metric, the studentization ``mode``, what is compared
    (``design``), whether the relabellings are enumerated (``exact``), whether every relabelling shares the
    observed threshold (``fixed``: no group label moves it) and the ``details`` recorded so far."""

    metric: str
    mode: str
    variance: str
    design: Design
    exact: bool
    fixed: bool
    details: dict

    def needs_bootstrap(self, clustered: bool) -> bool:
        """Whether ``se(T)`` comes from an identity bootstrap: asked for, or no clustered variance to studentize
        with (``clustered``: the rates came with one)."""
        return self.mode != "none" and (self.variance == "bootstrap" or not clustered)


def setup(data: MatchData, metric: str, groups: tuple[str, str] | None, comparisons: Comparisons | None,
          threshold: float | None, fmr_target: float | None, threshold_impostors: ThresholdImpostors, rule: Rule,
          unit: str, studentize: Studentize, variance: str, n_bootstrap: int, n_resamples: int | str | None,
          seed: int) -> Setup:
    """Check the arguments of :func:`matchaudit.auditing.matching_passes.matching_statistics` and fix what is
    compared; refuses what no pass could answer."""
    mode = _check_args(metric, threshold, fmr_target, studentize, variance, unit)
    if not data.has_identities:
        raise InputError("identity-level tests need identities; this comparison table has labels only.", param="data")
    design = Design.of(data, groups, comparisons)
    if not design.single_groups and (metric in ("auc", "eer") or unit == "comparison"
                                     or (variance == "bootstrap" and mode != "none")):
        raise InputError("each group against the rest: FNMR and FMR with the identity-level test and the clustered "
                         "variance only; compare pairs of groups for AUC, EER, the bootstrap variance or the "
                         "comparison-level baseline.", param="comparisons")
    exact = n_resamples is None or n_resamples == "exact"
    if isinstance(n_resamples, str) and not exact:
        raise ValueError(f"n_resamples={n_resamples!r}: give an integer, or 'exact' / None.")
    details = {"metric": metric, "unit": unit, "threshold": threshold, "fmr_target": fmr_target,
               "threshold_impostors": threshold_impostors, "rule": rule, "seed": seed, "studentize": mode,
               "variance": variance if mode != "none" else None,
               "n_bootstrap": n_bootstrap if variance == "bootstrap" and mode != "none" else None,
               "groups_identities": {n: int((data.identity_group == g).sum()) for g, n in enumerate(data.group_names)}}
    fixed = metric in ("fnmr", "fmr") or (metric == "fnmr_at_fmr" and threshold_impostors == "all")
    return Setup(metric, mode, variance, design, exact, fixed, details)


@dataclass(frozen=True)
class Rates:
    """Per side (R, S) on the observed labels (``x``, one row) and the relabellings (``xp``): the metric, and where
    known its clustered variance (``vx``, ``vp``), squared identity shares (``wx``, ``wp``: :func:`effective_df`)
    and comparisons (``nx``, ``n_p``)."""

    x: np.ndarray
    xp: np.ndarray
    vx: np.ndarray | None = None
    vp: np.ndarray | None = None
    wx: np.ndarray | None = None
    wp: np.ndarray | None = None
    nx: np.ndarray | None = None
    n_p: np.ndarray | None = None


def fixed_rates(terms: ClusterTerms, metric: str, identity_group: np.ndarray, labels: np.ndarray, sides: np.ndarray,
                progress: bool = False) -> Rates:
    """FNMR or FMR per side at a threshold every relabelling shares, in closed form from the identity terms there
    (instead of G x G engine entries per impostor comparison); ``progress``: a display of the relabellings."""
    def fn(lab: np.ndarray) -> tuple[np.ndarray, ...]:
        return terms.fmr(lab, sides) if metric == "fmr" else masked(terms.fnmr, lab, sides)
    x, vx, wx, nx = fn(identity_group[None, :])
    parts = []
    with Meter(progress, "relabellings", labels.shape[0], "relabellings") as meter:
        for r0 in range(0, labels.shape[0], _BATCH):
            parts.append(fn(labels[r0:r0 + _BATCH]))
            meter.advance(parts[-1][0].shape[0])
    xp, vp, wp, n_p = (np.concatenate(z) for z in zip(*parts))
    return Rates(x, xp, vx, vp, wx, wp, nx, n_p)


def statistics(s: Setup, rates: Rates, exact: bool, identity_group: np.ndarray, slope: ThresholdError | None = None,
               v_boot: np.ndarray | None = None, scale: Literal["log", "difference"] = "log",
               sparse_rule: bool = True) -> MatchingStatistics:
    """The observed and relabelled differences of every compared pair from the per-side ``rates`` (observed labels
    ``identity_group``): studentized on the log-ratio scale (``scale="log"``) or as differences, with the threshold's
    sampling error (``slope``) in the observed statistic, and ``v_boot`` (m,) the bootstrap variance when
    :meth:`Setup.needs_bootstrap`."""
    details, mode, pairs, sides = s.details, s.mode, s.design.pairs, s.design.sides
    x, xp, vx, vp, wx, wp, nx, n_p = (rates.x, rates.xp, rates.vx, rates.vp, rates.wx, rates.wp, rates.nx, rates.n_p)
    if vx is not None and nx is not None:
        details["expected_errors"], details["effective_errors"] = sparse_counts(x[0], vx[0], nx[0], pairs)
        details["sparse_rule"] = sparse_rule
    t, v = _pair_diffs(x, vx, pairs)  # the effect and its variance: the difference of the rates
    t_perm, v_perm = _pair_diffs(xp, vp, pairs)
    # the threshold's own sampling error (ThresholdError), in the observed statistic only: every relabelling shares
    # the observed threshold, and mixing the groups' identities takes their slopes apart (D ~ 0), so a term there
    # would only add the noise of its estimate (measured: relabelled tails too light, 0.08 at 0.05)
    obs = identity_group[None, :]
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
    if v_boot is not None:
        v = v_boot[None, :]
    if v is None:
        v = np.full_like(t, np.nan)
    studentized = mode == "studentized" and df is not None and df_perm is not None
    return MatchingStatistics(t[0], v[0], t_perm, v_perm if mode == "studentized" else None, exact,
                              [f"{a} vs {b}" for a, b in s.design.labels], s.design.labels,
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


def fnmr_variance_thresholds(thresholds: np.ndarray, need_perm: bool) -> np.ndarray:
    """The distinct thresholds :func:`fnmr_variances` reads identity counts at: each relabelling's own (row 0 the
    observed one), or only the observed one unless ``need_perm``."""
    return np.unique(thresholds if need_perm else thresholds[:1])


def fnmr_variances(ic: IdentityCounts, thresholds: np.ndarray, identity_group: np.ndarray, labels: np.ndarray,
                   sides: np.ndarray, need_perm: bool):
    """Clustered FNMR variance and squared identity shares per side at each relabelling's own threshold
    (observed: row 0 of ``thresholds``), and the comparisons: (v, v_perm, w, w_perm, n, n_perm), the relabelled
    ones None unless ``need_perm``; ``ic``: the identity counts at :func:`fnmr_variance_thresholds`."""
    uniq = fnmr_variance_thresholds(thresholds, need_perm)
    idx = np.searchsorted(uniq, thresholds)
    all_labels = np.concatenate([identity_group[None, :], labels])
    rows = thresholds.size if need_perm else 1
    v, w, n = (np.empty((rows, len(sides))) for _ in range(3))
    for u in np.unique(idx[:rows]):
        at = np.flatnonzero(idx[:rows] == u)
        terms = ClusterTerms(ic.g.astype(float), ic.e[u].astype(float), sp.csr_matrix((1, 1)), None, ic.g)
        _, v[at], w[at], n[at] = masked(terms.fnmr, all_labels[at], sides)
    rest = lambda a: a[1:] if need_perm else None  # noqa: E731
    return v[:1], rest(v), w[:1], rest(w), n[:1], rest(n)


def bootstrap_variance(counts: Counts, metric: str, pairs: list[tuple[int, int]], threshold: float | None,
                       n_groups: int) -> np.ndarray:
    """Variance of each group difference over the double-or-nothing identity replicates of ``counts``."""
    if metric in ("fnmr", "fmr"):
        fnmr, fmr, _, _ = bs.rates_at_threshold(counts, float(threshold))
        x = (fnmr if metric == "fnmr" else fmr)[1:, 1:]
    else:
        x = side_metric(counts, metric, np.eye(n_groups, dtype=bool))[1:]
    d, _ = _pair_diffs(x, None, pairs)
    with np.errstate(invalid="ignore"):
        return np.nanvar(np.where(np.isfinite(d), d, np.nan), axis=0, ddof=1)


def comparison_level_metric(s: Setup) -> str:
    """The rate the comparison-level baseline permutes (FNMR at an FMR target: FNMR at the observed threshold, which
    the labels cannot move); refuses what it cannot do."""
    if s.exact:
        raise InputError("the comparison-level baseline has no exact enumeration; give n_resamples.")
    if s.metric == "fnmr_at_fmr":
        if s.details["threshold_impostors"] != "all":
            raise InputError("comparison-level baseline for fnmr_at_fmr: only with threshold_impostors='all' "
                             "(then the threshold does not depend on the labels).")
        return "fnmr"
    if s.metric not in ("fnmr", "fmr"):
        raise InputError(f"the comparison-level baseline supports fnmr, fmr and fnmr_at_fmr, not {s.metric!r}.")
    return s.metric


def comparison_level(s: Setup, terms: ClusterTerms, group_names: list[str], identity_group: np.ndarray,
                     n_resamples: int, seed: int) -> MatchingStatistics:
    """Baseline: group labels permuted across comparisons (multivariate hypergeometric error counts) of the rate
    :func:`comparison_level_metric`, from the identity terms at the threshold."""
    metric, pairs = comparison_level_metric(s), s.design.pairs
    G = len(group_names)
    onehot = (identity_group[None, :] == np.arange(G)[:, None]).astype(float)
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
    names = group_names
    return MatchingStatistics(t[0], v[0], tp, vp, False, [f"{names[a]} vs {names[b]}" for a, b in pairs],
                              [(names[a], names[b]) for a, b in pairs], pairs, np.concatenate([x, xp]),
                              s.details | {"n_resamples": int(tp.shape[0]), "variance": "binomial (independence)"})


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

def group_test_result(st: MatchingStatistics, studentize: Studentize = True, alternative: Alternative = "two-sided",
                      level: float = 0.95) -> PermutationTestResult:
    """The permutation test of ``metric(A) == metric(B)`` (weak null) from its one comparison's statistics; the
    classifier tests' class."""
    details = st.details | {"groups": list(st.labels[0]),
                            "estimates": dict(zip(st.labels[0], map(float, st.estimates[0, list(st.pairs[0])]))),
                            "caveat": small_group_caveat(group_sizes(st.details["groups_identities"], *st.labels[0]))}
    res = permutation_test(float(st.t[0]), float(st.v[0]), st.t_perm[:, 0],
                           None if st.v_perm is None else st.v_perm[:, 0], studentize=studentize,
                           effect=None if st.effect is None else (float(st.effect[0]), float(st.effect_v[0])),
                           df=None if st.df is None else float(st.df[0]),
                           df_perm=None if st.df_perm is None else st.df_perm[:, 0],
                           alternative=alternative, exact=st.exact, level=level,
                           labels=st.labels[0], details=details)
    why = testable(st.details, 0)
    return res if why is None else replace(res, pvalue=math.nan, reason=why)


def all_groups_result(st: MatchingStatistics, group_names: list[str], comparisons: Comparisons,
                      studentize: Studentize = True, alpha: float = 0.05, level: float = 0.95) -> AllGroupsResult:
    """Raw, Holm and max-T p-values and BH q-values over the rows of an all-groups test's statistics (every pair
    of groups and/or each group against the rest, on the same joint relabellings)."""
    rows, z = comparison_table(st.names, st.t, st.v, st.t_perm, st.v_perm, studentize=studentize, exact=st.exact,
                               df=st.df, df_perm=st.df_perm,
                               effect=None if st.effect is None else (st.effect, st.effect_v),
                               alpha=alpha, level=level, labels=st.labels)
    G = len(group_names)
    est = {n: float(x) for n, x in zip(group_names, st.estimates[0, :G])}
    for j, (row, (a, b), (sa, sb)) in enumerate(zip(rows, st.labels, st.pairs)):
        row.update(kind="pair" if sb < G else "one-vs-rest", group_a=a, group_b=b, estimate_a=float(st.estimates[0, sa]),
                   estimate_b=float(st.estimates[0, sb]), caveat=small_group_caveat(group_sizes(st.details["groups_identities"], a, b)))
        if "effective_errors" in st.details:
            row.update(expected_errors=st.details["expected_errors"][j],
                       effective_errors=st.details["effective_errors"][j])
    not_testable(rows, [testable(st.details, j) for j in range(len(rows))], alpha)
    return AllGroupsResult(rows, z.null, z.statistic, alpha, int(st.t_perm.shape[0]), st.exact, METHOD[z.mode],
                           st.details | {"estimates": est, "comparisons": comparisons})


__all__ = ["METRICS", "Comparisons", "Design", "MatchingStatistics", "Rates", "Setup", "all_groups_result",
           "bootstrap_variance", "comparison_level", "comparison_level_metric", "effective_df", "fixed_rates",
           "fnmr_variance_thresholds", "fnmr_variances", "group_test_result", "relabellings", "setup", "side_metric",
           "statistics"]
