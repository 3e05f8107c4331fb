"""Exact score tallies at any scale: every genuine score, and impostors binned between genuine scores.

Why this shape: every vertex of the empirical ROC sits at a genuine score ``g`` (moving the threshold past
an impostor only lowers FMR), so the counts ``#(impostor >= g)`` and ``#(impostor == g)`` for every distinct
genuine score give the whole DET curve, AUC, the ROC-convex-hull EER and minDCF exactly. Genuine
comparisons are few (within identities), so they are kept whole. Impostors (up to n^2/2) are only
counted, per category, in the cells between consecutive distinct genuine scores. A threshold that falls
strictly inside a cell (an FMR target, a user threshold) needs the impostors of that one cell: a second,
selective pass (:func:`refine`) collects them.

Categories: genuine comparisons are tallied per group ``g``; impostor comparisons per category of
:class:`matchaudit.pairings.PairCategories` (``slot[a, b]``): every group pair of its own while that table is
small (:data:`FULL_BYTES`), else the same-group pairs and the cross-group pairs pooled by whether they set the
threshold (G + 2 categories), the cross-group FMR matrix then coming from
:func:`matchaudit.metrics.cross_groups.cross_group_counts` at the audit's thresholds.

Why a second counting path beside the resampling engine (``matchaudit.engine``): this one serves the
plug-in audit only (weight 1 per comparison, plus float identity-balanced weights ``1/C(n_k,2)`` and
``1/(n_k n_l)``), and its edges are every distinct genuine score, so every ROC vertex, the exact AUC and the
exact ROCCH-EER come out whatever the data size. The engine counts integer replicate weights on a fixed grid
of a few thousand cells (exact only at its edges and at FMR-target thresholds) for B replicates at once; it
cannot hold one cell per genuine score times B, and the tally cannot carry replicate weights. Use this
module for exact point estimates, the engine for anything resampled. They share the definitions
(:mod:`matchaudit.definitions`) and the identity-pair counts (:func:`matchaudit.engine.identity.impostor_pair_counts`);
the plug-in thresholds of both are tested equal (tests/test_engine.py).

Memory: genuine scores (24 bytes each) plus ``4 x 8 x (J + 1)`` bytes per impostor category (per part on
all pairs: :data:`PARTS`), J = number of distinct genuine scores; blocks of the score matrix are streamed (see
``MatchData.blocks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numba as nb
import numpy as np

from matchaudit.cells import cell, cell_of, table
from matchaudit.engine.identity import impostor_pair_counts
from matchaudit.model import pair_key
from matchaudit.model import DenseBlock, MatchData, PairBlock
from matchaudit.pairings import PairCategories
from matchaudit.scores import TILE_COLS, pair_scores

FULL_BYTES = 1 << 28  # largest tally (all parts) that counts every group pair in a category of its own
COLLECT_SLACK = 65536  # impostors per part that the collection buffers hold beyond twice the prediction
PARTS = 4
"""All-pairs tiles are tallied in this many parts of rows (row a in part a mod PARTS), each adding into its own
tables, summed after in part order. A fixed number, not the threads': the identity-balanced weights are floats, so
the grouping of their sums must not follow the machine (with one table per thread, 2 and 3 threads gave balanced
AUCs 0.9991105002792731 and ...724 on the demo data)."""


@dataclass(frozen=True)
class GenuineScores:
    """All genuine comparisons: score, group, identity and the identity-balanced weight ``1/g_k``."""

    score: np.ndarray  # float64 (M,)
    group: np.ndarray  # int64 (M,)
    identity: np.ndarray  # int64 (M,), -1 if unknown
    weight: np.ndarray  # float64 (M,), NaN when identities are unknown


@dataclass(frozen=True)
class Refined:
    """Impostor comparisons of the refined cells, exact: score, category and balanced weight."""

    cells: np.ndarray  # sorted cell indices that were refined
    score: np.ndarray
    category: np.ndarray
    weight: np.ndarray


@dataclass(frozen=True)
class Tally:
    """Exact summary of all comparisons of a :class:`MatchData` (see module docstring)."""

    categories: PairCategories
    genuine: GenuineScores
    edges: np.ndarray  # (J,) sorted distinct genuine scores
    counts: np.ndarray  # int64 (n_cat, J+1): impostors with edges[i-1] <= s < edges[i] in cell i
    ties: np.ndarray  # int64 (n_cat, J): impostors with s == edges[j]
    wcounts: np.ndarray  # float64, same with balanced weights 1/m_kl
    wties: np.ndarray
    genuine_units: np.ndarray  # int64 (G,): identities with genuine comparisons (balanced FNMR divisor)
    impostor_units: np.ndarray  # int64 (n_cat,): identity pairs with impostor comparisons (balanced FMR divisor)
    refined: Refined | None = None

    @property
    def n_groups(self) -> int:
        return self.categories.n_groups

    @property
    def n_impostors(self) -> np.ndarray:
        """Impostor comparisons per category."""
        return self.counts.sum(axis=1)


# --------------------------------------------------------------------------------------------- kernels


@nb.njit(cache=True)
def _bin_pairs(score, cat, weight, padded, acc, lo, scale, counts, ties, wcounts, wties):
    for m in range(score.shape[0]):
        s = score[m]
        c = cat[m]
        i = cell(s, padded, acc, lo, scale, True)
        counts[c, i] += 1
        wcounts[c, i] += weight[m]
        if i > 0 and padded[i] == s:  # padded[i] is edge i - 1
            ties[c, i - 1] += 1
            wties[c, i - 1] += weight[m]


@nb.njit(cache=True, parallel=True)
def _bin_dense(scores, row0, col0, ident, group, size, slot, padded, acc, lo, scale,
               counts, ties, wcounts, wties, selected, got_s, got_i, got_j, n_got):
    """Impostor tally of one all-pairs tile in parts of rows (row ``a`` in part ``a % parts``, rows in order),
    each with its own tables (first axis: no write races, and sums grouped by part whatever the threads). The
    impostors of the ``selected`` cells (empty: none) go to per-part buffers ``got_*`` (part, capacity); ``n_got``
    counts them, past the capacity too (an overflow: :func:`build_tally` then leaves them to :func:`refine`)."""
    r, c = scores.shape
    parts = counts.shape[0]
    collect = selected.size > 0
    cap = got_s.shape[1]
    for t in nb.prange(parts):
        for a in range(t, r, parts):
            i = row0 + a
            ki = ident[i]
            gi = group[ki]
            for bcol in range(c):
                j = col0 + bcol
                if j <= i:
                    continue
                kj = ident[j]
                if kj == ki:
                    continue
                cat = slot[gi, group[kj]]
                w = 1.0 / (size[ki] * size[kj])
                s = scores[a, bcol]
                k = cell(s, padded, acc, lo, scale, True)
                counts[t, cat, k] += 1
                wcounts[t, cat, k] += w
                if k > 0 and padded[k] == s:  # padded[k] is edge k - 1
                    ties[t, cat, k - 1] += 1
                    wties[t, cat, k - 1] += w
                if collect and selected[k]:
                    m = n_got[t]
                    if m < cap:
                        got_s[t, m] = s
                        got_i[t, m] = i
                        got_j[t, m] = j
                    n_got[t] = m + 1


@nb.njit(cache=True)
def _collect_dense(scores, row0, col0, ident, group, size, slot, padded, acc, lo, scale,
                   selected, s_lo, s_hi, out_s, out_c, out_w, pos):
    r, c = scores.shape
    for a in range(r):
        i = row0 + a
        ki = ident[i]
        for bcol in range(max(0, i + 1 - col0), c):  # the comparisons: global row < column
            j = col0 + bcol
            s = scores[a, bcol]
            if s < s_lo or s >= s_hi:
                continue
            kj = ident[j]
            if kj == ki:
                continue
            if not selected[cell(s, padded, acc, lo, scale, True)]:
                continue
            out_s[pos] = s
            out_c[pos] = slot[group[ki], group[kj]]
            out_w[pos] = 1.0 / (size[ki] * size[kj])
            pos += 1
    return pos


# --------------------------------------------------------------------------------------------- passes


def _genuine_all_pairs(data: MatchData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Within-identity pairs i < j, their scores and identities (exactly as the all-pairs tiles score them)."""
    assert data.samples is not None and data.samples.embeddings is not None
    ident = data.samples.identity
    order = np.argsort(ident, kind="stable")  # samples by identity, each identity's in ascending order
    sizes = np.bincount(ident, minlength=data.n_identities)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    ia, ib, ks = [], [], []
    for m in np.unique(sizes[sizes >= 2]):  # the identities of each size at once (a loop over identities cost
        k = np.flatnonzero(sizes == m)       # 11 ms of a 0.1 s audit of 200 identities)
        members = order[starts[k][:, None] + np.arange(m)]
        u, v = np.triu_indices(m, k=1)
        ia.append(members[:, u].ravel())
        ib.append(members[:, v].ravel())
        ks.append(np.repeat(k, u.size))
    if not ia:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0), empty, empty
    a, b, k = (np.concatenate(x).astype(np.int64) for x in (ia, ib, ks))
    by = np.argsort(k, kind="stable")  # identity by identity, each in its pairs' order
    a, b, k = a[by], b[by], k[by]
    return pair_scores(data.samples.embeddings, a, b, data.metric), k, a


def genuine_scores(data: MatchData) -> GenuineScores:
    """Every genuine comparison's score, group, identity and balanced weight (all-pairs: scored as the tiles do)."""
    if data.protocol == "all-pairs":
        score, ident, _ = _genuine_all_pairs(data)
        group = data.identity_group[ident] if ident.size else ident
    else:
        kept = [(b.score[b.genuine], b.identity_a[b.genuine], b.group_a[b.genuine]) for b in data.blocks()]
        score, ident, group = (np.concatenate(x) for x in zip(*kept))
    if ident.size and ident.min() >= 0:
        per_identity = np.bincount(ident, minlength=data.n_identities)
        weight = 1.0 / per_identity[ident]
    else:
        weight = np.full(score.shape, np.nan)
    return GenuineScores(score.astype(np.float64), group.astype(np.int64), ident.astype(np.int64), weight)


def impostor_units(data: MatchData, pairs: tuple[np.ndarray, np.ndarray] | None, cats: PairCategories
                   ) -> np.ndarray:
    """Identity pairs with at least one impostor comparison, per category of ``cats`` (``pairs``: listed data's
    :func:`impostor_pair_counts`)."""
    g_count = data.n_groups
    units = np.zeros(cats.n, dtype=np.int64)
    if data.protocol == "all-pairs":
        k_per_group = np.bincount(data.identity_group[data.identity_sizes > 0], minlength=g_count)
        for a in range(g_count):
            units[cats.slot[a, a]] += k_per_group[a] * (k_per_group[a] - 1) // 2
            for b in range(a + 1, g_count):
                units[cats.slot[a, b]] += k_per_group[a] * k_per_group[b]
        return units
    if pairs is None:
        return units
    K = data.n_identities
    np.add.at(units, cats.slot[data.identity_group[pairs[0] // K], data.identity_group[pairs[0] % K]], 1)
    return units


def pair_weights(pairs: tuple[np.ndarray, np.ndarray] | None, block: PairBlock, n_identities: int) -> np.ndarray:
    """Identity-balanced impostor weight ``1/m_kl`` for listed comparisons (NaN without identities)."""
    if pairs is None:
        return np.full(len(block), np.nan)
    uniq, m_kl = pairs
    return 1.0 / m_kl[np.searchsorted(uniq, pair_key(block.identity_a, block.identity_b, n_identities))]


def pairs_of(data: MatchData, block_rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    return impostor_pair_counts(data, block_rows) if data.protocol == "listed" and data.has_identities else None


def tally_categories(reference: np.ndarray, n_edges: int, parts: int) -> PairCategories:
    """Every group pair its own category while the tally's tables (32 bytes per category and cell, per part)
    stay within :data:`FULL_BYTES`, else the pooled categories of the threshold's ``reference`` group pairs."""
    full = PairCategories.full(reference)
    return full if 32 * full.n * (n_edges + 1) * parts <= FULL_BYTES else PairCategories.pooled_by(reference)


def build_tally(data: MatchData, block_rows: int = 2048,
                collect: Callable[[np.ndarray], tuple[np.ndarray, float] | None] | None = None,
                reference: np.ndarray | None = None) -> Tally:
    """Pass over all comparisons once: genuine scores kept, impostors binned between them (exact). ``collect``
    (all pairs): given the edges, the cells whose impostors to collect on the way and how many are expected
    (:func:`matchaudit.metrics.windows.predicted_cells`); the tally then holds them as refined, exactly as
    :func:`refine` would, which has nothing left to do for those cells (one pass over the scores, not two).
    ``reference``: the (G, G) group pairs whose impostors set the threshold (None: all), for the categories
    (:func:`tally_categories`)."""
    g_count = data.n_groups
    genuine = genuine_scores(data)
    pairs = pairs_of(data, block_rows)
    edges = np.unique(genuine.score)
    if edges.size == 0:
        edges = np.array([np.inf])
    _, padded, acc, lo, scale, _ = table(edges)
    parts = PARTS if data.protocol == "all-pairs" else 1
    cats = tally_categories(np.ones((g_count, g_count), bool) if reference is None else reference, edges.size,
                            parts)
    n_cat, j = cats.n, edges.size
    refined = None
    if data.protocol == "all-pairs":
        assert data.samples is not None
        counts = np.zeros((parts, n_cat, j + 1), np.int64)
        ties = np.zeros((parts, n_cat, j), np.int64)
        wcounts = np.zeros((parts, n_cat, j + 1))
        wties = np.zeros((parts, n_cat, j))
        size = data.identity_sizes.astype(np.float64)
        plan = collect(edges) if collect is not None else None
        selected = plan[0] if plan is not None else np.zeros(0, np.bool_)
        cap = int(2 * plan[1] / parts) + COLLECT_SLACK if plan is not None else 0  # 2x the prediction per part
        got_s, got_i, got_j = np.empty((parts, cap)), np.empty((parts, cap), np.int64), np.empty((parts, cap), np.int64)
        n_got = np.zeros(parts, np.int64)
        for blk in data.blocks(block_rows, reuse=True):  # each tile in the last one's memory: no page faults
            assert isinstance(blk, DenseBlock)
            _bin_dense(blk.scores, blk.row0, blk.col0, data.samples.identity, data.identity_group, size, cats.slot,
                       padded, acc, lo, scale, counts, ties, wcounts, wties, selected, got_s, got_i, got_j, n_got)
        counts, ties, wcounts, wties = (x.sum(axis=0) for x in (counts, ties, wcounts, wties))
        if plan is not None and (n_got <= cap).all():
            refined = _collected(data, cats, block_rows, selected,
                                 *(np.concatenate([x[t, :n_got[t]] for t in range(parts)]) for x in (got_s, got_i, got_j)))
    else:
        counts = np.zeros((n_cat, j + 1), np.int64)
        ties = np.zeros((n_cat, j), np.int64)
        wcounts = np.zeros((n_cat, j + 1))
        wties = np.zeros((n_cat, j))
        for blk in data.blocks(block_rows):
            assert isinstance(blk, PairBlock)
            imp = ~blk.genuine
            sub = blk.take(imp)
            _bin_pairs(sub.score, cats.slot[sub.group_a, sub.group_b], pair_weights(pairs, sub, data.n_identities),
                       padded, acc, lo, scale, counts, ties, wcounts, wties)
    gen_units = np.zeros(g_count, dtype=np.int64)
    if genuine.identity.size and genuine.identity.min() >= 0:
        ids = np.unique(genuine.identity)
        np.add.at(gen_units, data.identity_group[ids], 1)
    return Tally(cats, genuine, edges, counts, ties, wcounts, wties, gen_units, impostor_units(data, pairs, cats),
                 refined)


def _collected(data: MatchData, cats: PairCategories, block_rows: int, selected: np.ndarray, s: np.ndarray, i: np.ndarray,
               j: np.ndarray) -> Refined:
    """The impostors the tally pass collected (samples ``i < j``, score ``s``) as :func:`refine` would hold them:
    the same category and weight expressions, in its order (tiles as :func:`matchaudit.scores.tiles` yields them,
    rows, columns), then stably by score."""
    assert data.samples is not None
    ki, kj = data.samples.identity[i], data.samples.identity[j]
    gi, gj = data.identity_group[ki], data.identity_group[kj]
    size = data.identity_sizes.astype(np.float64)
    category = cats.slot[gi, gj]
    weight = 1.0 / (size[ki] * size[kj])
    r0 = i // block_rows * block_rows
    order = np.lexsort((j, i, (j - r0) // TILE_COLS, r0, s))
    return Refined(np.flatnonzero(selected), s[order], category[order], weight[order])


def refine(tally: Tally, data: MatchData, cells: np.ndarray, block_rows: int = 2048) -> Tally:
    """Second pass: collect the exact impostor comparisons lying strictly inside the given cells."""
    inside = tally.counts.sum(axis=0)[cells] - np.concatenate([[0], tally.ties.sum(axis=0)])[cells]
    cells = np.unique(np.asarray(cells)[inside > 0])
    if tally.refined is not None:
        cells = np.setdiff1d(cells, tally.refined.cells)
    if cells.size == 0:
        return tally
    edges = tally.edges
    selected = np.zeros(edges.size + 1, dtype=np.bool_)
    selected[cells] = True
    total = int(tally.counts[:, cells].sum())
    out_s, out_c, out_w = np.empty(total), np.empty(total, np.int64), np.empty(total)
    slot = tally.categories.slot
    if data.protocol == "all-pairs":
        assert data.samples is not None
        _, padded, acc, lo, scale, _ = table(edges)
        s_lo = -np.inf if cells[0] == 0 else edges[cells[0] - 1]
        s_hi = np.inf if cells[-1] == edges.size else edges[cells[-1]]
        size = data.identity_sizes.astype(np.float64)
        pos = 0
        for blk in data.blocks(block_rows, reuse=True):
            assert isinstance(blk, DenseBlock)
            pos = _collect_dense(blk.scores, blk.row0, blk.col0, data.samples.identity, data.identity_group, size,
                                 slot, padded, acc, lo, scale, selected, s_lo, s_hi, out_s, out_c, out_w, pos)
    else:
        pairs = pairs_of(data, block_rows)
        parts = []
        for p in data.blocks(block_rows):
            keep = ~p.genuine & selected[cell_of(edges, p.score)]
            sub = p.take(keep)
            parts.append((sub.score, slot[sub.group_a, sub.group_b], pair_weights(pairs, sub, data.n_identities)))
        out_s, out_c, out_w = (np.concatenate(x) for x in zip(*parts))
        pos = out_s.size
    assert pos == total, "refinement pass disagrees with the tally"
    if tally.refined is not None:
        old = tally.refined
        cells = np.union1d(old.cells, cells)
        out_s, out_c, out_w = (np.concatenate(x) for x in ((old.score, out_s), (old.category, out_c), (old.weight, out_w)))
    order = np.argsort(out_s, kind="stable")
    refined = Refined(cells, out_s[order], out_c[order], out_w[order])
    return Tally(**{**tally.__dict__, "refined": refined})
