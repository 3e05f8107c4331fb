"""The definitions every module shares, each written once: the decision rule, which impostors set a threshold,
and the sidedness of tests and intervals.

Whoever needs one of these imports it from here; a Numba or Torch kernel that cannot call Python is
property-tested against it (``tests/test_definitions.py``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Rule = Literal[">=", ">"]
"""Decision rule: accept a comparison iff ``score >= t`` (NIST, ISO/IEC 19795-1, bob; the default) or
``score > t`` (the similarity-scoring paper)."""

ThresholdImpostors = str
"""The impostor comparisons whose FMR sets a global threshold: ``"all"``, ``"same-group"`` (NIST's demographic
practice) or ``"same:ATTR,..."`` (those sharing the named grouping attributes); read by :mod:`matchaudit.pairings`."""

DetScale = Literal["probit", "log"]
"""DET axes: normal deviates (the field's default, ISO/IEC 19795-1) or log10 of the rates (NIST FRTE plots)."""

Alternative = Literal["two-sided", "less", "greater"]
"""Sidedness, as in :mod:`scipy.stats`: for a test, the alternative hypothesis; for an interval, ``"less"``
is an upper bound ``[low of the support, high]`` and ``"greater"`` a lower bound."""


# ----------------------------------------------------------------------------- the threshold at an FMR target
# The project's threshold at FMR target alpha: the lowest candidate score (the scores of the comparisons
# considered, any class), or +inf when none qualifies, whose FMR over the threshold impostors is at most alpha.
# FMR is one correctly rounded float64 division, accepted / total, compared with `<=` ("at most", as bob's
# far_threshold). An undefined FMR (no threshold impostors: 0/0, NaN) never passes, so the threshold is +inf.
# Numba and Torch kernels that cannot call these (engine.target_kernels.fmr_ok) are property-tested against them.


def fmr_passes(fmr: ArrayLike, alpha: ArrayLike) -> np.ndarray:
    """Whether an FMR value is at most the target ``alpha``; NaN (an undefined FMR) never passes."""
    return np.asarray(fmr, dtype=np.float64) <= np.asarray(alpha, dtype=np.float64)


def lowest_passing(fmr: ArrayLike, alpha: ArrayLike) -> np.ndarray:
    """Position of the threshold at each target: ``fmr`` holds the FMR at the candidate thresholds in ascending
    order (so non-increasing) along its last axis; the result, of shape ``fmr.shape[:-1] + alpha.shape``, is the
    position of the lowest candidate that passes, or ``fmr.shape[-1]`` when none does (threshold +inf)."""
    f = np.asarray(fmr, dtype=np.float64)
    a = np.asarray(alpha, dtype=np.float64)
    c = f.shape[-1]
    rows, targets = f.reshape(-1, c), a.reshape(-1)
    out = np.empty((rows.shape[0], targets.size), np.int64)
    # A non-increasing row passes from one position on: read backwards it is sorted, and the candidates that pass
    # (value <= alpha, as fmr_passes) are those before searchsorted's right insertion point (log2 C steps per row
    # and target). Other rows (NaN anywhere, or not monotone) count the failing candidates.
    monotone = (rows[:, 1:] <= rows[:, :-1]).all(axis=-1)  # False where a NaN is next to anything
    m, other = np.flatnonzero(monotone), np.flatnonzero(~monotone)
    never = np.isnan(targets)  # searchsorted places NaN last; nothing passes a NaN target
    for r in m:
        out[r] = np.where(never, c, c - np.searchsorted(rows[r, ::-1], targets, side="right"))
    out[other] = np.count_nonzero(~fmr_passes(rows[other][:, None, :], targets[:, None]), axis=-1)
    return out.reshape(f.shape[:-1] + a.shape)


def max_accepted(total: int, alpha: float) -> int:
    """The most impostor comparisons, of ``total``, that a threshold at FMR target ``alpha`` may accept: the
    largest integer ``k`` with ``k / total <= alpha`` (the division above); -1 when there is none or ``total``
    is 0 (nothing passes: the threshold is +inf)."""
    if total <= 0:
        return -1
    k = min(max(int(np.floor(alpha * total)), 0), total)
    while k < total and fmr_passes((k + 1) / total, alpha):
        k += 1
    while k >= 0 and not fmr_passes(k / total, alpha):
        k -= 1
    return k


def accepts(score: ArrayLike, threshold: ArrayLike, rule: Rule) -> np.ndarray:
    """Whether a comparison with ``score`` is accepted at ``threshold`` under ``rule``."""
    s, t = np.asarray(score), np.asarray(threshold)
    return s >= t if rule == ">=" else s > t


def accepting_thresholds(score: ArrayLike, thresholds: ArrayLike, rule: Rule) -> np.ndarray:
    """How many of the ascending ``thresholds`` accept each score (the level of a score among thresholds)."""
    return np.searchsorted(np.asarray(thresholds), np.asarray(score), side="right" if rule == ">=" else "left")
