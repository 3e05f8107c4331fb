"""Identity-level error counts at fixed thresholds: what cluster (identity) variances and jackknives need.

Comparisons of one identity, or of one identity pair, are dependent; variance estimators that respect this
(the corrected Wilson interval, the identity jackknife) need the counts per identity and per identity pair
instead of the pooled totals. :func:`identity_counts` computes them exactly in one pass over the blocks.

Memory: ``O(K x T x categories)`` for the per-identity arrays (categories <= G + 2: same-group pairs and the
cross-group pairs pooled, :meth:`matchaudit.pairings.PairCategories.pooled_by`), plus 16 bytes per impostor comparison
accepted at the *loosest* threshold (the lowest one; identity codes and a level per hit, aggregated into
the sparse pair lists at the end). Genuine comparisons are only counted. Listed data also holds its
distinct impostor identity pairs with their ``m_kl`` (16 bytes each); its blocks are streamed (out-of-core
tables too).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numba as nb
import numpy as np

from matchaudit.engine.counts import TailHits
from matchaudit.engine.passes import feed
from matchaudit.errors import InputError
from matchaudit.definitions import Rule, accepting_thresholds
from matchaudit.model import DenseBlock, MatchData, pair_key
from matchaudit.pairings import PairCategories
from matchaudit.scores import once_per_call


@dataclass(frozen=True)
class IdentityCounts:
    """Exact identity-level counts at ``thresholds`` (index ``t`` in the order given) under ``rule``.

    Identities are ``k = 0..K-1`` (``MatchData`` codes). A *genuine error* is a rejected genuine comparison
    (score below the threshold: ``s < t`` under ``">="``, ``s <= t`` under ``">"``); an *impostor error*
    an accepted impostor comparison. ``m_kl`` is the number of impostor comparisons between identities
    ``k != l``; all-pairs: ``n_k n_l``.

    Categories (:class:`matchaudit.pairings.PairCategories`, ``categories.slot[g, h]``): same-group ``(g, g)``
    at ``c = g``, then the cross-group pairs pooled by whether they set the threshold. The impostor comparisons
    of identity pair ``(k, l)`` all have the category of ``(group[k], group[l])``.

    Per identity:
      ``n_samples[k]`` (-1 when the input has no samples), ``group[k]``,
      ``g[k]`` genuine comparisons, ``e[t, k]`` genuine errors;
      ``m_row[k] = sum_{l != k} m_kl`` and ``e_row[t, k]`` the accepted impostors among them;
      ``m_row_cat[c, k]``, ``e_row_cat[t, c, k]`` the same restricted to category ``c`` (summing over ``c``
      gives ``m_row``, ``e_row``). E.g. same-group impostors of group g: ``m_row_cat[g]``, ``e_row_cat[:, g]``
      (zero for identities outside g).
    Pair terms:
      ``sum_m2 = sum_{k<l} m_kl^2`` over all identity pairs (Python int, exact), ``sum_m2_cat[c]`` per
      category; per threshold ``t`` the identity pairs with at least one accepted impostor, sorted by
      ``(k, l)`` with ``k < l``: ``pair_k[t]``, ``pair_l[t]``, ``pair_e[t]`` (accepted impostors),
      ``pair_m[t]`` (``m_kl``), ``pair_cat[t]`` (category); pairs absent there have ``e_kl = 0``.

    Pooled rates follow: FNMR_t = ``e[t].sum() / g.sum()``, FMR_t = ``2 * pair_e[t].sum() / m_row.sum()``
    (``m_row`` and ``e_row`` count each pair from both sides: ``m_row.sum() == 2 * sum_{k<l} m_kl``).
    """

    thresholds: np.ndarray  # (T,) float64
    rule: Rule
    categories: PairCategories
    n_samples: np.ndarray  # (K,) int64
    group: np.ndarray  # (K,) int64
    g: np.ndarray  # (K,) int64
    e: np.ndarray  # (T, K) int64
    m_row: np.ndarray  # (K,) int64
    e_row: np.ndarray  # (T, K) int64
    m_row_cat: np.ndarray  # (n_cat, K) int64
    e_row_cat: np.ndarray  # (T, n_cat, K) int64
    sum_m2: int
    sum_m2_cat: tuple[int, ...]
    pair_k: list[np.ndarray]
    pair_l: list[np.ndarray]
    pair_e: list[np.ndarray]
    pair_m: list[np.ndarray]
    pair_cat: list[np.ndarray]


@nb.njit(inline="always", cache=True)
def _level(s, ts, ge):
    """Number of (ascending) thresholds that accept score ``s``: Numba's copy of
    :func:`matchaudit.definitions.accepting_thresholds`, held to it by tests/test_definitions.py."""
    j = 0
    if ge:
        while j < ts.shape[0] and ts[j] <= s:
            j += 1
    else:
        while j < ts.shape[0] and ts[j] < s:
            j += 1
    return j


@nb.njit(parallel=True, cache=True)
def _dense(scores, row0, col0, ident, ts, ge, bounds, gen_hist, hits_per_chunk, fill, out_k, out_l, out_lev):
    """One all-pairs tile (global row < column), chunk ``t`` its rows ``bounds[t]:bounds[t+1]``. ``fill`` False:
    count genuine levels into ``gen_hist[chunk, k, level]`` and accepted impostors per chunk; True: write the
    impostor hits at the chunk offsets ``hits_per_chunk`` (exclusive prefix sums), so in row order whatever the
    bounds."""
    c = scores.shape[1]
    for t in nb.prange(bounds.shape[0] - 1):
        pos = hits_per_chunk[t] if fill else 0
        for a in range(bounds[t], bounds[t + 1]):
            i = row0 + a
            ki = ident[i]
            for b in range(max(0, i + 1 - col0), c):
                s = scores[a, b]
                kj = ident[col0 + b]
                lev = _level(s, ts, ge)
                if kj == ki:
                    if not fill:
                        gen_hist[t, ki, lev] += 1
                elif lev > 0:
                    if fill:
                        out_k[pos] = min(ki, kj)
                        out_l[pos] = max(ki, kj)
                        out_lev[pos] = lev
                    pos += 1
        if not fill:
            hits_per_chunk[t] = pos


@dataclass
class IdentityHits:
    """The identity pass's result over some of the all-pairs tiles (a part of the rows, counted on a Dask worker or a
    torch device): genuine comparisons per identity and level ``hist`` (K, T + 1), and per tile fed, its key
    ``(row0, col0)`` with its impostor hits in row order. Results of parts add (``+``: the histograms add, the tiles'
    hits are listed together); :meth:`result` lists the hits by tile key, the order of one pass over the tiles
    (:func:`matchaudit.scores.tiles`), whatever parts and in whatever order they were counted."""

    hist: np.ndarray
    tiles: list[tuple[int, int]]
    k: list[np.ndarray]  # int32
    l: list[np.ndarray]  # int32
    lev: list[np.ndarray]  # int16

    def __add__(self, other: IdentityHits) -> IdentityHits:
        return IdentityHits(self.hist + other.hist, self.tiles + other.tiles, self.k + other.k, self.l + other.l,
                            self.lev + other.lev)

    def add_tile(self, tile: tuple[int, int], k: np.ndarray, l: np.ndarray, lev: np.ndarray) -> None:
        """The impostor hits of one tile (or of the next rows of a tile already added)."""
        self.tiles.append(tile)
        self.k.append(k)
        self.l.append(l)
        self.lev.append(lev)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(genuine levels per identity, impostor hits' identities k < l and levels), the hits by tile key (stable:
        the rows of one tile added in pieces stay in order)."""
        order = sorted(range(len(self.tiles)), key=self.tiles.__getitem__)
        return (self.hist, *(np.concatenate([x[i] for i in order] or [np.zeros(0, dt)])
                             for x, dt in ((self.k, np.int32), (self.l, np.int32), (self.lev, np.int16))))


class IdentityPass:
    """The identity pass's accumulator (:func:`_all_pairs_hits`), fed the all-pairs tiles block by block: the genuine
    comparisons' levels per identity, and the accepted impostors' identity pairs and levels. ``hold``: the key under
    which :meth:`done` keeps its result for :func:`identity_counts` (:func:`identity_pass`). Another backend may count
    the tiles in its own pass (Dask: a fresh ``IdentityPass(data, ts, ge)`` per part on the workers; torch: on the
    device) and :meth:`merge` what it counted: the same result, array for array."""

    def __init__(self, data: MatchData, ts: np.ndarray, ge: bool, hold: tuple[tuple, tuple] | None = None):
        self.ts, self.ge, self.hold = ts, ge, hold
        self.ident = data.samples.identity.astype(np.int64)
        self.gen_hist = np.zeros((nb.get_num_threads(), data.n_identities, ts.size + 1), np.int64)
        self.hits = IdentityHits(np.zeros(self.gen_hist.shape[1:], np.int64), [], [], [], [])

    def feed(self, block: DenseBlock) -> None:
        """The hits of one tile (two sweeps: count per chunk of rows, then write at the chunks' offsets)."""
        nt = self.gen_hist.shape[0]
        none = np.zeros(0, np.int64)
        bounds = block.row_chunks(np.arange(block.scores.shape[0]), 0, block.scores.shape[1], nt)[1]
        cnt = np.zeros(nt, np.int64)
        _dense(block.scores, block.row0, block.col0, self.ident, self.ts, self.ge, bounds, self.gen_hist, cnt, False,
               none, none, none)
        starts = np.concatenate([[0], np.cumsum(cnt)[:-1]]).astype(np.int64)
        n = int(cnt.sum())
        k, l, lev = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int16)
        _dense(block.scores, block.row0, block.col0, self.ident, self.ts, self.ge, bounds, self.gen_hist, starts, True,
               k, l, lev)
        self.hits.add_tile((block.row0, block.col0), k, l, lev)

    def merge(self, hits: IdentityHits) -> None:
        """Add what another pass counted (other tiles, or the same tiles on a backend of its own)."""
        self.hits = self.hits + hits

    def partial(self) -> IdentityHits:
        """What this accumulator has counted (fed and merged), to add to other parts'."""
        return replace(self.hits, hist=self.hits.hist + self.gen_hist.sum(axis=0))

    def done(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(genuine levels per identity, impostor hits' identities k < l and levels), held when asked to."""
        out = self.partial().result()
        if self.hold is not None:
            once_per_call(*self.hold, lambda: out)
        return out


def _all_pairs_hits(data: MatchData, ts: np.ndarray, ge: bool, block_rows: int):
    hits = IdentityPass(data, ts, ge)
    feed(data, block_rows, [hits])
    return hits.done()


def _hits_key(data: MatchData, ge: bool, block_rows: int) -> tuple[tuple, tuple]:
    """The objects and values under which :func:`identity_counts` holds an all-pairs pass's hits (the thresholds
    follow)."""
    return ((data.samples.embeddings, data.samples.identity),
            ("identity hits", data.metric, ge, block_rows, nb.get_num_threads(), data.n_identities))


def identity_pass(data: MatchData, thresholds, rule: Rule = ">=", block_rows: int = 2048) -> IdentityPass:
    """The pass of :func:`identity_counts` at ``thresholds`` (all pairs of embeddings) as an accumulator for another
    scoring pass to feed (:func:`matchaudit.engine.passes.feed`): once done, inside
    :func:`matchaudit.scores.tile_cache`, ``identity_counts`` at these thresholds or any of them (with this
    ``block_rows``) is answered from it instead of a pass of its own. The same counts whatever blocks feed it: they
    sum the hits per identity and identity pair, in any order."""
    ts = np.sort(np.atleast_1d(np.asarray(thresholds, np.float64)), kind="stable")
    objects, key = _hits_key(data, rule == ">=", block_rows)
    return IdentityPass(data, ts, rule == ">=", (objects, (*key, ts.tobytes())))


@nb.njit(cache=True)
def _impostor_levels(score, a, b, ts, ge):
    """The impostor hits (level > 0) among the kept comparisons: identities and levels."""
    n = score.shape[0]
    ka, kb, lev = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    m = 0
    for x in range(n):
        j = _level(score[x], ts, ge)
        ka[m], kb[m], lev[m] = a[x], b[x], j
        m += j > 0
    return ka[:m], kb[:m], lev[:m]


@nb.njit(cache=True)
def _genuine_levels(identity, score, ts, ge, hist):
    """``hist[k, level] += 1`` for every kept genuine comparison of identity ``k``."""
    for x in range(score.shape[0]):
        hist[identity[x], _level(score[x], ts, ge)] += 1


def _hits_at_subset(held: tuple, held_ts: np.ndarray, ts: np.ndarray) -> tuple | None:
    """What :func:`_all_pairs_hits` returns at the ascending ``ts``, from its result ``held`` at the ascending
    ``held_ts`` when every threshold of ``ts`` is one of them (else None): a threshold at position ``j`` of
    ``held_ts`` accepts a score exactly when the score's level there exceeds ``j``, so levels map by counting.
    Exact: the same arrays, in the same order, as a pass at ``ts``."""
    if np.isnan(held_ts).any() or np.isnan(ts).any():
        return None
    pos = np.searchsorted(held_ts, ts)
    if (pos >= held_ts.size).any() or (held_ts[pos.clip(0, held_ts.size - 1)] != ts).any():
        return None
    hist, k, l, lev = held
    level = np.searchsorted(pos, np.arange(held_ts.size + 1))  # level at held_ts -> level at ts
    out = np.zeros((hist.shape[0], ts.size + 1), np.int64)
    for j in range(held_ts.size + 1):
        out[:, level[j]] += hist[:, j]
    new = level[lev]
    keep = new > 0
    return out, k[keep], l[keep], new[keep].astype(lev.dtype)


def _levels_from_tail(hits: TailHits, ts: np.ndarray, ge: bool, sizes: np.ndarray):
    """What :func:`_all_pairs_hits` returns, from the comparisons a counting pass kept (all thresholds
    >= ``hits.floor``, so every comparison they accept is among the hits; the other genuine comparisons
    are rejected by all: level 0)."""
    K = sizes.shape[0]
    hist = np.zeros((K, ts.size + 1), np.int64)
    _genuine_levels(hits.genuine_identity, hits.genuine_score, ts, ge, hist)
    hist[:, 0] += sizes * (sizes - 1) // 2 - hist.sum(axis=1)
    return (hist, *_impostor_levels(hits.impostor_score, hits.impostor_a, hits.impostor_b, ts, ge))


def impostor_pair_counts(data: MatchData, block_rows: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Listed data with identities: the identity pairs with impostor comparisons, as sorted keys
    ``min(k, l) * K + max(k, l)``, and their numbers of comparisons ``m_kl`` (one streamed pass; memory:
    the distinct pairs)."""
    K = data.n_identities
    keys, counts = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]

    def merge() -> None:
        u, inv = np.unique(np.concatenate(keys), return_inverse=True)
        c = np.zeros(u.size, np.int64)
        np.add.at(c, inv, np.concatenate(counts))
        keys[:], counts[:] = [u], [c]

    pending = 0
    for b in data.blocks(block_rows):
        imp = ~b.genuine
        u, c = np.unique(pair_key(b.identity_a[imp], b.identity_b[imp], K), return_counts=True)
        keys.append(u)
        counts.append(c.astype(np.int64))
        pending += u.size
        if pending > max(keys[0].size, 1 << 20):  # amortised: each key is merged O(log) times
            merge()
            pending = 0
    merge()
    return keys[0], counts[0]


def identity_counts(data: MatchData, thresholds, rule: Rule = ">=", block_rows: int = 2048,
                    hits: TailHits | None = None, reference: np.ndarray | None = None) -> IdentityCounts:
    """Exact identity-level genuine/impostor counts at ``thresholds`` (see :class:`IdentityCounts`).

    ``reference``: the (G, G) group pairs that set the threshold (:func:`matchaudit.pairings.reference_pairs`;
    None: all), which decides how cross-group pairs are pooled into categories. ``hits``: the comparisons an engine pass kept (``run(keep_tail=True).tail``); used instead of a scoring
    pass when they cover every threshold (the counts are identical)."""
    if not data.has_identities:
        raise InputError("identity-level counts need identities; this comparison table has labels only. "
                         "Add identity columns to the table.")
    thr = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    order = np.argsort(thr, kind="stable")
    ts = thr[order]
    T, K, G = thr.size, data.n_identities, data.n_groups
    ge = rule == ">="
    group = data.identity_group.astype(np.int64)
    cats = PairCategories.pooled_by(np.ones((G, G), bool) if reference is None else reference)
    n_cat, slot = cats.n, cats.slot
    sizes = data.identity_sizes
    if data.protocol == "all-pairs":
        if hits is not None and hits.covers(ts):
            hist, pk, pl, lev = _levels_from_tail(hits, ts, ge, sizes)
        else:
            assert data.samples is not None
            objects, key = _hits_key(data, ge, block_rows)
            hist, pk, pl, lev = once_per_call(
                objects, (*key, ts.tobytes()), lambda: _all_pairs_hits(data, ts, ge, block_rows),
                derive=lambda vals, held: _hits_at_subset(held, np.frombuffer(vals[-1]), ts))
        n = sizes.astype(object)  # exact Python ints for the squared sums
        S = np.bincount(group, weights=sizes, minlength=G).astype(np.int64)
        m_row_cat = np.zeros((n_cat, K), np.int64)
        for h in range(G):
            m_row_cat[slot[group, h], np.arange(K)] += sizes * (S[h] - np.where(group == h, sizes, 0))
        s2 = [sum(int(x) ** 2 for x in n[group == h]) for h in range(G)]
        s4 = [sum(int(x) ** 4 for x in n[group == h]) for h in range(G)]
        m2 = [0] * n_cat
        for a in range(G):
            m2[a] += (s2[a] ** 2 - s4[a]) // 2
            for b in range(a + 1, G):
                m2[slot[a, b]] += s2[a] * s2[b]
        sum_m2_cat = tuple(m2)
        pair_m_of = lambda k, l: sizes[k] * sizes[l]  # noqa: E731
    else:
        hist = np.zeros((K, T + 1), np.int64)
        hits = []
        for p in data.blocks(block_rows):
            lv = accepting_thresholds(p.score, ts, rule)
            gen = p.genuine
            np.add.at(hist, (p.identity_a[gen], lv[gen]), 1)
            imp = ~gen & (lv > 0)
            a, b = p.identity_a[imp], p.identity_b[imp]
            hits.append((np.minimum(a, b), np.maximum(a, b), lv[imp]))
        pk, pl, lev = (np.concatenate(x) for x in zip(*hits))
        keys, m_kl = impostor_pair_counts(data, block_rows)
        uk, ul = keys // K, keys % K
        uc = slot[group[uk], group[ul]]
        m_row_cat = np.zeros((n_cat, K), np.int64)
        np.add.at(m_row_cat, (uc, uk), m_kl)
        np.add.at(m_row_cat, (uc, ul), m_kl)
        sum_m2_cat = tuple(int((m_kl[uc == c].astype(object) ** 2).sum()) for c in range(n_cat))
        pair_m_of = lambda k, l: m_kl[np.searchsorted(keys, k * K + l)]  # noqa: E731
    g = hist.sum(axis=1)
    accepted_gen = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]  # (K, T): level > j
    code = pk.astype(np.int64) * K + pl
    srt = np.argsort(code, kind="stable")
    code, lev = code[srt], lev[srt]
    out = {f: [None] * T for f in ("pair_k", "pair_l", "pair_e", "pair_m", "pair_cat")}
    e_row_cat = np.zeros((T, n_cat, K), np.int64)
    e = np.zeros((T, K), np.int64)
    for j in range(T):
        ti = order[j]
        c = code[lev > j]
        first = np.flatnonzero(np.concatenate([[True], c[1:] != c[:-1]])) if c.size else np.zeros(0, np.int64)
        k, l = c[first] // K, c[first] % K
        cnt = np.diff(np.append(first, c.size)).astype(np.int64)
        cat = slot[group[k], group[l]]
        out["pair_k"][ti], out["pair_l"][ti], out["pair_e"][ti] = k, l, cnt
        out["pair_m"][ti] = np.asarray(pair_m_of(k, l), np.int64)
        out["pair_cat"][ti] = cat
        np.add.at(e_row_cat[ti], (cat, k), cnt)
        np.add.at(e_row_cat[ti], (cat, l), cnt)
        e[ti] = g - accepted_gen[:, j]
    return IdentityCounts(
        thresholds=thr, rule=rule, categories=cats, n_samples=sizes.astype(np.int64), group=group, g=g, e=e,
        m_row=m_row_cat.sum(axis=0), e_row=e_row_cat.sum(axis=1), m_row_cat=m_row_cat, e_row_cat=e_row_cat,
        sum_m2=int(sum(sum_m2_cat)), sum_m2_cat=sum_m2_cat, **out)


__all__ = ["IdentityCounts", "IdentityHits", "IdentityPass", "identity_counts", "identity_pass"]
