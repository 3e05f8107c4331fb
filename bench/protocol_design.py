"""Designed vs random comparison protocols: empirical SD of FNMR/FMR over fresh vMF data sets against the
prediction from a pilot (``matchaudit.studies.planning.protocol_study``).

Run from the repository root: ``.venv/bin/python bench/protocol_design.py [n_sets]``; prints markdown tables.
"""

from __future__ import annotations

import sys
import time

from matchaudit.studies.planning import protocol_study
from matchaudit.simulation import GroupSpec

SCENARIOS = {
    "uniform centroids (200 identities, 2-24 samples, kappa U[4,100])": {"A": GroupSpec(200, (4.0, 100.0))},
    "clustered centroids (2 x 100 identities, centroid kappa 5)": {
        "A": GroupSpec(100, (4.0, 100.0), centroid_kappa=5.0), "B": GroupSpec(100, (4.0, 100.0), centroid_kappa=5.0)},
}


def main(n_sets: int = 200) -> None:
    t0 = time.time()
    for name, groups in SCENARIOS.items():
        df = protocol_study(groups, 0.45, 200, 2000, n_sets)
        print(f"### {name}: 200 genuine + 2000 impostor comparisons, threshold 0.45, {n_sets} data sets\n")
        print("| protocol | rate | mean | empirical SD | predicted SD | empirical / predicted | predicted 95% width |")
        print("|---|---|---|---|---|---|---|")
        for r in df.itertuples():
            print(f"| {r.protocol} | {r.rate} | {r.mean:.4f} | {r.empirical_sd:.4f} | {r.predicted_sd:.4f} | "
                  f"{r.ratio_empirical_to_predicted:.2f} | {r.predicted_width:.4f} |")
        print()
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
