"""Per-replication diagnostics of label-free TP-T fits at a low share of matches (docs/labelfree.md,
"Diagnosis of the under-coverage at pi = 0.05").

For each data set of ``bench/labelfree_recovery.py`` (same seeds, same chain lengths, the estimator's init,
model and sampler; standardised scores as ``estimate`` fits them) it records the population FNMR@FMR band, its
R-hat and ESS, whether it covers the truth, the posterior medians of the parameters and the GMM / KDE start.
``--center`` picks where the match component's priors are centred: ``mode`` (the default of the estimator),
``gmm`` (supplement E.2: the GMM's upper component), ``gmm-x3`` (the same with 3 x the mode prior SD) or
``oracle`` (mean and SD of the true match scores: a check, not a method). Usage:

    .venv/bin/python bench/labelfree_lowpi.py --reps 0-49 --center gmm --out lowpi_gmm.json [--sampler numpyro]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from labelfree_recovery import TARGETS, simulate, truth

from matchaudit.labelfree import curves, diagnostics, family, samplers
from matchaudit.labelfree.starting_values import initialise
from matchaudit.labelfree.model import GroupModel, Priors, component, constrain


def priors(center: str, init, z: np.ndarray, y: np.ndarray) -> Priors:
    """The priors of one data set with the match component centred as ``center`` says."""
    if center == "mode":
        return Priors.from_init(init)
    g = init.gmm
    if center == "oracle":
        m, sd = float(z[y == 1].mean()), float(z[y == 1].std())
        return Priors((g.means[0], m), (g.sds[0], sd), (g.sds[0], sd))
    wide = 3.0 if center == "gmm-x3" else 1.0
    return Priors(g.means, (g.sds[0], wide * g.sds[1]), g.sds)


def one(rep: int, a: argparse.Namespace) -> dict:
    fam = family("t")
    s, y = simulate("t", "t", a.pi, a.n, rep)
    loc, scale = float(np.median(s)), float(np.std(s))
    z = (s - loc) / scale
    rng = np.random.default_rng(rep)  # as estimate(seed=rep) draws its starts and chains
    t0 = time.perf_counter()
    init = initialise(z, 0.05)
    model = GroupModel(fam, priors(a.center, init, z, y), z, z[:0], z[:0])
    mode, cov = samplers.laplace(model.log_density, model.start(init))
    starts = samplers.dispersed_starts(mode, cov, 4, rng)
    if a.sampler == "numpyro":
        import jax.numpy as jnp

        d = samplers.sample_numpyro(lambda th: model.log_density(th, jnp), starts, a.warmup, a.draws, rep)
    else:
        d = samplers.sample_numpy(model.log_density, starts, cov, a.warmup, a.draws, rng)
    c, m, dim = d.theta.shape
    p = constrain(d.theta.reshape(-1, dim))
    _, fn = curves.population_at_fmr(fam, component(p, 0), component(p, 1), np.asarray(TARGETS))
    per_chain = fn.reshape(c, m, -1)
    diag = diagnostics.summarise(d.theta, model.names)
    q = np.quantile(fn, [0.055, 0.5, 0.945], axis=0)
    tr = truth("t")
    nat = {k: loc + scale * v if k.startswith("mu") else scale * v if k[0] == "s" else v for k, v in p.items()}
    return {"rep": rep, "seconds": time.perf_counter() - t0,
            "rhat_max": max(v["rhat"] for v in diag.values()), "ess_min": min(v["ess"] for v in diag.values()),
            "fnmr_rhat": [diagnostics.rhat(per_chain[..., i]) for i in range(len(TARGETS))],
            "fnmr_ess": [diagnostics.ess(per_chain[..., i]) for i in range(len(TARGETS))],
            "band": q.T.tolist(), "cover": [bool(q[0, i] <= tr[i] <= q[2, i]) for i in range(len(TARGETS))],
            "post_median": {k: float(np.median(v)) for k, v in nat.items()},
            "gmm": {"weight": init.gmm.weight1, "means": [loc + scale * v for v in init.gmm.means],
                    "sds": [scale * v for v in init.gmm.sds]},
            "match_mode": loc + scale * init.match_mode, "separate_match_mode": init.separate_match_mode,
            "pi_start": init.pi_start}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", default="0-49", help="a range a-b or a comma-separated list")
    ap.add_argument("--pi", type=float, default=0.05)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--center", default="mode", choices=["mode", "gmm", "gmm-x3", "oracle"])
    ap.add_argument("--sampler", default="numpy", choices=["numpy", "numpyro"])
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--draws", type=int, default=1500)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if "-" in a.reps:
        lo, hi = (int(v) for v in a.reps.split("-"))
        reps = list(range(lo, hi + 1))
    else:
        reps = [int(v) for v in a.reps.split(",")]
    rows = []
    for rep in reps:
        rows.append(one(rep, a))
        r = rows[-1]
        print(rep, f"R-hat {r['rhat_max']:.3f} ESS {r['ess_min']:.0f} cover {r['cover']} band",
              np.round(r["band"], 3).tolist(), flush=True)
    ok = [r for r in rows if r["rhat_max"] < 1.2]
    cov = np.mean([r["cover"] for r in ok], axis=0) if ok else None
    print(f"converged {len(ok)}/{len(rows)}, population coverage {np.round(cov, 3).tolist() if ok else None}")
    with open(a.out, "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
