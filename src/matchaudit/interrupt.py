"""Ctrl-C (and SIGTERM) that is never lost and never breaks the JIT compiler.

Python raises KeyboardInterrupt wherever the main thread happens to be. Inside Numba's compiler that goes
wrong two ways: in a ctypes callback (the compiler calls one as it caches a kernel) the exception is
printed and dropped, so the run carries on; elsewhere it can leave the compiler's state half-built and a
later call fails with an unrelated error. While :func:`sigint_deferred_in_compiler` is active, a Ctrl-C that
lands in the compiler is only recorded; every pass over the comparisons polls :func:`check` at its next
block and raises KeyboardInterrupt there. Everywhere else Ctrl-C raises at once, as usual.

The same deferral covers a signal landing in a ``__del__`` or weakref callback (where Python would print the
exception and drop it) and one landing while an output set is moved into place (:func:`committing`: a set is
replaced whole or not at all; a signal waiting before the move keeps the previous set).

SIGTERM (what ``timeout``, ``kill``, ``docker stop`` and CI cancellation send) is handled the same way while a
command runs: it raises :class:`Terminated`, a KeyboardInterrupt, so every clean-up an interrupted command does
(staged outputs removed, clusters shut down) runs for it too; the command then exits with status 143.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Callable, Iterator

EXIT_INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C (the shell's convention: 128 + SIGINT)."""

EXIT_TERMINATED = 143
"""Exit status of a command stopped by SIGTERM (128 + SIGTERM)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so that it unwinds (and cleans up) as a Ctrl-C does."""


_requested = threading.Event()
_terminated = threading.Event()
_committing = threading.Event()
_COMPILER = ("/numba/", "/llvmlite/")
_CALLBACKS = ("/weakref.py", "/_weakrefset.py")  # an exception raised in a weakref callback or a __del__ is
# printed ("Exception ignored in ...") and dropped: record the signal there too


def requested() -> bool:
    """Whether Ctrl-C came while :func:`sigint_deferred_in_compiler` was active."""
    return _requested.is_set()


def _interrupt() -> KeyboardInterrupt:
    return Terminated() if _terminated.is_set() else KeyboardInterrupt()


def check() -> None:
    """Raise KeyboardInterrupt (:class:`Terminated` for SIGTERM) if a deferred signal is waiting (cheap; called
    once per block)."""
    if _requested.is_set():
        raise _interrupt()


def _must_defer(frame: FrameType | None) -> bool:
    """Whether an exception raised at ``frame`` would be lost or do harm: inside the compiler, a weakref callback
    or a ``__del__`` (Python prints and drops it), or while an output set is moved into place (:func:`committing`)."""
    if _committing.is_set():
        return True
    while frame is not None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if frame.f_code.co_name == "__del__" or any(p in name for p in _COMPILER) or name.endswith(_CALLBACKS):
            return True
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGTERM:
        _terminated.set()
    _requested.set()
    if not _must_defer(frame):
        raise _interrupt()


@contextmanager
def committing() -> Iterator[None]:
    """Move outputs into place as one step: a signal already waiting is raised first (the previous outputs stay
    untouched); one that comes while the files move is recorded and raised at the next :func:`check` (the set is
    then whole)."""
    check()
    _committing.set()
    try:
        yield
    finally:
        _committing.clear()


@contextmanager
def sigint_handler(handler: Callable[[int, FrameType | None], Any] | int,
                   signals: tuple[int, ...] = (signal.SIGINT,)) -> Iterator[None]:
    """``signals`` (SIGINT) handled by ``handler`` (a function, or ``signal.SIG_IGN``) for the duration, then the
    old handlers again (main thread only, where Python runs signal handlers; elsewhere a no-op). A signal that
    the process started with ignored (SIGINT of a script's background job, ``nohup``) stays ignored, as Python
    itself does: Ctrl-C at the terminal is not meant for it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        if old[s] is not signal.SIG_IGN:
            signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            if h is not signal.SIG_IGN:
                signal.signal(s, h)


@contextmanager
def sigint_deferred_in_compiler() -> Iterator[None]:
    """Install the deferring handler for SIGINT and SIGTERM for the duration, then forget any request (a
    deferred signal never leaks into later work of the same process)."""
    _requested.clear()
    _terminated.clear()
    try:
        with sigint_handler(_handler, (signal.SIGINT, signal.SIGTERM)):
            yield
    finally:
        _requested.clear()
        _terminated.clear()
