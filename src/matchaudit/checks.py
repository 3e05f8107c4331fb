"""Argument checks shared by every public entry point (``audit``, ``compare``, ``test_gap``, ``estimate``,
``plan`` and the option objects behind them), so each argument is validated once, the same way everywhere.

Each check raises :class:`matchaudit.errors.InputError` with ``param`` set to the public parameter name and a
message in neutral words; the CLI prefixes its own flag for that parameter.
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Number
from typing import Any, Iterable, get_args

from matchaudit.errors import InputError


def _is_bool(value: Any) -> bool:
    """True or False, NumPy's too (without importing NumPy: the CLI starts without it)."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"))


def _items(values: Any, param: str) -> list[Any]:
    """A comma-separated string's items (stripped), or a sequence's (a mapping or a set is not one: its order, or
    its values, would be dropped silently)."""
    if isinstance(values, str):
        return [v.strip() for v in values.split(",")]
    if isinstance(values, (dict, set, frozenset)) or not hasattr(values, "__iter__"):
        raise InputError(f"{param} {values!r}: give a sequence (a list or a tuple) or a comma-separated string.",
                         param=param)
    return list(values)


def sequence(values: Any, param: str) -> tuple[Any, ...]:
    """A sequence's items as a tuple (a comma-separated string split): :func:`_items` for one argument."""
    return tuple(_items(values, param))


def choice(value: Any, allowed: Any, param: str) -> Any:
    """``value`` if it is one of ``allowed`` (a sequence, or a ``typing.Literal`` whose arguments are used)."""
    options = get_args(allowed) or tuple(allowed)
    try:
        known = any(value is o or (isinstance(value, type(o)) and value == o) for o in options)
    except (TypeError, ValueError):  # e.g. an array, whose == is elementwise
        known = False
    if not known:
        raise InputError(f"{param} {value!r}: choose from {', '.join(map(str, options))}.", param=param)
    return value


def choices(values: Any, allowed: Any, param: str) -> tuple[Any, ...]:
    """One or several of ``allowed`` (:func:`choice`): a single value, a comma-separated string or a sequence,
    as a tuple without duplicates."""
    seq = _items(values, param)
    if not seq or "" in seq:
        raise InputError(f"{param} {values!r}: give one or more names separated by commas.", param=param)
    out = tuple(choice(v, allowed, param) for v in seq)
    if len(set(out)) < len(out):
        raise InputError(f"{param} {list(out)}: a value is repeated; give each once.", param=param)
    return out


def number(value: Any, param: str, *, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
           high_open: bool = False, finite: bool = True) -> float:
    """``value`` as a float within ``[low, high]`` (an end excluded when ``*_open``); NaN is always refused, and so
    is a bool (``fmr=False`` read as a target of 0)."""
    if _is_bool(value):
        raise InputError(f"{param} {value!r}: give a number, not True or False.", param=param)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{param} {value!r}: give a number.", param=param) from None
    if math.isnan(x):
        raise InputError(f"{param} {value!r}: give a number (NaN is not one).", param=param)
    below = x <= low if low_open else x < low
    above = x >= high if high_open else x > high
    if (finite and math.isinf(x)) or below or above:
        lb, hb = "(" if low_open else "[", ")" if high_open else "]"
        raise InputError(f"{param} {value!r}: give a number in {lb}{low:g}, {high:g}{hb}.", param=param)
    return x


def probability(value: Any, param: str) -> float:
    """A level or prior strictly inside (0, 1)."""
    return number(value, param, low=0.0, high=1.0, low_open=True, high_open=True)


def confidence(value: Any, param: str = "level") -> float:
    """A confidence level, above 0.5 and below 1 (a significance level such as 0.05 given here would make a 5%
    interval: it is ``alpha`` wherever one is taken)."""
    x = probability(value, param)
    if x <= 0.5:
        raise InputError(f"{param} {value!r}: a confidence level, above 0.5 (e.g. 0.95); a significance level is "
                         "alpha.", param=param)
    return x


def flag(value: Any, param: str) -> bool:
    """``value`` if it is True or False (NumPy's too): a truthy string such as "no" must not switch an option on."""
    if _is_bool(value):
        return bool(value)
    raise InputError(f"{param} {value!r}: give True or False.", param=param)


def path(value: Any, param: str) -> str:
    """``value`` as a path text if it is a non-empty str or path-like (an empty one would mean the current
    folder)."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{param} {value!r}: give a path (a folder or file name).", param=param)
    return text


def integer(value: Any, param: str, *, low: int = 0, high: int | None = None) -> int:
    """``value`` as an int of at least ``low`` and at most ``high`` (any integer type, NumPy's too, or a float with
    an integral value; bools refused)."""
    want = f"a whole number of at least {low}" if high is None else f"a whole number from {low} to {high}"
    if isinstance(value, bool) or not (isinstance(value, Integral) or isinstance(value, float) and value.is_integer()):
        raise InputError(f"{param} {value!r}: give {want}.", param=param)
    if int(value) < low or (high is not None and int(value) > high):
        raise InputError(f"{param} {value!r}: give {want}.", param=param)
    return int(value)


SEED_HIGH = 2**32 - 1
"""The largest seed a user gives. Seeds are 32-bit so that every stream derived from one (per data set, group or
replicate: ``seed * 1_000_003 + i``, ``seed + g``) stays inside the 63-bit keys of :mod:`matchaudit.rng` and the
64-bit seeds of NumPy's and JAX's generators (a larger one ended in an overflow deep in a run)."""


def seed(value: Any, param: str = "seed") -> int:
    """A user's seed: a whole number from 0 to :data:`SEED_HIGH`."""
    return integer(value, param, high=SEED_HIGH)


def numbers(values: Any, param: str, **bounds: Any) -> tuple[float, ...]:
    """A scalar, a comma-separated string or a sequence as a tuple of checked floats (see :func:`number`), without
    duplicates (a string was taken for a sequence of characters: ``fmr="1e-3"`` said "fmr '1': give a number")."""
    if values is None:
        raise InputError(f"{param} None: give a number or a sequence of numbers (an empty one for none).", param=param)
    scalar = isinstance(values, Number) or getattr(values, "ndim", None) == 0  # NumPy scalars and 0-d arrays too
    seq: Iterable[Any] = (values,) if scalar else _items(values, param)
    out = tuple(number(v, param, **bounds) for v in seq)
    if len(set(out)) < len(out):
        raise InputError(f"{param} {list(out)}: a value is repeated; give each once.", param=param)
    return out


def pair(values: Any, param: str) -> tuple[str, str]:
    """Exactly two names: a sequence of two, or a comma-separated string ``"a,b"`` (as the CLI spells them)."""
    items = [str(v) for v in _items(values, param)] if values is not None else []
    if len(items) != 2 or "" in items:
        raise InputError(f"{param} {values!r}: give exactly two names, as (a, b) or 'a,b'.", param=param)
    return items[0], items[1]



def same_point(have: Any, target: float) -> float | None:
    """The one of ``have`` (an audit's FMR targets, FNMR targets or thresholds) that ``target`` names: equal, or the
    only one within float32 precision (a float32 0.01 is 0.0099999998); None when none (or several) do."""
    import numpy as np  # here: the CLI starts without NumPy

    values = np.unique(np.asarray(list(have), dtype=float))
    if target in values:
        return float(target)
    near = values[np.isclose(values, target, rtol=1e-6, atol=0.0)]
    return float(near[0]) if near.size == 1 else None

def match_data(value: Any, param: str = "data") -> Any:
    """``value`` if it is a :class:`~matchaudit.model.MatchData` (an audit of a DataFrame or a path ended in an
    AttributeError deep inside)."""
    from matchaudit.model import MatchData

    if not isinstance(value, MatchData):
        raise InputError(f"{param}: give the comparisons as loaded by load_samples, load_comparisons, from_embeddings "
                         f"or from_scores, not a {type(value).__name__}.", param=param)
    return value
