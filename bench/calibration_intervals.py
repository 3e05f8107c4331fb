"""Calibration intervals (Cllr, minCllr, actDCF, minDCF at three operating points, every view) on the demo data:
wall time and throughput (comparison-replicates per second: B x comparisons held / wall seconds).

Usage: .venv/bin/python bench/calibration_intervals.py [--data /tmp/dd/data] [--B 1000] [--method ...]
The demo files come from ``matchaudit.simulation.write_demo_data(directory)``. Timed after a warm-up call
(Numba compilation excluded); the time includes scoring the all-pairs comparisons, sorting them and the APE curves.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numba as nb

from matchaudit import load_comparisons, load_samples
from matchaudit.estimators.calibration import calibration
from matchaudit.estimators.distributions import score_distributions
from matchaudit.estimators.score_views import METHODS, materialise

OPS = ((0.01, 1.0, 1.0), (0.05, 1.0, 1.0), (0.001, 1.0, 10.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/tmp/dd/data")
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--method", nargs="+", default=list(METHODS), choices=METHODS)
    a = ap.parse_args()
    d = Path(a.data)
    inputs = {"all-pairs": load_samples(d / "samples.parquet", d / "embeddings.npy", group_by="group"),
              "listed": load_comparisons(d / "comparisons.csv", group_by="group")}
    print(f"threads: {nb.get_num_threads()}")
    print(f"{'input':<10} {'job':<13} {'method':<18} {'comparisons':>12} {'B':>5} {'seconds':>8} {'comp-reps/s':>12}")
    for name, data in inputs.items():
        for method in a.method:
            if method == "recentered" and name == "listed" and data.samples is None:
                continue
            n = materialise(data, method).n
            for job, fn in (("calibration", lambda m, B: calibration(data, operating_points=OPS, llr=True, method=m,
                                                                     n_resamples=B)),
                            ("distributions", lambda m, B: score_distributions(data, method=m, n_resamples=B))):
                fn(method, 40)  # warm-up: compilation and caches
                t = time.perf_counter()
                fn(method, a.B)
                dt = time.perf_counter() - t
                print(f"{name:<10} {job:<13} {method:<18} {n:>12,} {a.B:>5} {dt:>8.2f} {n * a.B / dt:>12.3g}")


if __name__ == "__main__":
    main()
