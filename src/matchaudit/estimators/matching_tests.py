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
Two groups of identities are independent, so ``Var(T) = Var_a + Var_b``. The clustered rates under any labelling
are :mod:`matchaudit.estimators.clustered_rates`; which pairs get no p-value ("not testable") and which verdicts carry
a caveat, :mod:`matchaudit.estimators.testability`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Literal

import numpy as np
import scipy.sparse as sp

from matchaudit import resampling as rs
from matchaudit.engine import Counts, Grid, build_grid, chunks, identity_counts, run, target_thresholds
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
    threshold_impostors: ThresholdImpostors = "all", rule: Rule = ">=", unit: Unit = "identity",
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
    ``threshold_error``: FNMR@FMR with ``threshold_impostors="all"`` adds the threshold's sampling error to the variance
    (:class:`ThresholdError`; False: the threshold treated as known, as before #43). ``scale``: the studentized
    test's statistic, the log ratio of the rates (default, :func:`_log_ratio`) or their difference (before #43); the
    reported effect is the difference either way. ``sparse_rule``: pairs too sparse to test are "not testable"
    (:func:`testable`); False tests every pair (to check the permutation machinery on a handful of identities).
    """
    mode = _check_args(metric, threshold, fmr_target, studentize, variance, unit)
    if not data.has_identities:
        raise InputError("identity-level tests need identities; this comparison table has labels only.", param="data")
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
               "threshold_impostors": threshold_impostors, "rule": rule, "seed": seed, "studentize": mode,
               "variance": variance if mode != "none" else None,
               "n_bootstrap": n_bootstrap if variance == "bootstrap" and mode != "none" else None,
               "groups_identities": {n: int((data.identity_group == g).sum()) for g, n in enumerate(names)}}
    if unit == "comparison":
        return _comparison_level(data, metric, pairs, threshold, fmr_target, threshold_impostors, rule, exact,
                                 n_resamples, seed, grid, details)
    G = data.n_groups
    if not exact:
        _check_budget(data, design, int(n_resamples), resamples_param)
    labels, exact = relabellings(data.identity_group, design.movable, None if exact else int(n_resamples), seed,
                                 max_exact)
    fixed = metric in ("fnmr", "fmr") or (metric == "fnmr_at_fmr" and threshold_impostors == "all")
    if metric == "fnmr_at_fmr" and fixed:
        # every relabelling has the observed threshold (no group label moves it): the fixed-threshold test there,
        # closed form per relabelling instead of G x G engine entries per impostor comparison
        threshold = details["observed_threshold"] = float(target_thresholds(data, [fmr_target], rule)[0])
    slope = None
    if metric == "fnmr_at_fmr" and fixed and threshold_error:
        slope = ThresholdError.at(data, fmr_target, rule)
    obs = data.identity_group[None, :]
    vx = vp = wx = wp = nx = n_p = None
    if fixed:
        terms = ClusterTerms.at(data, float(threshold), rule)
        def fn(lab: np.ndarray) -> tuple[np.ndarray, ...]:
            return terms.fmr(lab, sides) if metric == "fmr" else masked(terms.fnmr, lab, sides)
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
                                 threshold_impostors=threshold_impostors, progress=meter),
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
        details["expected_errors"], details["effective_errors"] = sparse_counts(x[0], vx[0], nx[0], pairs)
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
        v = _bootstrap_variance(data, metric, pairs, threshold, fmr_target, threshold_impostors, rule, n_bootstrap,
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
        _, v[at], w[at], n[at] = masked(terms.fnmr, all_labels[at], sides)
    rest = lambda a: a[1:] if need_perm else None  # noqa: E731
    return v[:1], rest(v), w[:1], rest(w), n[:1], rest(n)


def _bootstrap_variance(data, metric, pairs, threshold, fmr_target, threshold_impostors, rule, n_bootstrap, seed, grid):
    """Variance of each group difference over double-or-nothing identity replicates (engine)."""
    if metric in ("fnmr", "fmr"):
        g = Grid(np.unique(np.append(build_grid(data, rule=rule).edges, threshold)), rule) if grid is None else grid
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=g, thresholds=[threshold])
        fnmr, fmr, _, _ = bs.rates_at_threshold(c, float(threshold))
        x = (fnmr if metric == "fnmr" else fmr)[1:, 1:]
    else:
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=grid or build_grid(data, rule=rule),
                fmr_targets=[fmr_target] if metric == "fnmr_at_fmr" else [], threshold_impostors=threshold_impostors)
        x = _engine_metric(c, metric, np.eye(data.n_groups, dtype=bool))[1:]
    d, _ = _pair_diffs(x, None, pairs)
    with np.errstate(invalid="ignore"):
        return np.nanvar(np.where(np.isfinite(d), d, np.nan), axis=0, ddof=1)


def _comparison_level(data, metric, pairs, threshold, fmr_target, threshold_impostors, rule, exact, n_resamples, seed,
                      grid, details):
    """Baseline: group labels permuted across comparisons (multivariate hypergeometric error counts)."""
    if exact:
        raise InputError("the comparison-level baseline has no exact enumeration; give n_resamples.")
    if metric == "fnmr_at_fmr":
        if threshold_impostors != "all":
            raise InputError("comparison-level baseline for fnmr_at_fmr: only with threshold_impostors='all' "
                             "(then the threshold does not depend on the labels).")
        threshold = details["observed_threshold"] = float(target_thresholds(data, [fmr_target], rule)[0])
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

def matching_group_test(data: MatchData, metric: MatchingMetric = "fnmr", groups: tuple[str, str] | None = None, *,
                        alternative: Alternative = "two-sided", level: float = 0.95,
                        **kwargs) -> PermutationTestResult:
    """Test ``metric(A) == metric(B)`` on matching data (weak null) by an identity-level permutation test.

    Keyword arguments as :func:`matching_statistics`; the result is the classifier tests' class.
    """
    st = matching_statistics(data, metric, groups, **kwargs)
    studentize = kwargs.get("studentize", True)
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


def matching_all_groups_test(data: MatchData, metric: MatchingMetric = "fnmr", *, comparisons: Comparisons = "pairs",
                             alpha: float = 0.05, level: float = 0.95, **kwargs) -> AllGroupsResult:
    """Every pair of groups (``comparisons="pairs"``), each group against the rest (``"rest"``: FNMR and FMR) or both,
    on the same joint relabellings of all identities: raw, Holm and max-T p-values and BH q-values over the rows."""
    st = matching_statistics(data, metric, None, comparisons=comparisons, **kwargs)
    studentize = kwargs.get("studentize", True)
    rows, z = comparison_table(st.names, st.t, st.v, st.t_perm, st.v_perm, studentize=studentize, exact=st.exact,
                               df=st.df, df_perm=st.df_perm,
                               effect=None if st.effect is None else (st.effect, st.effect_v),
                               alpha=alpha, level=level, labels=st.labels)
    G = data.n_groups
    est = {n: float(x) for n, x in zip(data.group_names, st.estimates[0, :G])}
    for j, (row, (a, b), (sa, sb)) in enumerate(zip(rows, st.labels, st.pairs)):
        row.update(kind="pair" if sb < G else "one-vs-rest", group_a=a, group_b=b, estimate_a=float(st.estimates[0, sa]),
                   estimate_b=float(st.estimates[0, sb]), caveat=small_group_caveat(group_sizes(st.details["groups_identities"], a, b)))
        if "effective_errors" in st.details:
            row.update(expected_errors=st.details["expected_errors"][j],
                       effective_errors=st.details["effective_errors"][j])
    not_testable(rows, [testable(st.details, j) for j in range(len(rows))], alpha)
    return AllGroupsResult(rows, z.null, z.statistic, alpha, int(st.t_perm.shape[0]), st.exact, METHOD[z.mode],
                           st.details | {"estimates": est, "comparisons": comparisons})


__all__ = ["METRICS", "Comparisons", "check_all_groups_budget", "MatchingStatistics", "Relabel", "effective_df",
           "matching_all_groups_test", "matching_group_test", "matching_statistics", "relabellings"]
