"""Command-line interface: ``matchaudit <command>``. Each command lives in its own module."""

import inspect

from matchaudit.cli import (audit, check, compare, coverage, diff, estimate, log_mlflow, protocol, report,  # noqa: F401
                            simulate, test)  # (registers)
from matchaudit.cli.app import app, reflowed

for _command in app.registered_commands:  # each command's help from its docstring, its prose reflowed
    _command.help = reflowed(_command.help or inspect.getdoc(_command.callback) or "")

__all__ = ["app"]
