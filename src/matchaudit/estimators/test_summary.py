"""What an audit's group tests say, family by family: with 100 groups there are 4,950 pairs per metric and
operating point, and a reader needs the count of gaps that are distinguishable from noise and the extremes, not
the list.

A family is one metric at one operating point and one kind of comparison (``pair`` or ``one-vs-rest``): the rows
whose p-values max-T and Benjamini-Hochberg adjust together (:func:`matchaudit.auditing.group_tests`). The verdicts
are the records' own (``significant``: max-T, family-wise; ``qvalue_bh <= alpha``: a discovery at false-discovery
rate ``alpha``); nothing is recomputed here but counts and orderings.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from matchaudit.estimators.permutation import rejects

FAMILY = ("metric", "kind", "target", "comparison")
"""The fields that identify a family of group tests (records without ``comparison`` are pairs)."""


def family_of(record: dict[str, Any]) -> tuple:
    """The family key of a group-test record."""
    return tuple(record.get(k, "pair") if k == "comparison" else record[k] for k in FAMILY)


def _defined(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def ranked(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records from the strongest evidence down: smallest max-T adjusted p-value, then largest gap; rows
    without a p-value last."""
    return sorted(records, key=lambda r: (not _defined(r.get("pvalue_adjusted")),
                                          r["pvalue_adjusted"] if _defined(r.get("pvalue_adjusted")) else 1.0,
                                          -abs(r["effect"]) if _defined(r.get("effect")) else 0.0))


def _families(records: Sequence[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """The records by family, in the order first met."""
    families: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        families.setdefault(family_of(r), []).append(r)
    return families


def strongest(records: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Each family's ``n`` rows of strongest evidence (:func:`ranked`), family after family."""
    return [r for rows in _families(records).values() for r in ranked(rows)[:n]]


def summarise_tests(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per family (:data:`FAMILY`, in the order first met): ``tests`` rows, ``distinguishable`` (max-T
    verdict at the family's ``alpha``), ``discoveries`` (BH q-value at most ``alpha``), ``undefined`` (no p-value,
    with a reason in the row), the ``largest`` gap (row with the largest absolute effect) and, per side of the
    effect, the groups whose gap is distinguishable (``above``: effect > 0, first group higher; ``below``), each
    ordered from the strongest evidence down."""
    out = []
    for key, rows in _families(records).items():
        alpha = float(rows[0]["alpha"])
        defined = [r for r in rows if _defined(r.get("effect"))]
        strong = [r for r in ranked(rows) if r.get("significant")]
        out.append({
            **dict(zip(FAMILY, key)), "alpha": alpha, "tests": len(rows),
            "distinguishable": len(strong),
            "discoveries": sum(1 for r in rows if _defined(r.get("qvalue_bh")) and rejects(r["qvalue_bh"], alpha)),
            "undefined": sum(1 for r in rows if not _defined(r.get("pvalue_adjusted"))),
            "largest": max(defined, key=lambda r: abs(r["effect"])) if defined else None,
            "above": [r for r in strong if r["effect"] > 0],
            "below": [r for r in strong if r["effect"] < 0],
        })
    return out


__all__ = ["FAMILY", "family_of", "ranked", "strongest", "summarise_tests"]
