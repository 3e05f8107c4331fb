"""Level and power of identity-level vs comparison-level permutation tests on vMF matching data.

Run from the repository root: ``.venv/bin/python bench/matching_level.py [n_sets]``. Prints markdown tables
(docs/tests.md, section "Matching data"). Same data generator and test calls as tests/test_matching_tests.py.
"""

from __future__ import annotations

import sys
import time

import numpy as np

sys.path.insert(0, ".")
from tests.test_matching_tests import _rejects  # noqa: E402  (the tests' generator: one definition)

from matchaudit.simulation import GroupSpec  # noqa: E402


def main(n_sets: int = 200) -> None:
    t0 = time.time()
    se = lambda p, n: np.sqrt(p * (1 - p) / n)  # noqa: E731
    print(f"### Level: no group difference, unequal identity sizes ({n_sets} data sets, B = 199, level 0.05)\n")
    print("| metric | A identities x samples | B identities x samples | identity-level | comparison-level |")
    print("|---|---|---|---|---|")
    groups = {"A": (GroupSpec(120, (8.0, 60.0)), (2, 3)), "B": (GroupSpec(20, (8.0, 60.0)), (8, 12))}
    for metric in ({"metric": "fnmr", "threshold": 0.45}, {"metric": "fmr", "threshold": 0.45}):
        h = _rejects(groups, n_sets, metric, ("identity", "comparison"), seed0=100)
        cells = [f"{h[u] / n_sets:.3f} ± {se(h[u] / n_sets, n_sets):.3f}" for u in ("identity", "comparison")]
        print(f"| {metric['metric']} (t = 0.45) | 120 x 2-3 | 20 x 8-12 | {cells[0]} | {cells[1]} |")
    print(f"\n### Power: planted FNMR gap (kappa A U[25, 60], B U[15, 40]; 4 samples each; {n_sets // 2} sets)\n")
    print("| identities per group | identity-level power |")
    print("|---|---|")
    for k in (8, 20, 40):
        g = {"A": (GroupSpec(k, (25.0, 60.0)), 4), "B": (GroupSpec(k, (15.0, 40.0)), 4)}
        h = _rejects(g, n_sets // 2, {"metric": "fnmr", "threshold": 0.45}, ("identity",), seed0=500)
        p = h["identity"] / (n_sets // 2)
        print(f"| {k} | {p:.3f} ± {se(p, n_sets // 2):.3f} |")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
