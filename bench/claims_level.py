"""Are claims' verdicts right as often as the claims file says? (#45 item 1; docs/claims.md)

Two groups (the second harder, as bench/new_population.py ``run_groups``) of ``identities x samples``, on the three
generators of bench/generators.py; the truth of each quantity from large sets of the same law
(``new_population.group_truth``). Each data set is audited with the default intervals at the level the claims file
needs (``matchaudit.claims.required_level``), then two claims files are checked:

* ``boundary``: four claims whose limits ARE the truths (true, each at the edge where a wrong "fail" is likeliest):
  FNMR@FMR 1e-2 of A at most its truth, of B at least its truth, FMR of A at the 1e-2 global threshold at most its
  truth, overall FNMR@FMR 1e-3 at most its truth. Any "fail" is a wrong verdict; the file's rate of any wrong
  verdict should be at most 1 - level (0.05).
* ``margin``: the same claims with limits 1.5x (at most) or 1/1.5x (at least) the truth: true with room; the
  share that passes is the power, the rest is inconclusive (fails are wrong).

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/claims_level.py --datasets 150 --out bench/results/claims_level.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
import generators  # noqa: E402
import new_population as npop  # noqa: E402

import matchaudit as ma  # noqa: E402
from matchaudit.claims import parse_claims, required_level  # noqa: E402


def claims_file(true: dict, factor: float) -> dict:
    """The four claims with limits at ``factor`` x the truth (1: the boundary)."""
    def c(id_, metric, at, groups, side, value):
        return {"id": id_, "metric": metric, "at_fmr": at, "groups": groups,
                side: value * (factor if side == "max" else 1 / factor)}
    return {"level": 0.95, "claim": [
        c("A-fnmr", "fnmr", 1e-2, ["A"], "max", float(true[(1e-2, "A")][0])),
        c("B-fnmr", "fnmr", 1e-2, ["B"], "min", float(true[(1e-2, "B")][0])),
        c("A-fmr", "fmr", 1e-2, ["A"], "max", float(true[(1e-2, "A")][1])),
        c("all-fnmr", "fnmr", 1e-3, "all", "max", float(true[(1e-3, "all")][0]))]}


def run(gen: str, k: int, s: int, datasets: int, n_resamples: int) -> pd.DataFrame:
    true = npop.group_truth(gen, npop.TRUTH_IDENTITIES[gen] // 2, s)
    files = {name: parse_claims(claims_file(true, f)) for name, f in (("boundary", 1.0), ("margin", 1.5))}
    level = required_level(files["boundary"], ("A", "B"))
    rows = []
    for d in range(datasets):
        data = generators.make(gen, 2, k, s, seed=30_000 + d, scale=[npop.SCALE[gen], npop.SCALE[gen] * npop.HARDER],
                               fixed_law=True)
        res = ma.audit(data, fmr=npop.TARGETS, measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                       intervals=ma.IntervalOptions(n_resamples=n_resamples, level=level, seed=d))
        for name, claims in files.items():
            out = ma.check(claims, res)
            rows += [dict(generator=gen, identities=k, samples=s, dataset=d, file=name, claim=c.id, verdict=v.status,
                          level=level) for c, v in zip(claims.claims, out.verdicts)]
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per generator and file: the share of data sets with any wrong verdict (a fail: every claim is true), with its
    Monte-Carlo SE, and the shares of pass / inconclusive / fail per claim."""
    out = []
    for (gen, k, s, name), g in df.groupby(["generator", "identities", "samples", "file"]):
        per_set = g.groupby("dataset").verdict.apply(lambda v: (v == "fail").any())
        n = per_set.size
        row = dict(generator=gen, design=f"2x{k}x{s}", file=name, datasets=n, any_wrong=per_set.mean(),
                   se=np.sqrt(per_set.mean() * (1 - per_set.mean()) / n))
        for c, h in g.groupby("claim", sort=False):
            row[f"{c} pass/inc/fail"] = "/".join(f"{(h.verdict == v).mean():.2f}"
                                                 for v in ("pass", "inconclusive", "fail"))
        out.append(row)
    return pd.DataFrame(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--generators", default="vmf,lookalike,tscore")
    p.add_argument("--design", default="100x4", help="identities x samples per group")
    p.add_argument("--datasets", type=int, default=150)
    p.add_argument("--n-resamples", type=int, default=1000)
    p.add_argument("--out", type=Path, default=Path("bench/results/claims_level.csv"))
    a = p.parse_args()
    k, s = map(int, a.design.split("x"))
    frames = []
    for gen in a.generators.split(","):
        t0 = time.time()
        frames.append(run(gen, k, s, a.datasets, a.n_resamples))
        print(f"{gen}: {time.time() - t0:.0f} s", flush=True)
        df = pd.concat(frames)
        df.to_csv(a.out, index=False)
    print(summary(df).to_string(index=False))


if __name__ == "__main__":
    main()
