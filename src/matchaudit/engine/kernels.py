"""Numba kernels: comparisons -> sorted weight entries -> per-replicate weighted cell counts.

An *entry* is (key, u, v, cnt): it adds ``cnt * W[u, b] * W[v, b]`` to ``table[key, b]`` for every
replicate lane ``b``. ``key`` = (class, category, cell); ``u``/``v`` index rows of the weight matrix ``W``
whose meaning is set by the entry *mode* (a scheme's level and form):

* ``SAMPLE``:   rows c_i (n), C(c_i, 2) (n), one. Comparison (i, j) -> (i, j); self-pair i -> (n+i, one).
* ``PRODUCT``:  rows gw_k (K), iw_k (K), one. Genuine -> (k, one); impostor -> (K+k, K+l).
* ``SUM``:      rows gw_k, iwA_k, iwB_k, one. Genuine -> (k, one); impostor -> (K+k, one) + (2K+l, one).
* ``RELABEL``:  rows 1{group of k is g} (K*G), one. Every (g[, h]) gets its own entry, keyed by its category.

Every kernel is integer-only, so counts are exact and independent of order, tiling and threads.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from matchaudit.cells import cell, row_cells

SAMPLE, PRODUCT, SUM, RELABEL = 0, 1, 2, 3
ENTRIES_PER_COMPARISON = {SAMPLE: 1, PRODUCT: 1, SUM: 2}


class Keying(NamedTuple):
    """How a comparison becomes an entry: its cell on the grid (:func:`matchaudit.cells.cell`) and its key and weight rows
    under the entry ``mode`` (:func:`emit`). One per counting pass (``entries.Entries.keying``)."""

    ident: np.ndarray  # (n,) int64 identity of each sample (all-pairs; empty for listed comparisons)
    igroup: np.ndarray  # (K,) int64 group of each identity
    self_score: float  # the score of a sample with itself (self-pairs of sample-level schemes)
    self_pairs: bool  # emit self-pairs (all-pairs, schemes that draw a sample twice)
    mode: int  # SAMPLE, PRODUCT, SUM or RELABEL
    n_units: int  # weight units (samples or identities)
    slot: np.ndarray  # (G, G) int64: the impostor category of each group pair (:class:`matchaudit.pairings.PairCategories`)
    edges: np.ndarray  # (C-1,) grid edges
    padded: np.ndarray  # the lookup's tables (:class:`matchaudit.cells.Lookup`)
    start: np.ndarray
    lo: float
    scale: float
    ge: bool  # rule ">="


class Tile(NamedTuple):
    """A sub-tile of an all-pairs score block: local columns ``c_lo..c_hi`` of the local ``rows``, split into
    thread chunks ``rows[chunks[t]:chunks[t+1]]``; global row ``row0 + r``, column ``col0 + jj``."""

    scores: np.ndarray  # (rows, cols) the block's scores
    row0: int
    col0: int
    c_lo: int
    c_hi: int
    rows: np.ndarray  # (q,) int64 local rows
    chunks: np.ndarray  # (threads+1,) int64 row-range bounds


@nb.njit(inline="always", cache=True)
def single(mode, c, genuine, sa, sb, ka, kb, ga, gb, n_units, slot, n_cells):
    """(key, u, v) of a comparison in the modes with one entry per comparison (SAMPLE, PRODUCT; SUM genuine)."""
    if genuine:
        key = ga * n_cells + c
    else:
        key = (slot.shape[0] + slot[ga, gb]) * n_cells + c
    if mode == SAMPLE:
        return key, sa, sb
    if genuine:
        return key, ka, (2 if mode == PRODUCT else 3) * n_units
    return key, n_units + ka, n_units + kb


@nb.njit(inline="always", cache=True)
def emit(mode, c, genuine, sa, sb, ka, kb, ga, gb, n_units, slot, n_cells, keys, us, vs, pos):
    """Write the entries of one comparison at ``pos``; returns the new position.

    Genuine keys: g * n_cells + c; impostor keys: (G + slot[g, h]) * n_cells + c."""
    n_groups = slot.shape[0]
    if mode == RELABEL:
        one = n_units * n_groups
        if genuine:
            for g in range(n_groups):
                keys[pos] = g * n_cells + c
                us[pos] = ka * n_groups + g
                vs[pos] = one
                pos += 1
        else:
            for g in range(n_groups):
                for h in range(n_groups):
                    keys[pos] = (n_groups + slot[g, h]) * n_cells + c
                    us[pos] = ka * n_groups + g
                    vs[pos] = kb * n_groups + h
                    pos += 1
        return pos
    if mode != SUM or genuine:
        keys[pos], us[pos], vs[pos] = single(mode, c, genuine, sa, sb, ka, kb, ga, gb, n_units, slot, n_cells)
        return pos + 1
    key = (n_groups + slot[ga, gb]) * n_cells + c
    one = 3 * n_units  # SUM
    keys[pos] = key
    us[pos] = n_units + ka
    vs[pos] = one
    keys[pos + 1] = key
    us[pos + 1] = 2 * n_units + kb
    vs[pos + 1] = one
    return pos + 2


@nb.njit(cache=True)
def dense_entries(scores, row0, col0, r_lo, r_hi, c_lo, c_hi, keying, want, keys, us, vs, score_out):
    """Entries of tile rows ``r_lo..r_hi``, columns ``c_lo..c_hi`` (local) with global row < column (+ self-pairs).

    ``want``: None-like empty array -> every cell; else a boolean mask of cells to keep (refinement), and
    the score of each kept entry goes to ``score_out``. Returns the number of entries written."""
    ident, igroup, self_score, self_pairs, mode, n_units, slot, edges, padded, start, lo, scale, ge = keying
    n_cells = edges.shape[0] + 1
    filt = want.shape[0] > 0
    pos = 0
    c_self = cell(self_score, padded, start, lo, scale, ge)
    for r in range(r_lo, r_hi):
        i = row0 + r
        ki = ident[i]
        gi = igroup[ki]
        if self_pairs and i >= col0 + c_lo and i < col0 + c_hi and (not filt or want[c_self]):
            keys[pos] = gi * n_cells + c_self
            us[pos] = n_units + i
            vs[pos] = 2 * n_units
            if filt:
                score_out[pos] = self_score
            pos += 1
        j0 = max(c_lo, i + 1 - col0)
        for jj in range(j0, c_hi):
            s = scores[r, jj]
            c = cell(s, padded, start, lo, scale, ge)
            if filt and not want[c]:
                continue
            j = col0 + jj
            kj = ident[j]
            p0 = pos
            pos = emit(mode, c, ki == kj, i, j, ki, kj, gi, igroup[kj], n_units, slot, n_cells, keys, us, vs, pos)
            if filt:
                for p in range(p0, pos):
                    score_out[p] = s
    return pos


@nb.njit(cache=True)
def pair_entries(score, genuine, sa, sb, ka, kb, ga, gb, keying, want, keys, us, vs, score_out):
    """Entries of listed comparisons (same contract as :func:`dense_entries`)."""
    mode, n_units, slot, edges = keying.mode, keying.n_units, keying.slot, keying.edges
    padded, start, lo, scale, ge = keying.padded, keying.start, keying.lo, keying.scale, keying.ge
    n_cells = edges.shape[0] + 1
    filt = want.shape[0] > 0
    pos = 0
    for e in range(score.shape[0]):
        s = score[e]
        c = cell(s, padded, start, lo, scale, ge)
        if filt and not want[c]:
            continue
        p0 = pos
        pos = emit(mode, c, genuine[e], sa[e], sb[e], ka[e], kb[e], ga[e], gb[e], n_units, slot, n_cells,
                   keys, us, vs, pos)
        if filt:
            for p in range(p0, pos):
                score_out[p] = s
    return pos


@nb.njit(cache=True)
def sort_entries(n, keys, us, vs, n_keys, offsets, suv):
    """Counting sort of the first ``n`` entries by key: offsets (n_keys+1,), sorted (u << 32 | v) in suv."""
    offsets[:] = 0
    for e in range(n):
        offsets[keys[e] + 1] += 1
    for k in range(n_keys):
        offsets[k + 1] += offsets[k]
    fill = offsets[:-1].copy()
    for e in range(n):
        k = keys[e]
        p = fill[k]
        suv[p] = pack(us[e], vs[e])
        fill[k] = p + 1


@nb.njit(inline="always", cache=True)
def pack(u, v):
    """Weight rows u, v of an entry in one int64 (one random write per entry in the scatter, not two)."""
    return (np.int64(u) << 32) | np.int64(v)


@nb.njit(parallel=True, cache=True, fastmath=True)
def accumulate(W, offsets, suv, cnt, use_cnt, flush_every, table, kcuts):
    """table[key, t, :] += sum over entries of key of cnt * W[t, u] * W[t, v] (all lanes of batch t).

    W: (n_batches, rows, lanes) float32 holding small integers; table: (n_keys, n_batches, lanes) int64.
    Products and partial sums run in float32 SIMD lanes (16 per AVX-512 FMA). Every value is an integer
    below 2^24, so float32 holds it exactly and any evaluation order (fastmath: FMA contraction,
    re-association) gives the same exact result; the caller passes ``flush_every`` <= 2^24 // (largest
    cnt*w*w) and partial sums move to the int64 table at least that often. One job per (replicate batch,
    key slice ``kcuts[s]:kcuts[s+1]``): jobs write disjoint table cells. Working set: the batch's weight rows
    of one sub-tile (L2) and one key's lanes; the table is touched once per non-empty key. Entries go four
    at a time to shorten the accumulator's dependency chain."""
    lanes = W.shape[2]
    n_slices = kcuts.shape[0] - 1
    for job in nb.prange(W.shape[0] * n_slices):
        t = job // n_slices
        sl = job % n_slices
        Wt = W[t]
        acc = np.zeros(lanes, dtype=np.float32)
        for k in range(kcuts[sl], kcuts[sl + 1]):
            lo, hi = offsets[k], offsets[k + 1]
            if lo == hi:
                continue
            acc[:] = 0
            e = lo
            while e < hi:
                stop = min(hi, e + flush_every)
                if use_cnt:
                    while e < stop:
                        u, v, c = suv[e] >> 32, suv[e] & 0xFFFFFFFF, np.float32(cnt[e])
                        for x in range(lanes):
                            acc[x] += c * Wt[u, x] * Wt[v, x]
                        e += 1
                else:
                    while e + 4 <= stop:
                        u0, v0, u1, v1 = suv[e] >> 32, suv[e] & 0xFFFFFFFF, suv[e + 1] >> 32, suv[e + 1] & 0xFFFFFFFF
                        u2, v2 = suv[e + 2] >> 32, suv[e + 2] & 0xFFFFFFFF
                        u3, v3 = suv[e + 3] >> 32, suv[e + 3] & 0xFFFFFFFF
                        for x in range(lanes):
                            acc[x] += (Wt[u0, x] * Wt[v0, x] + Wt[u1, x] * Wt[v1, x]) + (
                                Wt[u2, x] * Wt[v2, x] + Wt[u3, x] * Wt[v3, x])
                        e += 4
                    while e < stop:
                        u, v = suv[e] >> 32, suv[e] & 0xFFFFFFFF
                        for x in range(lanes):
                            acc[x] += Wt[u, x] * Wt[v, x]
                        e += 1
                for x in range(lanes):
                    table[k, t, x] += np.int64(acc[x])
                acc[:] = 0


@nb.njit(parallel=True, cache=True)
def accumulate_draws(key, weights, table, r0):
    """Comparison-level schemes: table[key[e], r0 + r] += weights[r, e]."""
    for r in nb.prange(weights.shape[0]):
        for e in range(key.shape[0]):
            w = weights[r, e]
            if w != 0:
                table[key[e], r0 + r] += w


@nb.njit(parallel=True, cache=True)
def dense_keys(tile, rpos, keying, win, keys, us, vs, sc, hist, n_win):
    """Parallel :func:`dense_entries` for modes with one entry per comparison (SAMPLE, PRODUCT).

    Local tile row ``rows[q]`` writes its entries from ``rpos[q]`` (the serial order); thread chunk ``t``
    takes rows ``chunks[t]:chunks[t+1]``, counts its keys in ``hist[t]`` and, when ``win`` (a cell mask) is
    non-empty, writes the scores of entries in window cells to ``sc`` (the others are left unwritten: only
    window entries are read back) and counts them in ``n_win[t]``."""
    scores, row0, col0, c_lo, c_hi, rows, chunks = tile
    ident, igroup, self_score, self_pairs, mode, n_units, slot, edges, padded, start, lo, scale, ge = keying
    n_cells = edges.shape[0] + 1
    collect = win.shape[0] > 0
    c_self = cell(self_score, padded, start, lo, scale, ge)
    for t in nb.prange(chunks.shape[0] - 1):
        h = hist[t]
        nw = 0
        cbuf = np.empty(c_hi - c_lo, np.int64)
        fix = np.empty(c_hi - c_lo, np.int64)
        for q in range(chunks[t], chunks[t + 1]):
            r = rows[q]
            pos = rpos[q]
            i = row0 + r
            ki = ident[i]
            gi = igroup[ki]
            if self_pairs and i >= col0 + c_lo and i < col0 + c_hi:
                k = gi * n_cells + c_self
                keys[pos] = k
                us[pos] = n_units + i
                vs[pos] = 2 * n_units
                h[k] += 1
                if collect and win[c_self]:
                    sc[pos] = self_score
                    nw += 1
                pos += 1
            j0 = max(c_lo, i + 1 - col0)
            row_cells(scores, r, j0, c_hi, padded, start, lo, scale, ge, cbuf, fix)
            for jj in range(j0, c_hi):
                c = cbuf[jj - j0]
                j = col0 + jj
                kj = ident[j]
                emit(mode, c, ki == kj, i, j, ki, kj, gi, igroup[kj], n_units, slot, n_cells, keys, us, vs, pos)
                h[keys[pos]] += 1
                if collect and win[c]:
                    sc[pos] = scores[r, jj]
                    nw += 1
                pos += 1
        n_win[t] = nw


@nb.njit(inline="always", cache=True)
def _add(a, table, flushed, key, u, v, W, cap, count_lane):
    """``a[key] += W[u] * W[v]``; the row moves to the int64 ``table[key]`` once it holds ``cap`` entries
    (lane ``count_lane`` counts them: its weights are all 1), and ``flushed[key]`` marks that it did."""
    lanes = W.shape[1]
    for x in range(lanes):
        a[key, x] += W[u, x] * W[v, x]
    if a[key, count_lane] == cap:
        flushed[key] = True
        for x in range(lanes):
            table[key, x] += np.int64(a[key, x])
            a[key, x] = 0


@nb.njit(inline="always", cache=True)
def _keep_item(it_key, it_u, it_v, it_s, m, key, u, v, s):
    """Item ``m`` = (key, u, v, s) if the buffers have room; returns ``m + 1`` either way (the count)."""
    if m < it_key.shape[0]:
        it_key[m], it_u[m], it_v[m], it_s[m] = key, u, v, s
    return m + 1


@nb.njit(parallel=True, cache=True, fastmath=True)
def direct(tile, keying, win, W, cap, count_lane, acc, table, flushed, n_win, it_key, it_u, it_v, it_s, n_it):
    """Fused :func:`dense_keys` + :func:`accumulate` for one lane batch and a small table: thread chunk ``t``
    (rows ``chunks[t]:chunks[t+1]``) adds ``W[u] * W[v]`` straight into its rows ``acc[t, key]``, no entry
    arrays, no sort. Exact: every addend is an integer and a key's row moves to the int64 ``table[t, key]``
    once ``cap`` entries have gone into it (counted in lane ``count_lane``, whose weights are all 1; marked in
    ``flushed[t, key]``, so that the sum reads only those rows of the large table;
    ``cap * max(W)^2`` fits the accumulator exactly: int8 weights into int16, or float32 below 2^24). The
    entries in window cells ``win`` go to chunk ``t``'s item buffers ``it_*[t]`` (key, u, v, score) while they
    have room; ``n_it[t]`` counts them all, and ``n_win[q]`` those of row ``q`` (so :func:`window_items` can
    collect them instead if a buffer ran out). Worth it while ``acc`` stays in cache: the caller decides (see
    ``entries.direct_pays``).

    ``tile`` and ``keying`` are read-only structs; every array the kernel writes is its own argument (a
    store into an array taken out of a tuple inside a ``prange`` body was measured lost: numba's parfor
    passes do not see it as an output)."""
    scores, row0, col0, c_lo, c_hi, rows, chunks = tile
    ident, igroup, self_score, self_pairs, mode, n_units, slot, edges, padded, start, lo, scale, ge = keying
    n_cells = edges.shape[0] + 1
    collect = win.shape[0] > 0
    c_self = cell(self_score, padded, start, lo, scale, ge)
    for t in nb.prange(chunks.shape[0] - 1):
        a = acc[t]
        tab = table[t]
        fl = flushed[t]
        cbuf = np.empty(c_hi - c_lo, np.int64)
        fix = np.empty(c_hi - c_lo, np.int64)
        ik, iu, iv, isc = it_key[t], it_u[t], it_v[t], it_s[t]  # this chunk's item buffers
        m = 0
        for q in range(chunks[t], chunks[t + 1]):
            r = rows[q]
            i = row0 + r
            ki = ident[i]
            gi = igroup[ki]
            nw = 0
            if self_pairs and i >= col0 + c_lo and i < col0 + c_hi:
                key, u, v = gi * n_cells + c_self, n_units + i, 2 * n_units
                _add(a, tab, fl, key, u, v, W, cap, count_lane)
                if collect and win[c_self]:
                    m = _keep_item(ik, iu, iv, isc, m, key, u, v, self_score)
                    nw += 1
            j0 = max(c_lo, i + 1 - col0)
            row_cells(scores, r, j0, c_hi, padded, start, lo, scale, ge, cbuf, fix)
            for jj in range(j0, c_hi):
                c = cbuf[jj - j0]
                j = col0 + jj
                kj = ident[j]
                key, u, v = single(mode, c, ki == kj, i, j, ki, kj, gi, igroup[kj], n_units, slot, n_cells)
                if collect and win[c]:
                    m = _keep_item(ik, iu, iv, isc, m, key, u, v, scores[r, jj])
                    nw += 1
                _add(a, tab, fl, key, u, v, W, cap, count_lane)
            n_win[q] = nw
        n_it[t] = m


@nb.njit(parallel=True, cache=True)
def window_items(tile, wpos, keying, win, s_lo, s_hi, it_key, it_u, it_v, it_s):
    """The window-cell entries of :func:`direct`'s rows as items (key, u, v, score) from ``wpos[q]``, when
    :func:`direct`'s item buffers were too small; only scores in ``[s_lo, s_hi]`` (the window's range) are
    looked up."""
    scores, row0, col0, c_lo, c_hi, rows, chunks = tile
    ident, igroup, self_score, self_pairs, mode, n_units, slot, edges, padded, start, lo, scale, ge = keying
    n_cells = edges.shape[0] + 1
    c_self = cell(self_score, padded, start, lo, scale, ge)
    for t in nb.prange(chunks.shape[0] - 1):
        for q in range(chunks[t], chunks[t + 1]):
            r = rows[q]
            i = row0 + r
            ki = ident[i]
            gi = igroup[ki]
            w = wpos[q]
            if self_pairs and i >= col0 + c_lo and i < col0 + c_hi and win[c_self]:
                it_key[w], it_u[w], it_v[w], it_s[w] = gi * n_cells + c_self, n_units + i, 2 * n_units, self_score
                w += 1
            for jj in range(max(c_lo, i + 1 - col0), c_hi):
                s = scores[r, jj]
                if s < s_lo or s > s_hi:
                    continue
                c = cell(s, padded, start, lo, scale, ge)
                if not win[c]:
                    continue
                j = col0 + jj
                kj = ident[j]
                it_key[w], it_u[w], it_v[w] = single(mode, c, ki == kj, i, j, ki, kj, gi, igroup[kj], n_units,
                                                     slot, n_cells)
                it_s[w] = s
                w += 1


@nb.njit(parallel=True, cache=True)
def scatter(keys, us, vs, sc, bounds, fill, suv, n_cells, win, wpos, it_key, it_u, it_v, it_s):
    """Counting-sort scatter of entries ``bounds[t]:bounds[t+1]`` by thread ``t`` from its key positions
    ``fill[t]`` (order inside a key: the serial order), plus the copy of window-cell entries to the items."""
    collect = win.shape[0] > 0
    for t in nb.prange(bounds.shape[0] - 1):
        f = fill[t]
        w = wpos[t]
        for e in range(bounds[t], bounds[t + 1]):
            k = keys[e]
            p = f[k]
            suv[p] = pack(us[e], vs[e])
            f[k] = p + 1
            if collect and win[k % n_cells]:
                it_key[w] = k
                it_u[w] = us[e]
                it_v[w] = vs[e]
                it_s[w] = sc[e]
                w += 1


@nb.njit(cache=True)
def split_by_identity(keys, us, vs, sc, cells, n_cells, n_groups, mode, n_units, ident):
    """The entries whose cell is in the mask ``cells``, as comparisons by identity: genuine (identity, score)
    and impostor (identity a < b, score). Rows are samples (SAMPLE; self-pair rows ``n + i`` are skipped) or
    identities (PRODUCT: genuine ``(k, one)``, impostor ``(K + k, K + l)``)."""
    n = keys.shape[0]
    g_id, g_s = np.empty(n, np.int64), np.empty(n, np.float64)
    i_a, i_b, i_s = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
    ng = ni = 0
    for e in range(n):
        if not cells[keys[e] % n_cells] or (mode == SAMPLE and us[e] >= n_units):
            continue
        if mode == SAMPLE:
            ka, kb = ident[us[e]], ident[vs[e]]
        else:
            ka, kb = us[e] % n_units, vs[e] % n_units
        if keys[e] // n_cells < n_groups:
            g_id[ng], g_s[ng] = ka, sc[e]
            ng += 1
        else:
            i_a[ni], i_b[ni], i_s[ni] = min(ka, kb), max(ka, kb), sc[e]
            ni += 1
    return g_id[:ng], g_s[:ng], i_a[:ni], i_b[:ni], i_s[:ni]


@nb.njit(parallel=True, cache=True)
def thread_totals(table, flushed, acc, lanes, out):
    """out[x, k] = sum over threads t of table[t, k, x] + acc[t, k, x] for the first ``lanes`` lanes (what
    :func:`direct`'s per-thread rows add up to), replicate-major: the counts' final layout, which the driver
    keeps as it is; in blocks of 32 keys (the block's rows of ``acc`` and columns of ``out`` stay in cache).
    ``table[t, k]`` is read only where ``flushed[t, k]`` (elsewhere it is zero: most of that table is never
    touched, and reading it costs its pages)."""
    n_keys = acc.shape[1]
    for kb in nb.prange((n_keys + 31) // 32):
        for k in range(kb * 32, min(n_keys, kb * 32 + 32)):
            for x in range(lanes):
                v = np.int64(0)
                for t in range(acc.shape[0]):
                    v += np.int64(acc[t, k, x])
                out[x, k] = v
            for t in range(acc.shape[0]):
                if flushed[t, k]:
                    for x in range(lanes):
                        out[x, k] += table[t, k, x]


@nb.njit(parallel=True, cache=True)
def lanes_to_replicates(table, out):
    """out[r, k] = table[k, r // lanes, r % lanes] (the counts' final layout), in L2-sized key blocks."""
    n_keys, _, lanes = table.shape
    R = out.shape[0]
    for kb in nb.prange((n_keys + 31) // 32):
        for r in range(R):
            t, x = r // lanes, r % lanes
            for k in range(kb * 32, min(n_keys, kb * 32 + 32)):
                out[r, k] = table[k, t, x]
