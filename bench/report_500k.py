"""Time to write the audit + HTML report of a tidy comparison table of >= 500,000 comparisons with B = 1,000.

    .venv/bin/python bench/report_500k.py [n_samples]     # default 1,001 samples -> 500,500 comparisons

The table is every pair of a seeded vMF data set (3 groups), written as Parquet with per-side identities and
groups, then `matchaudit audit --comparisons ... --n-resamples 1000 --report ...` runs in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from matchaudit.scores import pair_scores
from matchaudit.simulation import GroupSpec, simulate_vmf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1001
k = n // 11
sim = simulate_vmf({"A": GroupSpec(k // 2, (120, 800)), "B": GroupSpec(k // 3, (70, 250)),
                    "C": GroupSpec(k - k // 2 - k // 3, (120, 800), centroid_kappa=40.0)},
                   samples_per_identity=11, seed=0)
s = sim.samples
i, j = np.triu_indices(len(s), k=1)
table = pd.DataFrame({"sample_a": s.sample_id.values[i], "sample_b": s.sample_id.values[j],
                      "identity_a": s.identity.values[i], "identity_b": s.identity.values[j],
                      "group_a": s.group.values[i], "group_b": s.group.values[j],
                      "score": pair_scores(sim.embeddings, i, j)})
root = Path(tempfile.mkdtemp(prefix="report500k-"))
table.to_parquet(root / "scores.parquet")
cmd = [sys.executable, "-m", "matchaudit", "audit", "--comparisons", str(root / "scores.parquet"),
       "--group-by", "group", "--fmr", "1e-2,1e-3,1e-4", "--n-resamples", "1000", "--out", str(root / "out"),
       "--report", str(root / "report.html"), "--quiet"]
t0 = time.perf_counter()
subprocess.run(cmd, check=True)
wall = time.perf_counter() - t0
print(f"comparisons={len(table):,} B=1000 wall={wall:.1f}s (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
      f" report={(root / 'report.html').stat().st_size / 1e6:.1f} MB")
