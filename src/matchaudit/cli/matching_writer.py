"""``matchaudit test`` on matching data: the writer the ``test`` command dispatches to for samples/comparison
inputs (identity-level permutation tests of :mod:`matchaudit.estimators.matching_tests`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchaudit import __version__
from matchaudit.report.figures import plot_null
from matchaudit.api import test_gap
from matchaudit.estimators.permutation import PermutationTestResult
from matchaudit.model import MatchData


def write_matching_test(data: MatchData, metric: str, out: Path, *, groups: tuple[str, str] | None = None,
                        level: float = 0.05, meta: dict | None = None, **options: Any) -> tuple[dict, list[dict]]:
    """Run :func:`matchaudit.test_gap` (two groups, or every pair with Holm and max-T; ``options`` are its
    keyword arguments), write ``test.json``, ``comparisons.csv`` and ``null_distribution.png`` into ``out``;
    return (document, rows) for printing."""
    res = test_gap(data, metric, groups, alpha=level, **options)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"version": __version__, "level": level, "data": "matching"} | (meta or {})
    if isinstance(res, PermutationTestResult):
        doc = meta | {"kind": "two-group", "result": res.to_dict()}
        rows = [{"comparison": " vs ".join(res.details["groups"]), "effect": res.effect, "effect_ci_low": res.effect_ci[0],
                 "effect_ci_high": res.effect_ci[1], "direction": res.direction, "statistic": res.statistic,
                 "pvalue": res.pvalue, "pvalue_se": res.pvalue_se, "significant": res.significant(level), "reason": res.reason}]
        plot_null(res.null_distribution, {"observed": res.statistic}, f"{metric}: {rows[0]['comparison']} ({res.method})",
                  "statistic under identity relabelling", out / "null_distribution.png")
    else:
        doc = meta | {"kind": "all-groups", "result": res.to_dict()}
        rows = res.rows
        top = np.nanmax(np.abs(np.where(np.isnan(res.null_distribution), np.inf, res.null_distribution)), axis=1)
        plot_null(top, {r["comparison"]: abs(r["statistic"]) for r in rows},
                  f"{metric}: max |statistic| over {len(rows)} pairs (max-T null)", "max |statistic|",
                  out / "null_distribution.png")
    (out / "test.json").write_text(json.dumps(doc, indent=2, allow_nan=False))
    pd.DataFrame(rows).to_csv(out / "comparisons.csv", index=False)
    return doc, rows


__all__ = ["write_matching_test"]
