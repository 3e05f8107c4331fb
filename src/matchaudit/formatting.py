"""How the report writes a number: one function (:func:`fmt`) with a unit, three significant digits, and words
for what is not a number, so that every table, sentence and figure label reads the same way."""

from __future__ import annotations

import math
from typing import Any, Literal

Unit = Literal["rate", "points", "plain", "p"]
FLOOR = {"rate": 1e-6, "points": 1e-6, "plain": 1e-4, "p": 1e-4}  # below: "< floor" (a tiny value is not digits)


def value(v: Any) -> float:
    """A results.json number as a float (NaN for null; the "nan"/"inf"/"-inf" strings that
    :func:`matchaudit.encoding.jsonable` writes for non-finite floats)."""
    if isinstance(v, str):
        return float(v)
    return float("nan") if v is None else float(v)


def fmt(v: Any, unit: Unit = "plain", digits: int = 3, sign: bool = False, suffix: bool = True) -> str:
    """``v`` for a reader: ``rate`` as a percentage (0.0123 -> ``1.23%``), ``points`` as signed percentage points of
    a rate difference (``+1.2 points``), ``p`` a p-value, ``plain`` a ratio or index; ``digits`` significant digits;
    ``n/a`` for NaN, ``∞`` for infinity, ``0`` for zero and ``< 0.0001%`` for what is smaller than the unit's floor;
    ``suffix=False`` leaves out " points" (an interval names the unit once)."""
    x = value(v)
    scale, end = {"rate": (100.0, "%"), "points": (100.0, " points" if suffix else "")}.get(unit, (1.0, ""))
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return ("-" if x < 0 else "+" if sign else "") + "∞"
    y = x * scale
    plus = "+" if sign and y > 0 else ""
    if y == 0:
        return f"0{end}"
    floor = FLOOR[unit] * scale
    if abs(y) < floor:
        return f"> -{floor:g}{end}" if y < 0 else f"< {floor:g}{end}"
    return f"{plus}{_digits(y, digits, 0.0, ',')}{end}"


def _digits(y: float, digits: int, low: float, sep: str = "") -> str:
    """``y`` (finite, non-zero) to ``digits`` significant digits, in plain digits from ``low`` up to a million and
    with an exponent outside (C3: a threshold of 1e308 printed as 309 digits); ``sep`` groups thousands."""
    text = f"{y:.{digits}g}"
    if "e" in text and low <= abs(y) < 1e6:
        text = f"{y:{sep}.{max(digits - 1 - math.floor(math.log10(abs(y))), 0)}f}"
    return text


def threshold(v: Any) -> str:
    """A score threshold: 5 significant digits, and as many more as it takes not to round it onto a different
    whole number (C3: 0.9999999853 read "1", a threshold no cosine score reaches); exponents only below 1e-4 and
    from 1e6 on (1e308 printed as 309 digits)."""
    x = value(v)
    if not math.isfinite(x) or x == 0:
        return fmt(x)
    digits = 5
    while digits < 17 and x != round(x) and float(f"{x:.{digits}g}") == round(x):
        digits += 1
    return _digits(x, digits, 1e-4)


def interval(low: Any, high: Any, unit: Unit = "plain", digits: int = 3) -> str:
    """``[low, high]`` in ``unit`` (``[1.2%, 3%]``, ``[-0.4, 1.1] points``); ``undefined`` when either end is not a
    number."""
    lo, hi = value(low), value(high)
    if math.isnan(lo) or math.isnan(hi):
        return "undefined"
    if unit == "points":
        return f"[{fmt(lo, unit, digits, suffix=False)}, {fmt(hi, unit, digits, suffix=False)}] points"
    return f"[{fmt(lo, unit, digits)}, {fmt(hi, unit, digits)}]"


def with_counts(v: Any, k: int, n: int, weighting: str = "pooled") -> str:
    """The field's display convention: ``2.1% (767/36,520)``; an identity-balanced rate is not k/n, so its counts
    are marked raw: ``1% (identity-balanced; raw 3,481/275,368)``."""
    if weighting == "balanced":
        return f"{fmt(v, 'rate')} (identity-balanced; raw {k:,}/{n:,})"
    return f"{fmt(v, 'rate')} ({k:,}/{n:,})"


__all__ = ["fmt", "interval", "value", "with_counts"]


def operating_point(kind: str, target: Any) -> str:
    """The name of an operating point: ``FMR 0.001`` (an FMR target), ``FNMR 0.01`` (an FNMR target) or
    ``t = 0.42`` (a fixed threshold)."""
    t = value(target)
    return {"fmr_target": f"FMR {t:g}", "fnmr_target": f"FNMR {t:g}"}.get(kind, f"t = {t:g}")
