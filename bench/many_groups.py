"""Audits with many groups: time and peak memory of ``matchaudit audit --tests`` as the number of groups grows.

A synthetic, seeded trial list in the shape of a NIST-style demographic grid: R regions x 2 sexes x 2 age bands
(G = 4R groups), identities per group log-normal around 40 (unequal; some groups under 10 identities), 3-4 samples
per identity; every genuine pair, and impostor trials 70% within a group, 30% across groups (about 10^6 trials;
duplicate pairs dropped). Scores: an identity effect shared by its genuine and impostor scores, a group shift.
Each run is a fresh ``matchaudit audit`` process (intervals at two FMR targets, max-T / BH group tests of FNMR and
FMR), timed with ``/usr/bin/time`` (wall clock, peak resident memory).

    .venv/bin/python bench/many_groups.py --regions 3 8 25 --n-resamples 1000 [--memory 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ATTRS = ("region", "sex", "age")


def trial_list(n_regions: int, seed: int = 0, n_trials: int = 1_100_000) -> tuple[pd.DataFrame, np.ndarray]:
    """The trial list and the identities per group (see module doc)."""
    rng = np.random.default_rng(seed)
    groups = [(f"R{r:02d}", s, a) for r in range(n_regions) for s in ("F", "M") for a in ("young", "old")]
    G = len(groups)
    k = np.maximum(3, np.round(np.exp(rng.normal(np.log(40), 0.8, G)))).astype(int)
    ident_group = np.repeat(np.arange(G), k)
    nsamp = rng.integers(3, 5, ident_group.size)
    sid = np.repeat(np.arange(ident_group.size), nsamp)
    n, sg = sid.size, ident_group[sid]
    off = np.concatenate([[0], np.cumsum(nsamp)])
    pairs = [np.triu_indices(m, 1) for m in range(5)]
    ga = np.concatenate([off[i] + pairs[m][0] for i, m in enumerate(nsamp)])
    gb = np.concatenate([off[i] + pairs[m][1] for i, m in enumerate(nsamp)])
    m = n_trials - ga.size
    order = np.argsort(sg, kind="stable")
    start, end = np.searchsorted(sg[order], np.arange(G)), np.searchsorted(sg[order], np.arange(G), "right")
    m1 = int(0.7 * m)
    pick = rng.choice(G, m1, p=(end - start) / n)
    within = [order[start[pick] + (rng.random(m1) * (end - start)[pick]).astype(int)] for _ in range(2)]
    ia = np.concatenate([within[0], rng.integers(0, n, m - m1)])
    ib = np.concatenate([within[1], rng.integers(0, n, m - m1)])
    keep = sid[ia] != sid[ib]
    key = np.unique(np.minimum(ia, ib)[keep].astype(np.int64) * n + np.maximum(ia, ib)[keep])
    ia, ib = key // n, key % n
    shift, effect = rng.normal(0, 0.3, G), rng.normal(0, 0.4, ident_group.size)
    gen = 3.0 + shift[sg[ga]] + effect[sid[ga]] + rng.normal(0, 1, ga.size)
    imp = 0.5 * (effect[sid[ia]] + effect[sid[ib]]) + 0.7 * rng.normal(0, 1, ia.size) - 0.5 * (sg[ia] != sg[ib])
    a, b = np.concatenate([ga, ia]), np.concatenate([gb, ib])
    df = pd.DataFrame({"sample_a": a, "sample_b": b, "identity_a": sid[a], "identity_b": sid[b],
                       "score": np.concatenate([gen, imp])})
    for j, col in enumerate(ATTRS):
        values = np.array([g[j] for g in groups])
        df[f"{col}_a"], df[f"{col}_b"] = values[sg[a]], values[sg[b]]
    return df, k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", type=int, nargs="+", default=[3, 8, 25], help="groups = 4 x regions")
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--memory", type=float, default=None, help="the audit's --memory budget (GB)")
    ap.add_argument("--tests-versus", default="pairs", choices=("pairs", "rest", "both"),
                    help="the audit's --tests-versus: every pair of groups, each against the rest, or both")
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("matchaudit")
    print("| groups | identities (min / median / max per group; groups < 10) | trials | tests | wall s | peak GB |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for r in args.regions:
            df, k = trial_list(r)
            path = Path(tmp) / f"trials_{r}.parquet"
            df.to_parquet(path, row_group_size=250_000)
            cmd = ["/usr/bin/time", "-f", "%e %M", str(exe), "audit", "--comparisons", str(path), "--group-by",
                   ",".join(ATTRS), "--fmr", "1e-3,1e-2", "--n-resamples", str(args.n_resamples), "--tests",
                   "--tests-versus", args.tests_versus, "--no-figures", "--out", str(Path(tmp) / f"out_{r}")]
            if args.memory is not None:
                cmd[5:5] = ["--memory", str(args.memory)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"audit failed ({res.returncode}):\n{res.stderr[-3000:]}")
            wall, kb = res.stderr.strip().splitlines()[-1].split()
            print(f"| {4 * r} | {k.sum():,} ({k.min()} / {int(np.median(k))} / {k.max()}; {(k < 10).sum()}) "
                  f"| {len(df):,} | {args.tests_versus} | {float(wall):.0f} | {int(kb) / 2**20:.2f} |", flush=True)


if __name__ == "__main__":
    main()
