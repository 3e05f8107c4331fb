"""Blocks of comparisons -> entries (key, weight rows u, v) for one entry mode: sorted per sub-tile for
the accumulate kernel, or counted straight into per-thread tables (the direct path), with the window
cells' entries kept as items."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from matchaudit.engine import kernels as K
from matchaudit.engine.grid import Grid
from matchaudit.blocks import DenseBlock
from matchaudit.model import MatchData, PairBlock
from matchaudit.pairings import PairCategories
from matchaudit.scores import self_score

ENTRIES = 1 << 22  # entries per sub-tile (more entries per key: fewer table flushes)
EXACT = 1 << 24  # float32 represents every integer up to this
SUB_COLS = 2048  # sub-tile width: the weight rows of a sub-tile stay in L2


DIRECT_BYTES = 6 << 20  # largest float32 counts table (per thread) counted directly, without sorting entries


SMALL_EXACT = (1 << 15) - 1  # int16 accumulators hold every integer up to this


@dataclass
class DirectState:
    """State of a direct (unsorted) counting pass: per-thread accumulator rows and the per-thread int64 table
    they are flushed to (see :func:`kernels.direct`). Small weights (the usual case: double-or-nothing,
    multinomial counts of small identities) go as int8 with int16 accumulators: a row then spans a quarter
    of the cache lines, which roughly halves the time per entry; larger weights use float32 (exact below
    2^24). Lane ``count_lane`` (a padding lane, or 16 lanes added) has weight 1 on every row: it counts the
    entries that went into each accumulator row, for free inside the vector add."""

    W: np.ndarray  # (rows, lanes) int8 or float32: the one lane batch, plus the counting lane
    cap: int
    count_lane: int  # = the number of replicate lanes
    lanes: int  # of the batch
    acc: np.ndarray  # (threads, n_keys, lanes) int16 or float32
    table: np.ndarray  # (threads, n_keys, lanes) int64
    flushed: np.ndarray  # (threads, n_keys) bool: the rows of ``table`` that hold counts
    items: tuple[np.ndarray, ...] = ()  # per-thread buffers of window items: key, u, v (int32), score

    @classmethod
    def new(cls, W: np.ndarray, n_keys: int, n_lanes: int, room: int = 0) -> DirectState:
        """``W``: the one (1, rows, lanes) batch, of which ``n_lanes`` are replicates; ``room``: window items
        per thread that the item buffers hold."""
        rows, lanes = W.shape[1:]
        t = nb.get_num_threads()
        w2 = max(1, int(W.max()) ** 2)
        small = w2 <= SMALL_EXACT // 8
        dt, cap = (np.int16, SMALL_EXACT // w2) if small else (np.float32, EXACT // w2)
        w = np.zeros((rows, lanes + 16 * (n_lanes == lanes)), np.int8 if small else np.float32)
        w[:, :lanes] = W[0]
        w[:, n_lanes] = 1
        state = cls(w, cap, n_lanes, lanes, np.zeros((t, n_keys, w.shape[1]), dt),
                    np.zeros((t, n_keys, w.shape[1]), np.int64), np.zeros((t, n_keys), np.bool_))
        state.make_room(room)
        return state

    def make_room(self, room: int) -> None:
        """New item buffers holding ``room`` window items per thread."""
        t = self.acc.shape[0]
        self.items = (*(np.empty((t, room), np.int32) for _ in range(3)), np.empty((t, room), np.float64))

    def total(self) -> np.ndarray:
        """(n_keys, 1, lanes) int64: what the sorted path's table holds (padding lanes zero), as a view of
        replicate-major memory (the order the driver puts the counts in)."""
        out = np.zeros((self.lanes, self.table.shape[1]), np.int64)
        K.thread_totals(self.table, self.flushed, self.acc, self.count_lane, out)
        return out.T[:, None, :]


ITEM_SLACK = 1024  # window items per thread buffered beyond the estimate


def item_room(win: np.ndarray, share: float) -> int:
    """Window items per thread that a direct pass buffers: 1.5x the estimated ``share`` of a sub-tile's entries in
    the window cells ``win`` (:func:`matchaudit.engine.window.share`), plus ``ITEM_SLACK``."""
    if not win.any():
        return 0
    return int(1.5 * share * ENTRIES / nb.get_num_threads()) + ITEM_SLACK


def direct_pays(data: MatchData, ent: Entries, W: np.ndarray, collapse: bool) -> bool:
    """Direct counting (no entry arrays, no sort) while one lane batch covers every replicate and the
    per-thread table stays in cache; else entries are sorted by key first (the large-table path)."""
    return (data.protocol == "all-pairs" and ent.mode in (K.SAMPLE, K.PRODUCT) and not collapse
            and W.shape[0] == 1 and ent.n_keys * W.shape[2] * 4 <= DIRECT_BYTES)


class Entries:
    """Turns blocks into entries for one mode (shared by the counting pass and the refinement pass)."""

    def __init__(self, data: MatchData, grid: Grid, mode: int, self_pairs: bool, cats: PairCategories):
        self.data, self.grid, self.mode, self.cats = data, grid, mode, cats
        self.G = data.n_groups
        self.self_pairs = self_pairs and data.protocol == "all-pairs"
        look = grid.lookup()
        self.start, self.lo, self.scale, self.padded, self.ge = look.start, look.lo, look.scale, look.padded, look.ge
        n = 0 if data.samples is None else data.samples.ids.shape[0]
        self.ident = data.samples.identity.astype(np.int64) if data.protocol == "all-pairs" else np.zeros(0, np.int64)
        self.n_units = n if mode == K.SAMPLE else max(data.n_identities, 1)
        self.igroup = data.identity_group.astype(np.int64)
        self.per = self.G * self.G if mode == K.RELABEL else K.ENTRIES_PER_COMPARISON.get(mode, 1)
        self.n_kc = self.G + cats.n
        self.n_keys = self.n_kc * grid.n_cells
        self.self_s = self_score(data.metric)
        self.keying = K.Keying(self.ident, self.igroup, float(self.self_s), bool(self.self_pairs), int(mode),
                               int(self.n_units), cats.slot, grid.edges, self.padded, self.start, float(self.lo),
                               float(self.scale), bool(self.ge))

    def sorted_pieces(self, block, win: np.ndarray):
        """Yield (n, offsets, suv, items) per sub-tile of ``block``: its entries sorted by key (``offsets``
        (n_keys+1,), weight rows packed as ``u << 32 | v``) and, when ``win`` (a cell mask) is non-empty, the entries of window cells as items
        (key, u, v, score), copies. One-entry-per-comparison modes on tiles run in parallel."""
        if isinstance(block, DenseBlock) and self.mode in (K.SAMPLE, K.PRODUCT):
            yield from self._parallel_pieces(block, win)
            return
        none = np.zeros(0, np.bool_)
        for n, keys, us, vs, _ in self.pieces(block, none):
            offsets = np.empty(self.n_keys + 1, np.int64)
            suv = np.empty(n, np.int64)
            K.sort_entries(n, keys, us, vs, self.n_keys, offsets, suv)
            yield n, offsets, suv, None
        if win.size:
            for n, keys, us, vs, sc in self.pieces(block, win):
                if n:
                    yield 0, None, None, (keys[:n].copy(), us[:n].copy(), vs[:n].copy(), sc[:n].copy())

    def _subtiles(self, block: DenseBlock, n_chunks: int):
        """Yield (c_lo, c_hi, rows, cum, chunks) per sub-tile: its local rows, their entries' start offsets
        ``cum`` (serial order, ``cum[-1]`` entries) and ``n_chunks`` row ranges of about equal entries."""
        r, c = block.scores.shape
        cstep = min(c, SUB_COLS)
        step = max(1, ENTRIES // (cstep + 1))
        for c_lo, r_lo in ((c_lo, r_lo) for c_lo in range(0, c, cstep) for r_lo in range(0, r, step)):
            r_hi, c_hi = min(r, r_lo + step), min(c, c_lo + cstep)
            if block.row0 + r_lo >= block.col0 + c_hi:
                continue  # below the diagonal: no comparisons
            rows = np.arange(r_lo, r_hi)
            cum, chunks = block.row_chunks(rows, c_lo, c_hi, n_chunks, self.self_pairs)
            if cum[-1] == 0:
                continue
            yield c_lo, c_hi, rows, cum, chunks

    def _parallel_pieces(self, block: DenseBlock, win: np.ndarray):
        g = self.grid
        collect = win.size > 0
        n_chunks = 4 * nb.get_num_threads()
        for c_lo, c_hi, rows, cum, chunks in self._subtiles(block, n_chunks):
            n = int(cum[-1])
            keys, us, vs = (np.empty(n, np.int32) for _ in range(3))
            sc = np.empty(n if collect else 0, np.float64)
            hist = np.zeros((n_chunks, self.n_keys), np.int64)
            n_win = np.zeros(n_chunks, np.int64)
            tile = K.Tile(block.scores, block.row0, block.col0, c_lo, c_hi, rows, chunks)
            K.dense_keys(tile, cum[:-1], self.keying, win, keys, us, vs, sc, hist, n_win)
            tot = hist.sum(axis=0)
            offsets = np.concatenate([[0], np.cumsum(tot)]).astype(np.int64)
            fill = offsets[None, :-1] + np.cumsum(hist, axis=0) - hist
            wpos = np.concatenate([[0], np.cumsum(n_win)[:-1]]).astype(np.int64)
            m = int(n_win.sum())
            it = (np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.float64))
            suv = np.empty(n, np.int64)
            K.scatter(keys, us, vs, sc, cum[chunks], fill, suv, g.n_cells, win, wpos, *it)
            yield n, offsets, suv, (it if collect else None)

    def direct_pieces(self, block: DenseBlock, win: np.ndarray, acc: DirectState):
        """Count ``block`` straight into ``acc`` (:func:`kernels.direct`); yield the window items per sub-tile
        (from the kernel's item buffers; if one ran out, by :func:`kernels.window_items`, and the buffers
        grow to twice what was needed)."""
        collect = win.size > 0
        n_chunks = acc.acc.shape[0]
        for c_lo, c_hi, rows, cum, chunks in self._subtiles(block, n_chunks):
            n_win = np.zeros(rows.size, np.int64)
            n_it = np.zeros(n_chunks, np.int64)
            tile = K.Tile(block.scores, block.row0, block.col0, c_lo, c_hi, rows, chunks)
            K.direct(tile, self.keying, win, acc.W, acc.cap, acc.count_lane, acc.acc, acc.table, acc.flushed, n_win,
                     *acc.items, n_it)
            if not collect:
                continue
            if n_it.max() <= acc.items[0].shape[1]:
                yield tuple(np.concatenate([x[t, :n_it[t]] for t in range(n_chunks)]) for x in acc.items)
                continue
            acc.make_room(2 * int(n_it.max()))
            yield self._window_items(block, win, c_lo, c_hi, rows, chunks, n_win)

    def _window_items(self, block: DenseBlock, win: np.ndarray, c_lo: int, c_hi: int, rows: np.ndarray,
                      chunks: np.ndarray, n_win: np.ndarray) -> tuple[np.ndarray, ...]:
        """The window items of one sub-tile, rescanned (``n_win``: their number per row)."""
        g = self.grid
        cells = np.flatnonzero(win)
        s_lo, s_hi = np.concatenate([[-np.inf], g.edges])[cells[0]], np.append(g.edges, np.inf)[cells[-1]]
        wpos = np.concatenate([[0], np.cumsum(n_win)]).astype(np.int64)
        m = int(wpos[-1])
        it = (np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.float64))
        tile = K.Tile(block.scores, block.row0, block.col0, c_lo, c_hi, rows, chunks)
        K.window_items(tile, wpos[:-1], self.keying, win, s_lo, s_hi, *it)
        return it

    def pieces(self, block, want: np.ndarray):
        """Yield (n, keys, us, vs, scores) for sub-tiles of ``block`` (at most ENTRIES entries each)."""
        if isinstance(block, DenseBlock):
            r, c = block.scores.shape
            cstep = min(c, SUB_COLS)
            step = max(1, ENTRIES // (self.per * cstep + 1))
            for c_lo, r_lo in ((c_lo, r_lo) for c_lo in range(0, c, cstep) for r_lo in range(0, r, step)):
                r_hi, c_hi = min(r, r_lo + step), min(c, c_lo + cstep)
                if block.row0 + r_lo >= block.col0 + c_hi:
                    continue  # below the diagonal: no comparisons
                cap = (r_hi - r_lo) * ((c_hi - c_lo) * self.per + 1)
                keys, us, vs = (np.empty(cap, np.int32) for _ in range(3))
                sc = np.empty(cap if want.size else 0, np.float64)
                n = K.dense_entries(block.scores, block.row0, block.col0, r_lo, r_hi, c_lo, c_hi, self.keying, want,
                                    keys, us, vs, sc)
                yield n, keys, us, vs, sc
        else:
            p: PairBlock = block
            step = max(1, ENTRIES // self.per)
            for lo in range(0, len(p), step):
                sl = slice(lo, lo + step)
                m = len(p.score[sl])
                keys, us, vs = (np.empty(m * self.per, np.int32) for _ in range(3))
                sc = np.empty(m * self.per if want.size else 0, np.float64)
                ka = np.maximum(p.identity_a[sl], 0)
                kb = np.maximum(p.identity_b[sl], 0)
                n = K.pair_entries(p.score[sl].astype(np.float64), p.genuine[sl], p.sample_a[sl], p.sample_b[sl],
                                   ka, kb, p.group_a[sl], p.group_b[sl], self.keying, want, keys, us, vs, sc)
                yield n, keys, us, vs, sc
