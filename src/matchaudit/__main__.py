"""The console script ``matchaudit`` and ``python -m matchaudit``.

Loading the commands imports NumPy, SciPy, Numba and pandas (a second or two); a Ctrl-C meanwhile still ends
with one line and exit status 130, like a Ctrl-C inside a command (:func:`matchaudit.cli.common.user_errors`).
"""

from __future__ import annotations

import sys

from matchaudit.interrupt import EXIT_INTERRUPTED


def main() -> None:
    """Load the commands, then run the one named on the command line."""
    try:
        from matchaudit.cli import app
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    app()


if __name__ == "__main__":
    main()
