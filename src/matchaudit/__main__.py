"""The console script ``matchaudit`` and ``python -m matchaudit``.

Loading the commands is quick (each imports its numeric libraries when it runs); a Ctrl-C meanwhile still ends
with one line and exit status 130, like a Ctrl-C inside a command (:func:`matchaudit.cli.common.user_errors`). An
interrupted command then ends the process at once: a compiled computation (NumPyro's sampler in JAX) runs on in
threads of its own and would otherwise keep the process, and its progress lines, alive until it finishes.
"""

from __future__ import annotations

import os
import sys

from matchaudit.interrupt import EXIT_INTERRUPTED


def main() -> None:
    """Load the commands, then run the one named on the command line."""
    try:
        from matchaudit.cli import app
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    try:
        app()
    except SystemExit as e:
        if e.code == EXIT_INTERRUPTED:  # the command has cleaned up (staged outputs removed) and said so
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        raise


if __name__ == "__main__":
    main()
