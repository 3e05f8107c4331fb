"""The progress bar of counting passes (Rich; hidden when disabled)."""

from __future__ import annotations


def progress_bar(enabled: bool, total: int, label: str):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    p = Progress(TextColumn(label), BarColumn(), TextColumn("{task.completed}/{task.total} blocks"),
                 TimeRemainingColumn(), disable=not enabled, transient=True)
    return p
