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
    rich_markup_mode=None,  # click's plain help: at 80 columns Rich's panels cut option names ("--threshold-impost…")
    context_settings={"max_content_width": 120},  # wider terminals: up to 120 columns (click's default stops at 80)
)


def reflowed(doc: str) -> str:
    """A command's help with each prose paragraph on one line, so that the help wraps it to the terminal (Typer's
    help keeps a docstring's line breaks: prose written to 115 columns broke raggedly at 80); indented paragraphs
    (the examples) as written, behind click's no-rewrap marker ``\\b``."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join("\b\n" + p if p.startswith(" ") else " ".join(p.split("\n")) for p in paragraphs)
