"""When the identity-level collapse pays: engine passes with and without it, and what `driver.collapse_pays` chooses.

Usage: .venv/bin/python bench/collapse.py [--per-id 10 100 400 1000] [--n 8000] [--B 100 1000 2000 4000]
Synthetic all-pairs data (engine_throughput.synthetic: d = 128, 2 groups) of ``--n`` samples with ``--per-id``
samples per identity; double-or-nothing and vertex bootstraps, two FMR targets, the audit's default grid. Each row:
entries per merged entry (measured), the lower bound the chooser uses, seconds with and without merging (best of
2), their ratio (> 1: merging is faster) and the chooser's choice. The counts are checked equal both ways.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from engine_throughput import best_of, synthetic

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, driver, run
from matchaudit.engine import kernels as K


def measured_repeats(data, scheme, grid) -> float:
    """Entries per merged entry in a collapsed pass (the sizes in and out of the counting pass's np.unique)."""
    seen = [0, 0]
    real = np.unique

    def spy(a, *args, **kw):
        out = real(a, *args, **kw)
        if kw.get("return_counts"):  # the merge's call (passes.Counter.feed)
            seen[0] += a.size
            seen[1] += out[0].size
        return out

    np.unique = spy  # passes.np is numpy
    try:
        run(data, scheme, 1, grid=grid, collapse=True)
    finally:
        np.unique = real
    return seen[0] / max(seen[1], 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-id", type=int, nargs="+", default=[10, 100, 400, 1000])
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--B", type=int, nargs="+", default=[100, 1000, 2000, 4000])
    a = ap.parse_args()
    run(synthetic(300), rs.DoubleOrNothing(seed=1), 8, fmr_targets=[1e-3], collapse=True)  # compilation
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'per id':>6} {'scheme':>17} {'B':>5} {'repeats':>8} {'bound':>6} {'merged s':>9} {'direct s':>9} "
          f"{'ratio':>6} {'chosen':>7}")
    for per in a.per_id:
        data = synthetic(a.n, per_id=per)
        grid = build_grid(data)
        bound = driver.expected_repeats(data, grid.n_cells)
        for scheme in (rs.DoubleOrNothing(seed=1), rs.Vertex(seed=1)):
            rep = measured_repeats(data, scheme, grid)
            for B in a.B:
                def go(collapse, B=B, scheme=scheme):
                    return run(data, scheme, B, grid=grid, fmr_targets=[1e-3, 1e-4], collapse=collapse)

                x, y = go(True), go(False)
                assert np.array_equal(x.impostor, y.impostor) and np.array_equal(x.genuine, y.genuine)
                merged, direct = best_of(lambda: go(True), 2), best_of(lambda: go(False), 2)
                chosen = driver.collapse_pays(data, K.PRODUCT, B, grid.n_cells)
                print(f"{per:>6} {scheme.name:>17} {B:>5} {rep:>8.2f} {bound:>6.1f} {merged:>9.2f} {direct:>9.2f} "
                      f"{direct / merged:>6.2f} {'merge' if chosen else 'direct':>7}", flush=True)


if __name__ == "__main__":
    main()
