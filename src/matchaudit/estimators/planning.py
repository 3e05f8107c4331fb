"""Planning an evaluation: variance components from a pilot, detectable differences, sample sizes, and a
comparison protocol that spreads a budget of comparisons over identities.

Model (pooled rates at a fixed threshold; docs/methods.md section 4). A genuine comparison belongs to one
identity, an impostor comparison to two. Comparisons that share an identity are correlated with covariance
``s_b`` (genuine: same identity) or ``s_a`` (impostor: one shared identity); otherwise independent. Then for a
protocol with ``g_k`` genuine comparisons of identity ``k`` (``G = sum g_k``) and ``c_k`` impostor comparisons
involving ``k`` (``sum c_k = 2M``):

    Var(FNMR) = [p(1-p) G + s_b sum_k g_k (g_k - 1)] / G^2
    Var(FMR)  = [p(1-p) M + s_a sum_k c_k (c_k - 1)] / M^2

``s_b`` and ``s_a`` are moment estimates from the pilot's per-identity counts: the sum over ordered pairs of
distinct comparisons sharing an identity of ``(x - p)(x' - p)``, divided by the number of such pairs (this
is the covariance part of the clustered variance, spread per pair). The first term is the within part; the
second, the between-identity part, which only spreading comparisons over identities removes: with one
genuine comparison per identity it vanishes. The prediction ignores the extra correlation of comparisons
that share a *sample* (designed protocols avoid re-using samples).
"""

from __future__ import annotations

import itertools

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

from matchaudit import checks
from matchaudit.engine import identity_counts
from matchaudit.errors import InputError, listing
from matchaudit.estimators.intervals import z_quantile
from matchaudit.definitions import Rule
from matchaudit.model import MatchData
from matchaudit.scores import pair_scores


@dataclass(frozen=True)
class Components:
    """Pilot variance components of one rate: ``p``, per-comparison variance ``p(1-p)``, and the covariance
    ``s`` of two comparisons sharing an identity (``icc = s / p(1-p)``)."""

    rate: str
    p: float
    s: float
    comparisons: int
    identities: int

    @property
    def icc(self) -> float:
        v = self.p * (1 - self.p)
        return self.s / v if v > 0 else math.nan

    def variance(self, sum_units: float, sum_pairs: float) -> float:
        """``[p(1-p) n + s sum_k u_k(u_k - 1)] / n^2`` with ``n = sum_units`` comparisons and
        ``sum_pairs = sum_k u_k(u_k - 1)`` (u_k: comparisons involving identity k)."""
        return (self.p * (1 - self.p) * sum_units + self.s * sum_pairs) / sum_units**2

    def to_dict(self) -> dict:
        return {"rate": self.rate, "p": self.p, "shared_identity_covariance": self.s, "icc": self.icc,
                "pilot_comparisons": self.comparisons, "pilot_identities": self.identities}


def _moment(p: float, dev_row: np.ndarray, err_row: np.ndarray, n_row: np.ndarray) -> float:
    """sum_k [(sum_{c in k} (x_c - p))^2 - sum_{c in k} (x_c - p)^2] / sum_k n_k (n_k - 1)."""
    own = err_row * (1 - 2 * p) + n_row * p * p
    den = float((n_row * (n_row - 1)).sum())
    return float(((dev_row**2) - own).sum() / den) if den > 0 else 0.0


def components(data: MatchData, threshold: float, rule: Rule = ">=", group: str | None = None
               ) -> tuple[Components, Components]:
    """(FNMR, FMR) components at ``threshold`` from a pilot (``group``: its identities and same-group
    impostors only; default every comparison)."""
    ic = identity_counts(data, [checks.number(threshold, "threshold", finite=False)], rule)
    if group is None:
        keep = np.ones(data.n_identities, bool)
        m_row, e_row = ic.m_row.astype(float), ic.e_row[0].astype(float)
    else:
        if group not in data.group_names:
            raise InputError(f"no group {group!r}; groups present: {', '.join(data.group_names)}.")
        gi = data.group_names.index(group)
        keep = ic.group == gi
        m_row, e_row = ic.m_row_cat[gi].astype(float), ic.e_row_cat[0, gi].astype(float)
    g, e = ic.g[keep].astype(float), ic.e[0][keep].astype(float)
    if g.sum() <= 0 or m_row.sum() <= 0:
        raise InputError("the pilot needs genuine and impostor comparisons (for the group asked).")
    pg = e.sum() / g.sum()
    pi = e_row.sum() / m_row.sum()
    fn = Components("FNMR", pg, _moment(pg, e - pg * g, e, g), int(g.sum()), int(keep.sum()))
    fm = Components("FMR", pi, _moment(pi, e_row - pi * m_row, e_row, m_row), int(m_row.sum() // 2),
                    int((m_row > 0).sum()))
    return fn, fm


def balanced_variance(c: Components, n_identities: int, per_identity: float) -> float:
    """Variance with ``n_identities`` identities each in ``per_identity`` comparisons (genuine: its own;
    impostor: comparisons it takes part in, so ``M = K r / 2``)."""
    K, r = float(n_identities), float(per_identity)
    n = K * r if c.rate == "FNMR" else K * r / 2
    return c.variance(n, K * r * (r - 1))


def minimum_detectable_difference(a: Components, b: Components, n_identities: int, per_identity: float,
                                  alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest |rate_A - rate_B| a two-sided level-``alpha`` test detects with probability ``power`` when each
    group has ``n_identities`` identities with ``per_identity`` comparisons each: ``(z_{1-a/2} + z_power)
    sqrt(Var_A + Var_B)`` (normal approximation, variances at the pilot rates)."""
    v = balanced_variance(a, n_identities, per_identity) + balanced_variance(b, n_identities, per_identity)
    return (ndtri(1 - alpha / 2) + ndtri(power)) * math.sqrt(v)


def identities_for_width(c: Components, width: float, per_identity: float, level: float = 0.95,
                         max_identities: int = 10**8) -> int:
    """Fewest identities (each with ``per_identity`` comparisons) for a Wald interval of total ``width``."""
    z = z_quantile(level)
    unit = balanced_variance(c, 1, per_identity)  # variance scales as 1/K
    k = math.ceil(unit * (2 * z / width) ** 2)
    if k > max_identities:
        raise InputError(f"a width of {width:g} needs more than {max_identities:,} identities at this rate.")
    return max(k, 1 if c.rate == "FNMR" else 2)


# ----------------------------------------------------------------------------- protocol design

@dataclass(frozen=True)
class Protocol:
    """A comparison list (sample ids) and the per-identity usage the variance prediction needs."""

    sample_a: np.ndarray
    sample_b: np.ndarray
    genuine: np.ndarray
    genuine_per_identity: np.ndarray  # (K,)
    impostor_per_identity: np.ndarray  # (K,)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"sample_a": self.sample_a, "sample_b": self.sample_b})

    def sums(self) -> dict[str, float]:
        g, c = self.genuine_per_identity.astype(float), self.impostor_per_identity.astype(float)
        return {"genuine": g.sum(), "genuine_pairs": (g * (g - 1)).sum(), "impostor": c.sum() / 2,
                "impostor_pairs": (c * (c - 1)).sum()}


def _codes(identities) -> tuple[np.ndarray, np.ndarray]:
    """Identity names and codes; a missing identity is refused (two NaN identities read 'nan' and 'nan' were
    paired as a genuine comparison)."""
    from matchaudit.data.validate import Where, as_str

    names, codes = np.unique(as_str(identities, Where("identities"), "identity"), return_inverse=True)
    return names, codes.astype(np.int64)


def design_protocol(sample_ids, identities, n_genuine: int, n_impostor: int, seed: int = 0) -> Protocol:
    """Spread ``n_genuine`` genuine and ``n_impostor`` impostor comparisons over identities and samples.

    Genuine: rounds over the identities (random order); each round gives every identity with two samples not
    yet paired together one more pair, preferring its least-used samples, so no identity gets a second pair
    before all have one. Impostor: rounds of random perfect matchings of the identities (each identity once
    per round, never the same identity pair twice while avoidable), each side its least-used sample.
    """
    ids = np.asarray(sample_ids).astype(str)
    names, code = _codes(identities)
    if ids.size != code.size:
        raise InputError(f"{ids.size} sample ids for {code.size} identities: give one identity per sample id.",
                         param="sample_ids")
    names_, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        twice = names_[counts > 1]
        raise InputError(f"sample ids {listing([str(x) for x in twice[:5]])}{' and more' if twice.size > 5 else ''} "
                         "occur more than once: every sample needs its own id.", param="sample_ids")
    if n_genuine < 0 or n_impostor < 0 or n_genuine == 0 or n_impostor == 0:  # an audit needs both (it refused it)
        raise InputError(f"a protocol needs at least one genuine and one impostor comparison (FNMR and FMR both "
                         f"need comparisons); got {n_genuine} genuine and {n_impostor} impostor.", param="genuine")
    K = names.size
    rng = np.random.default_rng(checks.seed(seed))
    members = [rng.permutation(np.flatnonzero(code == k)) for k in range(K)]
    within = [tuple(np.array(list(itertools.combinations(m, 2)), np.int64).reshape(-1, 2).T) for m in members]
    use = np.zeros(ids.size, np.int64)
    a_out, b_out, gen_out = [], [], []
    g_per, c_per = np.zeros(K, np.int64), np.zeros(K, np.int64)
    done: set[tuple[int, int]] = set()
    cap = sum(len(m) * (len(m) - 1) // 2 for m in members)
    if n_genuine > cap:
        raise InputError(f"{n_genuine:,} genuine comparisons asked, but the data has only {cap:,}.", param="genuine")
    while len(a_out) < n_genuine:
        for k in rng.permutation(K):
            if len(a_out) >= n_genuine:
                break
            best = _least_used(*within[k], use, done)
            if best is None:
                continue
            i, j = best
            done.add(best)
            use[[i, j]] += 1
            a_out.append(i)
            b_out.append(j)
            gen_out.append(True)
            g_per[k] += 1
    n_imp_total = (ids.size**2 - sum(len(m) ** 2 for m in members)) // 2
    if n_impostor > n_imp_total:
        raise InputError(f"{n_impostor:,} impostor comparisons asked, but the data has only {n_imp_total:,}.", param="impostor")
    pairs_done: dict[tuple[int, int], int] = {}  # impostor comparisons placed per identity pair
    made = 0
    while made < n_impostor:
        order = rng.permutation(K)
        # least-used identities first, so a partial last round tops them up
        order = order[np.argsort(c_per[order], kind="stable")]
        progressed = False
        free = [int(k) for k in order]
        while len(free) > 1 and made < n_impostor:
            k = free.pop(0)
            # each identity pair once before any twice; then any pair with a sample pair left
            room = 1 if len(pairs_done) < K * (K - 1) // 2 else None
            pick = next((x for x, l in enumerate(free) if pairs_done.get((min(k, l), max(k, l)), 0)
                         < (room or len(members[k]) * len(members[l]))), None)
            if pick is None:
                continue
            l = free.pop(pick)
            ikey = (min(k, l), max(k, l))
            mk, ml = members[k], members[l]
            pkey = _least_used(np.repeat(mk, ml.size), np.tile(ml, mk.size), use, done)
            if pkey is None:  # every sample pair of these two identities is placed already
                continue
            si, sj = pkey
            done.add(pkey)
            pairs_done[ikey] = pairs_done.get(ikey, 0) + 1
            use[[si, sj]] += 1
            a_out.append(si)
            b_out.append(sj)
            gen_out.append(False)
            c_per[[k, l]] += 1
            made += 1
            progressed = True
        if not progressed and made < n_impostor:
            raise InputError("could not place more impostor comparisons without repeating sample pairs.")
    a_out, b_out = np.array(a_out, np.int64), np.array(b_out, np.int64)
    return Protocol(ids[a_out], ids[b_out], np.array(gen_out), g_per, c_per)


def _least_used(a: np.ndarray, b: np.ndarray, use: np.ndarray, done: set[tuple[int, int]]) -> tuple[int, int] | None:
    """The sample pair (a[x], b[x]) not yet placed whose samples are least used (total, then the busier one; ties
    to the first listed), or None."""
    ua, ub = use[a], use[b]
    for x in np.lexsort((np.maximum(ua, ub), ua + ub)):  # stable: ties keep the listed order
        key = (int(min(a[x], b[x])), int(max(a[x], b[x])))
        if key not in done:
            return key
    return None


def random_protocol(sample_ids, identities, n_genuine: int, n_impostor: int, seed: int = 0) -> Protocol:
    """The baseline: genuine and impostor comparisons drawn uniformly at random (without replacement)."""
    ids = np.asarray(sample_ids).astype(str)
    _, code = _codes(identities)
    n = ids.size
    rng = np.random.default_rng(checks.seed(seed))
    order = np.argsort(code, kind="stable")
    sizes = np.bincount(code)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    gcount = sizes * (sizes - 1) // 2
    gsel = rng.choice(int(gcount.sum()), n_genuine, replace=False)
    gk = np.searchsorted(np.cumsum(gcount), gsel, side="right")
    r = gsel - (np.cumsum(gcount) - gcount)[gk]
    # r-th pair (i<j) inside identity gk
    ii = np.floor((2 * sizes[gk] - 1 - np.sqrt((2 * sizes[gk] - 1) ** 2 - 8 * r)) / 2).astype(np.int64)
    jj = r - ii * (2 * sizes[gk] - ii - 1) // 2 + ii + 1
    ga, gb = order[starts[gk] + ii], order[starts[gk] + jj]
    seen: set[tuple[int, int]] = set()
    ia, ib = [], []
    while len(ia) < n_impostor:
        x = rng.integers(0, n, size=2 * (n_impostor - len(ia)) + 8)
        y = rng.integers(0, n, size=x.size)
        for u, v in zip(x, y):
            if code[u] == code[v] or (min(u, v), max(u, v)) in seen:
                continue
            seen.add((min(u, v), max(u, v)))
            ia.append(u)
            ib.append(v)
            if len(ia) == n_impostor:
                break
    ia, ib = np.array(ia, np.int64), np.array(ib, np.int64)
    K = sizes.size
    c = np.bincount(code[ia], minlength=K) + np.bincount(code[ib], minlength=K)
    return Protocol(np.concatenate([ids[ga], ids[ia]]), np.concatenate([ids[gb], ids[ib]]),
                    np.concatenate([np.ones(n_genuine, bool), np.zeros(n_impostor, bool)]),
                    np.bincount(gk, minlength=K), c)


def expected_random_sums(identities, n_genuine: int, n_impostor: int) -> dict[str, float]:
    """E[sum_k g_k(g_k-1)] and E[sum_k c_k(c_k-1)] under :func:`random_protocol` (with-replacement
    approximation: G(G-1) sum q_k^2, M(M-1) sum pi_k^2 plus the M pi-terms of both sides)."""
    _, code = _codes(identities)
    n_k = np.bincount(code).astype(float)
    N = n_k.sum()
    q = n_k * (n_k - 1) / 2
    q /= q.sum()
    pi = n_k * (N - n_k) / ((N**2 - (n_k**2).sum()) / 2)  # P(a random impostor comparison involves k)
    G, M = float(n_genuine), float(n_impostor)
    return {"genuine": G, "genuine_pairs": G * (G - 1) * (q**2).sum(), "impostor": M,
            "impostor_pairs": M * (M - 1) * (pi**2).sum()}


def predict(fnmr: Components, fmr: Components, sums: dict[str, float], level: float = 0.95) -> dict[str, float]:
    """Predicted SDs and Wald interval widths of FNMR and FMR for a protocol's (or expected) usage sums."""
    z = z_quantile(level)
    vg = fnmr.variance(sums["genuine"], sums["genuine_pairs"])
    vi = fmr.variance(sums["impostor"], sums["impostor_pairs"])
    return {"fnmr_sd": math.sqrt(vg), "fmr_sd": math.sqrt(vi), "fnmr_width": 2 * z * math.sqrt(vg),
            "fmr_width": 2 * z * math.sqrt(vi)}


__all__ = ["Components", "Protocol", "balanced_variance", "components", "design_protocol", "expected_random_sums",
           "protocol_study",
           "identities_for_width", "minimum_detectable_difference", "predict", "random_protocol"]


# ----------------------------------------------------------------------------- verification by simulation

def protocol_study(groups, threshold: float, n_genuine: int, n_impostor: int, n_sets: int, *, dim: int = 16,
                   samples_per_identity=(2, 24), pilot_seed: int = 10_000, level: float = 0.95) -> pd.DataFrame:
    """Empirical SD of FNMR/FMR over ``n_sets`` fresh vMF data sets (new population each), for the designed
    and the random protocol of the same budget, next to the prediction from one pilot data set (all pairs).
    Used by ``tests/test_planning.py`` (reduced) and ``bench/protocol_design.py`` (full)."""
    from matchaudit.data import from_embeddings
    from matchaudit.simulation import simulate_vmf

    def draw(seed):
        return simulate_vmf(groups, dim=dim, samples_per_identity=samples_per_identity, seed=seed)

    pilot = draw(pilot_seed)
    fn, fm = components(from_embeddings(pilot.embeddings, pilot.samples.identity.values), threshold)
    out: dict[str, list] = {"designed": [], "random": []}
    usage: dict[str, list] = {"designed": [], "random": []}
    for i in range(n_sets):
        sim = draw(i)
        ids, who = sim.samples.sample_id.values, sim.samples.identity.values
        pos = {s: j for j, s in enumerate(ids)}
        for name, make in (("designed", design_protocol), ("random", random_protocol)):
            p = make(ids, who, n_genuine, n_impostor, seed=i)
            a = np.fromiter((pos[s] for s in p.sample_a), np.int64)
            b = np.fromiter((pos[s] for s in p.sample_b), np.int64)
            s = pair_scores(sim.embeddings, a, b)
            out[name].append(((s[p.genuine] < threshold).mean(), (s[~p.genuine] >= threshold).mean()))
            usage[name].append(p.sums())
    rows = []
    for name in out:
        x = np.array(out[name])
        mean_sums = {k: float(np.mean([u[k] for u in usage[name]])) for k in usage[name][0]}
        pr = predict(fn, fm, mean_sums, level)
        for j, rate in enumerate(("FNMR", "FMR")):
            rows.append({"protocol": name, "rate": rate, "mean": x[:, j].mean(), "empirical_sd": x[:, j].std(ddof=1),
                         "predicted_sd": pr[f"{rate.lower()}_sd"], "predicted_width": pr[f"{rate.lower()}_width"],
                         "n_sets": n_sets, "pilot_icc": (fn if rate == "FNMR" else fm).icc})
    df = pd.DataFrame(rows)
    df["ratio_empirical_to_predicted"] = df.empirical_sd / df.predicted_sd
    return df
