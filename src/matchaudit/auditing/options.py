"""The option objects of an audit, the public way to say how to compute its intervals (:class:`IntervalOptions`)
and its group tests (:class:`TestOptions`): validated where they are built, whoever builds them, and recorded in
the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from matchaudit import checks
from matchaudit.choices import INTERVAL_METHODS as METHODS
from matchaudit.definitions import Alternative
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.matching_tests import Comparisons

Studentize = Literal["permutation-sd", "studentized"]
Band = Literal["simultaneous", "pointwise"]


@dataclass(frozen=True)
class IntervalOptions:
    """How to compute intervals; every field is recorded."""

    method: str | tuple[str, ...] | None = None  # None: per-metric defaults; several: each where it applies
    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    one_sided: bool = False  # upper bounds
    band: Band = "simultaneous"
    n_cells: int = 4096
    det_points: int = 60
    memory_gb: float | None = None  # budget for the bootstrap; None: MEMORY_SHARE of physical memory

    def __post_init__(self) -> None:
        """Validate every field, whoever builds the options."""
        if self.method is not None:
            several = checks.choices(self.method, METHODS, "ci_method")
            object.__setattr__(self, "method", several[0] if len(several) == 1 else several)
        object.__setattr__(self, "level", checks.probability(self.level, "level"))
        object.__setattr__(self, "n_resamples", checks.integer(self.n_resamples, "n_resamples", low=1))
        object.__setattr__(self, "seed", checks.seed(self.seed))
        checks.choice(self.band, Band, "band")
        object.__setattr__(self, "n_cells", checks.integer(self.n_cells, "n_cells", low=2))
        object.__setattr__(self, "det_points", checks.integer(self.det_points, "det_points", low=2))
        bs.check_resamples(self.n_resamples, self.level, self.alternative)
        if self.memory_gb is not None:
            object.__setattr__(self, "memory_gb", checks.number(self.memory_gb, "memory_gb", low=0.0, low_open=True))

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods asked for, in the order given (empty: the per-metric defaults)."""
        return () if self.method is None else (self.method,) if isinstance(self.method, str) else self.method

    @property
    def alternative(self) -> Alternative:
        return "less" if self.one_sided else "two-sided"


@dataclass(frozen=True)
class TestOptions:
    """The identity-level all-groups permutation tests run inside an audit: ``comparisons`` every pair of groups,
    each group against the pooled rest, or both (one max-T family per metric and operating point)."""

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


__all__ = ["Band", "IntervalOptions", "Studentize", "TestOptions"]
