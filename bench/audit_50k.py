"""Time and peak memory of `matchaudit audit` on all pairs of 50,000 samples x 512 dimensions (~1.25e9
comparisons), exact metrics only (--no-intervals). Usage: python bench/audit_50k.py [n_samples] [dim]

Peak memory is the process's maximum resident set size (ru_maxrss) of the audit subprocess."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from matchaudit.simulation import GroupSpec, simulate_vmf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
dim = int(sys.argv[2]) if len(sys.argv) > 2 else 512
root = Path(f"/tmp/ma{n // 1000}k")
if not (root / "data" / "embeddings.npy").exists():
    k = n // 10
    groups = {"A": GroupSpec(k // 2, (300, 1500)), "B": GroupSpec(k - k // 2, (200, 1000), centroid_kappa=20.0)}
    simulate_vmf(groups, dim=dim, samples_per_identity=10, seed=0).write(root / "data")
cmd = [sys.executable, "-m", "matchaudit", "audit", "--samples", str(root / "data/samples.parquet"),
       "--embeddings", str(root / "data/embeddings.npy"), "--group-by", "group", "--fmr", "1e-2,1e-3,1e-4,1e-5,1e-6",
       "--out", str(root / "out"), "--quiet", "--no-intervals"]
t0 = time.perf_counter()
subprocess.run(cmd, check=True)
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
pairs = n * (n - 1) // 2
print(f"n={n} dim={dim} comparisons={pairs:.3e} wall={wall:.1f}s peak_rss={peak:.2f}GiB "
      f"throughput={pairs / wall:.3e} comparisons/s")
