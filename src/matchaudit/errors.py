"""The error users see for bad input: one message that names the problem, the rows or identities, and the fix."""

from __future__ import annotations

from typing import Sequence


class InputError(ValueError):
    """Invalid user input. The CLI prints the message (no traceback) and exits with status 2.

    ``param`` names the library parameter at fault (``"fmr"``, ``"level"``...), in neutral words; the CLI
    prefixes the message with its own flag for that parameter."""

    def __init__(self, message: str, *, param: str | None = None):
        super().__init__(message)
        self.param = param


def short(name: object, limit: int = 40) -> str:
    """A name as a sentence can quote it: cut to ``limit`` characters with an ellipsis and the full length (a
    5,000-character group name filled the warnings)."""
    text = str(name)
    return text if len(text) <= limit else f"{text[:limit - 1]}… ({len(text):,} characters)"


def listing(items: Sequence[object], limit: int = 10) -> str:
    """Render at most ``limit`` offending items, with a count of the rest (for error messages)."""
    shown = ", ".join(str(x) for x in list(items)[:limit])
    rest = len(items) - limit
    return shown + (f" (and {rest} more)" if rest > 0 else "")
