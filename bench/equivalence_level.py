"""Level and power of the equivalence test (TOST on identity resampling) by simulation, with exact truth.

Two groups of vMF identities (centroids uniform, so both groups' impostors follow the same law and the true
threshold at an FMR target is exact: the cosine of two uniform directions has (1 + c) / 2 ~ Beta((d-1)/2,
(d-1)/2)). Group A's concentrations are U[lo, hi]; group B's are U[c lo, c hi] with c solved so that the true FNMR
ratio B / A at that threshold (quadrature, :mod:`matchaudit.studies.vmf_truth`) is the chosen value. Every data
set draws new identities (the population question identity resampling answers). The test asks whether the FNMR
ratio A / B lies within the margin:

* at the margin's edge (true A / B = 1 / 1.25 = 0.8, the lower bound) the rate of "equivalent" verdicts is the
  test's size and must stay at or below alpha (within Monte-Carlo error);
* at parity (B = A) it is the power.

    .venv/bin/python bench/equivalence_level.py --sims 400 --identities 300,150 --samples 4 --dim 32 --out bench/results/equivalence_level.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from scipy.optimize import brentq

from matchaudit.studies import vmf_truth
from matchaudit.auditing.equivalence import equivalence_test
from matchaudit.simulation import GroupSpec, simulate_vmf


def true_threshold(target: float, dim: int) -> float:
    """The cosine whose impostor FMR (uniform centres, rule >=) is ``target``."""
    return float(vmf_truth.uniform_impostor_threshold(target, dim))


def group_fnmr(t: float, kappa: tuple[float, float], dim: int) -> float:
    """True FNMR at ``t`` of a group whose identities' kappa is U[kappa] (quadrature over the uniform law)."""
    nodes, weights = vmf_truth.kappa_law(*kappa)
    return float(vmf_truth.mean_fnmr(np.array([t]), nodes, dim, weights)[0])


def scale_for_ratio(t: float, kappa: tuple[float, float], ratio: float, dim: int) -> float:
    """c such that FNMR(U[c lo, c hi]) / FNMR(U[lo, hi]) = ratio (c < 1: less concentrated, higher FNMR)."""
    base = group_fnmr(t, kappa, dim)
    return brentq(lambda c: group_fnmr(t, (c * kappa[0], c * kappa[1]), dim) / base - ratio, 0.2, 5.0, xtol=1e-10)


def run(args: argparse.Namespace, ratio_b_over_a: float) -> dict:
    t = true_threshold(args.fmr, args.dim)
    kappa = tuple(args.kappa)
    c = scale_for_ratio(t, kappa, ratio_b_over_a, args.dim)
    truth_a, truth_b = group_fnmr(t, kappa, args.dim), group_fnmr(t, (c * kappa[0], c * kappa[1]), args.dim)
    ka, kb = args.identities
    groups = {"A": GroupSpec(ka, kappa), "B": GroupSpec(kb, (c * kappa[0], c * kappa[1]))}
    verdicts, undefined = [], []
    for i in range(args.sims):
        data = simulate_vmf(groups, dim=args.dim, samples_per_identity=args.samples, seed=1000 + i).as_data()
        res = equivalence_test(data, ("A", "B"), metric="fnmr", fmr=args.fmr, margin=tuple(args.margin),
                               method=args.method, n_resamples=args.resamples, alpha=args.alpha, seed=i)
        verdicts.append(res.equivalent)
        undefined.append(res.undefined_replicates)
    rate = float(np.mean(verdicts))
    se = float(np.sqrt(args.alpha * (1 - args.alpha) / args.sims))
    return {"true_ratio_a_over_b": truth_a / truth_b, "true_fnmr_a": truth_a, "true_fnmr_b": truth_b,
            "true_threshold": t, "equivalent_rate": rate, "mc_se_at_alpha": se,
            "mean_undefined_replicates": float(np.mean(undefined))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--identities", type=lambda s: [int(x) for x in s.split(",")], default=[300, 150])
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--kappa", type=lambda s: [float(x) for x in s.split(",")], default=[30.0, 100.0])
    ap.add_argument("--fmr", type=float, default=1e-2)
    ap.add_argument("--margin", type=lambda s: [float(x) for x in s.split(",")], default=[0.8, 1.25])
    ap.add_argument("--method", default="double-or-nothing")
    ap.add_argument("--resamples", type=int, default=199)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    a = ap.parse_args()
    t0 = time.time()
    out = {"args": vars(a), "load": os.getloadavg()[0],
           "edge (size)": run(a, 1 / a.margin[0]), "parity (power)": run(a, 1.0)}
    out["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(out, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
