"""Do the fairness measures' default intervals reach parity? (#43 item 1)

Groups drawn from one law (every measure's true value is its parity value) or apart (``--scale 2,1.3``: the
first group's difficulty doubled, the second's x1.3; the truth then comes from one data set of ``--truth-identities``
identities per group), on three generators (bench/generators.py); each data set audited with the defaults
(intervals of every fairness measure at FMR targets 1e-2 and 1e-3). Prints, per design and measure, the share of
intervals that contain the truth (with its Monte-Carlo SE) and their mean finite width; writes the rows to a CSV.
Run it with PYTHONPATH pointing at another checkout's src/ to measure that version on the same data sets.

    .venv/bin/python bench/fairness_parity.py --datasets 40 --out bench/results/fairness_parity.csv
    .venv/bin/python bench/fairness_parity.py --datasets 40 --scale 2,1.3 --design 0 3 5
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

import matchaudit as ma  # noqa: E402

PARITY = {"fdr": 1.0, "max_min_ratio": 1.0, "max_geomean_ratio": 1.0, "inequity_rate": 1.0}

DESIGNS = [  # generator, groups, identities per group, samples per identity
    ("vmf", 4, 50, 4), ("vmf", 2, 60, 4), ("vmf", 8, 30, 3),
    ("lookalike", 4, 40, 4), ("lookalike", 2, 80, 3),
    ("tscore", 4, 40, 5), ("tscore", 8, 30, 3),
]


def truth(gen: str, g: int, s: int, scale, identities: int) -> dict[tuple[str, float], float]:
    """Every measure's value on one large data set of the same law (the per-group rates at its global thresholds)."""
    data = generators.make(gen, g, identities, s, seed=987_654, scale=scale)
    res = ma.audit(data, fmr=(1e-2, 1e-3), measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                   intervals=False)
    f = res.fairness
    return {(f"{r.rate}:{r.measure}", float(r.target)): float(r.value) for r in f.itertuples()}


def run(designs, datasets: int, n_resamples: int, level: float, seed0: int, scale=None,
        truth_identities: int = 400) -> pd.DataFrame:
    rows = []
    for gen, g, k, s in designs:
        t0 = time.time()
        sc = None if scale is None else list(scale) + [1.0] * (g - len(scale))
        true = None if sc is None else truth(gen, g, s, sc, truth_identities)
        for d in range(datasets):
            data = generators.make(gen, g, k, s, seed=seed0 + 1000 * d + 7, scale=sc)
            res = ma.audit(data, fmr=(1e-2, 1e-3),
                           measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                           intervals=ma.IntervalOptions(n_resamples=n_resamples, level=level, seed=d))
            f = res.intervals
            f = f[(f.group == "all") & f.metric.str.contains(":")]
            for r in f.itertuples():
                measure = r.metric.split(":")[1]
                parity = PARITY.get(measure, 0.0) if true is None else true[(r.metric, float(r.target))]
                covered = bool(r.low <= parity <= r.high) if np.isfinite(r.low) else np.nan
                rows.append(dict(generator=gen, groups=g, identities=k, samples=s, dataset=d, metric=r.metric,
                                 target=r.target, level=level, low=r.low, high=r.high, estimate=r.estimate,
                                 covered=covered, width=r.high - r.low))
        print(f"{gen} G={g} K={k} s={s}: {time.time() - t0:.0f} s", file=sys.stderr)
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    def agg(x):
        c = x.covered.dropna().astype(float)
        w = x.width[np.isfinite(x.width)]
        return pd.Series({"n": c.size, "parity_covered": c.mean(), "se": np.sqrt(c.mean() * (1 - c.mean()) / max(c.size, 1)),
                          "mean_finite_width": w.mean() if w.size else np.nan, "infinite": int((~np.isfinite(x.width)).sum())})
    return df.groupby(["generator", "groups", "identities", "samples", "metric"]).apply(agg).reset_index()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--datasets", type=int, default=40)
    p.add_argument("--n-resamples", type=int, default=1000)
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--design", type=int, nargs="*", help="indices into DESIGNS (default all)")
    p.add_argument("--scale", type=str, default=None, help="difficulty factors of the first groups, e.g. 2,1.3")
    p.add_argument("--truth-identities", type=int, default=400)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    designs = [DESIGNS[i] for i in a.design] if a.design else DESIGNS
    scale = None if a.scale is None else [float(v) for v in a.scale.split(",")]
    df = run(designs, a.datasets, a.n_resamples, a.level, a.seed, scale, a.truth_identities)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(a.out, index=False)
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summary(df).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
