"""Command-line interface: ``matchaudit <command>``. Each command lives in its own module."""

from matchaudit.cli import audit, compare, coverage, estimate, protocol, report, simulate, test  # noqa: F401  (registers)
from matchaudit.cli.app import app

__all__ = ["app"]
