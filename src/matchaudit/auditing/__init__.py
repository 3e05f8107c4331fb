"""The audit: orchestration, and nothing statistical of its own. One audit assembles the exact metrics
(:mod:`matchaudit.metrics`), the intervals (:mod:`.intervals`: which passes each method needs, chunk plans; :mod:`.replicates`: the
records), the group tests (:mod:`.group_tests`) and the score analyses into an :class:`Audit` (:mod:`.core`), whose
tables the report renders. The estimators it calls are functions of the passes' outputs; the passes of each job are
made here (:mod:`.matching_passes`, :mod:`.class_passes`, :mod:`.identity_replicates`, :mod:`.model_comparison`,
:mod:`.equivalence`; CONTRIBUTING says which estimators still run passes of their own)."""

from matchaudit.auditing.core import Audit, audit
from matchaudit.auditing.score_analyses import score_analyses
from matchaudit.auditing.group_tests import group_tests
from matchaudit.auditing.intervals import DEFAULT_BOOTSTRAP, compute_intervals
from matchaudit.auditing.options import (CarriedThresholds, EquivalenceOptions, IntervalOptions, MeasureOptions,
                                         TestOptions)

__all__ = ["Audit", "CarriedThresholds", "DEFAULT_BOOTSTRAP", "EquivalenceOptions", "IntervalOptions", "MeasureOptions", "TestOptions", "audit", "compute_intervals",
           "group_tests", "score_analyses"]
