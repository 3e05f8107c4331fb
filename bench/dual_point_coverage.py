"""Coverage of the intervals at an FNMR target (FMR overall and per group at the threshold where the overall FNMR
is the target; each replicate re-derives its threshold, matchaudit.estimators.dual_point).

Truth: the same quantities on one large population (``--truth-k`` identities per group, the population rates
the identity bootstraps aim at). Each trial draws a fresh population of the demo groups' sizes (scaled by
``--scale``) with ``--samples`` samples per identity and audits it; reports the share of intervals containing the
truth per method and view, with its Monte-Carlo standard error.

Usage: .venv/bin/python bench/dual_point_coverage.py [--trials 200] [--B 400] [--beta 0.01] [--samples 4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import matchaudit as ma
from matchaudit.simulation import DEMO_GROUPS, GroupSpec, VmfPopulation


def groups(scale: float) -> dict[str, GroupSpec]:
    return {g: GroupSpec(max(4, int(round(s.n_identities * scale))), s.kappa, s.centroid_kappa)
            for g, s in DEMO_GROUPS.items()}


def rates(data: ma.MatchData, beta: float) -> dict[str, float]:
    a = ma.audit(data, fmr=(), fnmr=beta, measures=ma.MeasureOptions(weightings=("pooled",)), intervals=False)
    return a.at_fnmr(beta)["fmr"].to_dict()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--B", type=int, default=400)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--truth-scale", type=float, default=10.0)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--methods", default="double-or-nothing,recentered")
    a = ap.parse_args()
    t0 = time.time()
    big = VmfPopulation.draw(groups(a.truth_scale), dim=a.dim, seed=10_000).sample(a.samples, seed=10_000)
    truth = rates(big.as_data(), a.beta)
    print(f"truth (FMR at FNMR {a.beta:g}, {len(big.samples):,} samples): "
          + ", ".join(f"{g} {v:.4g}" for g, v in truth.items()))
    hits: dict[tuple[str, str], list[bool]] = {}
    for trial in range(a.trials):
        d = VmfPopulation.draw(groups(a.scale), dim=a.dim, seed=trial).sample(a.samples, seed=trial).as_data()
        for method in a.methods.split(","):
            res = ma.audit(d, fmr=(), fnmr=a.beta, measures=ma.MeasureOptions(weightings=("pooled",)),
                           intervals=ma.IntervalOptions(method=method, n_resamples=a.B, seed=trial))
            iv = res.intervals
            for r in iv[(iv.kind == "fnmr_target") & (iv.metric == "FMR")].itertuples():
                hits.setdefault((method, r.group), []).append(bool(r.low <= truth[r.group] <= r.high))
    print(f"{a.trials} trials, B = {a.B}, {a.samples} samples per identity, scale {a.scale:g}, "
          f"{time.time() - t0:.0f} s")
    print(f"{'method':<18} {'view':<6} {'coverage':>9} {'MC s.e.':>8}")
    for (method, g), h in sorted(hits.items()):
        p = float(np.mean(h))
        print(f"{method:<18} {g:<6} {p:9.3f} {np.sqrt(p * (1 - p) / len(h)):8.3f}")


if __name__ == "__main__":
    main()
