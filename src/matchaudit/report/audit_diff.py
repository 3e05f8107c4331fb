"""The HTML page of ``matchaudit diff`` (two audits of versions of one system): how the rows were computed (paired
or not, and why), what was skipped and assumed, the table of NEW - OLD with the verdicts, and both versions' DET
curves. Presentation only: every number and verdict is the diff document's
(:meth:`matchaudit.estimators.audit_diff.AuditDiff.to_dict`)."""

from __future__ import annotations

from pathlib import Path

from matchaudit.formatting import fmt, interval, value as _num
from matchaudit.report.html import CSS
from matchaudit.report.markup import esc, figure, pct, pvalue, table

_MARK = {"worse": "<b style='color:#b00'>worse</b>", "better": "<b style='color:#070'>better</b>"}


def _rows(doc: dict) -> str:
    rows = []
    for r in doc["rows"]:
        verdict = _MARK.get(r["verdict"], esc(r["verdict"]))
        rows.append([esc(r["metric"]), f"FMR {fmt(r['fmr_target'])}", esc(r["view"]), pct(r["old"]), pct(r["new"]),
                     fmt(_num(r["difference"]), "points", sign=True), interval(r["low"], r["high"], "points"),
                     interval(r["simultaneous_low"], r["simultaneous_high"], "points"), pvalue(r["pvalue_adjusted"]),
                     verdict, esc(r["note"])])
    level = f"{100 * doc['level']:g}%"
    return table(["metric", "operating point", "view", "OLD", "NEW", "NEW − OLD", f"{level} interval",
                  f"{level} simultaneous", "adjusted p", "verdict", "note"], rows, 3)


def diff_section(doc: dict, det_png: Path | None) -> str:
    """The diff as a report section: reading, rows, notes, skipped rows and the DET figure (``det_png``)."""
    worse = [r for r in doc["rows"] if r["verdict"] == "worse"]
    better = [r for r in doc["rows"] if r["verdict"] == "better"]
    said = (f"{len(worse)} row(s) got worse beyond noise: "
            + ", ".join(f"{r['metric']} of {r['view']} at FMR {fmt(r['fmr_target'])}" for r in worse)
            if worse else "No row got worse beyond noise.")
    if better:
        said += f" {len(better)} got better beyond noise."
    warn = "" if doc["paired"] else f"<p class='warn'><b>Unpaired.</b> {esc(doc['pairing'])}.</p>"
    lists = "".join(f"<p>{esc(title)}</p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in items) + "</ul>"
                    for title, items in (("Assumptions:", doc["notes"]), ("Left out (in one audit only):",
                                                                          doc["skipped"])) if items)
    return ("<h2>NEW − OLD</h2>"
            f"<p>OLD: <code>{esc(doc['old']['source'])}</code>; NEW: <code>{esc(doc['new']['source'])}</code>. "
            f"{esc(doc['pairing'][:1].upper() + doc['pairing'][1:])}.</p>{warn}"
            f"<div class='reading'>{esc(said)} A row is worse (better) when its simultaneous interval, which holds "
            "for every view of its metric at its FMR target together, lies above (below) 0; differences in "
            "percentage points, FNMR at each version's own threshold for the FMR target.</div>"
            + _rows(doc) + lists
            + (figure(det_png, "DET curves (pooled): OLD dashed, NEW solid, one colour per group") if det_png else ""))


def render_diff(doc: dict, det_png: Path | None, title: str = "matchaudit diff") -> str:
    """The whole page (self-contained: the figure embedded)."""
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1>"
            "<p class='muted'>Two audits of versions of one matching system compared.</p>"
            f"{diff_section(doc, det_png)}</body></html>")


__all__ = ["diff_section", "render_diff"]
