"""Null rejection rates of the FNR-difference permutation test (DiCiccio et al., KDD 2020, section 4.2).

Group A: n_A = 200, 80% positives; group B: n_B = 200, 20% positives; TPR = TNR = 0.9 in both groups, so the
FNRs are equal (the weak null holds) while the groups differ in base rate (the strong null fails). The paper
(10,000 simulations, plain permutation of group labels across all rows): 0.1216 unstudentized, 0.0486
studentized. We add the paper's fast variant and the within-outcome scheme (which conditions on each group's
positives and so is valid even unstudentized here).

    .venv/bin/python bench/permutation_level.py --sims 2000 --n-resamples 999 --seed 20200823
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from matchaudit.data.classifier_table import classifier_data
from matchaudit.estimators.classifier import group_statistics
from matchaudit.estimators.permutation import permutation_test, wilson_interval

MODES = {"studentized (pooled variance, default)": True, "fast variant (permutation SD)": "permutation-sd",
         "unstudentized": False}
UNPOOLED = "studentized (per-group variances)"


def simulate(rng: np.random.Generator, n: int = 200, base: tuple[float, float] = (0.8, 0.2), acc: float = 0.9):
    """One data set: y ~ Bernoulli(base rate of the group), prediction correct with probability ``acc``."""
    g = np.repeat([0, 1], n)
    y = (rng.random(2 * n) < np.where(g == 0, base[0], base[1])).astype(np.int8)
    pred = np.where(rng.random(2 * n) < acc, y, 1 - y)
    return classifier_data(y, np.array(["A", "B"])[g], y_pred=pred)


def rejection_rates(sims: int, n_resamples: int, seed: int, n: int = 200, level: float = 0.05) -> dict:
    """Share of simulations rejecting at ``level``, per (scheme, mode)."""
    data_rng = np.random.default_rng(seed)
    hits = {(s, m): 0 for s in ("plain", "within-outcome") for m in [*MODES, UNPOOLED]}
    for i in range(sims):
        data = simulate(data_rng, n)
        for scheme in ("plain", "within-outcome"):
            st = group_statistics(data, "fnr", permutation=scheme, n_resamples=n_resamples, seed=seed + 1 + i)
            for name, mode in MODES.items():
                r = permutation_test(st.t, st.v, st.t_perm, st.v_perm, studentize=mode)
                hits[(scheme, name)] += r.significant(level)
            st = group_statistics(data, "fnr", permutation=scheme, variance="closed-form", n_resamples=n_resamples,
                                  seed=seed + 1 + i)
            hits[(scheme, UNPOOLED)] += permutation_test(st.t, st.v, st.t_perm, st.v_perm).significant(level)
    return {k: v / sims for k, v in hits.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--n-resamples", type=int, default=999)
    ap.add_argument("--n-per-group", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20200823)
    a = ap.parse_args()
    t0 = time.perf_counter()
    rates = rejection_rates(a.sims, a.n_resamples, a.seed, a.n_per_group)
    paper = {("plain", UNPOOLED): "0.0486 (studentized)", ("plain", "unstudentized"): "0.1216"}
    print(f"FNR difference, n_A = n_B = {a.n_per_group}, base rates 0.8 / 0.2, TPR = TNR = 0.9; {a.sims} simulations, "
          f"B = {a.n_resamples} permutations each, level 0.05, seed {a.seed} ({time.perf_counter() - t0:.0f} s)\n")
    print("| permutation | statistic | rejection rate | 95% Wilson interval | paper (10,000 sims) |")
    print("|---|---|---|---|---|")
    for (scheme, name), r in rates.items():
        lo, hi = wilson_interval(r * a.sims, a.sims)
        print(f"| {scheme} | {name} | {r:.4f} | [{lo:.4f}, {hi:.4f}] | {paper.get((scheme, name), '-')} |")


if __name__ == "__main__":
    main()
