"""The audit: orchestration, and nothing statistical of its own. One audit assembles the exact metrics
(:mod:`matchaudit.metrics`), the intervals (:mod:`.intervals`: which passes each method needs, chunk plans; :mod:`.replicates`: the
records), the group tests (:mod:`.group_tests`) and the score analyses into an :class:`Audit` (:mod:`.core`), whose
tables the report renders. The estimators it calls are pure functions of the passes' outputs where they can be
(``docs/`` and CONTRIBUTING say which are not yet)."""

from matchaudit.auditing.core import Audit, audit
from matchaudit.auditing.score_analyses import score_analyses
from matchaudit.auditing.group_tests import group_tests
from matchaudit.auditing.intervals import DEFAULT_BOOTSTRAP, compute_intervals
from matchaudit.auditing.options import EquivalenceOptions, IntervalOptions, MeasureOptions, TestOptions

__all__ = ["Audit", "DEFAULT_BOOTSTRAP", "EquivalenceOptions", "IntervalOptions", "MeasureOptions", "TestOptions", "audit", "compute_intervals",
           "group_tests", "score_analyses"]
