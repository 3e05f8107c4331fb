"""Torch backend throughput (comparison-replicates per second) against the Numba CPU engine.

Usage: .venv/bin/python bench/gpu_engine.py [--device cpu|cuda] [--n 2000 5000 20000] [--B 100 1000]
       [--method scatter onehot fused] [--repeat 2] [--numba-max-n 20000]
On a GPU: ``python3 bench/gpu_engine.py --device cuda --n 2000 20000 100000 --B 100 1000``.
Same data and timing as ``engine_throughput.py`` (within-identity bootstrap, synthetic all-pairs data, 10
samples per identity, d = 128, 2 groups, grid of 4,096 cells built once per n, two FMR targets with exact
refinement): whole ``engine.run`` calls, best of ``--repeat`` after a warm-up, so the torch figures include
moving the embeddings and the weights to the device and the counts back. Prints the device, one row per
(n, B, engine) and the ratio of each torch method to Numba (> 1: torch faster). Numba rows are skipped above
``--numba-max-n`` (their cost is known from engine_throughput.py).
"""

from __future__ import annotations

import argparse
import os

import torch
from engine_throughput import best_of, synthetic

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, run
from matchaudit.engine.torch_backend import TorchBackend


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 5000])
    ap.add_argument("--B", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--method", nargs="+", default=["scatter", "onehot", "fused"], choices=["scatter", "onehot", "fused"])
    ap.add_argument("--scheme", default="within-identity", choices=sorted(rs.SCHEMES))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--numba-max-n", type=int, default=20000)
    a = ap.parse_args()
    dev = torch.device(a.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU, {torch.get_num_threads()} torch threads"
    print(f"torch {torch.__version__} on {a.device}: {name}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores; scheme={a.scheme}")
    scheme = rs.SCHEMES[a.scheme](seed=1)
    warm = synthetic(300)
    backends = {m: TorchBackend(a.device, method=m) for m in a.method}
    for be in [None, *backends.values()]:
        run(warm, scheme, 8, fmr_targets=[1e-3], backend=be)  # compilation, CUDA context
    print(f"{'n':>7} {'B':>5} {'engine':>13} {'seconds':>8} {'cmp-rep/s':>10} {'vs numba':>9}")
    for n in a.n:
        data = synthetic(n)
        grid = build_grid(data, n_cells=4096)
        m = data.n_comparisons()
        for B in a.B:
            def go(be, data=data, B=B, grid=grid):
                return lambda: run(data, scheme, B, grid=grid, fmr_targets=[1e-4, 1e-3], backend=be)

            ref = None
            if n <= a.numba_max_n:
                ref = best_of(go(None), a.repeat)
                print(f"{n:>7} {B:>5} {'numba':>13} {ref:>8.2f} {B * m / ref:>10.3g}", flush=True)
            for meth, be in backends.items():
                dt = best_of(go(be), a.repeat)
                ratio = f"{ref / dt:>9.3f}" if ref else ""
                print(f"{n:>7} {B:>5} {'torch-' + meth:>13} {dt:>8.2f} {B * m / dt:>10.3g} {ratio}", flush=True)


if __name__ == "__main__":
    main()
