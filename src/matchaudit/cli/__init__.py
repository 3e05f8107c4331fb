"""Command-line interface: ``matchaudit <command>``. Each command lives in its own module."""

from matchaudit.cli import audit, report, simulate, test  # noqa: F401  (registers the commands)
from matchaudit.cli.app import app

__all__ = ["app"]
