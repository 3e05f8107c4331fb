"""The passes behind the identity-level matching tests (``ma.test_gap``, ``ma.test_gaps``, an audit's group tests):
which passes run, on which grid, labels and chunks, and in which order; the statistics of each step are
:mod:`matchaudit.estimators.matching_tests`'s, on the passes' outputs (#46 item 2).

A fixed threshold (FNMR, FMR, FNMR at an FMR target set on all impostors) needs the identity counts there
(:func:`cluster_terms`) and, at an FMR target, the plug-in thresholds of the threshold error's window
(:func:`threshold_sampling_error`); a threshold that moves with the labels (same-group impostors), AUC and EER need
the engine's relabelled runs over a grid, chunked to the memory budget; ``se(T)`` by an identity bootstrap needs
double-or-nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from matchaudit import resampling as rs
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.engine import Grid, build_grid, chunks, identity_counts, run, target_thresholds
from matchaudit.engine.identity import impostor_pair_counts
from matchaudit.estimators import matching_tests as mt
from matchaudit.estimators.classifier import AllGroupsResult
from matchaudit.estimators.clustered_rates import ClusterTerms, ThresholdError
from matchaudit.estimators.permutation import Alternative, PermutationTestResult, Studentize
from matchaudit.model import MatchData
from matchaudit.progress import PASS_UNIT, Meter


@dataclass(frozen=True, eq=False)
class Relabel(rs.GroupPermutation):
    """Explicit group labels per replicate (``labels[r - 1]`` for replicate ``r``): feeds enumerations and
    permutations restricted to some identities through the engine's relabel path."""

    labels: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))

    def identity_groups(self, replicates, layout: rs.Layout) -> np.ndarray:
        return self.labels[np.asarray(replicates, np.int64) - 1]


def cluster_terms(data: MatchData, threshold: float, rule: Rule) -> ClusterTerms:
    """The identity terms at ``threshold``: its identity counts, and for listed data the impostor comparisons per
    identity pair (in memory: a clear error out of core)."""
    ic = identity_counts(data, [threshold], rule)
    pairs = None
    if data.protocol == "listed":
        data.table("the group tests")
        pairs = impostor_pair_counts(data)
    return ClusterTerms.of(ic, data.identity_sizes, pairs)


def threshold_sampling_error(data: MatchData, fmr_target: float, rule: Rule) -> ThresholdError:
    """The sampling error of the threshold set on all impostors at ``fmr_target``: the plug-in thresholds of its
    window, then the identity counts there."""
    thr = ThresholdError.window(target_thresholds(data, ThresholdError.targets(fmr_target), rule))
    return ThresholdError.of(identity_counts(data, thr, rule))


def check_budget(data: MatchData, design: mt.Design, n_resamples: int, param: str) -> None:
    """Refuse, naming ``param``, relabellings whose labels and per-side statistics (kept whole) exceed the memory
    budget."""
    chunks.check_budget(design.kept_bytes(data.n_identities, n_resamples), n_resamples, param)


def check_all_groups_budget(data: MatchData, comparisons: mt.Comparisons, n_resamples: int,
                            param: str = "n_resamples") -> None:
    """Before any work: refuse ``n_resamples`` relabellings of an all-groups test that would not fit the memory
    budget (nothing to check with fewer than two groups or without identities: such tests do not run)."""
    if data.has_identities and data.n_groups >= 2:
        check_budget(data, mt.Design.of(data, None, comparisons), n_resamples, param)


def matching_statistics(
    data: MatchData, metric: mt.MatchingMetric = "fnmr", groups: tuple[str, str] | None = None, *,
    comparisons: mt.Comparisons | None = None, threshold: float | None = None, fmr_target: float | None = None,
    threshold_impostors: ThresholdImpostors = "all", rule: Rule = ">=", unit: mt.Unit = "identity",
    studentize: Studentize = True, variance: mt.Variance = "clustered", n_bootstrap: int = 200,
    n_resamples: int | str | None = 999, seed: int = 0, grid: Grid | None = None, max_exact: int = 100_000,
    progress: bool = False, resamples_param: str = "n_resamples", threshold_error: bool = True,
    scale: Literal["log", "difference"] = "log", sparse_rule: bool = True,
) -> mt.MatchingStatistics:
    """Observed and relabelled group differences of ``metric`` (the inputs of the permutation test).

    ``groups=(A, B)``: one comparison, identities of A and B relabelled among themselves (default: the only
    two groups). ``comparisons``: on joint relabellings of all identities (for Holm and max-T), every pair of
    groups (``"pairs"``), each group against the rest (``"rest"``: its rate against the pooled rate of all other
    groups, FNMR and FMR only, clustered variance) or both. ``unit="comparison"``: the baseline permuting labels across comparisons (fixed-threshold rates
    only; binomial variance). ``n_resamples``: random relabellings, or ``"exact"``/``None`` to enumerate.
    ``progress``: a display of the relabellings (identity unit). ``resamples_param``: the name of ``n_resamples``
    in the caller's terms, for the refusal of a number of relabellings over the memory budget.
    ``threshold_error``: FNMR@FMR with ``threshold_impostors="all"`` adds the threshold's sampling error to the variance
    (:class:`~matchaudit.estimators.clustered_rates.ThresholdError`; False: the threshold treated as known, as before
    #43). ``scale``: the studentized test's statistic, the log ratio of the rates (default) or their difference (before
    #43); the reported effect is the difference either way. ``sparse_rule``: pairs too sparse to test are "not
    testable" (:func:`~matchaudit.estimators.testability.testable`); False tests every pair (to check the permutation
    machinery on a handful of identities).
    """
    s = mt.setup(data, metric, groups, comparisons, threshold, fmr_target, threshold_impostors, rule, unit, studentize,
                 variance, n_bootstrap, n_resamples, seed)
    if unit == "comparison":
        if mt.comparison_level_metric(s) != metric:  # FNMR at the observed threshold of the FMR target
            threshold = s.details["observed_threshold"] = float(target_thresholds(data, [fmr_target], rule)[0])
        return mt.comparison_level(s, cluster_terms(data, float(threshold), rule), data.group_names,
                                   data.identity_group, n_resamples, seed)
    if not s.exact:
        check_budget(data, s.design, int(n_resamples), resamples_param)
    labels, exact = mt.relabellings(data.identity_group, s.design.movable, None if s.exact else int(n_resamples), seed,
                                    max_exact)
    if metric == "fnmr_at_fmr" and s.fixed:
        # every relabelling has the observed threshold (no group label moves it): the fixed-threshold test there
        threshold = s.details["observed_threshold"] = float(target_thresholds(data, [fmr_target], rule)[0])
    slope = None
    if metric == "fnmr_at_fmr" and s.fixed and threshold_error:
        slope = threshold_sampling_error(data, fmr_target, rule)
    if s.fixed:
        rates = mt.fixed_rates(cluster_terms(data, float(threshold), rule), metric, data.identity_group, labels,
                               s.design.sides, progress)
    else:
        grid = grid or build_grid(data, rule=rule)
        rates = _relabelled_rates(data, s, labels, grid, fmr_target, threshold_impostors, rule, seed, progress)
    v_boot = None
    if s.needs_bootstrap(rates.vx is not None):
        v_boot = _bootstrap_variance(data, metric, s.design.pairs, threshold, fmr_target, threshold_impostors, rule,
                                     n_bootstrap, seed, grid)
    return mt.statistics(s, rates, exact, data.identity_group, slope, v_boot, scale, sparse_rule)


def _relabelled_rates(data: MatchData, s: mt.Setup, labels: np.ndarray, grid: Grid, fmr_target: float | None,
                      threshold_impostors: ThresholdImpostors, rule: Rule, seed: int, progress: bool) -> mt.Rates:
    """The metric per side on the observed labels and every relabelling from the engine's relabelled runs (chunked
    to the memory budget); FNMR at an FMR target also its clustered variance at each relabelling's own threshold
    (the identity counts at those thresholds) when the test studentizes with it."""
    metric, sides, details = s.metric, s.design.sides, s.details
    targets = [fmr_target] if metric == "fnmr_at_fmr" else []
    B = labels.shape[0]
    chunk = chunks.chunk_size(chunks.group_table_bytes(data.n_groups, grid.n_cells), B, None)
    with Meter(progress, "relabellings", chunks.work(data.n_comparisons(), B, chunk), PASS_UNIT) as meter:
        plug, per_rep = chunks.reduce_in_chunks(
            lambda reps: run(data, Relabel(seed, labels=labels), reps, grid=grid, fmr_targets=targets,
                             threshold_impostors=threshold_impostors, progress=meter),
            B, chunk, lambda c: {"x": mt.side_metric(c, metric, sides), "threshold": c.target_threshold})
    allx = per_rep["x"]
    details["grid_resolution"] = plug.resolution
    if metric != "fnmr_at_fmr":
        return mt.Rates(allx[:1], allx[1:])
    thr = per_rep["threshold"][:, 0]
    details["observed_threshold"] = float(thr[0])
    if not (s.mode == "studentized" or s.variance == "clustered"):
        return mt.Rates(allx[:1], allx[1:])
    need_perm = s.mode == "studentized"
    ic = identity_counts(data, mt.fnmr_variance_thresholds(thr, need_perm), rule)
    vx, vp, wx, wp, nx, n_p = mt.fnmr_variances(ic, thr, data.identity_group, labels, sides, need_perm)
    return mt.Rates(allx[:1], allx[1:], vx, vp, wx, wp, nx, n_p)


def _bootstrap_variance(data: MatchData, metric: str, pairs: list[tuple[int, int]], threshold: float | None,
                        fmr_target: float | None, threshold_impostors: ThresholdImpostors, rule: Rule,
                        n_bootstrap: int, seed: int, grid: Grid | None) -> np.ndarray:
    """Variance of each group difference over double-or-nothing identity replicates: the engine's runs at the
    threshold (a grid with it as an edge) or the FMR target, then :func:`~matchaudit.estimators.matching_tests.
    bootstrap_variance`."""
    if metric in ("fnmr", "fmr"):
        g = Grid(np.unique(np.append(build_grid(data, rule=rule).edges, threshold)), rule) if grid is None else grid
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=g, thresholds=[threshold])
    else:
        c = run(data, rs.DoubleOrNothing(seed), n_bootstrap, grid=grid or build_grid(data, rule=rule),
                fmr_targets=[fmr_target] if metric == "fnmr_at_fmr" else [], threshold_impostors=threshold_impostors)
    return mt.bootstrap_variance(c, metric, pairs, threshold, data.n_groups)


def matching_group_test(data: MatchData, metric: mt.MatchingMetric = "fnmr", groups: tuple[str, str] | None = None, *,
                        alternative: Alternative = "two-sided", level: float = 0.95,
                        **kwargs) -> PermutationTestResult:
    """Test ``metric(A) == metric(B)`` on matching data (weak null) by an identity-level permutation test.

    Keyword arguments as :func:`matching_statistics`; the result is the classifier tests' class.
    """
    st = matching_statistics(data, metric, groups, **kwargs)
    return mt.group_test_result(st, kwargs.get("studentize", True), alternative, level)


def matching_all_groups_test(data: MatchData, metric: mt.MatchingMetric = "fnmr", *,
                             comparisons: mt.Comparisons = "pairs", alpha: float = 0.05, level: float = 0.95,
                             **kwargs) -> AllGroupsResult:
    """Every pair of groups (``comparisons="pairs"``), each group against the rest (``"rest"``: FNMR and FMR) or both,
    on the same joint relabellings of all identities: raw, Holm and max-T p-values and BH q-values over the rows."""
    st = matching_statistics(data, metric, None, comparisons=comparisons, **kwargs)
    return mt.all_groups_result(st, data.group_names, comparisons, kwargs.get("studentize", True), alpha, level)


__all__ = ["Relabel", "check_all_groups_budget", "check_budget", "cluster_terms", "matching_all_groups_test",
           "matching_group_test", "matching_statistics", "threshold_sampling_error"]
