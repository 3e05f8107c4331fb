"""The definitions every module shares, each written once: the decision rule, which impostors set a threshold,
and the sidedness of tests and intervals.

Whoever needs one of these imports it from here; a Numba or Torch kernel that cannot call Python is
property-tested against it (``tests/test_definitions.py``).
"""

from __future__ import annotations

from typing import Literal

Rule = Literal[">=", ">"]
"""Decision rule: accept a comparison iff ``score >= t`` (NIST, ISO/IEC 19795-1, bob; the default) or
``score > t`` (the similarity-scoring paper)."""

ThresholdImpostors = Literal["all", "same-group"]
"""The impostor comparisons whose FMR sets a global threshold: all of them, or only those within a group
(NIST's demographic practice)."""

Alternative = Literal["two-sided", "less", "greater"]
"""Sidedness, as in :mod:`scipy.stats`: for a test, the alternative hypothesis; for an interval, ``"less"``
is an upper bound ``[low of the support, high]`` and ``"greater"`` a lower bound."""
