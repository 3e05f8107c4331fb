"""Where an in-process audit's time goes: a table of phases from a profile of one ``ma.audit`` call.

Two data sets: ``demo`` (the data ``make demo`` audits: 2,000 samples in 3 groups, all pairs, 2.0e6 comparisons;
the demo's default audit, FMR targets 1e-2, 1e-3, 1e-4, B = 1,000) and ``groups`` (bench/many_groups.py's trial
list with 100 groups, 971,298 trials; intervals at 1e-3 and 1e-2, B = 1,000, group tests, a 3 GB budget). A
warm-up call first (Numba's cache loaded), then one profiled call. Phases are cumulative times of the functions
named, so nested rows are part of the row above them.

    .venv/bin/python bench/audit_phases.py [--data demo groups]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import matchaudit as ma

PHASES = [  # (label, file suffix, function name)
    ("audit", "auditing/core.py", "audit"),
    ("  exact metrics", "metrics/evaluate.py", "evaluate"),
    ("  intervals", "auditing/intervals.py", "compute_intervals"),
    ("    counting passes (engine)", "engine/driver.py", "run"),
    ("    grid curves (FMR/FNMR per edge, AUC)", "estimators/grid_curves.py", "fill"),
    ("    ROCCH-EER per replicate and view", "metrics/rates.py", "rocch_eer_rows"),
    ("    DET curves on the band grid", "estimators/bootstrap.py", "fnmr_at_fmr_grid"),
    ("  calibration and score distributions", "auditing/score_analyses.py", "score_analyses"),
    ("  group tests", "auditing/group_tests.py", "group_tests"),
]


def demo_job(tmp: Path):
    from matchaudit.simulation import write_demo_data

    files = write_demo_data(tmp / "demo")
    data = ma.load_samples(files.samples, files.embeddings, group_by="group")
    return data, dict(fmr=[1e-2, 1e-3, 1e-4])


def groups_job(tmp: Path):
    sys.path.insert(0, str(Path(__file__).parent))
    from many_groups import ATTRS, trial_list

    df, _ = trial_list(25)
    path = tmp / "trials.parquet"
    df.to_parquet(path, row_group_size=250_000)
    return ma.load_comparisons(path, group_by=list(ATTRS)), dict(fmr=[1e-3, 1e-2], tests=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["demo", "groups"], choices=("demo", "groups"))
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    for name in args.data:
        with tempfile.TemporaryDirectory() as tmp:
            data, kw = (demo_job if name == "demo" else groups_job)(Path(tmp))
            memory = 3 if name == "groups" else None
            ma.audit(data, intervals=ma.IntervalOptions(n_resamples=50, memory_gb=memory), **kw)  # warm-up
            prof = cProfile.Profile()
            t = time.perf_counter()
            prof.enable()
            ma.audit(data, intervals=ma.IntervalOptions(n_resamples=1000, memory_gb=memory), **kw)
            prof.disable()
            wall = time.perf_counter() - t
        stats = pstats.Stats(prof).stats
        print(f"\n{name}: one audit, {wall:.1f} s wall under the profiler")
        print("| phase | seconds | share |\n|---|---|---|")
        for label, suffix, func in PHASES:
            cum = sum(v[3] for (path, _, fn), v in stats.items() if fn == func and path.endswith(suffix))
            if cum:
                print(f"| {label} | {cum:.1f} | {cum / wall:.0%} |")


if __name__ == "__main__":
    main()
