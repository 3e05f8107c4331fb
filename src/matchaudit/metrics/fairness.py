"""Fairness summary measures of per-group error rates (docs/methods.md section 2).

All functions are vectorised over leading axes: ``rates`` has shape ``(..., m)`` for m groups, so the same
code serves a point estimate, bootstrap replicates and posterior draws.

Zero rates make ratios infinite or undefined. Default policy ``"report"``: the measure is ``inf`` (a ratio
with a zero denominator and a positive numerator) or ``NaN`` (0/0) and :func:`zero_rate_reason` says why.
Policy ``"upper-bound"``: each zero rate is replaced by its one-sided upper confidence bound
``1 - (1 - level)^(1/n)`` (about 3/n at 95%: the rule of three), and the adjusted groups are reported — as
NIST's re-implementation does for the geometric mean.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

ZeroPolicy = Literal["report", "upper-bound"]

MEASURES = ("max_min_ratio", "max_geomean_ratio", "log_geomean_sum", "gini", "max_min_difference")
COMBINED = ("fdr", "inequity_rate", "garbe")  # the measures of FMR and FNMR together (:func:`combined_measures`)
# the values each measure can take (per-group and combined): an interval is clipped to them
RANGE = {"max_min_ratio": (1.0, np.inf), "max_geomean_ratio": (1.0, np.inf), "log_geomean_sum": (0.0, np.inf),
         "gini": (0.0, 1.0), "max_min_difference": (0.0, 1.0), "fdr": (0.0, 1.0), "inequity_rate": (1.0, np.inf),
         "garbe": (0.0, 1.0)}
# each measure's value when every group's rate is the same
PARITY = {name: (hi if name == "fdr" else lo) for name, (lo, hi) in RANGE.items()}


def _geomean(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.exp(np.mean(np.log(x), axis=-1))


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den``, +inf where only ``den`` is 0 and NaN for 0/0 (the ratio measures' convention)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, np.nan))


def max_min_ratio(x: np.ndarray) -> np.ndarray:
    """``max_a X_a / min_a X_a`` (inf with a zero minimum, NaN when all are zero)."""
    return ratio(x.max(axis=-1), x.min(axis=-1))


def max_geomean_ratio(x: np.ndarray) -> np.ndarray:
    """``max_a X_a / geomean_a X_a`` (NIST's leading candidate)."""
    return ratio(x.max(axis=-1), _geomean(x))


def log_geomean_sum(x: np.ndarray) -> np.ndarray:
    """``sum_a |log10(X_a / geomean X)|``: +inf when some rates are zero and others not (its limit), NaN when all
    are zero (0/0)."""
    g = _geomean(x)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.abs(np.log10(x / g)).sum(axis=-1)
    zero = (x == 0).any(axis=-1)
    return np.where(zero, np.where((x > 0).any(axis=-1), np.inf, np.nan), out)


def gini(x: np.ndarray) -> np.ndarray:
    """``m/(m-1) * sum_a sum_b |X_a - X_b| / (2 m^2 mean X)`` (arithmetic mean); NaN when all rates are 0."""
    m = x.shape[-1]
    pair = np.abs(x[..., :, None] - x[..., None, :]).sum(axis=(-1, -2))
    return m / (m - 1) * ratio(pair, 2 * m**2 * x.mean(axis=-1))


def max_min_difference(x: np.ndarray) -> np.ndarray:
    """``max_a X_a - min_a X_a``."""
    return x.max(axis=-1) - x.min(axis=-1)


def summary_measures(rates: np.ndarray) -> dict[str, np.ndarray]:
    """The five measures of one rate (FMR or FNMR) across groups: shapes ``(..., m) -> (...)``."""
    x = np.asarray(rates, dtype=np.float64)
    if x.shape[-1] < 2:
        raise ValueError("fairness measures need at least two groups")
    fns = (max_min_ratio, max_geomean_ratio, log_geomean_sum, gini, max_min_difference)
    return {name: fn(x) for name, fn in zip(MEASURES, fns)}


def combined_measures(
    fmr: np.ndarray, fnmr: np.ndarray, *, fdr_weight: float = 0.5, ir_exponents: tuple[float, float] = (1.0, 1.0),
    garbe_weight: float = 0.5,
) -> dict[str, np.ndarray]:
    """FDR(a) = 1 - (a max|dFMR| + (1-a) max|dFNMR|); inequity rate = (FMR max/min)^a (FNMR max/min)^b;
    GARBE = a Gini(FMR) + (1-a) Gini(FNMR). Weights are explicit and recorded by callers."""
    fmr, fnmr = np.asarray(fmr, float), np.asarray(fnmr, float)
    return combined_from_measures(max_min_difference(fmr), max_min_difference(fnmr), max_min_ratio(fmr),
                                  max_min_ratio(fnmr), gini(fmr), gini(fnmr), fdr_weight=fdr_weight,
                                  ir_exponents=ir_exponents, garbe_weight=garbe_weight)


def combined_from_measures(fmr_difference, fnmr_difference, fmr_ratio, fnmr_ratio, fmr_gini, fnmr_gini, *,
                           fdr_weight: float = 0.5, ir_exponents: tuple[float, float] = (1.0, 1.0),
                           garbe_weight: float = 0.5) -> dict[str, np.ndarray]:
    """The combined measures (:data:`COMBINED`) from the single-rate measures they are made of (one formula for
    the estimates and for the bounds of :mod:`matchaudit.estimators.fairness_projection`)."""
    a, b = ir_exponents
    with np.errstate(invalid="ignore"):
        return dict(zip(COMBINED, (
            1 - (fdr_weight * np.asarray(fmr_difference, float) + (1 - fdr_weight) * np.asarray(fnmr_difference, float)),
            np.asarray(fmr_ratio, float) ** a * np.asarray(fnmr_ratio, float) ** b,  # inequity_rate
            garbe_weight * np.asarray(fmr_gini, float) + (1 - garbe_weight) * np.asarray(fnmr_gini, float),  # garbe
        )))


def zero_rate_reason(rates: np.ndarray, names: list[str]) -> str | None:
    """Why ratio measures are inf/NaN for these (1-D) rates, or None when all rates are positive."""
    zero = [n for n, r in zip(names, rates) if r == 0]
    if not zero:
        return None
    return (f"zero observed rate in {', '.join(zero)}: ratios are inf (or NaN when all are zero); "
            "use zero_policy='upper-bound' to substitute one-sided upper bounds")


def apply_zero_policy(
    rates: np.ndarray, comparisons: np.ndarray, policy: ZeroPolicy = "report", level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Rates after the zero policy, and a mask of the adjusted groups."""
    rates = np.asarray(rates, float)
    zero = rates == 0
    if policy == "report" or not zero.any():
        return rates, np.zeros_like(zero)
    bound = 1.0 - (1.0 - level) ** (1.0 / np.maximum(np.asarray(comparisons, float), 1.0))
    return np.where(zero, bound, rates), zero
