"""Label-free estimation on real-like score shapes (#19 item 6): coverage of the bands, and what the fit checks see.

Real non-match scores are not two-piece: they have heavy tails, skew, and shoulders of hard impostors; match
scores have a tail of hard matches. Per replication one group of ``--n`` pairs is simulated from one shape, fitted
label-free (or with labelled pairs), and the study records whether the 89% bands contain the true FNMR at each FMR
target (population band vs the shape's exact FNMR; finite-sample band vs the rate counted on the simulated pairs
with their labels), the median's error, and whether the KS check and the tail check fired (p < 0.05).

    .venv/bin/python bench/labelfree_shapes.py --reps 16 --n 10000 --workers 2 --out bench/results/labelfree_shapes.json
    .venv/bin/python bench/labelfree_shapes.py --only shoulder --pis 0.05 --reps 1 --n 20000   # #19's reproduction

Shapes (match scores N(3.2, 1) unless said): ``normal`` non-matches N(0, 1) (the family holds it: the control);
``heavy`` t with 4 d.o.f. (scale 0.7); ``skewed`` Gamma(2, scale 0.7) - 1.4; ``shoulder`` 97% N(0, 1) + 3% N(1.6, 0.6) (hard
impostors); ``hard-matches`` non-matches N(0, 1), matches 90% N(3.2, 1) + 10% N(1.5, 0.7). ``--labels`` adds
rows with labelled pairs: ``random:200`` (200 pairs drawn at random) or ``stratified:100`` (100 of each class).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from matchaudit.labelfree import NotConverged, estimate
from matchaudit.labelfree.curves import empirical_at_fmr

TARGETS = (1e-1, 1e-2, 1e-3)
GOOD_MATCH = ((1.0, stats.norm(3.2, 1.0)),)
SHAPES = {
    "normal": (((1.0, stats.norm(0, 1)),), GOOD_MATCH),
    "heavy": (((1.0, stats.t(4, scale=0.7)),), GOOD_MATCH),
    "skewed": (((1.0, stats.gamma(2, loc=-1.4, scale=0.7)),), GOOD_MATCH),
    "shoulder": (((0.97, stats.norm(0, 1)), (0.03, stats.norm(1.6, 0.6))), GOOD_MATCH),
    "hard-matches": (((1.0, stats.norm(0, 1)),), ((0.9, stats.norm(3.2, 1.0)), (0.1, stats.norm(1.5, 0.7)))),
}


def _cdf(parts, x: float) -> float:
    return sum(w * d.cdf(x) for w, d in parts)


def _sf(parts, x: float) -> float:
    return sum(w * d.sf(x) for w, d in parts)


def _draw(parts, rng: np.random.Generator, n: int) -> np.ndarray:
    which = rng.choice(len(parts), size=n, p=[w for w, _ in parts])
    out = np.empty(n)
    for k, (_, d) in enumerate(parts):
        out[which == k] = d.rvs(size=int(np.count_nonzero(which == k)), random_state=rng)
    return out


def truth(shape: str) -> list[float]:
    """Exact FNMR at each FMR target of the shape's distributions."""
    nonmatch, match = SHAPES[shape]
    return [_cdf(match, optimize.brentq(lambda t: _sf(nonmatch, t) - a, -20, 40, xtol=1e-12)) for a in TARGETS]


def simulate(shape: str, pi: float, n: int, rep: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([rep, int(pi * 1000), len(shape)])
    nonmatch, match = SHAPES[shape]
    y = rng.random(n) < pi
    return np.where(y, _draw(match, rng, n), _draw(nonmatch, rng, n)), y


def reveal(y: np.ndarray, labels: str, rep: int) -> tuple[np.ndarray, str]:
    """Labels (NaN = unknown) of ``random:k`` or ``stratified:k`` pairs, and the label sampling to declare."""
    lab = np.full(y.size, np.nan)
    if labels == "none":
        return lab, "random"
    kind, k = labels.split(":")
    rng = np.random.default_rng([rep, 7])
    if kind == "random":
        idx = rng.choice(y.size, int(k), replace=False)
    else:
        idx = np.r_[rng.choice(np.flatnonzero(y), int(k), replace=False),
                    rng.choice(np.flatnonzero(~y), int(k), replace=False)]
    lab[idx] = y[idx]
    return lab, kind


def one(args: tuple) -> dict:
    shape, pi, n, rep, labels, warmup, draws = args
    s, y = simulate(shape, pi, n, rep)
    lab, sampling = reveal(y, labels, rep)
    _, _, emp = empirical_at_fmr(s, y[None].astype(float), np.asarray(TARGETS))
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = estimate(s, np.zeros(n, dtype=int), lab, label_sampling=sampling, fmr=TARGETS, sampler="numpy",
                         chains=2, warmup=warmup, draws=draws, seed=rep, finite_draws=100, ppc_replicates=20)
    except NotConverged:
        return {"converged": False}
    check = r.ppc[r.group_names[0]]
    out = {"converged": True, "seconds": time.perf_counter() - t0, "empirical_truth": emp[0].tolist(),
           "ks_alarm": check["ks_pvalue"] < 0.05, "tail_alarm": bool(check["tail"]["alarm"])}
    for kind in ("population", "finite-sample"):
        e = sorted(r.results[kind]["fnmr_at_fmr"], key=lambda x: x["target"], reverse=True)
        out[kind] = [[x["lower"], x["median"], x["upper"]] for x in e]
    return out


def summarise(shape: str, pi: float, labels: str, n: int, rows: list[dict]) -> dict:
    ok = [x for x in rows if x["converged"]]
    tr = truth(shape)
    row = {"shape": shape, "pi": pi, "labels": labels, "n": n, "reps": len(rows), "converged": len(ok),
           "true_fnmr": tr, "ks_alarms": sum(x["ks_alarm"] for x in ok), "tail_alarms": sum(x["tail_alarm"] for x in ok),
           "seconds_per_fit": float(np.mean([x["seconds"] for x in ok])) if ok else None}
    for kind in ("population", "finite-sample"):
        ref = [tr if kind == "population" else x["empirical_truth"] for x in ok]
        row[f"coverage_{kind}"] = [float(np.mean([x[kind][i][0] <= v[i] <= x[kind][i][2] for x, v in zip(ok, ref)]))
                                   if ok else None for i in range(len(TARGETS))]
        row[f"median_estimate_{kind}"] = [float(np.median([x[kind][i][1] for x in ok])) if ok else None
                                          for i in range(len(TARGETS))]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=16)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--pis", default="0.05,0.5")
    ap.add_argument("--only", default=",".join(SHAPES), help="comma-separated shapes")
    ap.add_argument("--labels", default="none", help="comma-separated: none, random:K, stratified:K")
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="JSON file for the rows")
    a = ap.parse_args()
    cells = [(sh, float(pi), lab) for lab in a.labels.split(",") for sh in a.only.split(",")
             for pi in a.pis.split(",")]
    jobs = [(sh, pi, a.n, rep, lab, a.warmup, a.draws) for sh, pi, lab in cells for rep in range(a.reps)]
    with Pool(a.workers) as pool:
        res = pool.map(one, jobs, chunksize=1)
    table = []
    for k, (sh, pi, lab) in enumerate(cells):
        table.append(summarise(sh, pi, lab, a.n, res[k * a.reps:(k + 1) * a.reps]))
        print(json.dumps(table[-1]), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
