"""ROCCH-EER of every bootstrap replicate and view (#17): one compiled pass (``rocch_eer_rows``) against the
per-row loop it replaced (``rocch_eer`` row by row, as ``bootstrap.auc_eer`` did), on grid curves of the 100-group
audit's shape (replicates x 101 views x 4,098 points).

    .venv/bin/python bench/rocch_eer.py [--replicates 40] [--views 101] [--cells 4096]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from matchaudit.metrics.rates import rocch_eer, rocch_eer_rows


def curves(rows: int, cells: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = rng.poisson(2.0, (rows, cells))
    i = rng.poisson(2.0, (rows, cells))[:, ::-1]
    tail = lambda h: np.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # noqa: E731
    fmr = tail(i) / i.sum(1, keepdims=True)
    fnmr = 1 - tail(g) / g.sum(1, keepdims=True)
    return np.hstack([np.ones((rows, 1)), fmr, np.zeros((rows, 1))]), np.hstack([np.zeros((rows, 1)), fnmr, np.ones((rows, 1))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=40)
    ap.add_argument("--views", type=int, default=101)
    ap.add_argument("--cells", type=int, default=4096)
    a = ap.parse_args()
    x, y = curves(a.replicates * a.views, a.cells)
    rocch_eer_rows(x[:2], y[:2])  # compile (cached after the first run)
    t0 = time.perf_counter()
    fast = rocch_eer_rows(x, y)
    t1 = time.perf_counter()
    slow = np.array([rocch_eer(u, v) for u, v in zip(x, y)])
    t2 = time.perf_counter()
    assert np.array_equal(fast, slow)
    rows = x.shape[0]
    print(f"{rows:,} rows x {x.shape[1]:,} points: one pass {t1 - t0:.3f} s ({rows / (t1 - t0):,.0f} rows/s), "
          f"row by row {t2 - t1:.3f} s ({rows / (t2 - t1):,.0f} rows/s); {(t2 - t1) / (t1 - t0):.1f}x; equal")


if __name__ == "__main__":
    main()
