"""#43 item 3, conservativeness study: the log ratio's effective df read from estimated squared shares vs candidates,
all on the same data sets and relabellings (bench/df_study.py). Variants: ``cur`` (v^2 / w, the code),
``kc`` (Satterthwaite with the squared shares' variance: 2 V^2 / (W - sum_s V_s^2 / K_s), K_s the working-model
number of identities of side s, weights = comparisons), ``model`` (V^2 / sum_s V_s^2 / K_s), ``kc_half``
(min(2 cur, kc)), ``normal`` (no t), ``mk`` (min(model, kc)), ``pool*`` (each side's variance at the pair's pooled
rate, score type; FNMR), ``noterm`` (FNMR@FMR without the threshold's term), ``termdf0`` (the term, the df without
it), ``comb``/``kcomb`` (the term's shares in the df, no min rule). Usage: ``NUMBA_NUM_THREADS=1 python
bench/level_df.py N [v1,v2,...] part [part ...]`` (parts: tuned, new, threshold, newthr, heavy, gen, gen2). Writes
bench/results/level_df_<parts>.csv (rate: raw; rate_rule: with the not-testable rule)."""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, "src")
sys.path.insert(0, "bench")
import df_study  # noqa: E402
import test_level as tl  # noqa: E402
from matchaudit.estimators.permutation import exceedances, pvalue, standardize  # noqa: E402
from matchaudit.estimators.testability import testable  # noqa: E402

VARIANTS = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 and "," in sys.argv[2] else (
    "cur", "kc", "model", "kc_half", "normal", "noterm", "mk", "pool", "pool_kc", "pool_n", "termdf0", "comb", "kcomb")
B, LEVEL = 199, 0.05

def rejections(data, metric, seed, **kw):
    """Per variant: (raw rejections averaged over pairs, with the not-testable rule)."""
    G = len(data.group_names)
    st = df_study.matching_statistics(data, metric, None, comparisons=None if G == 2 else "pairs", n_resamples=B,
                                      seed=seed, **kw)
    dv = dict(st.details["df_variants"])
    dv["termdf0"] = dv["noterm"]
    dv["mk"] = tuple(np.minimum(dv["model"][i], dv["kc"][i]) for i in range(2))  # min(model, kc)
    ok = np.array([testable(st.details, j) is None for j in range(len(st.t))])
    out = {}
    for name in VARIANTS:
        if name.startswith("pool"):
            if "pooled" not in st.details:
                out[name] = out["cur"]
                continue
            (V, W, E2), (Vp, Wp, E2p) = st.details["pooled"]
            ex = st.details.get("study_ex0")
            V = V[0] + (0.0 if ex is None else ex)  # the threshold's term as in the code (observed only)
            W, E2 = W[0], E2[0]
            if name == "pool":
                df, dfp = V**2 / W, Vp**2 / Wp
            elif name == "pool_kc":
                kc = lambda V, W, E2: np.where(W - E2 > 0, 2 * V**2 / (W - E2), np.inf)  # noqa: E731
                df, dfp = kc(V, W, E2), kc(Vp, Wp, E2p)
            else:
                df = dfp = None
            z = standardize(st.t, V, st.t_perm, Vp, True, df, dfp)
            k = exceedances(z.statistic, z.null, "two-sided")
            rej = (pvalue(k, st.t_perm.shape[0], False) <= LEVEL) & np.isfinite(z.statistic) & (V > 0)
            out[name] = (float(rej.mean()), float((rej & ok).mean()))
            continue
        df, dfp = (None, None) if name == "normal" else (dv[name][0][0], dv[name][1])
        if name == "termdf0":  # the threshold's term in the variance, the df of the FNMR part alone
            df, dfp = dv["noterm"][0][0], dv["noterm"][1]
        v = st.v
        if name == "noterm":  # FNMR@FMR: the threshold's error term left out of the observed variance
            v = st.v - (st.details.get("study_ex0") if st.details.get("study_ex0") is not None else 0.0)
        z = standardize(st.t, v, st.t_perm, st.v_perm, True, df, dfp)
        k = exceedances(z.statistic, z.null, "two-sided")
        rej = (pvalue(k, st.t_perm.shape[0], False) <= LEVEL) & np.isfinite(z.statistic) & (np.asarray(st.v) > 0)
        out[name] = (float(rej.mean()), float((rej & ok).mean()))
    return out


TUNED = [  # (label, metric, groups) from bench/test_level.py CONCENTRATED
    d for d in tl.CONCENTRATED if d[0].split(" (")[0] in (
        "150x3 indep vs 25x15 Beta(0.1,1.9)", "150x3 indep vs 25x105 Beta(0.1,1.9)", "150x3 indep vs 25x15 10% hard",
        "150x3 indep vs 25x15 Beta(1,19)", "150x3 indep vs 25x15 lognormal odds", "60x6 vs 40x6, both Beta(0.1,1.9)",
        "4 groups: 100x3 indep, 25x15 Beta(0.1,1.9), 40x6 lognormal, 30x10 10% hard",
        "FMR 150x20 indep vs 25x120 Beta(0.1,1.9)", "FMR 150x20 indep vs 25x120 10% hard",
        "FMR 60x40 vs 40x40, both Beta(0.1,1.9)")]
NEW = [
    ("N1 3 groups: 200x4 indep, 30x20 twopoint, 60x8 Beta(0.1,1.9)", "fnmr",
     [(200, 4, "independent"), (30, 20, "twopoint"), (60, 8, "beta2")]),
    ("N2 300x2 indep vs 40x30 Gamma(0.3)", "fnmr", [(300, 2, "independent"), (40, 30, "gamma0.3")]),
    ("N3 30x40 twopoint vs 90x5 indep", "fnmr", [(30, 40, "twopoint"), (90, 5, "independent")]),
    ("N4 FMR 100x30 indep vs 30x100 Gamma(0.3)", "fmr", [(100, 30, "independent"), (30, 100, "gamma0.3")]),
    ("N5 FNMR 50x10 Gamma(0.5) vs 50x10 Gamma(0.5)", "fnmr", [(50, 10, "gamma0.5"), (50, 10, "gamma0.5")]),
    ("N6 FMR 3 groups: 120x20 indep, 40x60 twopoint, 25x80 Gamma(0.5)", "fmr",
     [(120, 20, "independent"), (40, 60, "twopoint"), (25, 80, "gamma0.5")]),
]
NEWTHR = [
    ("T1 3 groups 200x2 (s 1.5), 30x12 (s 0.6), 80x5 (s 1)", [(200, 2, 1.5), (30, 12, 0.6), (80, 5, 1.0)]),
    ("T2 40x8 (s 0.5) vs 40x8 (s 1.5)", [(40, 8, 0.5), (40, 8, 1.5)]),
    ("T3 250x4 (s 1.2) vs 20x25 (s 0.8)", [(250, 4, 1.2), (20, 25, 0.8)]),
]


def run(parts, n):
    rows = []

    def record(label, metric, hits, n_sets):
        for v in VARIANTS:
            raw, rule = hits[v][0] / n_sets, hits[v][1] / n_sets
            rows.append({"design": label, "metric": metric, "variant": v, "rate": round(raw, 4),
                         "rate_rule": round(rule, 4), "se": round(float(np.sqrt(0.05 * 0.95 / n_sets)), 4),
                         "sets": n_sets})
        print(f"{label} [{metric}] n={n_sets}: " + "  ".join(
            f"{v} {hits[v][0] / n_sets:.3f}/{hits[v][1] / n_sets:.3f}" for v in VARIANTS), flush=True)

    def add(h, r):
        for v in VARIANTS:
            h[v][0] += r[v][0]
            h[v][1] += r[v][1]

    for part in parts:
        if part in ("tuned", "new"):
            for label, metric, groups in (TUNED if part == "tuned" else NEW):
                h = {v: [0.0, 0.0] for v in VARIANTS}
                for i in range(n):
                    data = (tl.impostor_design(30_000 + i, groups, 0.05) if metric == "fmr"
                            else tl.genuine_design(30_000 + i, groups))
                    add(h, rejections(data, metric, i, threshold=0.5))
                record(label, metric, h, n)
        if part in ("threshold", "newthr"):
            for label, groups in (tl.THRESHOLD if part == "threshold" else NEWTHR):
                h = {v: [0.0, 0.0] for v in VARIANTS}
                for i in range(n):
                    data, alpha, _ = tl.threshold_design(20_000 + i, groups, impostors=20_000)
                    add(h, rejections(data, "fnmr_at_fmr", i, fmr_target=alpha))
                record(label, "fnmr_at_fmr", h, n)
        if part == "heavy":
            for label, groups in tl.HEAVY[:1] + tl.HEAVY[3:5]:
                h = {v: [0.0, 0.0] for v in VARIANTS}
                for i in range(n):
                    add(h, rejections(tl.heavy_design(60_000 + i, groups), "fnmr", i, threshold=0.0))
                record(label, "fnmr", h, n)
        if part == "gen2":  # test_level's generator designs, 2 groups x 40 identities, FNMR@FMR
            import generators
            for gen in ("tscore", "vmf", "lookalike"):
                h = {v: [0.0, 0.0] for v in VARIANTS}
                for i in range(n):
                    data = generators.make(gen, 2, 40, 4, 50_000 + i)
                    k = data.identity_sizes.astype(float)
                    imp = (k.sum() ** 2 - (k**2).sum()) / 2
                    add(h, rejections(data, "fnmr_at_fmr", i, fmr_target=20 / imp))
                record(f"G2 {gen} 2 groups x 40 ids x 4", "fnmr_at_fmr", h, n)
        if part == "gen":
            import generators
            for gen, G, ids in (("lookalike", 3, 30), ("tscore", 3, 30), ("vmf", 2, 60)):
                for metric in ("fnmr_at_fmr", "fmr"):
                    h = {v: [0.0, 0.0] for v in VARIANTS}
                    for i in range(n):
                        data = generators.make(gen, G, ids, 4, 70_000 + i)
                        k = data.identity_sizes.astype(float)
                        imp = (k.sum() ** 2 - (k**2).sum()) / 2
                        kw = ({"fmr_target": 20 / imp} if metric == "fnmr_at_fmr"
                              else {"threshold": tl._threshold(data, 100 / imp)})
                        add(h, rejections(data, metric, i, **kw))
                    record(f"G {gen} {G} groups x {ids} ids x 4", metric, h, n)
    return rows


if __name__ == "__main__":
    n = int(sys.argv[1])
    parts = [p for p in sys.argv[2:] if "," not in p]
    t0 = time.time()
    rows = run(parts, n)
    out = Path(f"bench/results/level_df_{'_'.join(parts)}.csv")
    with out.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    print(f"{time.time() - t0:.0f} s -> {out}")
