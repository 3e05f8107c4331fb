"""Progress of a long step, counted in its real work (comparisons x replicates, blocks, draws): a Rich bar with
rate and time left on a terminal; elsewhere (a log, a pipe) a line to stderr every ``EVERY`` seconds; nothing when
disabled (``--quiet``)."""

from __future__ import annotations

import sys
import time
from contextlib import AbstractContextManager, nullcontext
from types import TracebackType

from matchaudit.formatting import fmt

EVERY = 10.0  # seconds between lines when stderr is not a terminal


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Meter:
    """``with Meter(enabled, label, total, unit) as m: ... m.advance(n)``."""

    def __init__(self, enabled: bool, label: str, total: float, unit: str) -> None:
        self.enabled, self.label, self.total, self.unit = enabled, label, float(total), unit
        self.done, self._bar, self._job = 0.0, None, None
        self._start = self._last = time.monotonic()

    def __enter__(self) -> Meter:
        if self.enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn(self.label), BarColumn(), TaskProgressColumn(),
                                 TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.__enter__()
            self._job = self._bar.add_task("", total=self.total, rate="")
        return self

    def __bool__(self) -> bool:
        return self.enabled

    def advance(self, n: float = 1) -> None:
        """``n`` more units done."""
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        rate = self.done / max(now - self._start, 1e-9)
        if self._bar is not None:
            self._bar.update(self._job, completed=self.done, rate=f"{fmt(rate)} {self.unit}/s")
        elif now - self._last >= EVERY:
            self._last = now
            left = (self.total - self.done) / rate if rate > 0 else float("nan")
            announce(True, f"{self.label}: {100 * self.done / max(self.total, 1):.0f}% ({fmt(self.done)} of "
                           f"{fmt(self.total)} {self.unit}, {fmt(rate)}/s, about {_clock(left)} left)")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)


PASS_UNIT = "comparisons x replicates"


def announce(enabled: bool, text: str) -> None:
    """A line for the person waiting (progress, a plan), to stderr, when progress is shown."""
    if enabled:
        print(text, file=sys.stderr, flush=True)


def pass_meter(progress: bool | Meter, label: str, total: float) -> AbstractContextManager[Meter]:
    """The display of one counting pass of ``total`` comparisons x replicates: a new :class:`Meter`, or, when a
    job of several passes (replicates in chunks) already shows one, that one (its total covers every pass)."""
    if isinstance(progress, Meter):
        return nullcontext(progress)
    return Meter(progress, label, total, PASS_UNIT)


__all__ = ["EVERY", "Meter", "PASS_UNIT", "announce", "pass_meter"]
