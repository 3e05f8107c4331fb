"""The exact all-pairs audit of 50,000 samples x 512 dimensions (~1.25e9 comparisons) against one fp64 GEMM pass
over the same data, measured in the same run.

1. ``GEMM alone``: the products every exact score needs (the quantised fp64 embeddings, upper triangle in the
   audit's own tiles and row strips, ``numpy.matmul`` into one reused buffer, BLAS with all cores): the floor of
   any exact all-pairs pass.
2. ``scores pass``: the library's tiles (:func:`matchaudit.scores.iter_similarity_blocks`: GEMM on the engine's
   threads + the division into cosines), nothing counted.
3. ``exact audit, in process``: :func:`matchaudit.metrics.evaluate.evaluate` (the tally pass, the refinement of
   the FMR targets' cells, every metric), and the passes over the comparisons it made.
4. ``matchaudit audit`` as a user runs it (``--no-intervals``: exact metrics only), wall clock and peak memory
   (ru_maxrss of the subprocess).
5. with ``--intervals`` (#46 item 6): the default audit with intervals (B = 1,000, every default step), wall clock
   against the same GEMM pass; with ``--backends cpu,gpu`` (#46 item 5, on a device machine) once per backend,
   the speed-up of each over the first and whether their results.json are identical.

Usage: .venv/bin/python bench/audit_50k.py [n_samples] [dim] [--intervals [--backends cpu,gpu]]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from matchaudit.data import load_samples
from matchaudit.metrics import evaluate as ev
from matchaudit.scores import STRIP, iter_similarity_blocks, quantise, tiles
from matchaudit.simulation import GroupSpec, simulate_vmf

FMR = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


def gemm_alone(q: np.ndarray) -> float:
    """Seconds for the products of every tile of the upper triangle (what each exact score needs), no scores."""
    n = q.shape[0]
    buf = np.empty(2048 * 16384)
    t = time.perf_counter()
    with threadpool_limits(limits=os.cpu_count(), user_api="blas"):
        for r0, r1, c0, c1 in tiles(n):
            out = buf[:(r1 - r0) * (c1 - c0)].reshape(r1 - r0, c1 - c0)
            for a in range(r0, r1, STRIP):
                b = min(r1, a + STRIP)
                lo = a if c0 == r0 else c0
                np.matmul(q[a:b], q[lo:c1].T, out=out[a - r0:b - r0, lo - c0:])
    return time.perf_counter() - t


def dataset(n: int = 50_000, dim: int = 512) -> Path:
    """The benchmark's data (n / 10 identities x 10 samples, two groups, seed 0), simulated once into /tmp."""
    root = Path(f"/tmp/ma{n // 1000}k")
    if not (root / "data" / "embeddings.npy").exists():
        k = n // 10
        groups = {"A": GroupSpec(k // 2, (300, 1500)), "B": GroupSpec(k - k // 2, (200, 1000), centroid_kappa=20.0)}
        simulate_vmf(groups, dim=dim, samples_per_identity=10, seed=0).write(root / "data")
    return root


def main() -> None:
    argv = sys.argv[1:]
    backends = argv.pop(argv.index("--backends") + 1).split(",") if "--backends" in argv else ["cpu"]
    args = [a for a in argv if not a.startswith("--")]
    n = int(args[0]) if args else 50_000
    dim = int(args[1]) if len(args) > 1 else 512
    root = dataset(n, dim)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    data = load_samples(root / "data/samples.parquet", root / "data/embeddings.npy", group_by=["group"])
    q, _ = quantise(data.samples.embeddings, "cosine")
    gemm = gemm_alone(q)
    t = time.perf_counter()
    for _ in iter_similarity_blocks(data.samples.embeddings, "cosine", reuse=True):
        pass
    scores = time.perf_counter() - t
    passes = []
    real_blocks = type(data).blocks

    def counted(self, *a, **k):
        passes.append(1)
        return real_blocks(self, *a, **k)

    type(data).blocks = counted
    t = time.perf_counter()
    ev.evaluate(data, ev.AuditConfig(fmr_targets=FMR))
    exact = time.perf_counter() - t
    type(data).blocks = real_blocks
    cmd = [sys.executable, "-m", "matchaudit", "audit", "--samples", str(root / "data/samples.parquet"),
           "--embeddings", str(root / "data/embeddings.npy"), "--group-by", "group",
           "--fmr", ",".join(map(str, FMR)), "--out", str(root / "out"), "--quiet", "--no-intervals"]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    pairs = n * (n - 1) // 2
    print(f"n={n} dim={dim} comparisons={pairs:.3e}")
    print(f"  GEMM alone (fp64, all cores)      {gemm:7.1f} s  1.00x")
    print(f"  scores pass (GEMM + cosines)      {scores:7.1f} s  {scores / gemm:.2f}x")
    print(f"  exact audit in process            {exact:7.1f} s  {exact / gemm:.2f}x  ({len(passes)} passes over the "
          "comparisons)")
    print(f"  matchaudit audit --no-intervals   {wall:7.1f} s  {wall / gemm:.2f}x  peak RSS {peak:.2f} GiB, "
          f"{pairs / wall:.3e} comparisons/s")
    if "--intervals" in argv:
        first = None
        for b in backends:
            out = root / f"out-{b}"
            run = [a for a in cmd if a != "--no-intervals"]
            run[run.index("--out") + 1] = str(out)
            t = time.perf_counter()
            subprocess.run(run + ["--backend", b], check=True)
            full = time.perf_counter() - t
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
            results = json.loads((out / "results.json").read_text())
            results.pop("command")
            first = first or (full, results)
            print(f"  matchaudit audit (intervals) --backend {b:4s} {full:7.1f} s  {full / gemm:.2f}x GEMM, "
                  f"{first[0] / full:.2f}x {backends[0]}, results.json identical to {backends[0]}'s: "
                  f"{results == first[1]}; peak RSS {peak:.2f} GiB (max of the runs so far)")


if __name__ == "__main__":
    main()
