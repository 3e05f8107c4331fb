"""Engine throughput: comparison-replicates per second (B x comparisons / wall time) on all-pairs data.

Usage: .venv/bin/python bench/engine_throughput.py [--n 2000 5000 20000] [--B 100 1000] [--scheme within-identity]
Timed in-process after a warm-up run (Numba compilation excluded), best of ``--repeat`` runs; includes
scoring, counting and the exact FMR-target refinement (the grid is built once per n, outside the timing).
Prints one row per (n, B) — wall seconds and CPU seconds (all threads; on a shared machine the wall time
depends on the load, printed first) — and the growth exponents in n and B.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, run
from matchaudit.model import MatchData, Samples


def best_of(fn, repeat: int) -> float:
    """The shortest wall time of ``repeat`` calls of ``fn`` (the benchmarks' timing)."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def synthetic(n: int, per_id: int = 10, dim: int = 128, seed: int = 0) -> MatchData:
    g = np.random.default_rng(seed)
    K = n // per_id
    centres = g.standard_normal((K, dim))
    ident = np.repeat(np.arange(K), per_id)[:n]
    emb = (centres[ident] + 0.8 * g.standard_normal((n, dim))).astype(np.float32)
    return MatchData(identity_names=np.arange(K).astype(str), identity_group=np.arange(K) % 2,
                     group_names=("a", "b"), group_by=("g",), protocol="all-pairs", score_kind="cosine",
                     samples=Samples(ids=np.arange(n).astype(str), identity=ident, embeddings=emb))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 5000, 20000])
    ap.add_argument("--B", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--scheme", default="within-identity", choices=sorted(rs.SCHEMES))
    ap.add_argument("--cells", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3, help="report the best of this many runs")
    a = ap.parse_args()
    scheme = rs.SCHEMES[a.scheme](seed=1)
    run(synthetic(300), scheme, 8, fmr_targets=[1e-3])  # warm-up (compilation)
    rows = []
    print(f"scheme={a.scheme} cells>={a.cells}")
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'n':>7} {'B':>6} {'comparisons':>12} {'cells':>6} {'seconds':>8} {'cpu-s':>7} {'cmp-rep/s':>10}")
    for n in a.n:
        data = synthetic(n)
        grid = build_grid(data, n_cells=a.cells)
        for B in a.B:
            best = (np.inf, np.inf)
            for _ in range(a.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                run(data, scheme, B, grid=grid, fmr_targets=[1e-4, 1e-3])
                best = min(best, (time.perf_counter() - t0, time.process_time() - c0))
            dt, cpu = best
            m = data.n_comparisons()
            rows.append((n, B, m, dt))
            print(f"{n:>7} {B:>6} {m:>12.3g} {grid.n_cells:>6} {dt:>8.2f} {cpu:>7.2f} {B * m / dt:>10.3g}", flush=True)
    r = np.array(rows, dtype=float)
    if len(set(r[:, 0])) > 1:
        Bmax = r[:, 1].max()
        s = r[r[:, 1] == Bmax]
        print(f"time ~ n^{np.polyfit(np.log(s[:, 0]), np.log(s[:, 3]), 1)[0]:.2f} (B={int(Bmax)})")
    if len(set(r[:, 1])) > 1:
        nmax = r[:, 0].max()
        s = r[r[:, 0] == nmax]
        print(f"time ~ B^{np.polyfit(np.log(s[:, 1]), np.log(s[:, 3]), 1)[0]:.2f} (n={int(nmax)})")


if __name__ == "__main__":
    main()
