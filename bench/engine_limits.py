"""The machine's limits next to the accumulate kernel alone: what bounds the engine's throughput.

Usage: .venv/bin/python bench/engine_limits.py [--n 5000] [--B 1000] [--lanes 128]
Prints: float32 sgemm FLOP/s (one FMA = one comparison-replicate lane: the arithmetic limit), a DRAM copy's
bandwidth, and the accumulate kernel on the sorted entries of the first all-pairs block (within-identity
weights). Best of several runs, wall and per CPU-second (all threads; the machine may be shared: the load
average is printed first).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from engine_throughput import synthetic
from matchaudit import resampling as rs
from matchaudit.engine import build_grid, entries, passes, weights
from matchaudit.engine import kernels as K
from matchaudit.pairings import PairCategories


def best(f, k: int = 3) -> tuple[float, float]:
    out = (np.inf, np.inf)
    for _ in range(k):
        t0, c0 = time.perf_counter(), time.process_time()
        f()
        out = min(out, (time.perf_counter() - t0, time.process_time() - c0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--lanes", type=int, default=128)
    a = ap.parse_args()
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    x = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)
    w, c = best(lambda: x @ x, 5)
    print(f"sgemm 2048^3: {2 * 2048**3 / w / 1e9:.0f} GFLOP/s wall, {2 * 2048**3 / c / 1e9:.0f} GFLOP/s per CPU-s "
          f"(= {2048**3 / c:.2g} FMA lanes per CPU-s)")
    big = np.ones(1 << 27, np.float32)
    dst = np.empty_like(big)
    w, c = best(lambda: np.copyto(dst, big))
    print(f"DRAM copy 512 MiB: {2 * big.nbytes / w / 1e9:.1f} GB/s wall, {2 * big.nbytes / c / 1e9:.1f} GB/s per CPU-s")

    d = synthetic(a.n)
    grid = build_grid(d, n_cells=4096)
    lay = rs.Layout(identity_group=d.identity_group.astype(np.int64), sample_identity=d.samples.identity)
    ent = entries.Entries(d, grid, K.SAMPLE, True, PairCategories.pooled_by(np.ones((d.n_groups,) * 2, bool)))
    wt, _ = weights.weight_matrix(rs.WithinIdentity(1), K.SAMPLE, np.arange(1, a.B + 1), lay, ent.n_units, ent.G)
    W = weights.batched(wt, a.lanes)
    block = next(iter(d.blocks(2048)))
    pieces = [(off, suv) for _, off, suv, _ in ent.sorted_pieces(block, np.zeros(0, np.bool_))]
    n_entries = sum(int(p[0][-1]) for p in pieces)
    table = np.zeros((ent.n_keys, W.shape[0], W.shape[2]), np.int64)
    flush = entries.EXACT // max(1, int(W.max()) ** 2)

    def kernel():
        for off, suv in pieces:
            K.accumulate(W, off, suv, suv, False, flush, table, passes.key_slices(off, W.shape[0]))

    kernel()  # compilation
    w, c = best(kernel)
    print(f"accumulate alone ({n_entries:.3g} entries x {a.B} replicates, lanes {a.lanes}): "
          f"{n_entries * a.B / w:.3g} cmp-rep/s wall, {n_entries * a.B / c:.3g} per CPU-s")


if __name__ == "__main__":
    main()
