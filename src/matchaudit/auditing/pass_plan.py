"""The passes over all pairs that several steps of one audit share, made once up front (#46 item 1).

The cross-group intervals, the closed-form and studentized intervals at fixed thresholds and every family of group
tests each ask for identity-level counts (:func:`matchaudit.engine.identity_counts`) at their own thresholds, and
the tests of FNMR at an FMR target ask for the plug-in thresholds there and at twice and half the target
(:func:`matchaudit.engine.target_thresholds`): each one a pass over the score matrix when it does not fit the tile
cache (12,000 samples: 13 of the audit's 17 passes, ``bench/score_passes.py``). The exact tally finds the tests'
plug-in thresholds on its own pass (:func:`tested_targets`, ``evaluate(also_fmr=...)``); :func:`share_passes`
counts the identities at the union of what the steps will ask, on the bootstrap's scoring pass when the audit has
intervals (which also counts the pooled and the balanced replicates at once: an audit scores the matrix twice),
else in a pass of its own; inside the audit's :func:`~matchaudit.scores.tile_cache` block the steps' calls are then
answered from them, exactly (a step asking for something else still makes its own pass: the plan saves work, it
never changes a number). The same pass keeps every comparison for the score views (calibration metrics, score
distributions, FNMR targets) where they will be sorted in memory and the matrix does not fit the tile cache
(:func:`triangle`), so they make no pass of their own either.
"""

from __future__ import annotations

import numpy as np

from matchaudit.auditing.options import IntervalOptions, TestOptions
from matchaudit.engine import identity_counts, identity_pass, target_thresholds
from matchaudit.engine.passes import Accumulator
from matchaudit.estimators.clustered_rates import ThresholdError
from matchaudit.metrics.evaluate import ALL, AuditResult
from matchaudit.model import MatchData
from matchaudit.estimators.score_views import BYTES_PER_COMPARISON, MEMORY_GIB
from matchaudit import scores

HIT_BYTES = 10  # one impostor comparison accepted at the loosest threshold, as the identity pass holds it


def tested_targets(config_targets, test_options: TestOptions | None, data: MatchData, threshold_impostors: str
                   ) -> np.ndarray:
    """The FMR targets whose plug-in thresholds the group tests ask for: each target, twice and half of it (the
    threshold's sampling error, :class:`~matchaudit.estimators.clustered_rates.ThresholdError`), when the tests run
    with the threshold set on all impostors; else none."""
    if test_options is None or data.n_groups < 2 or threshold_impostors != "all" or not len(config_targets):
        return np.zeros(0)
    return np.unique([t for a in config_targets for t in ThresholdError.targets(float(a))])


def share_passes(data: MatchData, exact: AuditResult, interval_options: IntervalOptions | None,
                 test_options: TestOptions | None, score_views: bool = False) -> list[Accumulator]:
    """The shared identity counts (see module doc) when at least one step will ask for them, the data are all pairs
    of embeddings (listed tables stream their own), and the identity pass's result fits ``RESULT_BYTES`` by the
    audit's own FMR at its loosest threshold (else the steps make their passes as before): with intervals, returned
    as the accumulator that the bootstrap's scoring pass feeds (:func:`~matchaudit.auditing.intervals.compute_intervals`
    ``also``: the steps that ask for identity counts come after it), else counted now, in a pass of their own. With
    ``score_views`` (the audit's calibration metrics, score distributions or FNMR targets will sort every comparison)
    also the comparisons themselves (:func:`triangle`)."""
    return triangle(data, interval_options, score_views) + _identities(data, exact, interval_options, test_options)


def triangle(data: MatchData, interval_options: IntervalOptions | None, score_views: bool) -> list[Accumulator]:
    """The bootstrap's pass keeps every comparison for the score views (:class:`matchaudit.scores.Triangle`), which
    then make no scoring pass of their own, where: the views will be sorted in memory (their budget), the kept
    comparisons fit ``RESULT_BYTES``, the matrix is too large for the tile cache (else read from it anyway) and its
    tiles come in the views' order (``n <= TILE_COLS``)."""
    if not score_views or interval_options is None or data.protocol != "all-pairs" or data.samples is None \
            or not data.has_identities:
        return []
    n, m = data.samples.ids.shape[0], data.n_comparisons()
    budget = (interval_options.memory_gb or MEMORY_GIB) * 2**30
    fits = m * BYTES_PER_COMPARISON <= budget and 16 * m <= scores.RESULT_BYTES and n <= scores.TILE_COLS
    return [scores.Triangle(data.samples.embeddings, data.metric)] if fits and 8 * m > scores.CACHE_BYTES else []


def _identities(data: MatchData, exact: AuditResult, interval_options: IntervalOptions | None,
                test_options: TestOptions | None) -> list[Accumulator]:
    """The shared identity counts of :func:`share_passes`."""
    config = exact.config
    tests = test_options is not None and data.n_groups >= 2
    if data.protocol != "all-pairs" or data.samples is None or not data.has_identities or not (
            interval_options is not None or tests):
        return []
    ops = [p for p in exact.operating_points if p["weighting"] == "pooled" and p["group"] == ALL
           and not np.isnan(p["threshold"])]
    targets = tested_targets(config.fmr_targets, test_options, data, config.threshold_impostors)
    loosest = max([p["fmr"] for p in ops if p["fmr"] is not None] + list(targets) + [0.0])
    if HIT_BYTES * loosest * data.n_comparisons() > scores.RESULT_BYTES:
        return []
    extra = target_thresholds(data, targets, config.rule) if targets.size else np.zeros(0)
    union = np.unique(np.concatenate([[p["threshold"] for p in ops], extra]))
    if not union.size:
        return []
    if interval_options is not None:
        return [identity_pass(data, union, config.rule)]
    identity_counts(data, union, config.rule)
    return []


__all__ = ["share_passes", "tested_targets", "triangle"]
