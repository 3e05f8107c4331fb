"""Command-line interface: ``matchaudit <command>``. Each command lives in its own module."""

from matchaudit.cli.app import app

__all__ = ["app"]
