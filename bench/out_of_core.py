"""Out-of-core comparison table: time and peak RSS of load + bootstrap counts + exact metrics for a Parquet
table read a row group at a time, under an address-space cap, against loading the same table in memory.

    .venv/bin/python bench/out_of_core.py --rows 3000000 --cap-mib 256

Each measurement runs in a fresh process (peak RSS: VmHWM, reset after warm-up); the capped one sets RLIMIT_AS to its
address space after warm-up (imports, compiled kernels, threads) plus ``--cap-mib``, with Arrow's system
allocator and two malloc arenas so that address space tracks memory actually used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

JOB = textwrap.dedent('''
    import json, resource, sys, time
    import numpy as np
    from matchaudit import resampling as rs
    from matchaudit.data import load_comparisons
    from matchaudit.engine import run
    from matchaudit.metrics.evaluate import AuditConfig, evaluate
    from tests.test_out_of_core import comparisons, write

    path, mode, cap, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    small = write(comparisons(), __import__("pathlib").Path(tmp) / "warm.parquet")
    d = load_comparisons(small, group_by="sex", out_of_core=True)
    run(d, rs.WithinIdentity(1), 2, fmr_targets=[0.1]); evaluate(d, AuditConfig(fmr_targets=(0.1,)))
    def status(key):
        return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith(key))
    open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current RSS
    base = status("VmRSS")
    if cap:
        vm = status("VmSize")
        resource.setrlimit(resource.RLIMIT_AS, (vm + cap, vm + cap))
    t = time.perf_counter()
    d = load_comparisons(path, group_by="sex", out_of_core=mode == "ooc")
    t_load = time.perf_counter() - t
    c = run(d, rs.WithinIdentity(1), 100, fmr_targets=[1e-3, 1e-4])
    t_run = time.perf_counter() - t - t_load
    evaluate(d, AuditConfig(fmr_targets=(1e-3, 1e-4)))
    t_all = time.perf_counter() - t
    peak = status("VmHWM")
    print(json.dumps({"load_s": t_load, "bootstrap_s": t_run, "total_s": t_all, "peak_rss": peak, "base_rss": base,
                      "thr": c.target_threshold[0].tolist()}))
''')


def main() -> None:
    from tests.test_out_of_core import big_table

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--cap-mib", type=int, default=256)
    a = ap.parse_args()
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.parquet"
        t = time.perf_counter()
        big_table(path, a.rows)
        print(f"table: {a.rows:,} rows, {path.stat().st_size / 2**20:.0f} MiB Parquet, 40 row groups "
              f"(written in {time.perf_counter() - t:.1f} s); load={os.getloadavg()[0]:.1f}")
        out = {}
        for mode, cap in (("ooc", a.cap_mib << 20), ("mem", 0)):
            p = subprocess.run([sys.executable, "-c", JOB, str(path), mode, str(cap), tmp], capture_output=True,
                               text=True, env=env, cwd=ROOT, check=False)
            if p.returncode:
                print(mode, "failed:", p.stderr[-800:])
                continue
            r = out[mode] = json.loads(p.stdout.strip().splitlines()[-1])
            label = f"out of core, cap {a.cap_mib} MiB" if cap else "in memory, no cap"
            print(f"{label:28s}: load {r['load_s']:6.1f} s, bootstrap (B=100) {r['bootstrap_s']:5.1f} s, "
                  f"total with exact metrics {r['total_s']:6.1f} s; peak RSS {r['peak_rss'] / 2**20:6.0f} MiB "
                  f"(RSS after warm-up {r['base_rss'] / 2**20:.0f} MiB)")
        if len(out) == 2:
            print("same thresholds:", out["ooc"]["thr"] == out["mem"]["thr"])


if __name__ == "__main__":
    main()
