"""The report's section of an audit's conditions.json (``--condition-cols``): per condition and condition x group
FNMR and FMR at the audit's thresholds, the equalised rate, differences and interactions, and the Wald tests."""

from __future__ import annotations

from pathlib import Path

from matchaudit.formatting import fmt, interval
from matchaudit.report.markup import esc, pct, table

_KIND = {"rate": "rate", "equalised": "equalised (mean over conditions)", "difference": "difference",
         "interaction": "interaction (gap between groups, minus its gap under the reference)"}


def conditions_section(res: dict, folder: Path) -> str:
    """Nothing when no conditions.json lies beside the audit's results.json (or was named)."""
    doc = res.get("_conditions")
    if not doc:
        return ""
    rows = []
    for r in doc["records"]:
        points = r["kind"] in ("difference", "interaction")
        where = esc(r["condition"] + (f" − {r['condition_ref']}" if r.get("condition_ref") else ""))
        who = esc(r["group"] + (f" − {r['group_ref']}" if r.get("group_ref") else ""))
        value = fmt(r["estimate"], "points", sign=True) if points else pct(r["estimate"])
        p = "" if r.get("p_value") is None else fmt(r["p_value"], "p")
        rows.append([f"FMR {fmt(r['fmr_target'])}", esc(r["metric"].upper()), esc(_KIND.get(r["kind"], r["kind"])),
                     where, who, value, interval(r["low"], r["high"], "points" if points else "rate"), p])
    tests = "".join(f"<li>{esc(t['metric'].upper())} at FMR {fmt(t['fmr_target'])}: {esc(t['hypothesis'])}: "
                    + (f"no test: {esc(t['note'])}" if t.get("note") else
                       f"χ² = {t['statistic']:.3g} on {t['df']} df, p = {fmt(t['p_value'], 'p')}") + "</li>"
                    for t in doc["tests"])
    mismatch = f"<p class='warn'><b>Other data:</b> {esc(doc['_mismatch'])}</p>" if doc.get("_mismatch") else ""
    return ("<h2>Trial conditions</h2>"
            f"<p>Conditions of the comparisons ({esc(' x '.join(doc['condition_cols']))}: "
            f"{esc(', '.join(doc['conditions']))}), each read at the audit's threshold of each FMR target (set once on "
            f"all impostors, as deployed). Intervals: {esc(doc['method'])}, {esc(doc['n_resamples'])} replicates, "
            f"{100 * float(doc['level']):.4g}%, one identity bootstrap shared by every condition, so differences and "
            "interactions are paired across conditions (docs/conditions.md). Differences and interactions in "
            "percentage points; their p-values are not adjusted: the Wald tests below answer for each family.</p>"
            + mismatch + table(["operating point", "rate", "quantity", "condition", "group", "estimate", "interval",
                                "p"], rows, 5)
            + (f"<p>Wald tests:</p><ul>{tests}</ul>" if tests else ""))


__all__ = ["conditions_section"]
