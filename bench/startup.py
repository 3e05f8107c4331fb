"""Start-up time of the command line: `matchaudit --help`, `matchaudit audit --help`, `import matchaudit`.

Each is a fresh process (what a user waits for); best and median of --repeat runs, wall clock. With --old PATH
(a checkout's src folder, e.g. a `git worktree` of an earlier commit), the same commands on that code,
interleaved run by run, and the ratio.

    .venv/bin/python bench/startup.py --repeat 7 [--old /tmp/old/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "matchaudit --help": ["-m", "matchaudit", "--help"],
    "matchaudit audit --help": ["-m", "matchaudit", "audit", "--help"],
    "import matchaudit": ["-c", "import matchaudit"],
}


def once(args: list[str], src: str | None) -> float:
    env = dict(os.environ, COLUMNS="100")
    if src:
        env["PYTHONPATH"] = src
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--old", help="src folder of the code to compare with")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {a.repeat} runs each, seconds")
    for name, args in CASES.items():
        new, old = [], []
        for _ in range(a.repeat):
            new.append(once(args, None))
            if a.old:
                old.append(once(args, a.old))
        line = f"{name:26s} best {min(new):.3f}  median {statistics.median(new):.3f}"
        if old:
            line += (f"   old best {min(old):.3f}  median {statistics.median(old):.3f}"
                     f"   {statistics.median(old) / statistics.median(new):.1f}x faster")
        print(line)


if __name__ == "__main__":
    main()
