"""Model A against model B on the same comparisons (``ma.compare``): the passes (both models' identity bootstraps
with the same scheme and seed, the scores listed per comparison for the swap test) and their order; the intervals
and the test are :mod:`matchaudit.estimators.compare`'s, on the passes' outputs (#46 item 2)."""

from __future__ import annotations

import numpy as np

from matchaudit import checks
from matchaudit import resampling as rs
from matchaudit.auditing.identity_replicates import IdentityReplicates
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.engine import chunks
from matchaudit.errors import InputError
from matchaudit.estimators import compare as cm
from matchaudit.model import MatchData
from matchaudit.progress import PASS_UNIT, Meter


def paired_bootstrap(a: MatchData, b: MatchData, fmr_targets, *, method: str = "double-or-nothing",
                     n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
                     threshold_impostors: ThresholdImpostors = "all", rule: Rule = ">=", progress: bool = False,
                     group_fmr: bool = False) -> tuple[list[dict], dict]:
    """Percentile intervals of model A - model B from paired identity-bootstrap replicates
    (:func:`~matchaudit.estimators.compare.paired_records`, with each group's FMR when ``group_fmr``; ``progress``:
    one display over both models' counting passes). Returns the records and the replicate differences (R-1, ...)."""
    cm.check_paired(a, b)
    cm.check_method(method)
    targets = np.atleast_1d(np.asarray(fmr_targets, float))
    scheme = rs.SCHEMES[method](seed)
    models = [IdentityReplicates(m, n_resamples, rule, targets.size) for m in (a, b)]
    with Meter(progress, "paired bootstrap", sum(m.work for m in models), PASS_UNIT) as meter:
        ra, rb = (m.run(scheme, targets, threshold_impostors, meter) for m in models)
    return cm.paired_records(targets, ra, rb, method=method, n_resamples=n_resamples, seed=seed, level=level,
                             group_fmr=group_fmr)


def compare_models(a: MatchData, b: MatchData, fmr_targets=(1e-3,), *, method: str = "double-or-nothing",
                   n_resamples: int = 1000, test_resamples: int = 999, seed: int = 0, level: float = 0.95,
                   threshold_impostors: ThresholdImpostors = "all", rule: Rule = ">=", test: bool = True,
                   progress: bool = False) -> cm.ModelComparison:
    """Paired intervals for model A - model B and, per FMR target, the paired swap test of the overall FNMR@FMR
    (``progress``: a display for each of those steps)."""
    fmr_targets = checks.numbers(fmr_targets, "fmr", low=0.0, high=1.0, high_open=True)
    if not fmr_targets:
        raise InputError("no FMR target given.", param="fmr")
    if test:  # the swap tests keep their relabelled differences (and the studentized null): refused when too many
        chunks.check_budget(32.0 * (test_resamples + 1) * len(fmr_targets), test_resamples, "test_resamples")
    records, reps = paired_bootstrap(a, b, fmr_targets, method=method, n_resamples=n_resamples, seed=seed,
                                     level=level, threshold_impostors=threshold_impostors, rule=rule, progress=progress)
    targets = np.atleast_1d(np.asarray(fmr_targets, float))
    tests = []
    if test:
        for tg in targets:
            rec = next(r for r in records if r["metric"] == "fnmr_at_fmr" and r["view"] == "all"
                       and r["fmr_target"] == float(tg))
            arrays, sb = cm.comparison_arrays(a, threshold_impostors), cm.comparison_arrays(b)[0]
            tests.append(cm.swap_test(arrays, sb, a.identity_group, float(tg), se=float(rec["standard_error"]),
                                      n_resamples=test_resamples, seed=seed, threshold_impostors=threshold_impostors,
                                      level=level, progress=progress))
    return cm.ModelComparison(records, tests, targets, method, n_resamples, seed,
                              {"threshold_impostors": threshold_impostors, "rule": rule,
                               "test_resamples": test_resamples, "protocol": a.protocol,
                               "groups": list(a.group_names), "data": a.fingerprint()}, reps,
                              [f"model {name}: {w}" for name, d in (("A", a), ("B", b)) for w in d.warnings])


__all__ = ["compare_models", "paired_bootstrap"]
