"""The option objects of an audit, the public way to say what it measures beyond the operating points
(:class:`MeasureOptions`), how to compute its intervals (:class:`IntervalOptions`), its group tests
(:class:`TestOptions`) and its equivalence tests (:class:`EquivalenceOptions`): validated where they are built,
whoever builds them, and recorded in the results."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Literal, Sequence

from matchaudit import checks
from matchaudit.choices import INTERVAL_METHODS as METHODS
from matchaudit.definitions import Alternative
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.calibration import check_operating_points
from matchaudit.estimators.equivalence import Scale, check_options
from matchaudit.estimators.matching_tests import Comparisons
from matchaudit.metrics.evaluate import AuditConfig, FmrThreshold
from matchaudit.metrics.fairness import ZeroPolicy
from matchaudit.metrics.rates import EerMethod, Weighting
from matchaudit.metrics.small_groups import MIN_IDENTITIES, SmallGroupRule

Studentize = Literal["permutation-sd", "studentized"]
Band = Literal["simultaneous", "pointwise"]


@dataclass(frozen=True)
class MeasureOptions:
    """What an audit measures besides the rates at its operating points: the weightings, the curve summaries
    (minDCF's point, the EER's definition), the threshold rule at FMR targets, the calibration and cost metrics, and
    how the fairness measures treat zero rates and small groups (the parameters are described at
    :func:`matchaudit.audit`). Validated when built, by the audit's own configuration."""

    weightings: Sequence[Weighting] = ("pooled", "balanced")
    dcf_p_target: float = 0.01
    dcf_c_miss: float = 1.0
    dcf_c_fa: float = 1.0
    eer: EerMethod = "rocch"
    fmr_threshold: FmrThreshold = "lowest-score"
    dcf: Sequence[tuple[float, float, float]] | None = None
    llr: bool = False
    calibration: bool = True
    zero_policy: ZeroPolicy = "report"
    exclude_small_groups: bool = False
    small_group_identities: int = MIN_IDENTITIES

    def __post_init__(self) -> None:
        object.__setattr__(self, "weightings", self.config(()).weightings)
        object.__setattr__(self, "llr", checks.flag(self.llr, "llr"))
        object.__setattr__(self, "calibration", checks.flag(self.calibration, "calibration"))
        if self.dcf is not None:
            object.__setattr__(self, "dcf", check_operating_points(self.dcf, "dcf"))

    def config(self, fmr, thresholds=(), fnmr=(), rule: str = ">=", threshold_impostors: str = "all"
               ) -> AuditConfig:
        """The audit's configuration of these measures at the operating points given (validates every field)."""
        return AuditConfig(fmr_targets=fmr, thresholds=thresholds, fnmr_targets=fnmr, rule=rule,
                           weightings=self.weightings, threshold_impostors=threshold_impostors,
                           dcf_p_target=self.dcf_p_target, dcf_c_miss=self.dcf_c_miss, dcf_c_fa=self.dcf_c_fa,
                           eer_method=self.eer, fmr_threshold=self.fmr_threshold, zero_policy=self.zero_policy,
                           exclude_small_groups=self.exclude_small_groups, small_groups=SmallGroupRule(
                               min_identities=checks.integer(self.small_group_identities, "small_group_identities")))

    @property
    def cost_points(self) -> tuple[tuple[float, float, float], ...]:
        """The calibration and cost metrics' operating points: ``dcf``, else the one of the curve summaries."""
        return self.dcf if self.dcf is not None else ((self.dcf_p_target, self.dcf_c_miss, self.dcf_c_fa),)


@dataclass(frozen=True)
class IntervalOptions:
    """How an audit computes its confidence intervals (every field is recorded in results.json; docs/intervals.md).

    ``method``: None (each metric's default), a method name, or several (a list or ``"wilson,double-or-nothing"``:
    each gives its intervals where it applies, side by side); ``level``: the confidence level; ``n_resamples``:
    bootstrap replicates (and their ``seed``); ``one_sided``: upper bounds; ``band``: the DET bands, simultaneous or
    pointwise; ``n_cells``, ``det_points``: the replicate grid and the DET band's points; ``memory_gb``: the
    bootstrap's memory budget (default a quarter of physical memory; replicates are counted in chunks that fit it,
    the same numbers); ``spill_dir``: a folder where the calibration metrics and score distributions may sort the
    comparisons on disk when they exceed their memory budget (default none: they are skipped there, with a warning;
    on disk every block of replicates reads them back, so slower). Where to sort is not a statistical choice:
    ``spill_dir`` is not recorded in results.json."""

    method: str | tuple[str, ...] | None = None  # None: per-metric defaults; several: each where it applies
    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    one_sided: bool = False  # upper bounds
    band: Band = "simultaneous"
    n_cells: int = 4096
    det_points: int = 60
    memory_gb: float | None = None  # budget for the bootstrap; None: MEMORY_SHARE of physical memory
    spill_dir: str | None = field(default=None, metadata={"recorded": False})

    def __post_init__(self) -> None:
        """Validate every field, whoever builds the options."""
        if self.method is not None:
            several = checks.choices(self.method, METHODS, "ci_method")
            object.__setattr__(self, "method", several[0] if len(several) == 1 else several)
        object.__setattr__(self, "level", checks.confidence(self.level, "level"))
        object.__setattr__(self, "n_resamples", checks.integer(self.n_resamples, "n_resamples", low=1))
        object.__setattr__(self, "one_sided", checks.flag(self.one_sided, "one_sided"))
        object.__setattr__(self, "seed", checks.seed(self.seed))
        checks.choice(self.band, Band, "band")
        object.__setattr__(self, "n_cells", checks.integer(self.n_cells, "n_cells", low=2))
        object.__setattr__(self, "det_points", checks.integer(self.det_points, "det_points", low=2))
        bs.check_resamples(self.n_resamples, self.level, self.alternative)
        if self.memory_gb is not None:
            object.__setattr__(self, "memory_gb", checks.number(self.memory_gb, "memory_gb", low=0.0, low_open=True))
        if self.spill_dir is not None:
            object.__setattr__(self, "spill_dir", checks.path(self.spill_dir, "spill_dir"))
            if not os.path.isdir(self.spill_dir):
                raise InputError(f"spill_dir {self.spill_dir!r} is not a folder: give an existing folder on a disk "
                                 "with room, or leave it out.", param="spill_dir")

    def recorded(self) -> dict:
        """The fields results.json records (all but where to work: ``spill_dir``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("recorded", True)}

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods asked for, in the order given (empty: the per-metric defaults)."""
        return () if self.method is None else (self.method,) if isinstance(self.method, str) else self.method

    @property
    def alternative(self) -> Alternative:
        return "less" if self.one_sided else "two-sided"


@dataclass(frozen=True)
class TestOptions:
    """The identity-level all-groups permutation tests run inside an audit (docs/tests.md): ``n_resamples``
    relabellings of the identities (and their ``seed``), verdicts at the significance level ``alpha`` (max-T adjusted
    per family: one per metric and operating point), ``comparisons`` every pair of groups (``"pairs"``), each group
    against the pooled rest (``"rest"``), or both; ``studentize`` the statistic's studentization."""

    __test__ = False  # not a pytest class

    n_resamples: int = 999
    seed: int = 0
    alpha: float = 0.05
    studentize: Studentize = "permutation-sd"
    comparisons: Comparisons = "pairs"

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_resamples", checks.integer(self.n_resamples, "test_resamples", low=1))
        object.__setattr__(self, "seed", checks.seed(self.seed))
        object.__setattr__(self, "alpha", checks.probability(self.alpha, "alpha"))
        checks.choice(self.studentize, Studentize, "studentize")
        checks.choice(self.comparisons, Comparisons, "test_comparisons")


@dataclass(frozen=True)
class EquivalenceOptions:
    """Equivalence tests of every pair of groups' FNMR and FMR at each FMR target: within ``margin`` (e.g. (0.8,
    1.25)) on the ``scale`` "ratio" (A / B) or "difference" (A - B), TOST at ``alpha`` on ``n_resamples``
    identity-bootstrap replicates of ``method`` ("double-or-nothing" or "vertex")."""

    margin: tuple[float, float]
    scale: Scale = "ratio"
    n_resamples: int = 1000
    alpha: float = 0.05
    seed: int = 0
    method: str = "double-or-nothing"

    def __post_init__(self) -> None:
        margin, alpha, n_resamples = check_options(self.margin, self.scale, self.method, self.alpha, self.n_resamples)
        object.__setattr__(self, "margin", margin)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "n_resamples", n_resamples)
        object.__setattr__(self, "seed", checks.seed(self.seed))


@dataclass(frozen=True)
class CarriedThresholds:
    """Thresholds set elsewhere (a development audit, a vendor's data sheet) and the FMR target each was set for: the
    audit evaluates them as fixed thresholds and adds the portability table (:attr:`Audit.portability`: per threshold
    and group, FMR and FNMR there with intervals, FMR / target, and the group's own threshold for the target with its
    interval). ``source``: where they come from, recorded in each row (e.g. the development results.json)."""

    thresholds: Sequence[float]
    targets: Sequence[float]
    source: str | None = None

    def __post_init__(self) -> None:
        def values(x, param: str, **bounds) -> tuple[float, ...]:
            x = [x] if isinstance(x, (int, float)) else x
            if isinstance(x, str) or not isinstance(x, Sequence) or not len(x):
                raise InputError(f"{param} {x!r}: give a non-empty sequence of numbers.", param=param)
            return tuple(checks.number(v, param, **bounds) for v in x)

        t = values(self.thresholds, "thresholds", finite=False)
        a = values(self.targets, "targets", low=0.0, high=1.0, low_open=True, high_open=True)  # FMR / 0: no ratio
        if len(t) != len(a):
            raise InputError(f"carried thresholds: {len(t)} thresholds but {len(a)} FMR targets; give the target "
                             "each threshold was set for.", param="targets")
        if self.source is not None and not isinstance(self.source, str):
            raise InputError(f"source {self.source!r}: give a text or None.", param="source")
        object.__setattr__(self, "thresholds", t)
        object.__setattr__(self, "targets", a)

    @property
    def pairs(self) -> tuple[tuple[float, float], ...]:
        """``(threshold, target)`` in the order given."""
        return tuple(zip(self.thresholds, self.targets))


__all__ = ["Band", "CarriedThresholds", "EquivalenceOptions", "IntervalOptions", "MeasureOptions", "Studentize",
           "TestOptions"]
