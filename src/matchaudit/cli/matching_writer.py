"""What ``matchaudit test`` writes: a test's document, table and null-distribution figure, for matching data
(identity-level permutation tests of :mod:`matchaudit.estimators.matching_tests`) and classifier tables alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchaudit import __version__
from matchaudit.plots.figures import plot_null
from matchaudit.api import test_gap, test_gaps
from matchaudit.errors import InputError
from matchaudit.estimators.classifier import AllGroupsResult
from matchaudit.estimators.permutation import PermutationTestResult
from matchaudit.model import MatchData
from matchaudit.outputs import staged

_MARKS = 8  # observed statistics marked on the max-T null (a legend of 4,950 pairs is unreadable)


def write_matching_test(data: MatchData, metric: str, out: Path, *, groups: tuple[str, str] | None = None,
                        alpha: float = 0.05, level: float = 0.95, meta: dict | None = None, **options: Any
                        ) -> tuple[dict, list[dict]]:
    """Run :func:`matchaudit.test_gap` (``groups``, or the data's two groups) or :func:`matchaudit.test_gaps` (more
    groups: ``comparisons``, with Holm and max-T; ``options`` are their keyword arguments) and write its outputs
    (:func:`write_test`); return (document, rows) for printing."""
    comparisons, alternative = options.pop("comparisons", None), options.pop("alternative", "two-sided")
    if groups is not None or (data.n_groups == 2 and comparisons is None):  # --versus asks for the table
        res = test_gap(data, metric, groups, alternative=alternative, level=level, **options)
    elif alternative != "two-sided":  # it would be ignored
        raise InputError(f"{alternative} is a two-group test's alternative; with {data.n_groups} groups the tests "
                         "are two-sided (name two groups with --groups A,B for a one-sided test).",
                         param="alternative")
    else:
        res = test_gaps(data, metric, comparisons=comparisons or "pairs", alpha=alpha, level=level, **options)
    meta = {"version": __version__, "alpha": alpha, "level": level, "data": "matching"} | (meta or {})
    return write_test(res, metric, out, alpha, meta, "identity relabelling")


def write_test(res: PermutationTestResult | AllGroupsResult, metric: str, out: Path, alpha: float, meta: dict,
               relabelling: str = "relabelling") -> tuple[dict, list[dict]]:
    """``test.json``, ``comparisons.csv`` and ``null_distribution.png`` of a test (two groups, or every pair with
    its max-T null) into ``out`` as one set (:func:`matchaudit.outputs.staged`); return (document, rows)."""
    if isinstance(res, PermutationTestResult):
        doc = meta | {"kind": "two-group", "result": res.to_dict()}
        rows = [{"comparison": " vs ".join(res.details["groups"]), "effect": res.effect,
                 "effect_ci_low": res.effect_ci[0], "effect_ci_high": res.effect_ci[1], "direction": res.direction,
                 "statistic": res.statistic, "pvalue": res.pvalue, "pvalue_se": res.pvalue_se,
                 "significant": res.significant(alpha), "reason": res.reason,
                 "caveat": res.details.get("caveat")}]
        null, marks = res.null_distribution, {"observed": res.statistic}
        title, xlabel = f"{metric}: {rows[0]['comparison']} ({res.method})", f"statistic under {relabelling}"
    else:
        doc = meta | {"kind": "all-groups", "result": res.to_dict()}
        rows = res.rows
        null = (np.nanmax(np.abs(np.where(np.isnan(res.null_distribution), np.inf, res.null_distribution)), axis=1)
                if res.null_distribution.size else np.array([]))
        largest = sorted((r for r in rows if np.isfinite(r["statistic"])), key=lambda r: -abs(r["statistic"]))
        marks = {r["comparison"]: abs(r["statistic"]) for r in largest[:_MARKS]}
        shown = f"; the {_MARKS} largest marked" if len(largest) > _MARKS else ""
        title = f"{metric}: max |statistic| over {len(rows)} comparisons (max-T null{shown})"
        xlabel = "max |statistic|"
    with staged(out, "test") as tmp:
        plot_null(null, marks, title, xlabel, tmp / "null_distribution.png")
        (tmp / "test.json").write_text(json.dumps(doc, indent=2, allow_nan=False))
        pd.DataFrame(rows).to_csv(tmp / "comparisons.csv", index=False)
    return doc, rows
