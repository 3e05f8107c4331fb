"""The console script ``matchaudit`` and ``python -m matchaudit``.

Loading the commands is quick (each imports its numeric libraries when it runs); a Ctrl-C meanwhile still ends
with one line and exit status 130, like a Ctrl-C inside a command (:func:`matchaudit.cli.common.user_errors`). A
finished command then ends the process at once: an interrupted one because a compiled computation (NumPyro's
sampler in JAX) runs on in threads of its own and would otherwise keep the process, and its progress lines, alive
until it finishes; any other because the interpreter's teardown costs ~0.3 s of finalisers.
"""

from __future__ import annotations

import os
import sys

from matchaudit.interrupt import EXIT_INTERRUPTED
from matchaudit.machine import idle_threads_sleep


def main() -> None:
    """Load the commands, then run the one named on the command line."""
    idle_threads_sleep()
    try:
        from matchaudit.cli import app
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    try:
        app()
    except SystemExit as e:
        # The command has finished (outputs written and closed, clusters shut down; interrupted: staged outputs
        # removed, and said so). End the process here: the interpreter's teardown would spend ~0.3 s finalising
        # Numba's compiled code and the numeric libraries (bench/cli_vs_cimat.py), and an interrupted one would
        # wait for a compiled computation still running in threads of its own.
        code = e.code
        if code is not None and not isinstance(code, int):  # sys.exit("message"), as Python ends it
            print(code, file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)


if __name__ == "__main__":
    main()
