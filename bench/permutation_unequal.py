"""Level and power of the identity-level FNMR permutation test when the groups' error structures differ (#14 item 6).

Group A: identities whose genuine comparisons fail independently; group B: fewer identities whose failure
probability varies by identity (Beta with concentration c: errors correlated inside an identity, smaller c =
stronger). Same generator as the tests (tests/test_matching_tests.py::correlated_clusters). Run from the
repository root: ``.venv/bin/python bench/permutation_unequal.py [n_sets]``; prints the markdown tables of
docs/tests.md ("Unequal groups").
"""

from __future__ import annotations

import sys
import time

import numpy as np

sys.path.insert(0, ".")
from tests.test_matching_tests import correlated_clusters  # noqa: E402  (one generator)

from matchaudit.auditing.matching_passes import matching_group_test  # noqa: E402

DESIGNS = [  # (label, identities A, identities B, concentration)
    ("120 independent vs 30, c = 1000 (near independent)", 120, 30, 1000.0),
    ("120 independent vs 30, c = 5", 120, 30, 5.0),
    ("120 independent vs 30, c = 2 (the issue's design)", 120, 30, 2.0),
    ("120 independent vs 30, c = 1", 120, 30, 1.0),
    ("75 independent vs 75, c = 2", 75, 75, 2.0),
]


def rejections(n_sets: int, n_a: int, n_b: int, c: float, gap: float = 0.0) -> dict[str, float]:
    hits = {"studentized": 0, "unstudentized": 0}
    for i in range(n_sets):
        data = correlated_clusters(10_000 + i, n_a=n_a, n_b=n_b, concentration=c, gap=gap)
        for name, mode in (("studentized", True), ("unstudentized", False)):
            r = matching_group_test(data, "fnmr", threshold=0.5, n_resamples=199, seed=i, studentize=mode)
            hits[name] += r.pvalue <= 0.05
    return {k: v / n_sets for k, v in hits.items()}


def main(n_sets: int = 1200) -> None:
    t0 = time.time()
    se = np.sqrt(0.05 * 0.95 / n_sets)
    print(f"### Level at nominal 0.05, FNMR 0.1 in both groups ({n_sets} data sets, B = 199; SE {se:.4f})\n")
    print("| design | studentized (t, effective df) | unstudentized |")
    print("|---|---|---|")
    for label, a, b, c in DESIGNS:
        r = rejections(n_sets, a, b, c)
        print(f"| {label} | {r['studentized']:.4f} | {r['unstudentized']:.4f} |")
    print(f"\n### Power, 120 independent vs 30 correlated (c = 2), B's FNMR 0.1 + gap ({n_sets // 2} data sets)\n")
    print("| gap | studentized | unstudentized |")
    print("|---|---|---|")
    for gap in (0.05, 0.1, 0.15, 0.2):
        r = rejections(n_sets // 2, 120, 30, 2.0, gap)
        print(f"| {gap:g} | {r['studentized']:.3f} | {r['unstudentized']:.3f} |")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1200)
