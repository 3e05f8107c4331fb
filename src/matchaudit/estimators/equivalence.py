"""Equivalence: is a gap between two groups within a margin? Two one-sided tests (TOST) on identity resampling.

A permutation test of equality can only fail to find a gap ("not distinguishable from noise"); that is absence of
evidence, not evidence of fairness. The equivalence question reverses the hypotheses: with ``theta`` the ratio
``rate_A / rate_B`` (or the difference ``rate_A - rate_B``) and a margin ``(lo, hi)`` the user accepts as fair
(for example 0.8 and 1.25),

    H0: theta <= lo  or  theta >= hi        against        H1: lo < theta < hi,

rejected (``equivalent``) when both one-sided nulls are rejected at ``alpha`` (Schuirmann's TOST). Each one-sided
test is a percentile bootstrap test on identity-level replicates (``double-or-nothing`` or ``vertex``: the groups'
identities are re-drawn, so the verdict is about the populations the identities come from):

    p_lo = (1 + #{theta*_b <= lo}) / (1 + B),    p_hi = (1 + #{theta*_b >= hi}) / (1 + B),    p = max(p_lo, p_hi),

``equivalent`` iff ``p <= alpha``, which is the same as the ``1 - 2 alpha`` percentile interval lying inside the
margin. A replicate whose ratio is undefined (0/0: a resample with no errors in either group) counts against
equivalence on both sides (conservative). The rates are the audit's: FNMR of each group at the global threshold of
an FMR target (re-derived in every replicate), or each group's same-group FMR there. The level at the margin's
edge is checked by simulation in ``bench/equivalence_level.py`` (docs/tests.md). The identity bootstrap is run by
:mod:`matchaudit.auditing.equivalence`; the tests here take its replicates.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Literal, Sequence

import numpy as np

from matchaudit import checks
from matchaudit.choices import PAIRED_SCHEMES
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.errors import InputError
from matchaudit.formatting import fmt, interval
from matchaudit.model import MatchData

Scale = Literal["ratio", "difference"]
RateName = Literal["fnmr", "fmr"]
EXTREMES = {"ratio": (0.0, np.inf), "difference": (-np.inf, np.inf)}
"""Where an undefined replicate (0/0) stands in the reported interval: beyond every margin of the scale."""


@dataclass(frozen=True)
class EquivalenceResult:
    """A TOST verdict: ``equivalent`` iff ``pvalue <= alpha``; ``confidence_interval`` is the ``1 - 2 alpha``
    percentile interval of ``theta`` in the form that lies inside ``margin`` exactly when equivalent (:func:`tost`)."""

    metric: RateName
    groups: tuple[str, str]
    fmr_target: float
    scale: Scale
    margin: tuple[float, float]
    rate_a: float
    rate_b: float
    estimate: float
    pvalue_lower: float
    pvalue_upper: float
    pvalue: float
    alpha: float
    equivalent: bool
    confidence_interval: tuple[float, float]
    method: str
    n_resamples: int
    undefined_replicates: int
    seed: int
    rule: Rule
    threshold_impostors: ThresholdImpostors

    def finding(self) -> str:
        """``equivalent within [lo, hi]`` or ``not shown to be within [lo, hi]`` (the margin in the scale's unit)."""
        margin = interval(*self.margin, "plain" if self.scale == "ratio" else "points")
        return f"{'equivalent' if self.equivalent else 'not shown to be'} within {margin}"

    def verdict(self) -> str:
        """One sentence: the :meth:`finding` for this pair, with the TOST p-value."""
        return (f"{self.metric.upper()} {self.scale} {self.groups[0]} vs {self.groups[1]} is {self.finding()} "
                f"(TOST p = {fmt(self.pvalue, 'p')} {'<=' if self.equivalent else '>'} {fmt(self.alpha)})")

    def to_dict(self) -> dict:
        """The record (numbers as numbers: files encode them, :mod:`matchaudit.encoding`), with the :meth:`finding`
        and :meth:`verdict` that reports show."""
        return asdict(self) | {"finding": self.finding(), "verdict": self.verdict()}


def theta(rate_a: np.ndarray, rate_b: np.ndarray, scale: Scale) -> np.ndarray:
    """The effect: ``rate_a / rate_b`` (x/0 = inf for x > 0, 0/0 = NaN) or ``rate_a - rate_b``."""
    a, b = np.asarray(rate_a, float), np.asarray(rate_b, float)
    if scale == "difference":
        return a - b
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b


def tost(replicates: np.ndarray, margin: tuple[float, float], alpha: float,
         extremes: tuple[float, float] = (-np.inf, np.inf)) -> tuple[float, float, int, tuple[float, float]]:
    """(p_lo, p_hi, undefined, interval): the two one-sided percentile-bootstrap p-values (NaN replicates count
    on both sides) and the interval whose inclusion in the margin is the same decision: with ``k`` the most
    replicates a side may hold for ``p <= alpha``, its bounds are the (k+1)-th smallest and largest replicates
    (NaN as the scale's ``extremes``, below and above any margin: 0 and +inf for a ratio), so
    ``lo < low and high < hi`` iff ``max(p_lo, p_hi) <= alpha``."""
    reps = np.asarray(replicates, float)
    nan = np.isnan(reps)
    lo, hi = margin
    n = reps.size
    p_lo = (1 + int(np.sum(nan | (reps <= lo)))) / (1 + n)
    p_hi = (1 + int(np.sum(nan | (reps >= hi)))) / (1 + n)
    k = int(np.floor(alpha * (1 + n) + 1e-9)) - 1
    interval = ((float(np.sort(np.where(nan, extremes[0], reps))[k]),
                 float(-np.sort(-np.where(nan, extremes[1], reps))[k]))
                if 0 <= k < n else (np.nan, np.nan))
    return p_lo, p_hi, int(nan.sum()), interval


def check_margin(margin: tuple[float, float], scale: Scale) -> tuple[float, float]:
    """``margin`` as (lo, hi) floats, checked against ``scale`` (it must contain parity; ratio bounds positive)."""
    checks.choice(scale, Scale, "scale")
    try:
        lo, hi = (float(x) for x in margin)
    except (TypeError, ValueError):
        raise InputError(f"margin {margin!r}: give two numbers (lo, hi), e.g. (0.8, 1.25).", param="margin") from None
    if not (np.isfinite(lo) and np.isfinite(hi)) or not lo < hi:
        raise InputError(f"margin {margin!r}: give lo < hi, both finite.", param="margin")
    if scale == "ratio" and not lo < 1 < hi or scale == "difference" and not lo < 0 < hi:
        parity = 1 if scale == "ratio" else 0
        raise InputError(f"margin {margin!r}: a {scale} margin must contain parity ({parity}), e.g. "
                         f"{'(0.8, 1.25)' if scale == 'ratio' else '(-0.01, 0.01)'}.", param="margin")
    if scale == "ratio" and lo <= 0:
        raise InputError(f"margin {margin!r}: ratio bounds must be positive.", param="margin")
    return lo, hi


def check_options(margin, scale: Scale, method: str, alpha: float, n_resamples: int
                  ) -> tuple[tuple[float, float], float, int]:
    """The margin, alpha and replicates of an equivalence test, checked before any work (B must reach alpha)."""
    checks.choice(method, PAIRED_SCHEMES, "method")
    margin = check_margin(margin, scale)
    alpha = checks.number(alpha, "alpha", low=0.0, high=0.5, low_open=True, high_open=True)
    n_resamples = checks.integer(n_resamples, "n_resamples", low=1)
    if n_resamples + 1 < 1 / alpha:
        raise InputError(f"n_resamples {n_resamples}: the smallest p-value is 1 / (1 + B), so B must be at least "
                         f"{int(np.ceil(1 / alpha)) - 1} to reach alpha {alpha:g}.", param="n_resamples")
    return margin, alpha, n_resamples


def _check(data: MatchData, margin, scale: Scale, method: str, alpha: float, n_resamples: int
           ) -> tuple[tuple[float, float], float, int]:
    out = check_options(margin, scale, method, alpha, n_resamples)
    if not data.has_identities:
        raise InputError("an equivalence test resamples identities: the data has none (identity columns needed).",
                         param="data")
    return out


def check_tests(data: MatchData, fmr: float | Sequence[float], margin, scale: Scale, metrics: Sequence[RateName],
                pairs: Sequence[tuple[str, str]] | None, method: str, alpha: float, n_resamples: int
                ) -> tuple[list[float], tuple[float, float], float, int, list[tuple[str, str]]]:
    """The FMR targets, margin, alpha, replicates and pairs of groups (default all, in the data's group order) of
    :func:`matchaudit.auditing.equivalence.equivalence_tests`, checked before any work."""
    for m in metrics:
        checks.choice(m, RateName, "metric")
    targets = checks.numbers(np.atleast_1d(fmr).tolist(), "fmr", low=0.0, high=1.0, high_open=True)
    margin, alpha, n_resamples = _check(data, margin, scale, method, alpha, n_resamples)
    names = list(data.group_names)
    if pairs is None:
        if len(names) < 2:
            raise InputError("an equivalence test compares groups: group the data by an attribute.", param="group_by")
        pairs = list(itertools.combinations(names, 2))
    for pair in pairs:
        if len(pair) != 2 or pair[0] == pair[1] or any(g not in names for g in pair):
            raise InputError(f"groups {tuple(pair)!r}: give two different groups of {', '.join(names)}.",
                             param="groups")
    return targets, margin, alpha, n_resamples, pairs


def equivalence_results(fnmr: np.ndarray, fmr: np.ndarray, group_names: Sequence[str], targets: Sequence[float], *,
                        metrics: Sequence[RateName], pairs: Sequence[tuple[str, str]], margin: tuple[float, float],
                        scale: Scale, alpha: float, method: str, n_resamples: int, seed: int, rule: Rule,
                        threshold_impostors: ThresholdImpostors) -> list[EquivalenceResult]:
    """TOST of every pair of groups for each of ``metrics`` at each FMR target from the identity bootstrap's FNMR
    and achieved FMR replicates, (R, T, 1+G) each (row 0 the plug-in; module doc)."""
    names = list(group_names)
    out = []
    for metric in metrics:
        x = fnmr if metric == "fnmr" else fmr
        for ti, target in enumerate(targets):
            for a, b in pairs:
                ia, ib = 1 + names.index(a), 1 + names.index(b)
                eff = theta(x[:, ti, ia], x[:, ti, ib], scale)
                p_lo, p_hi, undefined, ci = tost(eff[1:], margin, alpha, EXTREMES[scale])
                p = max(p_lo, p_hi)
                out.append(EquivalenceResult(
                    metric=metric, groups=(str(a), str(b)), fmr_target=target, scale=scale, margin=margin,
                    rate_a=float(x[0, ti, ia]), rate_b=float(x[0, ti, ib]), estimate=float(eff[0]),
                    pvalue_lower=p_lo, pvalue_upper=p_hi, pvalue=p, alpha=alpha, equivalent=bool(p <= alpha),
                    confidence_interval=ci, method=method, n_resamples=n_resamples, undefined_replicates=undefined,
                    seed=seed, rule=rule, threshold_impostors=threshold_impostors))
    return out


__all__ = ["EquivalenceResult", "check_margin", "check_options", "check_tests", "equivalence_results", "theta", "tost"]
