"""The equivalence tests' pass (``ma.test_equivalence``, an audit's equivalence records): one identity bootstrap
of every group's FNMR and FMR at the FMR targets; the TOST verdicts are :mod:`matchaudit.estimators.equivalence`'s,
on its replicates (#46 item 2)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from matchaudit import checks
from matchaudit import resampling as rs
from matchaudit.auditing.identity_replicates import IdentityReplicates
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.errors import InputError
from matchaudit.estimators import equivalence as eq
from matchaudit.model import MatchData
from matchaudit.progress import PASS_UNIT, Meter


def equivalence_tests(data: MatchData, fmr: float | Sequence[float], *, margin: tuple[float, float] = (0.8, 1.25),
                      scale: eq.Scale = "ratio", metrics: Sequence[eq.RateName] = ("fnmr", "fmr"),
                      pairs: Sequence[tuple[str, str]] | None = None, method: str = "double-or-nothing",
                      n_resamples: int = 1999, alpha: float = 0.05, seed: int = 0, rule: Rule = ">=",
                      threshold_impostors: ThresholdImpostors = "all", progress: bool = False
                      ) -> list[eq.EquivalenceResult]:
    """TOST of every pair of groups (``pairs``, default all, in the data's group order) for each of ``metrics`` at
    each FMR target, all from one identity bootstrap (:mod:`matchaudit.estimators.equivalence`). ``progress``: a
    display of the bootstrap."""
    targets, margin, alpha, n_resamples, pairs = eq.check_tests(data, fmr, margin, scale, metrics, pairs, method,
                                                                alpha, n_resamples)
    reps = IdentityReplicates(data, n_resamples, rule, len(targets))
    with Meter(progress, "equivalence bootstrap", reps.work, PASS_UNIT) as meter:
        _, fnmr, fmr_reps = reps.run(rs.SCHEMES[method](seed), np.array(targets), threshold_impostors, meter)
    return eq.equivalence_results(fnmr, fmr_reps, data.group_names, targets, metrics=metrics, pairs=pairs,
                                  margin=margin, scale=scale, alpha=alpha, method=method, n_resamples=n_resamples,
                                  seed=seed, rule=rule, threshold_impostors=threshold_impostors)


def equivalence_test(data: MatchData, groups: tuple[str, str] | None = None, *, metric: eq.RateName = "fnmr",
                     fmr: float = 1e-3, margin: tuple[float, float] = (0.8, 1.25), scale: eq.Scale = "ratio",
                     method: str = "double-or-nothing", n_resamples: int = 1999, alpha: float = 0.05, seed: int = 0,
                     rule: Rule = ">=", threshold_impostors: ThresholdImpostors = "all", progress: bool = False
                     ) -> eq.EquivalenceResult:
    """Test that two groups' ``metric`` at FMR target ``fmr`` is equivalent within ``margin``
    (:mod:`matchaudit.estimators.equivalence`): :func:`equivalence_tests` for one pair. ``groups``: the two group
    names (default: the data's only two)."""
    if groups is None:
        names = list(data.group_names)
        if len(names) != 2:
            raise InputError(f"the data has {len(names)} groups ({', '.join(names)}): name the two to compare.",
                             param="groups")
        groups = (names[0], names[1])
    checks.number(fmr, "fmr", low=0.0, high=1.0, high_open=True)
    return equivalence_tests(data, fmr, margin=margin, scale=scale, metrics=(metric,), pairs=[tuple(groups)],
                             method=method, n_resamples=n_resamples, alpha=alpha, seed=seed, rule=rule,
                             threshold_impostors=threshold_impostors, progress=progress)[0]


__all__ = ["equivalence_test", "equivalence_tests"]
