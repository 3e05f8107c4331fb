"""The engine's runs over the data with identities relabelled into (group, identity size) classes: the identity-
balanced replicate counts (:mod:`matchaudit.estimators.balanced`) and the plug-in behind the V-statistic
(:func:`matchaudit.estimators.bootstrap.v_statistic`). The run is made here; what its class counts mean is the
estimators' (#46 item 2)."""

from __future__ import annotations

import numpy as np

from matchaudit.engine import Counts, Grid, Plan, plan, run, run_together
from matchaudit.estimators import balanced
from matchaudit.estimators import bootstrap as bs
from matchaudit.model import MatchData
from matchaudit.progress import Meter
from matchaudit.resampling import Scheme


def balanced_plan(data: MatchData, scheme: Scheme, replicates: int | np.ndarray, grid: Grid, thresholds=(),
                  progress: Meter | bool = False) -> Plan:
    """The engine run behind :func:`balanced_counts`, planned (:func:`matchaudit.engine.plan`; counted by
    :func:`matchaudit.engine.run_together`, alone or in one scoring pass with the pooled run): the data with
    identities relabelled into size classes, every class pair a category of its own."""
    reason = balanced.unsupported(data, scheme.name)
    if reason:
        raise ValueError(f"identity-balanced replicates unavailable: {reason}")
    keys, cls = balanced.size_classes(data)
    return plan(balanced.relabel(data, cls), scheme, replicates, grid=grid, thresholds=thresholds, progress=progress,
                categories=balanced.class_pairs(keys.shape[0]))


def balanced_counts(data: MatchData, scheme: Scheme, replicates: int | np.ndarray, grid: Grid,
                    threshold_impostors: str = "all", thresholds=(), progress: Meter | bool = False) -> Counts:
    """Identity-balanced counts for the plug-in and ``replicates`` of ``scheme`` (an int B means replicates 1..B;
    the caller chunks them, :mod:`matchaudit.engine.chunks`), from a pass of their own: the run of
    :func:`balanced_plan`, unit-weighted by :func:`~matchaudit.estimators.balanced.unit_weighted`."""
    c = run_together(data, [balanced_plan(data, scheme, replicates, grid, thresholds, progress)], progress)[0]
    return balanced.unit_weighted(data, c, threshold_impostors)


def v_statistic(data: MatchData, counts: Counts, thresholds=(), balanced_targets=None) -> bs.VStatistic:
    """The V-statistic counts of the plug-in ``counts``: the plug-in pass over the size classes on
    :func:`~matchaudit.estimators.bootstrap.v_statistic_grid` (none for a listed protocol), then
    :func:`~matchaudit.estimators.bootstrap.v_statistic`."""
    fine = bs.v_statistic_grid(data, counts, thresholds, balanced_targets)
    class_counts = None
    if fine is not None:
        class_counts = run(balanced.relabel(data, balanced.size_classes(data)[1]), None, grid=fine)
    return bs.v_statistic(data, counts, class_counts, thresholds, balanced_targets)


__all__ = ["balanced_counts", "balanced_plan", "v_statistic"]
