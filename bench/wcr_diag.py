"""Why the wild cluster bootstrap misses (companion of bench/wcr_level.py): per design, the share of data sets whose
observed statistic exceeds 1.96 in absolute value, against the mean share of bootstrap replicates that do (R/U null,
Rademacher/Mammen weights), and the observed statistic's lower/upper tail shares (sign: group A minus group B). A
bootstrap null lighter than the observed statistic's sampling law over-rejects.
Usage: ``PYTHONPATH=src NUMBA_NUM_THREADS=1 python bench/wcr_diag.py N_SETS`` -> bench/results/wcr_diag.txt."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, "bench")
import wcr_level as W  # noqa: E402
import test_level as tl  # noqa: E402
from matchaudit.auditing.matching_passes import cluster_terms  # noqa: E402

DESIGNS = [d for d in W.TUNED + W.FMR + W.NEW if d[0].startswith(("150x3 indep vs 25x15 Beta(0.1", "150x3 indep vs 25x105",
                                                                   "60x6", "N3", "FMR 150x20", "FMR 60x40"))]


def main(n):
    lines = []
    B = 399
    for label, metric, groups in DESIGNS:
        obs = {s: [] for s in ("log_t", "diff_n")}
        boot = {f"{nu}_{w}_{s}": [] for nu in ("R", "U") for w in ("rad", "mammen") for s in ("log_t", "diff_n")}
        for i in range(n):
            data = (tl.impostor_design(30_000 + i, groups, 0.05) if metric == "fmr"
                    else tl.genuine_design(30_000 + i, groups))
            terms = cluster_terms(data, 0.5, ">=")
            cap = {}
            orig = W.decide

            def grab(S, Sb, tag, out, B_):
                cap[tag] = (S, Sb)
                return orig(S, Sb, tag, out, B_)
            W.decide = grab
            W.wcr_pair(terms, data.identity_group, 0, 1, metric, np.random.default_rng(i), B)
            W.decide = orig
            S = cap["R_rad"][0]
            for s in obs:
                obs[s].append(S[s][0])
            for key in boot:
                nu, w, s = key.split("_", 2)
                boot[key].append(np.mean(np.abs(cap[f"{nu}_{w}"][1][s]) > 1.96))
        lines.append(f"{label} [{metric}] {n} sets, B = {B}")
        for s, v in obs.items():
            v = np.asarray(v)
            lines.append(f"  observed {s}: |S| > 1.96 {np.mean(np.abs(v) > 1.96):.3f} (S < -1.96 {np.mean(v < -1.96):.3f}, "
                         f"S > 1.96 {np.mean(v > 1.96):.3f})")
        lines.append("  bootstrap share |S*| > 1.96: " + "  ".join(f"{k} {np.mean(v):.3f}" for k, v in boot.items()))
        print("\n".join(lines[-4:]), flush=True)
    Path("bench/results/wcr_diag.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]))
