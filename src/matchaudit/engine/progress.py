"""The progress bar of counting passes (Rich; hidden when disabled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


def progress_bar(enabled: bool, label: str) -> Progress:
    """A transient bar over comparison blocks; the caller adds the task and its total."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn(label), BarColumn(), TextColumn("{task.completed}/{task.total} blocks"),
                    TimeRemainingColumn(), disable=not enabled, transient=True)
