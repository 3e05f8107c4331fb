"""Brute force for the engine tests: materialise each resampled data set explicitly (duplicated samples,
duplicated identities, re-drawn comparisons) and count it in pure Python."""

from __future__ import annotations

import itertools

import numpy as np

from matchaudit import resampling as rs
from matchaudit.model import MatchData, PairBlock, Samples
from matchaudit.scores import iter_similarity_blocks


def make_data(seed: int = 0, sizes=(1, 2, 3, 4, 1, 5, 2, 3), groups=(0, 1, 0, 2, 1, 2, 0, 1), dim: int = 3):
    """Small all-pairs data with ties (integer embeddings), singletons, unequal sizes, three groups."""
    g = np.random.default_rng(seed)
    ident = np.repeat(np.arange(len(sizes)), sizes)
    g.shuffle(ident)
    n = ident.size
    emb = g.integers(-2, 3, size=(n, dim)).astype(np.float32)
    emb[np.all(emb == 0, axis=1)] = 1
    G = max(groups) + 1
    return MatchData(identity_names=np.array([f"id{k}" for k in range(len(sizes))]),
                     identity_group=np.array(groups, dtype=np.int64), group_names=tuple("abcdefg"[:G]),
                     group_by=("g",), protocol="all-pairs", score_kind="cosine",
                     samples=Samples(ids=np.array([f"s{i}" for i in range(n)]), identity=ident, embeddings=emb))


def score_matrix(data: MatchData) -> np.ndarray:
    n = data.samples.ids.shape[0]
    S = np.full((n, n), np.nan)
    for b in iter_similarity_blocks(data.samples.embeddings, data.metric, 3):
        S[b.row0:b.row0 + b.scores.shape[0], b.col0:b.col0 + b.scores.shape[1]] = b.scores
    iu = np.tril_indices(n, -1)
    S[iu] = S.T[iu]
    return S


def listed(data: MatchData, keep: float = 0.7, seed: int = 1) -> MatchData:
    """The same data as a listed protocol: a random subset of the pairs, as a comparison table."""
    S = score_matrix(data)
    n = S.shape[0]
    g = np.random.default_rng(seed)
    a, b = np.triu_indices(n, 1)
    sel = g.random(a.size) < keep
    a, b = a[sel], b[sel]
    ida, idb = data.samples.identity[a], data.samples.identity[b]
    grp = data.identity_group
    pb = PairBlock(score=S[a, b], identity_a=ida, identity_b=idb, group_a=grp[ida], group_b=grp[idb],
                   genuine=ida == idb, sample_a=a.astype(np.int64), sample_b=b.astype(np.int64))
    return MatchData(identity_names=data.identity_names, identity_group=grp, group_names=data.group_names,
                     group_by=data.group_by, protocol="listed", score_kind="cosine", samples=data.samples, pairs=pb)


def _pairs(data: MatchData):
    """(a, b, score) of every comparison of the protocol."""
    S = score_matrix(data)
    if data.protocol == "listed":
        p = data.pairs
        return list(zip(p.sample_a.tolist(), p.sample_b.tolist(), p.score.tolist()))
    n = S.shape[0]
    return [(i, j, S[i, j]) for i in range(n) for j in range(i + 1, n)]


def materialise(data: MatchData, scheme, b: int):
    """List of (score, genuine, group_a, group_b) of replicate ``b`` (0: the plug-in data set)."""
    ident, grp = data.samples.identity, data.identity_group
    S = score_matrix(data)
    lay = rs.Layout(identity_group=grp, sample_identity=ident)
    K = data.n_identities
    out = []
    if b == 0 or scheme is None:
        for i, j, s in _pairs(data):
            out.append((s, ident[i] == ident[j], grp[ident[i]], grp[ident[j]]))
        return out
    if isinstance(scheme, rs.WithinIdentity):
        c = scheme.sample_weights([b], lay)[0]
        if data.protocol == "listed":
            for i, j, s in _pairs(data):
                for _ in range(c[i] * c[j]):
                    out.append((s, ident[i] == ident[j], grp[ident[i]], grp[ident[j]]))
            return out
        draws = [i for i in range(len(c)) for _ in range(c[i])]  # the resampled sample list
        for x, y in itertools.combinations(range(len(draws)), 2):
            i, j = draws[x], draws[y]
            s = 1.0 if i == j else S[i, j]
            out.append((s, ident[i] == ident[j], grp[ident[i]], grp[ident[j]]))
        return out
    if isinstance(scheme, (rs.Vertex, rs.DoubleOrNothing)):
        w = scheme.identity_weights([b], lay)[0][0]
        copies = [k for k in range(K) for _ in range(w[k])]
        pairs = _pairs(data)
        for x, y in itertools.combinations_with_replacement(range(len(copies)), 2):
            kx, ky = copies[x], copies[y]
            if x != y and kx == ky:
                continue  # two draws of one identity: no comparisons (imputation leaves ratios unchanged)
            for i, j, s in pairs:
                ki, kj = ident[i], ident[j]
                if (x == y and ki == kj == kx) or (x != y and {ki, kj} == {kx, ky}):
                    out.append((s, x == y, grp[ki], grp[kj]))
        return out
    if isinstance(scheme, rs.Subsets):
        u, w = scheme.identity_weights([b], lay)
        pairs = _pairs(data)
        for k in range(K):
            for i, j, s in pairs:
                ki, kj = ident[i], ident[j]
                if ki == kj == k:
                    out += [(s, True, grp[k], grp[k])] * u[0][k]
                elif ki != kj and k in (ki, kj):
                    out += [(s, False, grp[ki], grp[kj])] * w[0][k]  # row k of the drawn identities
        return out
    if isinstance(scheme, rs.GroupPermutation):
        g2 = scheme.identity_groups([b], lay)[0]
        for i, j, s in _pairs(data):
            out.append((s, ident[i] == ident[j], g2[ident[i]], g2[ident[j]]))
        return out
    raise TypeError(scheme)


def materialise_draws(data: MatchData, scheme, b: int, lists):
    """Comparison-level schemes: each comparison repeated by its drawn weight (comparison order = engine's)."""
    ident, grp = data.samples.identity, data.identity_group
    lay = rs.Layout(identity_group=grp, sample_identity=ident)
    w = scheme.comparison_weights([b], lay, lists)[0]
    out = []
    for (i, j, s), wc in zip(_pairs(data), w):
        out += [(s, ident[i] == ident[j], grp[ident[i]], grp[ident[j]])] * int(wc)
    return out


def count(rows, grid, cats):
    """Cell counts (genuine (G, C+1), impostor (n_cat, C+1)) of a materialised data set, impostors in the
    categories ``cats`` (a :class:`matchaudit.pairings.PairCategories`)."""
    G = cats.n_groups
    gen = np.zeros((G, grid.n_cells), np.int64)
    imp = np.zeros((cats.n, grid.n_cells), np.int64)
    for s, genuine, ga, gb in rows:
        c = int(grid.cell_of(s))
        if genuine:
            gen[ga, c] += 1
        else:
            imp[cats.slot[ga, gb], c] += 1
    return gen, imp


def exact_target(rows, alpha, cats, rule, reference):
    """Brute-force t_alpha and accepted counts. The project definition: the lowest observed score of the data
    set (any comparison, genuine or impostor: the rows are the comparisons with positive weight) whose FMR
    over the reference impostors is at most alpha, or +inf (also when there are no reference impostors)."""
    G = cats.n_groups
    ref = [s for s, gen, ga, gb in rows if not gen and (reference == "all" or ga == gb)]
    passes = (lambda s, t: s >= t) if rule == ">=" else (lambda s, t: s > t)
    t = np.inf
    for v in sorted({s for s, *_ in rows}):
        if ref and sum(passes(s, v) for s in ref) / len(ref) <= alpha:
            t = v
            break
    gacc = np.zeros(G, np.int64)
    iacc = np.zeros(cats.n, np.int64)
    for s, gen, ga, gb in rows:
        if passes(s, t):
            if gen:
                gacc[ga] += 1
            else:
                iacc[cats.slot[ga, gb]] += 1
    return t, gacc, iacc
