"""Likelihood evidence for the TP-T tail-shape question (docs/labelfree.md, "Recovery").

For some of the recovery study's simulated data sets (``bench/labelfree_recovery.py``, same seeds) this script
maximises the *unlabelled* mixture log-likelihood directly (the estimator's own ``GroupModel.log_likelihood``,
several L-BFGS starts), profiles it over the non-match shape, evaluates it at the true parameters and at the
posterior mean of ``estimate`` (NumPy sampler, the bench's draws) and prints, per data set, the shape and
FNMR@FMR 1e-3 at each point. Usage:

    .venv/bin/python bench/labelfree_likelihood.py --data t --pi 0.5 --reps 0,1,2,3,4,5,6,7,8,9 --shape-prior weak [--labelled]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize

from matchaudit.labelfree import estimate, family
from matchaudit.labelfree.starting_values import initialise
from matchaudit.labelfree.api import DEFAULT_SHAPE_PRIOR
from matchaudit.labelfree.model import SHAPE_PRIORS, GroupModel, Priors, constrain

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelfree_recovery import MATCH, NONMATCH, SHAPES, simulate  # noqa: E402

PROFILE = (3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 25.0, 50.0, 200.0)


def true_theta(data: str, pi: float, loc: float, scale: float) -> np.ndarray:
    """The generating parameters as the model's unconstrained vector (scores standardised like ``estimate``)."""
    (m0, l0, r0), (m1, l1, r1) = NONMATCH, MATCH
    d0, d1 = SHAPES[data]
    th = [(m0 - loc) / scale, np.log((m1 - m0) / scale), *np.log(np.array([l0, r0, l1, r1]) / scale), np.log(pi / (1 - pi))]
    return np.array(th + ([np.log(d0), np.log(d1)] if data != "normal" else []))


def fnmr_at(fam, theta: np.ndarray, alpha: float = 1e-3) -> float:
    p = constrain(theta[None])
    t = fam.isf(alpha, p["mu0"], p["s0L"], p["s0R"], p["delta0"])
    return float(fam.cdf(t, p["mu1"], p["s1L"], p["s1R"], p["delta1"])[0])


def maximise(f, starts: list[np.ndarray], fixed: dict[int, float] | None = None) -> np.ndarray:
    """The best of L-BFGS runs of ``f`` (batched log-likelihood) from ``starts``, with coordinates in ``fixed`` held."""
    fixed = fixed or {}
    free = np.array([i for i in range(starts[0].size) if i not in fixed])

    def full(x):
        th = np.empty(starts[0].size)
        th[free] = x
        for i, v in fixed.items():
            th[i] = v
        return th

    best, best_v = None, -np.inf
    for s in starts:
        r = optimize.minimize(lambda x: -f(full(x)[None])[0], s[free], method="L-BFGS-B")
        r = optimize.minimize(lambda x: -f(full(x)[None])[0], r.x, method="Nelder-Mead",
                              options={"maxiter": 4000, "xatol": 1e-7, "fatol": 1e-7})
        if -r.fun > best_v:
            best, best_v = full(r.x), -r.fun
    return best


def one(data: str, pi: float, rep: int, n: int, shape_prior: str, labelled: bool, warmup: int, draws: int) -> dict:
    s, y = simulate(data, data, pi, n, rep)
    loc, scale = float(np.median(s)), float(np.std(s))
    z = (s - loc) / scale
    fam = family(data)
    init = initialise(z, 0.05)
    empty = np.empty(0)
    model = (GroupModel(fam, Priors.from_init(init), empty, z, y, "random", shape_prior) if labelled else
             GroupModel(fam, Priors.from_init(init), z, empty, empty, "random", shape_prior))
    ll = model.log_likelihood
    truth = true_theta(data, pi, loc, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = estimate(s, np.zeros(n, dtype=int), y if labelled else None, family=data, fmr=(1e-3,), sampler="numpy",
                     warmup=warmup, draws=draws, seed=rep, finite_draws=20, ppc_replicates=2, shape_prior=shape_prior)
    p = r.groups[0].params
    draws_theta = np.stack([(p["mu0"] - loc) / scale, np.log((p["mu1"] - p["mu0"]) / scale),
                            *[np.log(p[k] / scale) for k in ("s0L", "s0R", "s1L", "s1R")],
                            np.log(p["pi"] / (1 - p["pi"]))] + ([np.log(p["delta0"]), np.log(p["delta1"])] if fam.has_shape else []), 1)
    post_mean = draws_theta.mean(axis=0)
    starts = [truth, model.start(init), post_mean]
    if fam.has_shape:
        for nu in (4.0, 30.0):
            starts.append(np.r_[post_mean[:7], np.log(nu), post_mean[8]])
    mle = maximise(ll, starts)
    out = {"rep": rep, "pi": pi, "labelled": labelled,
           "loglik": {"truth": float(ll(truth[None])[0]), "posterior_mean": float(ll(post_mean[None])[0]),
                      "mle": float(ll(mle[None])[0])},
           "shape0": {"truth": SHAPES[data][0], "posterior_median": float(np.median(p["delta0"])),
                      "posterior_band": [float(v) for v in np.quantile(p["delta0"], [0.055, 0.945])],
                      "mle": float(np.exp(mle[7])) if fam.has_shape else None},
           "fnmr_1e-3": {"truth": fnmr_at(fam, truth), "posterior_mean_params": fnmr_at(fam, post_mean), "mle": fnmr_at(fam, mle),
                         "posterior_band": [r.results["population"]["fnmr_at_fmr"][0][k] for k in ("lower", "median", "upper")]},
           "mle_pi": float(1 / (1 + np.exp(-mle[6])))}
    if fam.has_shape:
        prof = {}
        for nu in PROFILE:
            th = maximise(ll, [np.r_[mle[:7], np.log(nu), mle[8]]], fixed={7: np.log(nu)})
            prof[nu] = {"dloglik": float(ll(th[None])[0] - out["loglik"]["mle"]), "fnmr_1e-3": fnmr_at(fam, th)}
        out["profile_shape0"] = prof
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="t", choices=["normal", "t", "sas"])
    ap.add_argument("--pi", type=float, default=0.5)
    ap.add_argument("--reps", default="0,1,2")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--shape-prior", default=DEFAULT_SHAPE_PRIOR, choices=sorted(SHAPE_PRIORS))
    ap.add_argument("--labelled", action="store_true", help="all labels known (complete-data likelihood)")
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--draws", type=int, default=1500)
    a = ap.parse_args()
    for rep in map(int, a.reps.split(",")):
        print(json.dumps(one(a.data, a.pi, rep, a.n, a.shape_prior, a.labelled, a.warmup, a.draws)), flush=True)


if __name__ == "__main__":
    main()
