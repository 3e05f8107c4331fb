"""HTML building blocks shared by the report's sections: escaping, tables, embedded figures, number words."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from matchaudit.formatting import fmt


def esc(x: Any) -> str:
    """Text safe inside HTML."""
    return html.escape(str(x))


def pct(v: Any, digits: int = 3) -> str:
    """A rate in percent (:func:`matchaudit.formatting.fmt`)."""
    return fmt(v, "rate", digits)


def table(header: list[str], rows: list[list[Any]], left: int = 1) -> str:
    """A table that scrolls sideways inside its box on a narrow screen instead of running off the page."""
    th = "".join(f"<th class='{'l' if i < left else ''}'>{esc(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td class='{'l' if i < left else ''}'>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def figure(path: Path, caption: str) -> str:
    """A PNG embedded as base64 with its caption (nothing when the figure was not written)."""
    if not path.exists():
        return ""
    data = base64.b64encode(path.read_bytes()).decode()
    return (f"<figure><img alt='{esc(caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def pvalue(v: Any) -> str:
    """A p-value as the report prints it."""
    return fmt(v, "p")
