"""Comparison protocols: which pairs of samples to compare under a budget of comparisons, spread over identities
(:func:`design_protocol`, ``ma.plan``), the random baseline and its expected usage. The variance a protocol will have
is predicted from a pilot by :mod:`matchaudit.estimators.planning`; :mod:`matchaudit.simulation` draws trial lists
with it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from matchaudit import checks
from matchaudit.errors import InputError, listing


@dataclass(frozen=True)
class Protocol:
    """A comparison list (sample ids) and the per-identity usage the variance prediction needs."""

    sample_a: np.ndarray
    sample_b: np.ndarray
    genuine: np.ndarray
    genuine_per_identity: np.ndarray  # (K,)
    impostor_per_identity: np.ndarray  # (K,)

    def to_frame(self) -> pd.DataFrame:
        """The trial list: one row per comparison (``sample_a``, ``sample_b``)."""
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


__all__ = ["Protocol", "design_protocol", "expected_random_sums", "random_protocol"]
