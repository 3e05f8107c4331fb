"""The public jobs besides :func:`matchaudit.audit`: compare two models, compare two audits, test a gap between
groups, design a protocol. Each checks its arguments (:mod:`matchaudit.checks`) and calls the estimator that does the work, so
the library and every CLI command validate the same things the same way.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal, Sequence

from matchaudit import checks
from matchaudit.definitions import Alternative, Rule, ThresholdImpostors
from matchaudit.errors import InputError
from matchaudit.auditing.audit_diff import diff_audits
from matchaudit.auditing.core import Audit
from matchaudit.auditing.equivalence import equivalence_test
from matchaudit.auditing.matching_passes import matching_all_groups_test, matching_group_test
from matchaudit.auditing.model_comparison import compare_models
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.audit_diff import AuditDiff
from matchaudit.estimators.compare import SCHEMES, ModelComparison
from matchaudit.estimators.equivalence import EquivalenceResult, RateName, Scale
from matchaudit.estimators.matching_tests import METRICS, Comparisons
from matchaudit.estimators.classifier import AllGroupsResult
from matchaudit.estimators.permutation import PermutationTestResult
from matchaudit.protocols import Protocol, design_protocol
from matchaudit.model import MatchData
from matchaudit.pairings import check_spec
from matchaudit.scores import tile_cache

_FMR = dict(low=0.0, high=1.0, high_open=True)


@tile_cache()
def compare(
    a: MatchData,
    b: MatchData,
    *,
    fmr: float | Sequence[float] = 1e-3,
    ci_method: str = "double-or-nothing",
    level: float = 0.95,
    n_resamples: int = 1000,
    test_resamples: int = 999,
    seed: int = 0,
    threshold_impostors: ThresholdImpostors = "all",
    rule: Rule = ">=",
    progress: bool = False,
    n_permutations: int | None = None,
) -> ModelComparison:
    """Compare two models scored on the same comparisons: paired identity-bootstrap intervals of
    FNMR@FMR(A) - FNMR@FMR(B) (overall, per group, each fairness measure; ``n_resamples`` replicates) and, with
    ``test_resamples > 0``, a paired swap test per FMR target (model labels swapped per identity, ``test_resamples``
    relabellings: the name the audit's tests use, CLI ``--test-resamples``). ``progress``: show each step's
    progress on stderr. ``n_permutations``: the old name of ``test_resamples`` (a FutureWarning; removed in 1.0).

    Examples
    --------
    >>> import matchaudit as ma
    >>> a = ma.simulate(samples_per_identity=4, dim=32, seed=3).as_data()
    >>> res = ma.compare(a, a, fmr=1e-2, n_resamples=40, test_resamples=19)
    >>> res.tests[0].pvalue  # identical models: no difference, never significant
    1.0
    """
    checks.match_data(a, "a")
    checks.match_data(b, "b")
    targets = checks.numbers(fmr, "fmr", **_FMR)
    checks.choice(ci_method, SCHEMES, "ci_method")
    if n_permutations is not None:
        if test_resamples != 999:
            raise InputError("give test_resamples only (n_permutations is its old name).", param="n_permutations")
        warnings.warn("ma.compare(n_permutations=...) is now test_resamples=... (removed in 1.0).", FutureWarning,
                      stacklevel=2)
        test_resamples = checks.integer(n_permutations, "n_permutations")
    test_resamples = checks.integer(test_resamples, "test_resamples")
    level = checks.confidence(level, "level")
    n_resamples = bs.check_resamples(checks.integer(n_resamples, "n_resamples", low=1), level)
    return compare_models(a, b, targets, method=ci_method, n_resamples=n_resamples,
                          test_resamples=max(test_resamples, 1), seed=checks.seed(seed), level=level,
                          threshold_impostors=check_spec(threshold_impostors),
                          rule=checks.choice(rule, Rule, "rule"), test=test_resamples > 0, progress=progress)


@tile_cache()
def diff(
    old: Audit | str | Path,
    new: Audit | str | Path,
    *,
    old_data: MatchData | None = None,
    new_data: MatchData | None = None,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_method: str = "double-or-nothing",
    progress: bool = False,
) -> AuditDiff:
    """Compare two audits of versions of one system (an :class:`Audit` or its saved folder each): per FMR target
    both hold, FNMR overall and per group and each group's FMR, the difference NEW - OLD with its interval at the
    confidence ``level``, and which got worse (or better) beyond noise, simultaneously over the views of each
    metric and target (docs/workflow.md).

    Paired when ``old_data`` and ``new_data`` (the two versions' scores) hold the same trials (pairs, identities,
    labels, groups) and reproduce their audits' rates: ``ma.compare``'s paired identity bootstrap (``ci_method``,
    ``n_resamples`` replicates, ``seed``), verdicts by max-T on its replicates. Otherwise unpaired, and
    ``.pairing`` says why: the audits' own standard errors combined as independent, Šidák across the views. Rows
    only one audit has are left out and listed in ``.skipped``. An :class:`AuditDiff`: ``.to_frame()``,
    ``.to_dict()``, ``.worse``.

    Examples
    --------
    >>> import matchaudit as ma
    >>> data = ma.simulate(samples_per_identity=4, dim=32, seed=3).as_data()
    >>> old = ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=50))
    >>> res = ma.diff(old, old, old_data=data, new_data=data, n_resamples=50)
    >>> res.paired, sorted({r["verdict"] for r in res.rows})  # the same scores: no difference anywhere
    (True, ['not testable'])
    """
    audits = [a if isinstance(a, Audit) else Audit.load(checks.path(a, side), curves=True)
              for a, side in ((old, "old"), (new, "new"))]
    for d, side in ((old_data, "old_data"), (new_data, "new_data")):
        if d is not None:
            checks.match_data(d, side)
    level = checks.confidence(level, "level")
    checks.choice(ci_method, SCHEMES, "ci_method")
    n_resamples = bs.check_resamples(checks.integer(n_resamples, "n_resamples", low=1), level)
    return diff_audits(*audits, old_data, new_data, level=level, n_resamples=n_resamples, seed=checks.seed(seed),
                       method=ci_method, progress=progress, sources=(old, new))


def _gap_options(data: MatchData, metric: str, fmr, threshold, rule, threshold_impostors, n_resamples, seed,
                 studentize, variance, n_bootstrap, unit, progress) -> dict:
    """The checked keyword arguments :func:`test_gap` and :func:`test_gaps` share (a gap needs two groups)."""
    checks.match_data(data)
    checks.choice(metric, METRICS, "metric")
    if data.n_groups < 2:
        raise InputError("a gap needs at least two groups: group the data by an attribute.", param="group_by")
    return dict(fmr_target=None if fmr is None else checks.number(fmr, "fmr", **_FMR),
                threshold=None if threshold is None else checks.number(threshold, "threshold", finite=False),
                threshold_impostors=check_spec(threshold_impostors),
                rule=checks.choice(rule, Rule, "rule"), seed=checks.seed(seed),
                studentize=checks.choice(studentize, (True, False, "permutation-sd"), "studentize"),
                n_resamples=None if n_resamples == "exact" else checks.integer(n_resamples, "n_resamples", low=1),
                variance=checks.choice(variance, ("clustered", "bootstrap"), "variance"),
                n_bootstrap=checks.integer(n_bootstrap, "n_bootstrap", low=1),
                unit=checks.choice(unit, ("identity", "comparison"), "unit"), progress=progress)


@tile_cache()
def test_gap(
    data: MatchData,
    metric: Literal["fnmr", "fmr", "fnmr_at_fmr", "auc", "eer"] = "fnmr_at_fmr",
    groups: tuple[str, str] | None = None,
    *,
    fmr: float | None = None,
    threshold: float | None = None,
    rule: Rule = ">=",
    threshold_impostors: ThresholdImpostors = "all",
    n_resamples: int | Literal["exact"] = 999,
    seed: int = 0,
    alternative: Alternative = "two-sided",
    studentize: bool | Literal["permutation-sd"] = True,
    variance: Literal["clustered", "bootstrap"] = "clustered",
    n_bootstrap: int = 200,
    unit: Literal["identity", "comparison"] = "identity",
    level: float = 0.95,
    progress: bool = False,
) -> PermutationTestResult:
    """Is the gap in ``metric`` between two groups real or noise? A studentized permutation test with the identity
    as the exchangeable unit, the identities of the two groups relabelled among themselves.

    ``groups=(A, B)`` (default: the data's two groups; with more, :func:`test_gaps` tests every pair on the same
    relabellings). A :class:`PermutationTestResult`: ``.pvalue``, ``.effect`` (A - B) with its ``.effect_ci`` at
    the confidence ``level``, ``.null_distribution``, ``.significant(alpha)``; a pair too sparse to test has no
    p-value and says why in ``.reason``. ``fmr`` is needed for ``fnmr_at_fmr``, ``threshold`` for ``fnmr`` and
    ``fmr``. ``n_resamples="exact"`` enumerates every relabelling (small data). ``studentize="permutation-sd"``
    with ``variance="bootstrap"`` (``n_bootstrap`` identity-bootstrap replicates) is the fast variant, and the one
    AUC and EER need; ``unit="comparison"`` is the invalid baseline that ignores identity dependence.
    ``progress``: a display of the relabellings on stderr.

    Examples
    --------
    >>> import matchaudit as ma
    >>> data = ma.simulate(samples_per_identity=10, dim=32, seed=2).as_data()
    >>> res = ma.test_gap(data, "fnmr_at_fmr", ("A", "B"), fmr=1e-3, n_resamples=99)
    >>> res.details["estimates"]["B"] > res.details["estimates"]["A"], res.direction, res.significant(0.05)
    (True, 'A < B', True)
    """
    kw = _gap_options(data, metric, fmr, threshold, rule, threshold_impostors, n_resamples, seed, studentize,
                      variance, n_bootstrap, unit, progress)
    level, alternative = checks.confidence(level, "level"), checks.choice(alternative, Alternative, "alternative")
    if groups is None and data.n_groups != 2:
        raise InputError(f"the data has {data.n_groups} groups: name two with groups=(A, B), or test every pair "
                         "with ma.test_gaps.", param="groups")
    return matching_group_test(data, metric, None if groups is None else checks.pair(groups, "groups"),
                               alternative=alternative, level=level, **kw)


@tile_cache()
def test_gaps(
    data: MatchData,
    metric: Literal["fnmr", "fmr", "fnmr_at_fmr", "auc", "eer"] = "fnmr_at_fmr",
    *,
    comparisons: Comparisons = "pairs",
    fmr: float | None = None,
    threshold: float | None = None,
    rule: Rule = ">=",
    threshold_impostors: ThresholdImpostors = "all",
    n_resamples: int | Literal["exact"] = 999,
    seed: int = 0,
    alpha: float = 0.05,
    studentize: bool | Literal["permutation-sd"] = True,
    variance: Literal["clustered", "bootstrap"] = "clustered",
    n_bootstrap: int = 200,
    unit: Literal["identity", "comparison"] = "identity",
    level: float = 0.95,
    progress: bool = False,
) -> AllGroupsResult:
    """Which gaps in ``metric`` between groups are real? :func:`test_gap` for every pair of groups
    (``comparisons="pairs"``), each group against the pooled rest (``"rest"``; FNMR and FMR) or both, on the same
    joint relabellings of all identities: an :class:`AllGroupsResult` with, per row, the raw two-sided p-value, Holm
    and max-T adjusted p-values (family-wise error) and the BH q-value (false discoveries), each flagged at the
    significance level ``alpha``; effect intervals at the confidence ``level``. Other arguments as
    :func:`test_gap`.

    Examples
    --------
    >>> import matchaudit as ma
    >>> data = ma.simulate(samples_per_identity=10, dim=32, seed=2).as_data()
    >>> res = ma.test_gaps(data, "fnmr_at_fmr", fmr=1e-3, n_resamples=99)
    >>> [(r["comparison"], r["significant_maxt"]) for r in res.rows]  # A vs C: too few errors ("not testable")
    [('A vs B', True), ('A vs C', False), ('B vs C', True)]
    >>> res.rows[1]["reason"].startswith("not testable")
    True
    """
    kw = _gap_options(data, metric, fmr, threshold, rule, threshold_impostors, n_resamples, seed, studentize,
                      variance, n_bootstrap, unit, progress)
    return matching_all_groups_test(data, metric, comparisons=checks.choice(comparisons, Comparisons, "comparisons"),
                                    alpha=checks.probability(alpha, "alpha"), level=checks.confidence(level, "level"),
                                    **kw)


@tile_cache()
def test_equivalence(
    data: MatchData,
    groups: tuple[str, str] | None = None,
    *,
    metric: RateName = "fnmr",
    fmr: float = 1e-3,
    margin: tuple[float, float] = (0.8, 1.25),
    scale: Scale = "ratio",
    ci_method: str = "double-or-nothing",
    n_resamples: int = 1999,
    alpha: float = 0.05,
    seed: int = 0,
    rule: Rule = ">=",
    threshold_impostors: ThresholdImpostors = "all",
    progress: bool = False,
) -> EquivalenceResult:
    """Is the gap between two groups within a margin? Two one-sided tests (TOST) on identity resampling: the
    reverse of :func:`test_gap`, whose "not distinguishable from noise" is absence of evidence, not evidence of
    fairness.

    ``metric`` ("fnmr" or "fmr") of each group at the global threshold for FMR target ``fmr``; ``scale``
    "ratio" (A / B, margin such as (0.8, 1.25)) or "difference" (A - B, margin such as (-0.01, 0.01));
    ``ci_method`` the identity bootstrap ("double-or-nothing" or "vertex"). ``.equivalent`` is True only when
    both one-sided nulls are rejected at ``alpha`` (``.pvalue`` the larger one-sided p-value), which is the same as
    ``.confidence_interval`` (``1 - 2 alpha``) lying inside the margin.

    Examples
    --------
    >>> import matchaudit as ma
    >>> data = ma.simulate(samples_per_identity=4, dim=32, seed=2).as_data()
    >>> res = ma.test_equivalence(data, ("A", "B"), metric="fmr", fmr=1e-2, margin=(0.5, 2.0), n_resamples=199)
    >>> res.equivalent == (res.pvalue <= 0.05)
    True
    """
    checks.match_data(data)
    return equivalence_test(data, None if groups is None else checks.pair(groups, "groups"), metric=metric, fmr=fmr, margin=margin, scale=scale, method=ci_method,
                            n_resamples=n_resamples, alpha=alpha, seed=checks.seed(seed),
                            rule=checks.choice(rule, Rule, "rule"),
                            threshold_impostors=check_spec(threshold_impostors), progress=progress)


def plan(sample_ids: Sequence[object], identities: Sequence[object], genuine: int, impostor: int, *,
         seed: int = 0) -> Protocol:
    """Design an evaluation protocol under a budget: ``genuine`` and ``impostor`` comparisons spread over the
    identities (no identity gets a second genuine pair before every identity has one; impostor pairs use each
    identity as rarely as possible). ``.to_frame()`` is the ``pairs.csv`` that an audit of these pairs reads.

    Examples
    --------
    >>> import matchaudit as ma
    >>> p = ma.plan(["a1", "a2", "b1", "b2", "c1"], ["a", "a", "b", "b", "c"], genuine=2, impostor=3)
    >>> len(p.to_frame())
    5
    """
    return design_protocol(sample_ids, identities, checks.integer(genuine, "genuine"),
                           checks.integer(impostor, "impostor"), seed=checks.seed(seed))


__all__ = ["compare", "diff", "plan", "test_equivalence", "test_gap", "test_gaps"]
test_gap.__test__ = test_gaps.__test__ = False  # library functions, not pytest tests
test_equivalence.__test__ = False
