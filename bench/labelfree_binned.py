"""Wall time and recovery of `estimate` on large groups, where the likelihood is binned (issue #17).

    .venv/bin/python bench/labelfree_binned.py --groups 2 --n 275000 --sampler numpy
    .venv/bin/python bench/labelfree_binned.py --groups 8 --n 1000000 --sampler numpy
    .venv/bin/python bench/labelfree_binned.py --groups 2 --n 275000 --sampler numpyro
    .venv/bin/python bench/labelfree_binned.py --compare --n 10000 --sampler numpy   # binned vs full likelihood
    .venv/bin/python bench/labelfree_binned.py --accuracy --n 1000000                  # log-likelihood and gradient errors
    .venv/bin/python bench/labelfree_binned.py --groups 2 --n 275000 --count-bins exact  # finite-sample on every score

Scores are drawn (seeded) from the model's own TP-SAS mixture: per group non-matches TP-SAS(0.10, 0.07, 0.09,
delta 0.85), matches TP-SAS(mode, 0.08, 0.06, delta 1.1) with the group's match mode, share of matches 0.3.
Prints one row per group: groups, scores per group, likelihood cells (distinct values or bins), sampler, wall
seconds of the whole `estimate` call, and the recovered FNMR at FMR 1e-2 (population kind: median and 89%
band; finite-sample median) against the truth of the generating distributions.

``--compare``: one group of ``--n`` scores fitted twice with the same seed, with the full likelihood (every
distinct score, ``likelihood_points=None``) and the default (binned above 2,048 distinct scores); prints each
FNMR@FMR and curve point of both, the difference and its Monte-Carlo standard error (from the effective
sample size of the FNMR draws).

``--accuracy``: the binned against the full log-likelihood on ``--n`` scores of TP-SAS data (the bench's first
group) and of TP-T data with heavy non-match tails (4 d.o.f.; matches 20), standardised as ``estimate`` does:
for 1,024 to 8,192 points and for the one-point rule (bin means) at 2,048, the SD over 100 parameter vectors
spread like the posterior (its Laplace approximation) of the log-likelihood error, its largest deviation from
its mean, and (JAX) the largest shift of the posterior mean the gradient error implies, ``sqrt(e' cov e)`` in
posterior SDs, over 20 of them; then the posterior mode under both likelihoods (L-BFGS, JAX gradients) and
FNMR@FMR 1e-2 there.

``--count-bins K|exact``: the cells finite-sample rates and the PPC count on (default ``binned.COUNT_BINS``;
``exact``: every distinct score), to measure what counting on bins changes.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import matchaudit.labelfree.api as api
from matchaudit.labelfree import estimate, family
from matchaudit.labelfree.binned import LIKELIHOOD_POINTS
from matchaudit.labelfree.diagnostics import ess

SAS = family("sas")
NONMATCH = (0.10, 0.07, 0.09, 0.85)
MATCH_SCALES = (0.08, 0.06, 1.1)
MODES = (0.55, 0.50, 0.45, 0.40, 0.60, 0.52, 0.47, 0.42)
PI = 0.3
FMRS = (1e-1, 1e-2, 1e-3)


def simulate(groups: int, n: int, seed: int, first: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, group names and true labels (``groups`` x ``n``; match modes ``MODES[first:]``), seeded."""
    rng = np.random.default_rng(seed)
    s, g, y = [], [], []
    for k in range(first, first + groups):
        match = rng.random(n) < PI
        s.append(np.where(match, SAS.rvs(rng, n, MODES[k], *MATCH_SCALES), SAS.rvs(rng, n, *NONMATCH)))
        g.append(np.full(n, f"g{k}"))
        y.append(match)
    return np.concatenate(s), np.concatenate(g), np.concatenate(y)


def truth(k: int, alpha: float) -> float:
    return float(SAS.cdf(SAS.isf(alpha, *NONMATCH), MODES[k], *MATCH_SCALES))


def run(groups: int, n: int, sampler: str, seed: int, first: int = 0, **kw):
    s, g, _ = simulate(groups, n, seed, first)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est = estimate(s, g, fmr=FMRS, sampler=sampler, seed=seed, **kw)
    return est, time.perf_counter() - t0, [str(x.message) for x in w]


def table(args) -> None:
    est, dt, warned = run(args.groups, args.n, args.sampler, args.seed)
    pop = {e["group"]: e for e in est.results["population"]["fnmr_at_fmr"] if e["target"] == 1e-2}
    fin = {e["group"]: e for e in est.results["finite-sample"]["fnmr_at_fmr"] if e["target"] == 1e-2}
    print("| groups | scores per group | likelihood cells | sampler | seconds (all groups) | FNMR@FMR 1e-2: truth | "
          "population median [89% band] | finite-sample median | max R-hat | min ESS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, f in enumerate(est.groups):
        lik = f.likelihood
        cells = f"{lik['cells']} distinct" if lik["method"].startswith("exact") else f"{lik['cells']} bins"
        p = pop[f.name]
        print(f"| {args.groups} | {args.n:,} | {cells} | {est.sampler} | {dt:.0f} | {truth(k, 1e-2):.4f} | "
              f"{p['median']:.4f} [{p['lower']:.4f}, {p['upper']:.4f}] | {fin[f.name]['median']:.4f} | "
              f"{f.diagnostics['max']['rhat']:.3f} | {f.diagnostics['max']['ess']:.0f} |")
    print(f"{len(warned)} warnings: {warned[:3]}")
    print(f"finite-sample counted on: {[f.counted_on['cells'] for f in est.groups]} cells; "
          f"finite-sample FNMR@1e-2 bands: {[(round(fin[f.name]['lower'], 4), round(fin[f.name]['upper'], 4)) for f in est.groups]}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"seconds": dt, "estimate": est.to_dict()}, fh)


def compare(args) -> None:
    out = {}
    for label, pts in (("full", None), ("binned", LIKELIHOOD_POINTS)):
        est, dt, _ = run(1, args.n, args.sampler, args.seed, args.mode, likelihood_points=pts)
        out[label] = (est, dt)
        print(f"{label}: {est.groups[0].likelihood}, {dt:.1f} s")
    (a, _), (b, _) = out["full"], out["binned"]
    print(f"match mode {MODES[args.mode]}; truth FNMR@FMR {', '.join(f'{t:g}: {truth(args.mode, t):.4f}' for t in FMRS)}")
    print("| quantity | FMR | full median | binned median | difference | MC SE of the difference | full band | binned band |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    se = mc_se(a, b)
    for kind in ("population", "finite-sample"):
        for ea, eb in zip(a.results[kind]["fnmr_at_fmr"], b.results[kind]["fnmr_at_fmr"]):
            t = ea["target"]
            err = f"{se[(kind, t)]:.4f}" if (kind, t) in se else "-"
            print(f"| {kind} FNMR | {t:g} | {ea['median']:.4f} | {eb['median']:.4f} | {eb['median'] - ea['median']:+.4f} | "
                  f"{err} | [{ea['lower']:.4f}, {ea['upper']:.4f}] | [{eb['lower']:.4f}, {eb['upper']:.4f}] |")
    name = f"g{args.mode}"
    ca, cb = a.results["population"]["curve"][name], b.results["population"]["curve"][name]
    d = np.abs(np.asarray(cb["median"]) - np.asarray(ca["median"]))
    w = np.asarray(ca["upper"]) - np.asarray(ca["lower"])
    print(f"population curve ({d.size} FMR points): max |median difference| {d.max():.4f}, "
          f"max of it relative to the full band's width {np.max(d / w):.3f}")


def accuracy(args) -> None:
    import jax
    import jax.numpy as jnp
    from scipy import optimize

    from matchaudit.labelfree import samplers
    from matchaudit.labelfree.binned import compress
    from matchaudit.labelfree.model import GroupModel, Priors, constrain
    from matchaudit.labelfree.starting_values import initialise

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(args.seed)
    t_fam = family("t")
    data = {"sas": (SAS, simulate(1, args.n, args.seed)[0])}
    match = rng.random(args.n) < PI
    data["t (4 d.o.f.)"] = (t_fam, np.where(match, t_fam.rvs(rng, args.n, MODES[0], 0.08, 0.06, 20.0),
                                            t_fam.rvs(rng, args.n, 0.10, 0.07, 0.09, 4.0)))
    print("| data | rule | points | SD of the error over the posterior (nats) | max deviation from its mean | max mean shift (posterior SD) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, (fam, s) in data.items():
        loc, scale = float(np.median(s)), float(np.std(s))
        z = (s - loc) / scale
        init = initialise(z)
        pr = Priors.from_init(init)
        full = GroupModel(fam, pr, z, z[:0], z[:0])
        ref, _ = GroupModel.compressed(fam, pr, z, z[:0], z[:0])
        mode, cov = samplers.laplace(ref.log_density, ref.start(init))
        th = mode + rng.standard_normal((100, mode.size)) @ np.linalg.cholesky(cov).T
        ll_full = np.concatenate([full.log_likelihood(t[None]) for t in th])
        g_full = jax.jit(jax.grad(lambda t: full.log_likelihood(t, jnp)))
        gf = [np.asarray(g_full(jnp.asarray(t))) for t in th[:20]]
        variants = [("two-point", p, GroupModel.compressed(fam, pr, z, z[:0], z[:0], max_points=p)[0]) for p in (1024, 2048, 4096, 8192)]
        one = compress(z, 2048)
        variants.append(("one-point (bin mean)", 2048, GroupModel(fam, pr, one.values, z[:0], z[:0], counts_u=one.counts)))
        for rule, pts, m in variants:
            d = m.log_likelihood(th) - ll_full
            g_bin = jax.jit(jax.grad(lambda t, m=m: m.log_likelihood(t, jnp)))
            shift = max(float(np.sqrt(e @ cov @ e)) for e in (np.asarray(g_bin(jnp.asarray(t))) - g for t, g in zip(th, gf)))
            print(f"| {label} | {rule} | {m.scores_u.size} | {d.std():.1e} | {np.abs(d - d.mean()).max():.1e} | {shift:.1e} |")
        modes = {}
        for name, m in (("binned", ref), ("full", full)):
            vg = jax.jit(jax.value_and_grad(lambda t, m=m: -m.log_density(t, jnp)))
            r = optimize.minimize(lambda x: tuple(np.asarray(v) for v in vg(jnp.asarray(x))), mode, jac=True,
                                  method="L-BFGS-B", options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-9})
            modes[name] = r.x
        d = modes["binned"] - modes["full"]

        def fnmr(x):
            p = constrain(x[None])
            t = fam.isf(1e-2, p["mu0"], p["s0L"], p["s0R"], p["delta0"])
            return float(fam.cdf(t, p["mu1"], p["s1L"], p["s1R"], p["delta1"])[0])

        print(f"{label}: posterior modes, binned vs full: {np.sqrt(d @ np.linalg.solve(cov, d)):.1e} posterior SD apart "
              f"(Mahalanobis); FNMR@1e-2 {fnmr(modes['binned']):.6f} vs {fnmr(modes['full']):.6f}")


def mc_se(a, b) -> dict:
    """Monte-Carlo SE of the difference of two posterior medians of FNMR@FMR (population kind), per target:
    sqrt(se_a^2 + se_b^2), se = posterior SD / sqrt(ESS) of the FNMR draws (the median's SE is about 1.25 times
    the mean's for a normal posterior; we use the mean's, which is the stricter)."""
    out = {}
    for t in FMRS:
        ses = []
        for est in (a, b):
            p = est.groups[0].params
            thr = SAS.isf(t, p["mu0"], p["s0L"], p["s0R"], p["delta0"])
            fn = SAS.cdf(thr, p["mu1"], p["s1L"], p["s1R"], p["delta1"]).reshape(est.chains, -1)
            ses.append(fn.std() / np.sqrt(ess(fn)))
        out[("population", t)] = float(np.hypot(*ses))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--n", type=int, default=275_000)
    ap.add_argument("--sampler", default="numpy", choices=("numpy", "numpyro"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--mode", type=int, default=2, help="--compare: index of the group's match mode in MODES")
    ap.add_argument("--out", default=None)
    ap.add_argument("--count-bins", default=None)
    args = ap.parse_args()
    if args.count_bins is not None:
        api.COUNT_BINS = None if args.count_bins == "exact" else int(args.count_bins)
    accuracy(args) if args.accuracy else compare(args) if args.compare else table(args)


if __name__ == "__main__":
    main()
