"""Compile and cache the Numba kernels at install time (``make demo`` / ``make test`` run ``python -m
matchaudit.warmup``), so that a fresh install's first audit loads them from the cache instead of compiling.

It runs, on a tiny simulated data set, the jobs whose kernels the CLI uses: the demo's audit (intervals,
group tests, FNMR target, calibration) on all-pairs embeddings and on a listed comparison table, the counting
pass with the replicates of the demo's default B = 1,000 (its table of keys x replicates is too large to count
directly, so entries are sorted first: other kernels), and listed pairs' scores indexed by read-only arrays (as
pandas and PyArrow hand them over: another compiled type). Numba caches a kernel per argument types, and the tiny
data has the types of real data, so the cache serves real runs: the demo's first run after it took 15.3 s and
the second 10.2 s while the last two were missing (three kernels compiled in the first, found with a fresh
NUMBA_CACHE_DIR); with them 10.8 and 10.5 s (the warm-up: 61 -> 68 s, once per install).
"""

from __future__ import annotations

import time


def main() -> None:
    import numpy as np

    import matchaudit as ma
    from matchaudit.scores import pair_scores
    from matchaudit.simulation import GroupSpec, VmfPopulation

    t0 = time.perf_counter()
    pop = VmfPopulation.draw({"A": GroupSpec(12, (100.0, 400.0)), "B": GroupSpec(12, (60.0, 200.0))}, dim=16, seed=0)
    sim = pop.sample(3, seed=0)
    kw = dict(fmr=(1e-1,), fnmr=(1e-1,), tests=ma.TestOptions(n_resamples=19))
    ma.audit(sim.as_data(), intervals=ma.IntervalOptions(n_resamples=40), **kw)
    ma.audit(sim.as_data(), intervals=ma.IntervalOptions("double-or-nothing,wilson", n_resamples=40), thresholds=0.3,
             **kw)
    i, j = np.triu_indices(len(sim.samples), 1)  # the listed protocol: a trial list of every pair
    ids = sim.samples["sample_id"].to_numpy()
    listed = ma.from_embeddings(sim.embeddings, sim.samples["identity"], ids=ids, attributes=sim.samples,
                                group_by="group", pairs=np.stack([ids[i], ids[j]], axis=1))
    ma.audit(listed, intervals=ma.IntervalOptions(n_resamples=40), **kw)
    ma.audit(sim.as_data(), fmr=(1e-1,), measures=ma.MeasureOptions(calibration=False))  # the sorted counting path
    i.flags.writeable = j.flags.writeable = False
    pair_scores(sim.embeddings, i, j)
    print(f"matchaudit: kernels compiled and cached in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
