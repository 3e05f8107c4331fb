"""Ctrl-C that is never lost and never breaks the JIT compiler.

Python raises KeyboardInterrupt wherever the main thread happens to be. Inside Numba's compiler that goes
wrong two ways: in a ctypes callback (the compiler calls one as it caches a kernel) the exception is
printed and dropped, so the run carries on; elsewhere it can leave the compiler's state half-built and a
later call fails with an unrelated error. While :func:`sigint_deferred_in_compiler` is active, a Ctrl-C that
lands in the compiler is only recorded; every pass over the comparisons polls :func:`check` at its next
block and raises KeyboardInterrupt there. Everywhere else Ctrl-C raises at once, as usual.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Callable, Iterator

EXIT_INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C (the shell's convention: 128 + SIGINT)."""

_requested = threading.Event()
_COMPILER = ("/numba/", "/llvmlite/")


def requested() -> bool:
    """Whether Ctrl-C came while :func:`sigint_deferred_in_compiler` was active."""
    return _requested.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if a deferred Ctrl-C is waiting (cheap; called once per block)."""
    if _requested.is_set():
        raise KeyboardInterrupt


def _in_compiler(frame: FrameType | None) -> bool:
    while frame is not None:
        if any(p in frame.f_code.co_filename.replace("\\", "/") for p in _COMPILER):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    _requested.set()
    if not _in_compiler(frame):
        raise KeyboardInterrupt


@contextmanager
def sigint_handler(handler: Callable[[int, FrameType | None], Any] | int) -> Iterator[None]:
    """SIGINT handled by ``handler`` (a function, or ``signal.SIG_IGN``) for the duration, then the old
    handler again (main thread only, where Python runs signal handlers; elsewhere a no-op). A process that
    started with SIGINT ignored (a script's background job, ``nohup``) keeps ignoring it, as Python itself
    does: Ctrl-C at the terminal is not meant for it."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextmanager
def sigint_deferred_in_compiler() -> Iterator[None]:
    """Install the deferring handler for the duration, then forget any request (a deferred Ctrl-C never
    leaks into later work of the same process)."""
    _requested.clear()
    try:
        with sigint_handler(_handler):
            yield
    finally:
        _requested.clear()
