"""Shared CLI plumbing: turning input errors into a message and exit status 2, parsing list options."""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager, nullcontext
from typing import Callable, TypeVar

import typer
from rich.console import Console

from matchaudit import interrupt
from matchaudit.errors import InputError
from matchaudit.interrupt import EXIT_INTERRUPTED

F = TypeVar("F", bound=Callable[..., object])
err_console = Console(stderr=True)
console = Console()

EXIT_INPUT = 2
"""Exit status for bad input (a message, no traceback). 0 = success; 1 = an unexpected failure; 130 = Ctrl-C."""


def user_errors(fn: F) -> F:
    """Run a command; an :class:`InputError` becomes ``Error: <message>`` on stderr and exit status 2, and
    Ctrl-C a one-line notice and exit status 130 (the shell's convention), without a traceback (the engine
    stops between sub-tiles, so that comes within a fraction of a second; a Ctrl-C during JIT compilation
    waits for the compiler, see :mod:`matchaudit.interrupt`)."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            with interrupt.sigint_deferred_in_compiler():
                out = fn(*args, **kwargs)
                interrupt.check()  # a Ctrl-C deferred past the last pass still ends the run as interrupted
            return out
        except InputError as e:
            err_console.print(f"[bold red]Error:[/] {e}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            err_console.print("Interrupted.", highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def status(quiet: bool, message: str) -> AbstractContextManager:
    """A Rich spinner around a long step (nothing with --quiet)."""
    return nullcontext() if quiet else console.status(message, spinner="dots")


def floats(text: str, option: str) -> tuple[float, ...]:
    """``"1e-2,1e-3"`` -> (0.01, 0.001); a clear error otherwise."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"{option} {text!r}: give comma-separated numbers, e.g. 1e-2,1e-3,1e-4.") from None


def names(text: str | None) -> tuple[str, ...]:
    """``"gender,ethnicity"`` -> ("gender", "ethnicity"); empty -> ()."""
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())
