"""Report sections for what evaluators compute every day beside the error rates: failures to acquire.

Presentation only, like :mod:`matchaudit.report.html`: every number and verdict comes from ``results.json``.
"""

from __future__ import annotations

from pathlib import Path

from matchaudit.formatting import interval
from matchaudit.report.markup import esc, pct, table


def failures(res: dict, folder: Path) -> str:
    """Failure-to-acquire rates per group and class (``--fta-policy exclude|count``)."""
    recs = res.get("failures") or []
    if not recs:
        return ""
    rows = [[esc(r["group"]), esc(r["class"]), f"{r['failures']:,} / {r['attempts']:,}", pct(r["fta"]),
             interval(r["low"], r["high"], "rate")] for r in recs]
    first = recs[0]
    meaning = ("They are left out of every other rate in this report, which are therefore over the comparisons "
               "that produced a score." if first["policy"] == "exclude" else
               "They count as errors in every other rate of this report: a failed genuine comparison as a false "
               "non-match, a failed impostor comparison as a correct rejection, so FNMR = FTA + FNMR (1 − FTA) and "
               "FMR = FMR (1 − FTA) per class (transaction-level rates).")
    return ("<h2>Failures to acquire</h2>"
            f"<p>Comparisons that produced no score (a missing score or a non-zero return code; ISO/IEC 19795-1). "
            f"Policy <code>{esc(first['policy'])}</code>: {meaning} Per group: its genuine comparisons and its "
            f"same-group impostor comparisons. Intervals: {esc(first['method'])} at {pct(first['level'], 2)}, with "
            "the variance clustered by identity (one poor enrolment fails all its comparisons).</p>"
            + table(["group", "class", "failures / attempts", "FTA", f"{pct(first['level'], 2)} interval"], rows, 2))


__all__ = ["failures"]
