"""The report's section of a ``matchaudit check`` claims.json: each claim's verdict, reason and advice."""

from __future__ import annotations

from pathlib import Path

from matchaudit.report.markup import esc, table

_MARK = {"pass": "✔ pass", "fail": "✘ fail", "inconclusive": "? inconclusive"}


def claims_section(res: dict, folder: Path) -> str:
    """Verdicts of the claims checked against this audit (nothing when no claims.json was given or found)."""
    doc = res.get("_claims")
    if not doc:
        return ""
    rows = [[esc(c["claim"]), esc(c["text"]), f"<b>{esc(_MARK.get(c['verdict'], c['verdict']))}</b>",
             esc(c["reason"]) + (f"<br><span class='muted'>{esc(c['advice'])}</span>" if c.get("advice") else "")]
            for c in doc["claims"]]
    mismatch = f"<p class='warn'><b>Other audit:</b> {esc(doc['_mismatch'])}</p>" if doc.get("_mismatch") else ""
    return ("<h2>Claims</h2>"
            f"<p>The claims of <code>{esc(Path(str(doc.get('claims_file', ''))).name)}</code>, each answered from this "
            f"audit's intervals: <b>{esc(doc['status'])}</b> overall. A claim passes when its confidence bounds lie "
            "inside its limits, fails when one lies beyond them, and is inconclusive when the data cannot tell "
            f"(which is not a pass). Every verdict on this page is right with probability at least "
            f"{100 * float(doc['level']):.4g}% (Bonferroni over the claims; docs/claims.md).</p>" + mismatch
            + table(["claim", "promise", "verdict", "why"], rows, 4))


__all__ = ["claims_section"]
