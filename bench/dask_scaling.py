"""Dask backend throughput: comparison-replicates per second with 1 and 2 local workers (one Numba thread
each), against the local CPU engine (this process, 1 thread and every core), on the same all-pairs job
(within-identity bootstrap, two FMR targets). Cluster start and each worker's first (compiling) run are
excluded: one warm-up run per backend.

    .venv/bin/python bench/dask_scaling.py --n 12000 --B 200
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from engine_throughput import synthetic  # noqa: E402

from matchaudit import resampling as rs  # noqa: E402
from matchaudit.engine import LocalBackend, build_grid, run  # noqa: E402
from matchaudit.engine.dask_backend import DaskBackend  # noqa: E402


def timed(data, grid, B: int, backend, repeat: int) -> tuple[float, np.ndarray]:
    run(data, rs.WithinIdentity(1), B, grid=grid, fmr_targets=[1e-3, 1e-4], backend=backend)  # warm-up
    best, c = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        c = run(data, rs.WithinIdentity(1), B, grid=grid, fmr_targets=[1e-3, 1e-4], backend=backend)
        best = min(best, time.perf_counter() - t)
    return best, c.impostor


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    data = synthetic(a.n)
    grid = build_grid(data)
    work = data.n_comparisons() * (a.B + 1)
    print(f"n={a.n} B={a.B} comparisons={data.n_comparisons():.3g} cores={os.cpu_count()} "
          f"load={os.getloadavg()[0]:.1f}")
    nb.set_num_threads(1)
    cpu1, ref = timed(data, grid, a.B, LocalBackend(), a.repeat)
    nb.set_num_threads(nb.config.NUMBA_NUM_THREADS)
    cpu, _ = timed(data, grid, a.B, LocalBackend(), a.repeat)
    print(f"cpu engine, 1 thread      : {cpu1:7.2f} s  {work / cpu1:.3g} cmp-rep/s")
    print(f"cpu engine, {nb.get_num_threads()} threads     : {cpu:7.2f} s  {work / cpu:.3g} cmp-rep/s")
    one = None
    for workers in (1, 2):  # one Numba thread per worker: the speed-up from workers alone
        with DaskBackend(n_workers=workers, threads=1) as dask:
            t, imp = timed(data, grid, a.B, dask, a.repeat)
        assert np.array_equal(imp, ref), "dask counts differ from the cpu engine"
        one = one or t
        print(f"dask {workers} worker(s) x 1 thread: {t:7.2f} s  {work / t:.3g} cmp-rep/s  "
              f"speed-up vs 1 worker {one / t:.2f}  ratio to cpu 1 thread {cpu1 / t:.2f}, to cpu all {cpu / t:.2f}")
    print(f"load after={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
