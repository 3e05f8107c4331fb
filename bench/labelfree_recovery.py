"""Coverage study for `matchaudit.labelfree.estimate` (docs/labelfree.md, "Recovery").

Simulates one group of N pairs from a two-component two-piece mixture per replication, fits it label-free and
records whether the 89% bands contain the true FNMR at FMR 1e-1, 1e-2, 1e-3: the population band against the
population truth (true distributions), the finite-sample band against the rates counted on the simulated
pairs with their true labels. Usage (writes the rows it ran to ``--out``; the committed
``bench/labelfree_recovery.json`` collects the rows of all tables in the docs, each with its shape prior and
where the match component's priors were centred: ``gmm`` before, ``kde-mode`` since the low-pi fix):

    .venv/bin/python bench/labelfree_recovery.py --reps 50 --n 3000 --workers 1 --out results.json

``--shape-prior jeffreys|weak|supplement`` picks the prior of the shape parameters (default: the estimator's default);
``--only t-t,sas-sas`` restricts the scenarios to the given data-fit pairs, ``--pis 0.05`` to the given shares; ``--shapes 30,20`` replaces the
data family's (non-match, match) shapes (robustness checks of the shape prior).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from multiprocessing import Pool

import numpy as np

from matchaudit.labelfree import NotConverged, estimate, family
from matchaudit.labelfree.api import DEFAULT_SHAPE_PRIOR
from matchaudit.labelfree.curves import empirical_at_fmr

TARGETS = (1e-1, 1e-2, 1e-3)
SHAPES = {"normal": (1.0, 1.0), "t": (8.0, 20.0), "sas": (0.85, 1.1)}  # (non-match, match) shape per family
NONMATCH = (0.10, 0.07, 0.09)  # mode, left scale, right scale
MATCH = (0.50, 0.08, 0.06)
SCENARIOS = [(d, d, pi) for d in ("normal", "t", "sas") for pi in (0.5, 0.05)] + \
            [("t", "sas", pi) for pi in (0.5, 0.05)] + [("sas", "t", pi) for pi in (0.5, 0.05)]


def truth(data_family: str, shapes: tuple[float, float] | None = None) -> np.ndarray:
    """True FNMR at the FMR targets of the generating distributions."""
    fam = family(data_family)
    d0, d1 = shapes or SHAPES[data_family]
    t = fam.isf(np.asarray(TARGETS), *NONMATCH, d0)
    return fam.cdf(t, *MATCH, d1)


def simulate(data_family: str, fit_family: str, pi: float, n: int, rep: int,
             shapes: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Scores and true labels of replication ``rep`` (the seed depends on the replication, pi and the families)."""
    rng = np.random.default_rng([rep, int(pi * 1000), len(data_family), len(fit_family)])
    fam = family(data_family)
    d0, d1 = shapes or SHAPES[data_family]
    y = (rng.random(n) < pi).astype(float)
    return np.where(y == 1, fam.rvs(rng, n, *MATCH, d1), fam.rvs(rng, n, *NONMATCH, d0)), y


def one(args: tuple) -> dict:
    data_family, fit_family, pi, n, rep, warmup, draws, shape_prior, shapes = args
    s, y = simulate(data_family, fit_family, pi, n, rep, shapes)
    _, _, emp = empirical_at_fmr(s, y[None], np.asarray(TARGETS))
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = estimate(s, np.zeros(n, dtype=int), family=fit_family, fmr=TARGETS, sampler="numpy", warmup=warmup,
                         draws=draws, seed=rep, finite_draws=200, ppc_replicates=5, shape_prior=shape_prior)
    except NotConverged:
        return {"converged": False}
    out = {"converged": True, "seconds": time.perf_counter() - t0, "empirical_truth": emp[0].tolist(),
           "delta": [float(np.median(r.groups[0].params[k])) for k in ("delta0", "delta1")]}
    for kind in ("population", "finite-sample"):
        e = sorted(r.results[kind]["fnmr_at_fmr"], key=lambda x: x["target"], reverse=True)
        out[kind] = [[x["lower"], x["median"], x["upper"]] for x in e]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--draws", type=int, default=1500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shape-prior", default=None, choices=["jeffreys", "weak", "supplement"])
    ap.add_argument("--only", default=None, help="comma-separated data-fit pairs, e.g. t-t,sas-sas")
    ap.add_argument("--pis", default=None, help="comma-separated true shares of matches to run, e.g. 0.05")
    ap.add_argument("--shapes", default=None, help="non-match,match shapes of the data family instead of SHAPES, "
                    "e.g. 30,20 (use with --only and one data family)")
    ap.add_argument("--out", default="bench/labelfree_recovery.json")
    a = ap.parse_args()
    scenarios = SCENARIOS if a.only is None else [x for x in SCENARIOS if f"{x[0]}-{x[1]}" in a.only.split(",")]
    if a.pis is not None:
        scenarios = [x for x in scenarios if x[2] in [float(v) for v in a.pis.split(",")]]
    shapes = None if a.shapes is None else tuple(float(v) for v in a.shapes.split(","))
    jobs = [(df, ff, pi, a.n, rep, a.warmup, a.draws, a.shape_prior, shapes) for df, ff, pi in scenarios
            for rep in range(a.reps)]
    with Pool(a.workers) as pool:
        res = pool.map(one, jobs, chunksize=1)
    table = []
    for k, (df, ff, pi) in enumerate(scenarios):
        rows = [x for x in res[k * a.reps:(k + 1) * a.reps] if x["converged"]]
        tr = truth(df, shapes)
        row = {"data": df, "fit": ff, "pi": pi, "n": a.n, "reps": a.reps, "converged": len(rows),
               "seconds_per_fit": float(np.mean([x["seconds"] for x in rows])) if rows else None,
               "shape_prior": a.shape_prior or DEFAULT_SHAPE_PRIOR, "match_prior": "kde-mode",
               "warmup": a.warmup, "draws": a.draws,
               "data_shapes": list(shapes or SHAPES[df]), "true_fnmr": tr.tolist(),
               "median_shape_nonmatch": float(np.median([x["delta"][0] for x in rows])) if rows else None}
        for kind in ("population", "finite-sample"):
            cov = []
            for i in range(len(TARGETS)):
                ref = [tr[i] if kind == "population" else x["empirical_truth"][i] for x in rows]
                cov.append(float(np.mean([x[kind][i][0] <= v <= x[kind][i][2] for x, v in zip(rows, ref)])))
            row[f"coverage_{kind}"] = cov
        table.append(row)
        print(json.dumps(row))
    with open(a.out, "w") as fh:
        json.dump(table, fh, indent=1)


if __name__ == "__main__":
    main()
