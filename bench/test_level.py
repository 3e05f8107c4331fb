"""Level of the identity-level group tests in unequal designs (#43 item 3): concentrated errors, a threshold set by
about 20 impostor errors, sparse counts, 2 and 4 groups.

Run from the repository root: ``NUMBA_NUM_THREADS=1 .venv/bin/python bench/test_level.py [n_sets] [part ...]``
(parts: ``threshold``, ``concentrated``, ``sparse``, ``generators``, ``effective`` (the raw test's level by effective
errors, the study behind ``MIN_EFFECTIVE_ERRORS``); default the first four; ``fmr``: the FMR rows of
``concentrated`` and ``sparse`` alone, rerun 2026-11-28 when the impostor generator stopped rescaling each sample to
its mean). Writes
``bench/results/test_level_<parts>.csv`` (one row per design, generator, metric and test variant: rejection rate at
0.05, its binomial Monte-Carlo SE at 0.05, data sets) and prints the markdown tables of docs/tests.md ("Level in
unequal designs"). ``old``: the studentized difference with the threshold treated as known (before #43 item 3);
``new``: the defaults (log ratio; the threshold's error in the variance).
"""

from __future__ import annotations

import csv
import functools
import sys
import time
from pathlib import Path

import numpy as np
from scipy import integrate, optimize, stats
from scipy.special import expit

sys.path.insert(0, "src")
sys.path.insert(0, "bench")
import matchaudit as ma  # noqa: E402
from matchaudit.auditing.matching_passes import matching_all_groups_test, matching_group_test  # noqa: E402

B = 199
LEVEL = 0.05
OUT = Path("bench/results/test_level.csv")


# ----------------------------------------------------------------------------- generators

def per_identity_rates(shape: str, n: int, mean: float, rng: np.random.Generator) -> np.ndarray:
    """Per-identity error probabilities with mean ``mean``: ``independent`` (all equal), ``beta<c>`` (Beta(c mean,
    c (1 - mean)): ``beta2`` is Beta(0.1, 1.9) at mean 0.05), ``lognormal`` (normal log-odds, SD 1.5, rescaled to the
    mean), ``hard10`` (10% hard identities carrying 64% of the errors); laws nobody tuned on (bench/level_df.py,
    bench/wcr_level.py): ``gamma<s>`` (Gamma(s) scaled to the mean, clipped at 1) and ``twopoint`` (20% of identities
    at 4 x the mean: 80% of the errors)."""
    if shape == "independent":
        return np.full(n, mean)
    if shape.startswith("beta"):
        c = float(shape[4:])  # concentration: Beta(c mean, c (1 - mean)); c = 2: Beta(0.1, 1.9) at mean 0.05
        return rng.beta(c * mean, c * (1 - mean), n)
    if shape == "lognormal":
        sd = 1.5
        odds = lambda z: expit(np.log(mean / (1 - mean)) + sd * z)  # noqa: E731
        scale = mean / integrate.quad(lambda z: odds(z) * stats.norm.pdf(z), -12, 12)[0]  # mean exactly `mean`
        return np.clip(scale * odds(rng.normal(size=n)), 0, 1)
    if shape == "hard10":
        hard = rng.random(n) < 0.1
        return np.where(hard, 6.4 * mean, 0.4 * mean)
    if shape.startswith("gamma"):
        s = float(shape[5:])
        return np.clip(rng.gamma(s, mean / s, n), 0, 1)
    if shape == "twopoint":
        hard = rng.random(n) < 0.2
        return np.where(hard, 4.0 * mean, 0.25 * mean)
    raise ValueError(shape)


def genuine_design(seed: int, groups: list[tuple[int, int, str]], mean: float = 0.05) -> ma.MatchData:
    """Groups of (identities, genuine comparisons per identity, shape of per-identity error rates), equal FNMR
    ``mean`` (weak null). Failed genuine comparisons score 0.2, others 0.8 (threshold 0.5); one impostor per
    identity (0.1)."""
    rng = np.random.default_rng(seed)
    gk, pk, grp = [], [], []
    for j, (k, g, shape) in enumerate(groups):
        gk.append(np.full(k, g))
        pk.append(per_identity_rates(shape, k, mean, rng))
        grp.append(np.full(k, chr(65 + j)))
    gk, pk, grp = np.concatenate(gk), np.concatenate(pk), np.concatenate(grp)
    K = gk.size
    ida = np.repeat(np.arange(K), gk)
    score = np.where(rng.random(ida.size) < pk[ida], 0.2, 0.8)
    a = np.concatenate([ida, np.arange(K)])
    b = np.concatenate([ida, (np.arange(K) + 1) % K])
    names = np.array([f"i{x}" for x in range(K)])
    return ma.from_scores(np.concatenate([score, np.full(K, 0.1)]), names[a], names[b],
                          label=np.concatenate([np.ones(ida.size, bool), np.zeros(K, bool)]),
                          attributes_a={"g": grp[a]}, attributes_b={"g": grp[b]}, group_by="g")


def impostor_design(seed: int, groups: list[tuple[int, int, str]], mean: float) -> ma.MatchData:
    """FMR analogue: per group (identities, impostor comparisons per identity with same-group partners, shape of
    per-identity false-match propensity); an impostor pair (k, l) is accepted with probability sqrt(q_k q_l) scaled
    so that the *population's* FMR is ``mean`` (:func:`_pair_scale`; scaling by the sample's own mean, as before
    2026-11-28, removed the identities' sampling variance and made every test look conservative). Accepted 0.8,
    rejected 0.2 (threshold 0.5); one genuine comparison per identity."""
    rng = np.random.default_rng(seed)
    ka, kb, acc, grp_a = [], [], [], []
    off = 0
    gname = []
    for j, (k, m, shape) in enumerate(groups):
        q = per_identity_rates(shape, k, mean, rng)
        q = np.sqrt(np.clip(q, 0, 1))
        u = np.repeat(np.arange(k), m)
        v = (u + rng.integers(1, k, u.size)) % k
        pr = q[u] * q[v] * _pair_scale(shape, mean)
        acc.append(rng.random(u.size) < np.clip(pr, 0, 1))
        ka.append(u + off)
        kb.append(v + off)
        gname.append(np.full(k, chr(65 + j)))
        off += k
    grp = np.concatenate(gname)
    ka, kb, acc = np.concatenate(ka), np.concatenate(kb), np.concatenate(acc)
    K = off
    names = np.array([f"i{x}" for x in range(K)])
    a = np.concatenate([ka, np.arange(K)])
    b = np.concatenate([kb, np.arange(K)])
    score = np.concatenate([np.where(acc, 0.8, 0.2), np.full(K, 0.9)])
    return ma.from_scores(score, names[a], names[b], label=np.concatenate([np.zeros(ka.size, bool), np.ones(K, bool)]),
                          attributes_a={"g": grp[a]}, attributes_b={"g": grp[b]}, group_by="g")


@functools.lru_cache
def _pair_scale(shape: str, mean: float) -> float:
    """The factor ``c`` with ``E[min(1, c sqrt(q_k q_l))] = mean`` for two independent identities of ``shape``: the
    population's pair acceptance probability is then ``mean`` (1,000,000 pairs from a fixed seed)."""
    rng = np.random.default_rng(7)
    q = np.sqrt(np.clip(per_identity_rates(shape, 2_000_000, mean, rng), 0, 1))
    pair = q[:1_000_000] * q[1_000_000:]
    return float(optimize.brentq(lambda c: np.minimum(1.0, c * pair).mean() - mean, 0.0, 1e6 / max(pair.mean(), 1e-12)))


def threshold_design(seed: int, groups: list[tuple[int, int, float]], impostors: int, errors: int = 20,
                     fnmr: float = 0.05) -> tuple[ma.MatchData, float, float]:
    """Groups of (identities, genuine comparisons per identity, genuine spread s) whose genuine scores are
    ``t* + z s + identity effect + noise`` (total SD s, half of it per identity), so that every group's FNMR is
    ``fnmr`` at the true threshold ``t*`` of FMR ``errors / impostors``, but the groups' score densities there differ
    (unequal s). ``impostors`` N(0, 1) impostor scores between random identities (plus an identity effect of SD 0.2
    on each side). Returns the data, the FMR target and t*."""
    rng = np.random.default_rng(seed)
    alpha = errors / impostors
    side = 0.2
    t_star = float(stats.norm.isf(alpha) * np.sqrt(1 + 2 * side**2))
    z = stats.norm.isf(fnmr)
    ids, sc, grp = [], [], []
    off = 0
    for j, (k, g, s) in enumerate(groups):
        eff = rng.normal(0, s * np.sqrt(0.5), k)
        u = np.repeat(np.arange(k), g)
        sc.append(t_star + z * s + eff[u] + rng.normal(0, s * np.sqrt(0.5), u.size))
        ids.append(u + off)
        grp.append(np.full(k, chr(65 + j)))
        off += k
    grp = np.concatenate(grp)
    K = off
    eff_i = rng.normal(0, side, K)
    ia = rng.integers(0, K, impostors)
    ib = (ia + rng.integers(1, K, impostors)) % K
    isc = rng.normal(0, 1, impostors) + eff_i[ia] + eff_i[ib]
    gid = np.concatenate(ids)
    names = np.array([f"i{x}" for x in range(K)])
    a, b = np.concatenate([gid, ia]), np.concatenate([gid, ib])
    data = ma.from_scores(np.concatenate([np.concatenate(sc), isc]), names[a], names[b],
                          label=np.concatenate([np.ones(gid.size, bool), np.zeros(impostors, bool)]),
                          attributes_a={"g": grp[a]}, attributes_b={"g": grp[b]}, group_by="g")
    return data, alpha, t_star


# ----------------------------------------------------------------------------- designs

THRESHOLD = [  # (label, groups: (identities, genuine per identity, genuine spread)), 20 impostor errors
    ("150x3 (s 0.5) vs 25x15 (s 2)", [(150, 3, 0.5), (25, 15, 2.0)]),
    ("150x3 (s 2) vs 25x15 (s 0.5)", [(150, 3, 2.0), (25, 15, 0.5)]),
    ("60x6 (s 0.7) vs 60x6 (s 1.4)", [(60, 6, 0.7), (60, 6, 1.4)]),
    ("150x10 (s 0.3) vs 50x10 (s 1.5)", [(150, 10, 0.3), (50, 10, 1.5)]),
    ("100x20 (s 0.3) vs 100x20 (s 1)", [(100, 20, 0.3), (100, 20, 1.0)]),
    ("4 groups 100x3, 40x6, 25x15, 60x4 (s 0.5, 1, 2, 1)", [(100, 3, 0.5), (40, 6, 1.0), (25, 15, 2.0), (60, 4, 1.0)]),
]
CONCENTRATED = [  # (label, metric, groups: (identities, comparisons per identity, shape))
    ("150x3 indep vs 25x15 Beta(0.1,1.9)", "fnmr", [(150, 3, "independent"), (25, 15, "beta2")]),
    ("150x3 indep vs 25x105 Beta(0.1,1.9)", "fnmr", [(150, 3, "independent"), (25, 105, "beta2")]),
    ("150x3 indep vs 25x15 Beta(1,19)", "fnmr", [(150, 3, "independent"), (25, 15, "beta20")]),
    ("150x3 indep vs 25x15 lognormal odds", "fnmr", [(150, 3, "independent"), (25, 15, "lognormal")]),
    ("150x3 indep vs 25x15 10% hard", "fnmr", [(150, 3, "independent"), (25, 15, "hard10")]),
    ("60x6 vs 40x6, both Beta(0.1,1.9)", "fnmr", [(60, 6, "beta2"), (40, 6, "beta2")]),
    ("150x15 Beta(0.1,1.9) vs 25x3 indep (3.75 expected errors in B)", "fnmr",
     [(150, 15, "beta2"), (25, 3, "independent")]),
    ("4 groups: 100x3 indep, 25x15 Beta(0.1,1.9), 40x6 lognormal, 30x10 10% hard", "fnmr",
     [(100, 3, "independent"), (25, 15, "beta2"), (40, 6, "lognormal"), (30, 10, "hard10")]),
    ("FMR 150x20 indep vs 25x120 Beta(0.1,1.9)", "fmr", [(150, 20, "independent"), (25, 120, "beta2")]),
    ("FMR 150x20 indep vs 25x120 10% hard", "fmr", [(150, 20, "independent"), (25, 120, "hard10")]),
    ("FMR 150x20 indep vs 25x120 lognormal odds", "fmr", [(150, 20, "independent"), (25, 120, "lognormal")]),
    ("FMR 60x40 vs 40x40, both Beta(0.1,1.9)", "fmr", [(60, 40, "beta2"), (40, 40, "beta2")]),
]
SPARSE_ERRORS = (1, 2, 3, 5, 10)  # expected errors of the sparser group
VARIANTS = {  # old: the studentized difference (before #43 item 3); new: the log ratio; the last: as the audit runs it,
    # pairs too sparse to test marked "not testable" (testability.testable), which then never reject
    "old": {"scale": "difference", "sparse_rule": False}, "new": {"sparse_rule": False},
    "unstudentized": {"studentize": False, "sparse_rule": False}, "new, not-testable rule": {}}


def _rejected(data: ma.MatchData, metric: str, seed: int, **kw) -> float:
    """Share of the comparisons (one pair, or all pairs of 3+ groups) rejected at LEVEL (raw p-values)."""
    if len(data.group_names) == 2:
        return float(matching_group_test(data, metric, n_resamples=B, seed=seed, **kw).pvalue <= LEVEL)
    res = matching_all_groups_test(data, metric, n_resamples=B, seed=seed, **kw)
    return float(np.mean([r["pvalue"] <= LEVEL for r in res.rows]))


def threshold_rows(n_sets: int) -> list[dict]:
    rows = []
    for label, groups in THRESHOLD:
        hits = {"old": 0.0, "new": 0.0, "true threshold": 0.0}
        for i in range(n_sets):
            data, alpha, t_star = threshold_design(20_000 + i, groups, impostors=20_000)
            hits["old"] += _rejected(data, "fnmr_at_fmr", i, fmr_target=alpha, threshold_error=False,
                                     scale="difference", sparse_rule=False)
            hits["new"] += _rejected(data, "fnmr_at_fmr", i, fmr_target=alpha, sparse_rule=False)
            hits["true threshold"] += _rejected(data, "fnmr", i, threshold=t_star, sparse_rule=False)  # t* known
        rows += [_row(label, "threshold (normal scores)", "fnmr_at_fmr" if v != "true threshold" else "fnmr at t*",
                      v, h / n_sets, n_sets) for v, h in hits.items()]
        _show(rows[-3:])
    return rows


def concentrated_rows(n_sets: int, metrics: tuple[str, ...] = ("fnmr", "fmr")) -> list[dict]:
    rows = []
    for label, metric, groups in (d for d in CONCENTRATED if d[1] in metrics):
        make = genuine_design if metric == "fnmr" else impostor_design
        hits = dict.fromkeys(VARIANTS, 0.0)
        for i in range(n_sets):
            data = make(30_000 + i, groups, 0.05) if metric == "fmr" else make(30_000 + i, groups)
            for v, kw in VARIANTS.items():
                hits[v] += _rejected(data, metric, i, threshold=0.5, **kw)
        rows += [_row(label, "per-identity rates", metric, v, h / n_sets, n_sets) for v, h in hits.items()]
        _show(rows[-3:])
    return rows


def sparse_rows(n_sets: int, metrics: tuple[str, ...] = ("fnmr", "fmr")) -> list[dict]:
    rows = []
    for metric, per in ((m, p) for m, p in (("fnmr", 4), ("fmr", 40)) if m in metrics):
        make = genuine_design if metric == "fnmr" else impostor_design
        for shape in ("independent", "beta2"):
            for err in SPARSE_ERRORS:
                rate = err / (25 * per)  # B: 25 identities x per comparisons; A: 100 identities
                groups = [(100, per, shape), (25, per, shape)]
                hits = {"old": 0.0, "new": 0.0, "permutation-sd": 0.0, "new, not-testable rule": 0.0}
                for i in range(n_sets):
                    data = make(40_000 + i, groups, rate)
                    for v, kw in (VARIANTS | {"permutation-sd": {"studentize": "permutation-sd",
                                                                 "sparse_rule": False}}).items():
                        if v != "unstudentized":
                            hits[v] += _rejected(data, metric, i, threshold=0.5, **kw)
                rows += [_row(f"100x{per} vs 25x{per}, {err} expected errors in B", shape, metric, v, h / n_sets,
                              n_sets) for v, h in hits.items()]
                _show(rows[-3:])
    return rows


def effective_rows(n_sets: int) -> list[dict]:
    """The raw test's rejection rate (``sparse_rule=False``) by the pair's effective errors
    (:func:`matchaudit.estimators.testability.sparse_counts`), pooled over 21 designs: sparse FMR and FNMR whose
    per-identity rates are Beta(2r, 2(1 - r)) (and Beta(20r, ...)) at 3-40 expected errors, and the concentrated
    designs above; the bins behind ``MIN_EFFECTIVE_ERRORS``. Rows: bin, rejection rate, data sets."""
    designs = [(f"sparse FMR beta2 {e}", "fmr", [(100, 40, "beta2"), (25, 40, "beta2")], e / 1000)
               for e in (3, 5, 10, 20, 40)]
    designs += [("sparse FMR beta20 10", "fmr", [(100, 40, "beta20"), (25, 40, "beta20")], 10 / 1000)]
    designs += [(label, m, g, 0.05 if m == "fmr" else None) for label, m, g in CONCENTRATED
                if not label.startswith("4 groups")]
    designs += [(f"sparse FNMR beta2 {e}", "fnmr", [(100, 4, "beta2"), (25, 4, "beta2")], e / 100)
                for e in (3, 5, 10, 20)]
    seen = []
    for label, metric, groups, rate in designs:
        for i in range(n_sets):
            if metric == "fmr":
                data = impostor_design(40_000 + i, groups, rate)
            else:
                data = genuine_design(40_000 + i, groups) if rate is None else genuine_design(40_000 + i, groups, rate)
            res = matching_group_test(data, metric, threshold=0.5, n_resamples=B, seed=i, sparse_rule=False)
            seen.append((res.details["effective_errors"][0], res.pvalue <= LEVEL))
        print(label, flush=True)
    eff, rej = np.array(seen, float).T
    edges = [0, 1, 2, 3, 4, 5, 7, 10, 20, np.inf]
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        k = (eff > lo) & (eff <= hi) if lo > 0 else eff <= hi
        rows.append({"design": f"effective errors in ({lo:g}, {hi:g}]" if lo > 0 else f"effective errors <= {hi:g}",
                     "generator": "21 designs", "metric": "fnmr and fmr", "variant": "new (raw test)",
                     "rate": round(float(rej[k].mean()), 4) if k.any() else float("nan"),
                     "se": round(float(np.sqrt(LEVEL * (1 - LEVEL) / max(k.sum(), 1))), 4), "n_sets": int(k.sum()),
                     "n_resamples": B})
    _show(rows)
    return rows


def heavy_design(seed: int, groups: list[tuple[int, int, float, float]], threshold: float = 0.0,
                 fnmr: float = 0.03) -> ma.MatchData:
    """Continuous genuine scores ``mu + identity effect (t with 3 df, scale s_id) + noise (normal, s_noise)``, per
    group (identities, genuine per identity, s_id, s_noise), ``mu`` set so that every group's population FNMR at
    ``threshold`` is ``fnmr`` (the weak null): a large ``s_id`` against a small noise puts a group's errors in the few
    identities of the t's lower tail. One impostor per identity, far below the threshold. (A check on designs the
    tests were not tuned on, 2026-11-28.)"""
    rng = np.random.default_rng(seed)
    ids, sc, grp, off = [], [], [], 0
    for j, (k, m, s_id, s_noise) in enumerate(groups):
        eff = s_id * rng.standard_t(3, k)
        u = np.repeat(np.arange(k), m)
        sc.append(_heavy_mu(s_id, s_noise, threshold, fnmr) + eff[u] + s_noise * rng.normal(size=u.size))
        ids.append(u + off)
        grp.append(np.full(k, chr(65 + j)))
        off += k
    gid, grp = np.concatenate(ids), np.concatenate(grp)
    partner = np.concatenate([np.roll(np.flatnonzero(grp == g), 1) for g in np.unique(grp)])
    own = np.concatenate([np.flatnonzero(grp == g) for g in np.unique(grp)])
    names = np.array([f"i{x}" for x in range(off)])
    a, b = np.concatenate([gid, own]), np.concatenate([gid, partner])
    return ma.from_scores(np.concatenate([np.concatenate(sc), np.full(off, threshold - 10.0)]), names[a], names[b],
                          label=np.concatenate([np.ones(gid.size, bool), np.zeros(off, bool)]),
                          attributes_a={"g": grp[a]}, attributes_b={"g": grp[b]}, group_by="g")


@functools.lru_cache
def _heavy_mu(s_id: float, s_noise: float, threshold: float, fnmr: float) -> float:
    """``mu`` with P(mu + s_id t3 + s_noise z < threshold) = fnmr (4,000,000 draws from a fixed seed)."""
    r = np.random.default_rng(14)
    return float(threshold - np.quantile(s_id * r.standard_t(3, 4_000_000) + s_noise * r.normal(size=4_000_000), fnmr))


HEAVY = [  # (label, groups: (identities, genuine per identity, t3 scale of the identity effect, noise SD))
    ("40x8 clustered (t3 1.0, noise 0.3) vs 120x4 (t3 0.2, noise 1.0)", [(40, 8, 1.0, 0.3), (120, 4, 0.2, 1.0)]),
    ("80x8 clustered vs 120x4", [(80, 8, 1.0, 0.3), (120, 4, 0.2, 1.0)]),
    ("120x8 clustered vs 120x4", [(120, 8, 1.0, 0.3), (120, 4, 0.2, 1.0)]),
    ("40x8 vs 120x4, both clustered (same law)", [(40, 8, 1.0, 0.3), (120, 4, 1.0, 0.3)]),
    ("40x8 vs 120x4, both t3 0.5, noise 0.8", [(40, 8, 0.5, 0.8), (120, 4, 0.5, 0.8)]),
    ("40x8 (t3 0.2, noise 1.0) vs 120x4 clustered", [(40, 8, 0.2, 1.0), (120, 4, 1.0, 0.3)]),
]


def heavy_rows(n_sets: int) -> list[dict]:
    """FNMR with heavy-tailed identity effects (:func:`heavy_design`), the test as run (not-testable rule on)."""
    rows = []
    for label, groups in HEAVY:
        hits = sum(_rejected(heavy_design(60_000 + i, groups), "fnmr", i, threshold=0.0) for i in range(n_sets))
        rows.append(_row(label, "t3 identity effects", "fnmr", "new, not-testable rule", hits / n_sets, n_sets))
        _show(rows[-1:])
    return rows


def generator_rows(n_sets: int) -> list[dict]:
    """bench/generators.py (vmf, lookalike, tscore; groups from one law, all pairs of 4 samples per identity): FNMR at
    the all-impostor threshold of about 20 impostor errors, and same-group FMR at the threshold of about 100."""
    import generators

    rows = []
    for gen in generators.GENERATORS:
        for groups, ids in ((2, 40), (4, 25)):
            hits = {f"{m} {v}": 0.0 for m in ("fnmr_at_fmr", "fmr") for v in ("old", "new", "rule")}
            for i in range(n_sets):
                data = generators.make(gen, groups, ids, 4, 50_000 + i)
                k = data.identity_sizes.astype(float)
                impostors = (k.sum() ** 2 - (k**2).sum()) / 2
                old = {"threshold_error": False, "scale": "difference", "sparse_rule": False}
                for name, kw in (("old", old), ("new", {"sparse_rule": False}), ("rule", {})):
                    hits[f"fnmr_at_fmr {name}"] += _rejected(data, "fnmr_at_fmr", i, fmr_target=20 / impostors, **kw)
                thr = _threshold(data, 100 / impostors)
                for name, kw in (("old", {"scale": "difference", "sparse_rule": False}),
                                 ("new", {"sparse_rule": False}), ("rule", {})):
                    hits[f"fmr {name}"] += _rejected(data, "fmr", i, threshold=thr, **kw)
            label = f"{groups} groups x {ids} identities x 4 samples"
            rows += [_row(label, gen, k.split()[0], k.split()[1], h / n_sets, n_sets) for k, h in hits.items()]
            _show(rows[-6:])
    return rows


def _threshold(data: ma.MatchData, fmr_target: float) -> float:
    from matchaudit.engine import target_thresholds
    return float(target_thresholds(data, [fmr_target])[0])


def _row(design: str, generator: str, metric: str, variant: str, rate: float, n: int) -> dict:
    return {"design": design, "generator": generator, "metric": metric, "variant": variant, "rate": round(rate, 4),
            "se": round(float(np.sqrt(LEVEL * (1 - LEVEL) / n)), 4), "n_sets": n, "n_resamples": B}


def _show(rows: list[dict]) -> None:
    for r in rows:
        print(f"| {r['design']} | {r['generator']} | {r['metric']} | {r['variant']} | {r['rate']:.3f} | "
              f"{r['se']:.3f} | {r['n_sets']} |", flush=True)


def main(n_sets: int, parts: list[str]) -> None:
    t0 = time.time()
    print("| design | generator | metric | variant | rejection rate at 0.05 | MC SE | data sets |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for part in parts:
        rows += {"threshold": threshold_rows, "concentrated": concentrated_rows, "sparse": sparse_rows,
                 "generators": generator_rows,
                 "fmr": lambda n: concentrated_rows(n, ("fmr",)) + sparse_rows(n, ("fmr",)),
                 "effective": effective_rows, "heavy": heavy_rows,
                 }[part](n_sets)
    out = OUT.with_name(f"test_level_{'_'.join(parts)}.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"\n({time.time() - t0:.0f} s; {out})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400, sys.argv[2:] or ["threshold", "concentrated", "sparse",
                                                                           "generators"])  # effective: on request
