"""Wall time of `estimate` at the RFW size (4 groups x 6,000 pairs, half matches), both samplers.

    .venv/bin/python bench/labelfree_timing.py --sampler numpy
    .venv/bin/python bench/labelfree_timing.py --sampler numpyro

Also checks the result against the labelled truth: prints each group's FNMR at FMR 1e-3 (population band)
next to the true value, and the group ranking.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from matchaudit.labelfree import estimate, family

SAS = family("sas")
NONMATCH = (0.10, 0.07, 0.09, 0.85)
MATCH_MODES = {"African": 0.40, "Asian": 0.45, "Caucasian": 0.55, "Indian": 0.50}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sampler", default="numpy", choices=("numpy", "numpyro"))
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    s, g = [], []
    for name, mode in MATCH_MODES.items():
        y = rng.random(a.n) < 0.5
        s.append(np.where(y, SAS.rvs(rng, a.n, mode, 0.08, 0.06, 1.1), SAS.rvs(rng, a.n, *NONMATCH)))
        g += [name] * a.n
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = estimate(np.concatenate(s), np.array(g), sampler=a.sampler, seed=a.seed)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"sampler {est.sampler}: {est.chains} chains x {est.draws} draws (+{est.warmup} warm-up), "
          f"4 groups x {a.n} pairs: {dt:.1f} s wall, {cpu:.1f} s CPU (this process, all threads); {len(w)} warnings")
    for e in est.results["population"]["fnmr_at_fmr"]:
        if e["target"] == 1e-3:
            mode = MATCH_MODES[e["group"]]
            truth = float(SAS.cdf(SAS.isf(1e-3, *NONMATCH), mode, 0.08, 0.06, 1.1))
            print(f"  {e['group']}: FNMR@1e-3 {e['median']:.4f} [{e['lower']:.4f}, {e['upper']:.4f}], truth {truth:.4f}")
    for f in est.groups:
        print(f"  {f.name}: max R-hat {f.diagnostics['max']['rhat']:.3f}, min ESS {f.diagnostics['max']['ess']:.0f}, {f.sampler_info}")


if __name__ == "__main__":
    main()
