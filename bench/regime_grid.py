"""The regime grid of #14: interval coverage by samples per identity, identities and protocol.

Cells: samples per identity {2, 3, 4, 10} x identities {50, 200, 1000} x protocol (``shared``: identities fixed,
the recentered bootstrap's estimand; ``fresh``: a new population per data set, the identity bootstraps' and the
corrected Wilson's). vMF, d = 64, kappa ~ U[50, 200]; FNMR@FMR 1e-2 / 1e-3 / 1e-4 (``ROC``) and FMR and FNMR at
the true thresholds; levels 0.95 and 0.90. Each cell is one ``matchaudit coverage`` run (the same code), e.g.

    matchaudit coverage --protocol shared --identities 200 --samples 4 --dim 64 --kappa 50,200 \\
        --datasets 500 --n-resamples 100 --fmr 1e-2,1e-3,1e-4 --levels 0.95,0.9 \\
        --roc-methods recentered --fixed-methods recentered,wilson

Per row: coverage, its binomial SE, the share of misses with the truth below the interval, the expected number
of errors behind the estimate (truth rate x comparisons), the estimate's SD across data sets and the truth's own
error against it (:mod:`matchaudit.studies.vmf_truth`: FNMR at a given threshold is exact; under ``shared``
FMR carries the impostor Monte Carlo's SE and ROC the FNMR error it causes through the threshold; ``fresh`` is
exact throughout). ``ok``: within 1.5 points of nominal.

    .venv/bin/python bench/regime_grid.py run shared:200x4 fresh:1000x3 ...   # one JSON per cell
    .venv/bin/python bench/regime_grid.py run fresh:200x4:groups ...           # two groups, fairness measures
    .venv/bin/python bench/regime_grid.py table                                # bench/results/regime_grid.md
    .venv/bin/python bench/regime_grid.py summary [0.95|0.9]                   # docs/intervals.md's table
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from matchaudit.studies.coverage import CoverageConfig, run_coverage

OUT = Path("bench/results/regime_grid")
METHODS = {"shared": (("recentered",), ("recentered", "wilson")),
           "fresh": (("vertex", "double-or-nothing"), ("wilson", "vertex", "double-or-nothing"))}
TOLERANCE = 0.015
GROUP_KAPPAS = ((50.0, 200.0), (30.0, 120.0))  # cells ending in ":groups": two halves, the second harder


def config(protocol: str, k: int, n: int, groups: bool = False) -> CoverageConfig:
    """One cell; ``groups``: two groups (:data:`GROUP_KAPPAS`) and FNMR@FMR with its fairness measures only."""
    roc, fixed = METHODS[protocol]
    return CoverageConfig(n_datasets=100 if (k, n) == (1000, 10) else 500, n_identities=k, samples=n, dim=64,
                          kappa=(50.0, 200.0), n_resamples=100, fmr_targets=(1e-2, 1e-3, 1e-4),
                          levels=(0.95, 0.9), identities=protocol, group_kappas=GROUP_KAPPAS if groups else (),
                          seed=1, roc_methods=roc, fixed_methods=() if groups else fixed)


def run_cell(cell: str) -> None:
    protocol, size, *groups = cell.split(":")
    k, n = (int(x) for x in size.split("x"))
    cfg = config(protocol, k, n, groups == ["groups"])
    t0 = time.time()
    res = run_coverage(cfg)
    df = res.to_frame()
    df = df.merge(pd.DataFrame(res.truths), on="fmr_target")
    genuine, impostor = k * n * (n - 1) / 2, (k * n) ** 2 * (1 - 1 / k) / 2
    fewest = df.group_fnmr.map(lambda g: min(g) / len(g) if len(g) else np.nan)  # the measure's weakest group
    df["expected_errors"] = np.select([df.metric == "FMR", df.metric.str.startswith("FNMR:")],
                                      [df.fmr * impostor, fewest * genuine], df.fnmr * genuine)
    df["truth_error"] = np.select([df.metric == "FMR", df.metric == "ROC"], [df.fmr_se, df.roc_se], 0.0)
    df["truth_error_ratio"] = df.truth_error / df.estimate_sd
    df["ok"] = (df.coverage - df.level).abs() <= TOLERANCE
    df = df.assign(protocol=protocol + "".join(f" ({g})" for g in groups), identities=k, samples=n,
                   seconds=time.time() - t0)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{protocol}_{k}x{n}{''.join('_' + g for g in groups)}.json").write_text(df.to_json(orient="records", indent=1))
    print(f"{cell}: {time.time() - t0:.0f} s", flush=True)


def table() -> str:
    df = pd.concat([pd.read_json(p) for p in sorted(OUT.glob("*.json"))])
    lines = ["| protocol | K x n | metric | method | FMR target | errors | 0.95 | 0.90 | truth err / SD |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    keys = ["protocol", "identities", "samples", "metric", "method", "fmr_target"]
    for key, g in df.sort_values(keys).groupby(keys, sort=False):
        p, k, n, metric, method, a = key
        c = {round(lv, 2): (row.coverage, row.ok, row.n) for lv, row in zip(g.level, g.itertuples())}
        cells = [f"{c[lv][0]:.3f}" + ("" if c[lv][1] else " x") for lv in (0.95, 0.9)]
        lines.append(f"| {p} | {k} x {n} ({c[0.95][2]}) | {metric} | {method} | {a:g} | "
                     f"{g.expected_errors.iloc[0]:.1f} | " + " | ".join(cells) +
                     f" | {g.truth_error_ratio.max():.3f} |")
    return "\n".join(lines) + "\n"


METRIC_CLASS = {"ROC": "FNMR@FMR", "FNMR": "FNMR (threshold)", "FMR": "FMR (threshold)"}


def summary(level: float = 0.95) -> str:
    """docs/intervals.md's table: coverage min-max over the FMR targets with at least 20 expected errors, per
    question, metric, method and cell (``-``: no such target; fairness measures: ratio-type ones coincide with
    two groups, so one row for them and one for the difference)."""
    df = pd.concat([pd.read_json(p) for p in sorted(OUT.glob("*.json"))])
    grouped = df.protocol.str.contains("groups")
    df = df[(df.level.round(2) == level) & (df.expected_errors >= 20)
            & (grouped == df.metric.str.startswith("FNMR:"))].copy()  # two-group cells: their measures only
    df["what"] = df.metric.map(lambda m: METRIC_CLASS.get(m) or ("fairness: FNMR max-min difference"
                                                                   if m.endswith("difference") else
                                                                   "fairness: FNMR ratio measures"))
    df["question"] = df.protocol.str.startswith("shared").map({True: "identities fixed", False: "new population"})
    sizes = sorted({(k, n) for k, n in zip(df.identities, df.samples)})
    ks = sorted({k for k, _ in sizes})
    ns = {k: sorted({n for kk, n in sizes if kk == k}) for k in ks}
    head = ["question", "metric", "method"] + [f"K = {k}: n = {' / '.join(map(str, ns[k]))}" for k in ks]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (q, what, method), g in df.groupby(["question", "what", "method"], sort=True):
        cells = []
        for k in ks:
            parts = []
            for n in ns[k]:
                c = g[(g.identities == k) & (g.samples == n)].coverage
                parts.append("-" if c.empty else f"{c.min():.3f}" if c.min() == c.max() else
                             f"{c.min():.3f}-{c.max():.3f}")
            cells.append(" / ".join(parts))
        lines.append(f"| {q} | {what} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    if sys.argv[1] == "run":
        for cell in sys.argv[2:]:
            run_cell(cell)
    elif sys.argv[1] == "summary":
        print(summary(float(sys.argv[2]) if len(sys.argv) > 2 else 0.95))
    else:
        text = table()
        Path("bench/results/regime_grid.md").write_text(text)
        print(text)


if __name__ == "__main__":
    main()
