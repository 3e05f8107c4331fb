"""#43 item 3 study: a wild cluster bootstrap, restricted (WCR; Cameron, Gelbach & Miller 2008; MacKinnon & Webb
2017) at the identity level, against the current identity-level permutation test, on the same data sets.

Null that keeps the design: under H0 p_a = p_b fit the pooled rate p0 of the pair's two groups; every identity keeps
its group and its comparisons, and its residual is multiplied by a random weight w_k (Rademacher ``rad`` or Webb's
6-point ``webb``):
- FNMR: ``e*_k = p0 g_k + w_k (e_k - p0 g_k)``.
- FMR (same-group impostor pairs; the cluster is still the identity): each same-group pair (k, l) gets
  ``e*_kl = p0 m_kl + (w_k + w_l) (e_kl - p0 m_kl)``, i.e. an identity's sign moves all of its pairs (the pair sum's
  projection onto identities: ``E* - p0 M = sum_k w_k row_k``); the statistic's clustered variance is then the code's
  two-way one (``ClusterTerms.fmr``: ``(s + max(sum_k row_k^2 - 2 s, 0)) / M^2``) recomputed on e*.
The same statistic is computed on the data and on each of B replicates, p = (1 + #{|S*| >= |S|}) / (1 + B).
Statistics: ``log_t`` (the code's: log ratio of q = (errors + 1/2) / comparisons, errors floored at 0 in the
replicates, delta-method clustered variance, read as a t with df = v^2 / w), ``log_n`` (same, normal reading),
``diff_t`` (the studentized difference, t reading with df = v^2 / w), ``diff_n`` (studentized difference, plain).
3+ groups: every pair separately (p0 of the pair's two groups, only their identities' weights), mean over pairs.
``cur``: ``matching_group_test`` / ``matching_all_groups_test`` defaults, ``sparse_rule=False``, B = 199.

Usage: ``PYTHONPATH=src NUMBA_NUM_THREADS=1 python bench/wcr_level.py N_SETS B_WCR part [part ...]`` (parts:
``tuned``, ``new``, ``fmr``, ``power``, ``control`` (independent errors: the implementation's check), or design tags like ``N3``; an argument ending .csv: the output). Appends rows to
bench/results/wcr_level.csv (design, metric, variant, rate, se, sets). ``FMR_FLIP=pair`` in the environment: one
weight per same-group identity pair instead of w_k + w_l (the simpler scheme; bench/results/wcr_level_fmr_pairflip.csv
came from ``FMR_FLIP=pair ... bench/wcr_level.py 400 399 bench/results/wcr_level_fmr_pairflip.csv fmr N4``).
The main table: ``... bench/wcr_level.py 1000 399 tuned fmr new power`` (about 13 min on one core).
"""

from __future__ import annotations

import csv
import os
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri, stdtr

sys.path.insert(0, "src")
sys.path.insert(0, "bench")
import test_level as tl  # noqa: E402
from matchaudit.auditing.matching_passes import cluster_terms, matching_all_groups_test, matching_group_test  # noqa: E402

LEVEL, B_PERM = 0.05, 199
OUT = Path(sys.argv[3] if len(sys.argv) > 3 and sys.argv[3].endswith(".csv") else "bench/results/wcr_level.csv")
STATS = ("log_t", "log_n", "diff_t", "diff_n")
WEIGHTS = ("rad", "webb", "mammen")
NULLS = ("R", "U")  # restricted (pooled rate p0) / unrestricted (each group's own rate; statistic centred)
PTYPES = ("sym", "eqt")  # |S*| >= |S| / equal-tailed 2 min(P(S* >= S), P(S* <= S))
WCR = tuple(f"{n}_{w}_{s}_{p}" for n in NULLS for w in WEIGHTS for s in STATS for p in PTYPES)
VARIANTS = ("cur",) + WCR


FMR_FLIP = os.environ.get("FMR_FLIP", "identity")  # identity: pair residual x (w_k + w_l); pair: x w_kl
_orig_rates = tl.per_identity_rates


def rates(shape, n, mean, rng):
    """``<shape>@<mean>``: that group's own mean (power); otherwise test_level's laws."""
    if "@" in shape:
        shape, m = shape.split("@")
        mean = float(m)
    return _orig_rates(shape, n, mean, rng)


tl.per_identity_rates = rates


def weights(kind, B, n, rng):
    if kind == "rad":
        return rng.choice(np.array([-1.0, 1.0]), size=(B, n))
    if kind == "mammen":  # E w = 0, E w^2 = E w^3 = 1: keeps the residuals' skewness
        s5 = np.sqrt(5.0)
        return np.where(rng.random((B, n)) < (s5 + 1) / (2 * s5), -(s5 - 1) / 2, (s5 + 1) / 2)
    six = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])
    return rng.choice(six, size=(B, n))


def tz(s, df):
    """t reading mapped to the normal scale (permutation.normal_scale)."""
    ok = np.isfinite(s) & np.isfinite(df) & (df > 0)
    dd = np.where(ok, df, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(s < 0, ndtri(stdtr(dd, s)), -ndtri(stdtr(dd, -s)))
    return np.where(ok, z, s)


def raw(E, G, v, w):
    """{scale: (t, V, W)} (R,) each, from per-side errors E, comparisons G, clustered variances v (of the rate) and
    squared shares w, each a pair (a, b) of (R,) arrays. Log: q = (max(E, 0) + 1/2) / G."""
    (Ea, Eb), (Ga, Gb), (va, vb), (wa, wb) = E, G, v, w
    pa, pb = Ea / Ga, Eb / Gb
    with np.errstate(divide="ignore", invalid="ignore"):
        qa, qb = (np.maximum(Ea, 0) + 0.5) / Ga, (np.maximum(Eb, 0) + 0.5) / Gb
        t = np.where(pa == pb, 0.0, np.log(qa) - np.log(qb))
        return {"log": (t, va / qa**2 + vb / qb**2, wa / qa**4 + wb / qb**4), "diff": (pa - pb, va + vb, wa + wb)}


def statistics(r, centre=None):
    """{stat: (R,)}: studentized (t - centre) / sqrt(V), plain (_n) or read as a t with df V^2 / W (_t)."""
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for sc, (t, V, W) in r.items():
            c = 0.0 if centre is None else centre[sc][0]
            s = np.where(V > 0, (t - c) / np.sqrt(V), 0.0)
            out[f"{sc}_n"] = s
            out[f"{sc}_t"] = tz(s, np.where(W > 0, V**2 / W, np.inf))
    return out


def decide(S, Sb, tag, out, B):
    for st in STATS:
        s, sb = S[st][0], Sb[st]
        out[f"{tag}_{st}_sym"] = float((1 + (np.abs(sb) >= abs(s) - 1e-12).sum()) / (1 + B) <= LEVEL)
        hi, lo = (sb >= s - 1e-12).sum(), (sb <= s + 1e-12).sum()
        out[f"{tag}_{st}_eqt"] = float(min(1.0, 2 * (1 + min(hi, lo)) / (1 + B)) <= LEVEL)


def fnmr_side(g, e):
    """e (R, n) errors of a side's identities with genuine counts g (n,): E, G, v, w per row."""
    G = g.sum()
    E = e.sum(axis=1)
    p = E / G
    c = (e - p[:, None] * g[None, :]) ** 2 / G**2
    return E, np.full(E.shape, G), c.sum(axis=1), (c * c).sum(axis=1)


def fmr_side(m, e, inc):
    """e (R, P) accepted impostors of a side's same-group pairs with comparisons m (P,); inc (P, n) pair-identity
    incidence: E, M, v, w per row as ClusterTerms.fmr."""
    M = m.sum()
    E = e.sum(axis=1)
    p = E / M
    res = e - p[:, None] * m[None, :]
    s = (res**2).sum(axis=1)
    row = np.asarray((inc.T @ res.T).T)  # (R, n)
    cov = (row**2).sum(axis=1) - 2 * s
    v = (s + np.maximum(cov, 0.0)) / M**2
    w = (row**4).sum(axis=1) / (2 * M) ** 4
    return E, np.full(E.shape, M), v, w


def wcr_pair(terms, grp, a, b, metric, rng, B):
    """{variant: rejected (0/1)} for groups a, b: every null x weight x statistic x p-value type, on the same draws
    of weights for R and U."""
    out = {}
    if metric == "fnmr":
        ida, idb = np.flatnonzero(grp == a), np.flatnonzero(grp == b)
        g, e = terms.g, terms.e
        p0 = (e[ida].sum() + e[idb].sum()) / (g[ida].sum() + g[idb].sum())
        R0 = raw(*zip(*[fnmr_side(g[ix], e[ix][None, :]) for ix in (ida, idb)]))
        S = statistics(R0)
        for wk in WEIGHTS:
            W = weights(wk, B, ida.size + idb.size, rng)
            for null in NULLS:
                reps = []
                for ix, Wx in ((ida, W[:, :ida.size]), (idb, W[:, ida.size:])):
                    p = p0 if null == "R" else e[ix].sum() / g[ix].sum()
                    r = e[ix] - p * g[ix]
                    reps.append(fnmr_side(g[ix], p * g[ix][None, :] + Wx * r[None, :]))
                decide(S, statistics(raw(*zip(*reps)), None if null == "R" else R0), f"{null}_{wk}", out, B)
        return out
    # FMR: same-group pairs of each side; pair (k, l) residual times w_k + w_l
    Mt = sp.triu(terms.M, 1).tocoo()
    Et = sp.triu(terms.E, 1).tocsr()
    sides = []
    for s_ in (a, b):
        keep = (grp[Mt.row] == s_) & (grp[Mt.col] == s_)
        k, l, m = Mt.row[keep], Mt.col[keep], Mt.data[keep]
        e = np.asarray(Et[k, l]).ravel()
        ids = np.flatnonzero(grp == s_)
        loc = np.full(grp.size, -1)
        loc[ids] = np.arange(ids.size)
        P = k.size
        inc = sp.csr_matrix((np.ones(2 * P), (np.r_[np.arange(P), np.arange(P)], np.r_[loc[k], loc[l]])),
                            shape=(P, ids.size))
        sides.append((loc[k], loc[l], m, e, inc, ids.size))
    p0 = sum(s[3].sum() for s in sides) / sum(s[2].sum() for s in sides)
    R0 = raw(*zip(*[fmr_side(m, e[None, :], inc) for _, _, m, e, inc, _ in sides]))
    S = statistics(R0)
    for wk in WEIGHTS:
        Ws = [weights(wk, B, s[5], rng) for s in sides]
        for null in NULLS:
            reps = []
            for (lk, ll, m, e, inc, n), W in zip(sides, Ws):
                p = p0 if null == "R" else e.sum() / m.sum()
                r = e - p * m
                # FMR_FLIP=pair: one weight per identity pair (cluster = pair; the identities' links are lost)
                u = weights(wk, B, m.size, rng) if FMR_FLIP == "pair" else W[:, lk] + W[:, ll]
                reps.append(fmr_side(m, p * m[None, :] + u * r[None, :], inc))
            decide(S, statistics(raw(*zip(*reps)), None if null == "R" else R0), f"{null}_{wk}", out, B)
    return out


def one_set(data, metric, seed, B):
    G = len(data.group_names)
    if G == 2:
        cur = [float(matching_group_test(data, metric, n_resamples=B_PERM, seed=seed, threshold=0.5,
                                         sparse_rule=False).pvalue <= LEVEL)]
    else:
        res = matching_all_groups_test(data, metric, n_resamples=B_PERM, seed=seed, threshold=0.5, sparse_rule=False)
        cur = [float(r["pvalue"] <= LEVEL) for r in res.rows]
    terms = cluster_terms(data, 0.5, ">=")
    grp = data.identity_group
    rng = np.random.default_rng(10_000_000 + seed)
    outs = [wcr_pair(terms, grp, a, b, metric, rng, B) for a, b in combinations(range(G), 2)]
    res = {"cur": float(np.mean(cur))}
    for v in VARIANTS[1:]:
        res[v] = float(np.mean([o[v] for o in outs]))
    return res


TUNED = [d for d in tl.CONCENTRATED if d[1] == "fnmr" and d[0] in (
    "150x3 indep vs 25x15 Beta(0.1,1.9)", "150x3 indep vs 25x105 Beta(0.1,1.9)", "150x3 indep vs 25x15 Beta(1,19)",
    "150x3 indep vs 25x15 lognormal odds", "150x3 indep vs 25x15 10% hard", "60x6 vs 40x6, both Beta(0.1,1.9)",
    "4 groups: 100x3 indep, 25x15 Beta(0.1,1.9), 40x6 lognormal, 30x10 10% hard")]
FMR = [d for d in tl.CONCENTRATED if d[0] in ("FMR 150x20 indep vs 25x120 Beta(0.1,1.9)",
                                              "FMR 60x40 vs 40x40, both Beta(0.1,1.9)")]
from level_df import NEW  # noqa: E402  (the designs nobody tuned on)
POWER = [("POWER 150x3 indep (0.05) vs 25x15 Beta(0.1,1.9) at 0.10", "fnmr",
          [(150, 3, "independent"), (25, 15, "beta2@0.10")])]
SHOW = ("cur",) + tuple(f"{n}_{w}_{s}_{p}" for n in NULLS for w in WEIGHTS for s in ("log_t", "diff_n")
                        for p in PTYPES)
CONTROL = [("C1 100x5 indep vs 100x5 indep", "fnmr", [(100, 5, "independent"), (100, 5, "independent")]),
           ("C2 FMR 100x20 indep vs 60x20 indep", "fmr", [(100, 20, "independent"), (60, 20, "independent")])]
PARTS = {"tuned": TUNED, "fmr": FMR, "new": NEW, "power": POWER, "control": CONTROL}


def run(designs, n, B):
    for label, metric, groups in designs:
        t0 = time.time()
        h = dict.fromkeys(VARIANTS, 0.0)
        for i in range(n):
            data = (tl.impostor_design(30_000 + i, groups, 0.05) if metric == "fmr"
                    else tl.genuine_design(30_000 + i, groups))
            r = one_set(data, metric, i, B)
            for v in VARIANTS:
                h[v] += r[v]
        rows = [{"design": label, "metric": metric, "variant": v, "rate": round(h[v] / n, 4),
                 "se": round(float(np.sqrt(0.05 * 0.95 / n)), 4), "sets": n, "B_wcr": B} for v in VARIANTS]
        new = not OUT.exists()
        with OUT.open("a", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                wr.writeheader()
            wr.writerows(rows)
        print(f"{label} [{metric}] n={n} ({time.time() - t0:.0f} s): "
              + "  ".join(f"{v} {h[v] / n:.3f}" for v in SHOW), flush=True)


if __name__ == "__main__":
    n, B = int(sys.argv[1]), int(sys.argv[2])
    designs = []
    for p in (a for a in sys.argv[3:] if not a.endswith(".csv")):
        designs += PARTS[p] if p in PARTS else [d for L in PARTS.values() for d in L if d[0].startswith(p)]
    run(designs, n, B)
