"""``matchaudit test`` on matching data: the writer the ``test`` command dispatches to for samples/comparison
inputs (identity-level permutation tests of :mod:`matchaudit.estimators.matching_tests`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from matchaudit import __version__
from matchaudit.report.figures import plot_null
from matchaudit.estimators.matching_tests import matching_all_groups_test, matching_group_test
from matchaudit.model import MatchData


def test_matching_cli(data: MatchData, metric: str, out: Path, *, groups: tuple[str, str] | None = None,
                      threshold: float | None = None, fmr_target: float | None = None, fmr_reference: str = "all",
                      rule: str = ">=", unit: str = "identity", studentize: bool | str = True,
                      variance: str = "clustered", n_bootstrap: int = 200, n_resamples: int | str = 999,
                      alternative: str = "two-sided", seed: int = 0, level: float = 0.05,
                      confidence_level: float = 0.95, meta: dict | None = None) -> tuple[dict, list[dict]]:
    """Run the matching-data test (two groups, or every pair with Holm and max-T), write ``test.json``,
    ``comparisons.csv`` and ``null_distribution.png`` into ``out``; return (document, rows) for printing."""
    kw = dict(threshold=threshold, fmr_target=fmr_target, fmr_reference=fmr_reference, rule=rule, unit=unit,
              studentize=studentize, variance=variance, n_bootstrap=n_bootstrap, seed=seed,
              n_resamples=None if n_resamples == "exact" else n_resamples)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"version": __version__, "level": level, "data": "matching"} | (meta or {})
    if groups or data.n_groups == 2:
        r = matching_group_test(data, metric, tuple(groups) if groups else None, alternative=alternative,
                                confidence_level=confidence_level, **kw)
        doc = meta | {"kind": "two-group", "result": r.to_dict()}
        rows = [{"comparison": " vs ".join(r.details["groups"]), "effect": r.effect, "effect_ci_low": r.effect_ci[0],
                 "effect_ci_high": r.effect_ci[1], "direction": r.direction, "statistic": r.statistic,
                 "pvalue": r.pvalue, "pvalue_se": r.pvalue_se, "significant": r.significant(level), "reason": r.reason}]
        plot_null(r.null_distribution, {"observed": r.statistic}, f"{metric}: {rows[0]['comparison']} ({r.method})",
                  "statistic under identity relabelling", out / "null_distribution.png")
    else:
        res = matching_all_groups_test(data, metric, level=level, confidence_level=confidence_level, **kw)
        doc = meta | {"kind": "all-groups", "result": res.to_dict()}
        rows = res.rows
        top = np.nanmax(np.abs(np.where(np.isnan(res.null_distribution), np.inf, res.null_distribution)), axis=1)
        plot_null(top, {r["comparison"]: abs(r["statistic"]) for r in rows},
                  f"{metric}: max |statistic| over {len(rows)} pairs (max-T null)", "max |statistic|",
                  out / "null_distribution.png")
    (out / "test.json").write_text(json.dumps(doc, indent=2, allow_nan=False))
    pd.DataFrame(rows).to_csv(out / "comparisons.csv", index=False)
    return doc, rows


__all__ = ["test_matching_cli"]

test_matching_cli.__test__ = False  # a writer, not a pytest test
