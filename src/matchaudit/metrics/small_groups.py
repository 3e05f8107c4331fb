"""Small groups: one rule that flags a group whose counts are too few for its rates to stand alone, and the
opt-in exclusion of flagged groups from the across-group fairness measures (docs/evaluators.md, "Small groups").

A group is *small* when it has fewer than ``min_identities`` identities, fewer than ``min_genuine`` genuine
comparisons or fewer than ``min_impostor`` same-group impostor comparisons (:class:`SmallGroupRule`). The defaults
are the regime findings of the interval study (docs/intervals.md, "Regime grid"; :mod:`matchaudit.estimators.regime`):

* :data:`MIN_IDENTITIES` (10): identity-level intervals and group tests are not validated with fewer identities
  per group (the audit's regime warning says so);
* :data:`GRID_MIN_ERRORS` (20) genuine and same-group impostor comparisons: below about 20 errors no interval
  method held its level in the regime grid, and a group with fewer than 20 comparisons of a class cannot have 20
  errors of it at any threshold (one error moves its rate by more than 5 points), so its FNMR (FMR) is never in a
  validated regime. The rule is a floor, not a guarantee: a group above it can still rest on few errors at a given
  operating point, which each interval record's ``method_reason`` and ``indicative`` say.

The flag is always computed (``small``, ``small_reasons`` on each ``summary.groups`` record) and changes no number.
Excluding small groups from the fairness measures is opt-in
(``audit(measures=MeasureOptions(exclude_small_groups=True))``, ``matchaudit audit --exclude-small-groups``): which
groups enter a max/min ratio is a choice of the question asked, and leaving a group out silently would hide exactly
the groups an audit is meant to look at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matchaudit import checks

MIN_IDENTITIES = 10  # identity-level resampling and tests with fewer units per group are not validated
GRID_MIN_ERRORS = 20  # below about this many errors no interval method held its level in the regime grid


@dataclass(frozen=True)
class SmallGroupRule:
    """A group is small when it has fewer than ``min_identities`` identities, ``min_genuine`` genuine comparisons
    or ``min_impostor`` same-group impostor comparisons (defaults: the regime findings, see the module doc). The
    identity count applies only to data with identities."""

    min_identities: int = MIN_IDENTITIES
    min_genuine: int = GRID_MIN_ERRORS
    min_impostor: int = GRID_MIN_ERRORS

    def __post_init__(self) -> None:
        for name in ("min_identities", "min_genuine", "min_impostor"):
            object.__setattr__(self, name, checks.integer(getattr(self, name), name, low=0))

    def describe(self) -> str:
        """The rule in words, as results.json and the report state it."""
        return (f"groups with fewer than {self.min_identities:,} identities, {self.min_genuine:,} genuine comparisons "
                f"or {self.min_impostor:,} same-group impostor comparisons")

    def reasons(self, identities: int | None, genuine: int, impostor: int) -> list[str]:
        """Why a group with these counts is small (empty when it is not); ``identities`` None: not known."""
        out = []
        if identities is not None and identities < self.min_identities:
            out.append(f"{identities:,} identities (fewer than {self.min_identities:,})")
        if genuine < self.min_genuine:
            out.append(f"{genuine:,} genuine comparisons (fewer than {self.min_genuine:,})")
        if impostor < self.min_impostor:
            out.append(f"{impostor:,} same-group impostor comparisons (fewer than {self.min_impostor:,})")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The limits and the rule in words (what results.json records; :meth:`from_dict` reads it)."""
        return {"min_identities": self.min_identities, "min_genuine": self.min_genuine,
                "min_impostor": self.min_impostor, "rule": self.describe()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SmallGroupRule:
        """The rule :meth:`to_dict` wrote (its words left out)."""
        return cls(**{k: v for k, v in d.items() if k != "rule"})


def excluded_groups(groups: list[dict[str, Any]], exclude: bool) -> list[str]:
    """The groups (``summary.groups`` records) that the fairness measures leave out: the small ones when
    ``exclude``, else none."""
    return [g["group"] for g in groups if exclude and g.get("small")]


def too_few_left(kept: int, excluded: list[str], rule: SmallGroupRule) -> str:
    """The reason of fairness measures left undefined because fewer than two groups remain after the exclusion."""
    return (f"{kept} group{'s' * (kept != 1)} left after excluding small groups ({rule.describe()}: "
            f"{', '.join(excluded)}): the measures compare at least two")


__all__ = ["GRID_MIN_ERRORS", "MIN_IDENTITIES", "SmallGroupRule", "excluded_groups", "too_few_left"]
