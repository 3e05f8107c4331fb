"""The Typer application every command module registers on."""

from __future__ import annotations

import inspect

import typer

app = typer.Typer(
    name="matchaudit",
    help="How far can you trust a 1:1 matching system's error rates? Intervals, fairness tests, label-free estimates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def reflowed(doc: str) -> str:
    """A command's help with each prose paragraph on one line, so that the help wraps it to the terminal (Typer's
    help keeps a docstring's line breaks: prose written to 115 columns broke raggedly at 80); indented paragraphs
    (the examples) as written."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(p if p.startswith(" ") else " ".join(p.split("\n")) for p in paragraphs)
