"""The Typer application every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="matchaudit",
    help="How far can you trust a 1:1 matching system's error rates? Intervals, fairness tests, label-free estimates.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
