"""The driver: one pass over the comparison blocks accumulates, for the plug-in (replicate 0, all weights
1) and every replicate of a scheme, exact integer weighted counts per class, group (pair) and grid cell,
and keeps the entries of the cells likely to hold a threshold at an FMR target (a window estimated from a
sample of impostor scores), which makes those thresholds exact; only if some replicate's threshold falls
outside the window does a second, filtered pass collect the missing cells (``Counts.info``).

Per sub-tile (one-entry-per-comparison modes on all-pairs tiles): parallel entry generation (cell lookup,
keys) with per-thread key histograms, a parallel counting-sort scatter, then the accumulate kernel,
parallel over (replicate batch x key slice).

Memory bound (all-pairs or listed, any n): the counts table, ``(B+1) x (G + G(G+1)/2) x (C+1)`` int64 (twice
while it is transposed to the final layout); the weight matrix, ``(B+1) x rows`` float32 (rows = 2n+1
sample-level, 3K+1 identity-level, K*G+1 relabel); one sub-tile of entries (``ENTRIES`` x 28 bytes with
scores, 112 MiB); one score tile of ``model.blocks`` (256 MiB at its defaults). Comparison-level schemes
(two-level, iid) additionally hold every comparison's key and identities (17 bytes per comparison) and a
chunk of per-comparison weights (at most 256 MiB). The identity-level collapse holds the distinct (class,
category, cell, identity, identity) entries (<= 24 bytes each, at most the number of comparisons). FMR-target
refinement holds the entries of the window cells (20 bytes each: the comparisons whose scores have an
estimated FMR within a factor ``WINDOW`` of a target) and computes their per-replicate weights on the fly;
the direct path collects them in per-thread buffers of 1.5x a sub-tile's estimated share (grown to twice a
sub-tile's need if that falls short).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np

from matchaudit import interrupt
from matchaudit.definitions import ThresholdImpostors
from matchaudit.engine import kernels as K
from matchaudit.engine.grid import Grid, _sample_scores, build_grid
from matchaudit.model import DenseBlock, MatchData, PairBlock
from matchaudit.resampling import ComparisonLists, Layout, Scheme, Vertex
from matchaudit.scores import self_score

ENTRIES = 1 << 22  # entries per sub-tile (more entries per key: fewer table flushes)
EXACT = 1 << 24  # float32 represents every integer up to this
SUB_COLS = 2048  # sub-tile width: the weight rows of a sub-tile stay in L2
CALL_WORK = 1 << 31  # entry-lanes per accumulate call (about a second at most): Ctrl-C is seen between calls


@dataclass(frozen=True)
class TailHits:
    """Every comparison with score >= ``floor`` (all-pairs), by identity: what identity-level counts at any
    threshold >= ``floor`` need (:func:`matchaudit.engine.identity_counts` ``hits=``), kept by the counting
    pass itself (``run(keep_tail=True)``) instead of scoring everything again."""

    floor: float
    genuine_identity: np.ndarray  # (h,) int64
    genuine_score: np.ndarray  # (h,) float64
    impostor_a: np.ndarray  # (m,) int64, < impostor_b
    impostor_b: np.ndarray  # (m,) int64
    impostor_score: np.ndarray  # (m,) float64

    def covers(self, thresholds: np.ndarray) -> bool:
        return bool(np.all(np.asarray(thresholds) >= self.floor))


@dataclass
class Counts:
    """Weighted counts per replicate (index 0 = plug-in, exact), class, group (pair) and grid cell.

    ``genuine[r, g, c]``: weighted genuine comparisons of group ``g`` in cell ``c``; ``impostor[r, k, c]``:
    impostor comparisons of category ``k`` (same-group ``g`` at ``k = g``, then cross pairs, see
    ``categories``). Accepted at threshold ``edges[e]`` = cells ``> e``. ``target_*``: exact thresholds at
    the FMR targets and the exact accepted counts there. The threshold (the project definition, as
    :meth:`matchaudit.metrics.rates.Rates.threshold_at_fmr`): the lowest score of any comparison with
    positive weight in the replicate, genuine or impostor, whose FMR over the reference impostors
    (``fmr_reference``) is at most the target under ``grid.rule``; +inf if none (or no reference impostors).
    """

    scheme: str
    seed: int | None
    replicates: np.ndarray  # (R,) replicate numbers, 0 first
    grid: Grid
    group_names: tuple[str, ...]
    categories: list[tuple[int, int]]
    genuine: np.ndarray  # (R, G, C+1) int64
    impostor: np.ndarray  # (R, n_cat, C+1) int64
    fmr_targets: np.ndarray  # (T,)
    fmr_reference: ThresholdImpostors
    target_threshold: np.ndarray  # (R, T) float64
    target_genuine_accepted: np.ndarray  # (R, T, G) int64
    target_impostor_accepted: np.ndarray  # (R, T, n_cat) int64
    imputed_pairs: np.ndarray | None = None  # (R,) vertex: draw pairs of one identity (no comparisons)
    tail: TailHits | None = None  # run(keep_tail=True): every comparison scoring at least tail.floor
    info: dict = field(default_factory=dict)

    @property
    def genuine_total(self) -> np.ndarray:
        return self.genuine.sum(axis=2)

    @property
    def impostor_total(self) -> np.ndarray:
        return self.impostor.sum(axis=2)

    def accepted_at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Exact accepted counts at threshold ``t`` (a grid edge): genuine (R, G), impostor (R, n_cat)."""
        e = self.grid.edge_index(t)
        return self.genuine[:, :, e + 1:].sum(axis=2), self.impostor[:, :, e + 1:].sum(axis=2)

    def accepted_curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Accepted counts at every edge: genuine (R, G, C), impostor (R, n_cat, C) (exact at each edge)."""
        def tail(x: np.ndarray) -> np.ndarray:
            return np.cumsum(x[:, :, ::-1], axis=2)[:, :, ::-1][:, :, 1:]
        return tail(self.genuine), tail(self.impostor)

    @property
    def resolution(self) -> dict[str, float]:
        """Grid resolution of the plug-in curve: the largest share of impostors / genuines in one cell."""
        g, i = self.genuine[0].sum(axis=0), self.impostor[0].sum(axis=0)
        return {"max_fmr_step": float(i.max() / max(i.sum(), 1)), "max_fnmr_step": float(g.max() / max(g.sum(), 1)),
                "n_cells": self.grid.n_cells}


def _categories(n_groups: int) -> list[tuple[int, int]]:
    cats = [(g, g) for g in range(n_groups)]
    cats += [(g, h) for g in range(n_groups) for h in range(g + 1, n_groups)]
    return cats


def _mode(scheme: Scheme | None) -> int:
    if scheme is None:
        return K.PRODUCT
    if scheme.level == "sample":
        return K.SAMPLE
    if scheme.level == "comparison":
        return -1
    return {"product": K.PRODUCT, "sum": K.SUM, "relabel": K.RELABEL}[scheme.form]


def _weights(scheme: Scheme | None, mode: int, reps: np.ndarray, layout: Layout, n_units: int, n_groups: int
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows x lanes int32 weight matrix (lane 0 = plug-in) and vertex imputed draw pairs."""
    R = reps.size + 1
    imputed = None
    if mode == K.SAMPLE:
        c = np.ones((R, n_units), np.int32)
        c[1:] = scheme.sample_weights(reps, layout)
        cols = [c, c * (c - 1) // 2, np.ones((R, 1), np.int32)]
        cols[1][0] = 0
    elif mode == K.RELABEL:
        grp = np.empty((R, n_units), np.int64)
        grp[0] = layout.identity_group
        grp[1:] = scheme.identity_groups(reps, layout)
        onehot = (grp[:, :, None] == np.arange(n_groups)).reshape(R, -1).astype(np.int32)
        cols = [onehot, np.ones((R, 1), np.int32)]
    else:
        gw = np.ones((R, n_units), np.int32)
        iw = np.ones((R, n_units), np.int32)
        if scheme is not None:
            gw[1:], iw[1:] = scheme.identity_weights(reps, layout)
        if isinstance(scheme, Vertex):
            imputed = np.concatenate([[0], (iw[1:].astype(np.int64) * (iw[1:] - 1) // 2).sum(axis=1)])
        if mode == K.PRODUCT:
            cols = [gw, iw, np.ones((R, 1), np.int32)]
        else:
            iwb = iw.copy()
            iwb[0] = 0
            cols = [gw, iw, iwb, np.ones((R, 1), np.int32)]
    return np.concatenate(cols, axis=1).T.copy(), imputed


def _batched(wt: np.ndarray, lanes: int) -> np.ndarray:
    rows, R = wt.shape
    nb_ = -(-R // lanes)
    out = np.zeros((nb_, rows, lanes), np.float32)  # small integers, exact in float32
    for t in range(nb_):
        part = wt[:, t * lanes:(t + 1) * lanes]
        out[t, :, :part.shape[1]] = part
    return out


DIRECT_BYTES = 6 << 20  # largest float32 counts table (per thread) counted directly, without sorting entries


SMALL_EXACT = (1 << 15) - 1  # int16 accumulators hold every integer up to this


@dataclass
class _Direct:
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
    items: tuple[np.ndarray, ...] = ()  # per-thread buffers of window items: key, u, v (int32), score

    @classmethod
    def new(cls, W: np.ndarray, n_keys: int, n_lanes: int, room: int = 0) -> _Direct:
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
                    np.zeros((t, n_keys, w.shape[1]), np.int64))
        state.make_room(room)
        return state

    def make_room(self, room: int) -> None:
        """New item buffers holding ``room`` window items per thread."""
        t = self.acc.shape[0]
        self.items = (*(np.empty((t, room), np.int32) for _ in range(3)), np.empty((t, room), np.float64))

    def total(self) -> np.ndarray:
        """(n_keys, 1, lanes) int64: what the sorted path's table holds (padding lanes zero)."""
        out = np.zeros((self.table.shape[1], 1, self.lanes), np.int64)
        K.thread_totals(self.table, self.acc, self.count_lane, out)
        return out


ITEM_SLACK = 1024  # window items per thread buffered beyond the estimate


def _item_room(grid: Grid, win: np.ndarray) -> int:
    """Window items per thread that a direct pass buffers: 1.5x the estimated share of a sub-tile's entries
    in the window cells ``win`` (from the grid's impostor sample; 1/16 without one), plus ``ITEM_SLACK``."""
    if not win.any():
        return 0
    share = 1 / 16
    imp = grid.impostor_sample
    if imp is not None and imp.size:
        above = _sample_above(grid, imp)
        share = float((above - np.append(above[1:], 0))[win].sum()) / imp.size
    return int(1.5 * share * ENTRIES / nb.get_num_threads()) + ITEM_SLACK


def _direct_pays(data: MatchData, ent: _Entries, W: np.ndarray, collapse: bool) -> bool:
    """Direct counting (no entry arrays, no sort) while one lane batch covers every replicate and the
    per-thread table stays in cache; else entries are sorted by key first (the large-table path)."""
    return (data.protocol == "all-pairs" and ent.mode in (K.SAMPLE, K.PRODUCT) and not collapse
            and W.shape[0] == 1 and ent.n_keys * W.shape[2] * 4 <= DIRECT_BYTES)


class _Entries:
    """Turns blocks into entries for one mode (shared by the counting pass and the refinement pass)."""

    def __init__(self, data: MatchData, grid: Grid, mode: int, self_pairs: bool):
        self.data, self.grid, self.mode = data, grid, mode
        self.G = data.n_groups
        self.self_pairs = self_pairs and data.protocol == "all-pairs"
        self.start, self.lo, self.scale, self.padded = grid.buckets()
        self.ge = grid.rule == ">="
        n = 0 if data.samples is None else data.samples.ids.shape[0]
        if data.protocol == "all-pairs":
            self.ident = data.samples.identity.astype(np.int64)
        self.n_units = n if mode == K.SAMPLE else max(data.n_identities, 1)
        self.igroup = data.identity_group.astype(np.int64)
        self.per = self.G * self.G if mode == K.RELABEL else K.ENTRIES_PER_COMPARISON.get(mode, 1)
        self.n_kc = self.G + len(_categories(self.G))
        self.n_keys = self.n_kc * grid.n_cells
        self.self_s = self_score(data.metric)

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
            i = block.row0 + rows
            cnt = np.maximum(0, c_hi - np.maximum(c_lo, i + 1 - block.col0))
            if self.self_pairs:
                cnt = cnt + ((i >= block.col0 + c_lo) & (i < block.col0 + c_hi))
            cum = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
            n = int(cum[-1])
            if n == 0:
                continue
            chunks = np.searchsorted(cum, np.linspace(0, n, n_chunks + 1), side="left").astype(np.int64)
            chunks[0], chunks[-1] = 0, rows.size
            yield c_lo, c_hi, rows, cum, np.maximum.accumulate(chunks)

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
            K.dense_keys(block.scores, block.row0, block.col0, c_lo, c_hi, rows, cum[:-1], chunks, self.ident,
                         self.igroup, self.self_s, self.self_pairs, self.mode, self.n_units, self.G, g.edges,
                         self.padded, self.start, self.lo, self.scale, self.ge, win, keys, us, vs, sc, hist, n_win)
            tot = hist.sum(axis=0)
            offsets = np.concatenate([[0], np.cumsum(tot)]).astype(np.int64)
            fill = offsets[None, :-1] + np.cumsum(hist, axis=0) - hist
            wpos = np.concatenate([[0], np.cumsum(n_win)[:-1]]).astype(np.int64)
            m = int(n_win.sum())
            it = (np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.float64))
            suv = np.empty(n, np.int64)
            K.scatter(keys, us, vs, sc, cum[chunks], fill, suv, g.n_cells, win, wpos, *it)
            yield n, offsets, suv, (it if collect else None)

    def direct_pieces(self, block: DenseBlock, win: np.ndarray, acc: _Direct):
        """Count ``block`` straight into ``acc`` (:func:`kernels.direct`); yield the window items per sub-tile
        (from the kernel's item buffers; if one ran out, by :func:`kernels.window_items`, and the buffers
        grow to twice what was needed)."""
        g = self.grid
        collect = win.size > 0
        n_chunks = acc.acc.shape[0]
        for c_lo, c_hi, rows, cum, chunks in self._subtiles(block, n_chunks):
            n_win = np.zeros(rows.size, np.int64)
            n_it = np.zeros(n_chunks, np.int64)
            K.direct(block.scores, block.row0, block.col0, c_lo, c_hi, rows, chunks, self.ident, self.igroup,
                     self.self_s, self.self_pairs, self.mode, self.n_units, self.G, g.edges, self.padded, self.start,
                     self.lo, self.scale, self.ge, win, acc.W, acc.cap, acc.count_lane, acc.acc, acc.table, n_win,
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
        K.window_items(block.scores, block.row0, block.col0, c_lo, c_hi, rows, chunks, wpos[:-1], self.ident,
                       self.igroup, self.self_s, self.self_pairs, self.mode, self.n_units, self.G, g.edges,
                       self.start, self.lo, self.scale, self.ge, win, s_lo, s_hi, *it)
        return it

    def pieces(self, block, want: np.ndarray):
        """Yield (n, keys, us, vs, scores) for sub-tiles of ``block`` (at most ENTRIES entries each)."""
        g = self.grid
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
                n = K.dense_entries(block.scores, block.row0, block.col0, r_lo, r_hi, c_lo, c_hi, self.ident,
                                    self.igroup,
                                    self.self_s, self.self_pairs, self.mode, self.n_units, self.G, g.edges,
                                    self.start, self.lo, self.scale, self.ge, want, keys, us, vs, sc)
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
                                   ka, kb, p.group_a[sl], p.group_b[sl], self.mode, self.n_units, self.G, g.edges,
                                   self.start, self.lo, self.scale, self.ge, want, keys, us, vs, sc)
                yield n, keys, us, vs, sc


def _progress(enabled: bool, total: int, label: str):
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    p = Progress(TextColumn(label), BarColumn(), TextColumn("{task.completed}/{task.total} blocks"),
                 TimeRemainingColumn(), disable=not enabled, transient=True)
    return p


def _collapse_pays(data: MatchData, mode: int) -> bool:
    """Identity-level entries repeat when identities have many samples (>= 8 on average)."""
    if mode == K.SAMPLE or data.protocol != "all-pairs":
        return False
    return data.samples.ids.shape[0] >= 8 * data.n_identities


def run(
    data: MatchData,
    scheme: Scheme | None = None,
    replicates: int | np.ndarray = 0,
    grid: Grid | None = None,
    fmr_targets: np.ndarray | list[float] = (),
    thresholds: np.ndarray | list[float] = (),
    fmr_reference: ThresholdImpostors = "all",
    lanes: int = 128,
    block_rows: int = 2048,
    collapse: bool | None = None,
    progress: bool = False,
    backend: Backend | None = None,
    keep_tail: bool = False,
) -> Counts:
    """Weighted counts for the plug-in and ``replicates`` of ``scheme`` (an int B means replicates 1..B).

    ``thresholds`` become exact grid edges (see :meth:`Counts.accepted_at`); ``fmr_targets`` get exact
    per-replicate thresholds and counts. ``collapse`` (identity-level schemes): merge comparisons with the
    same (class, category, cell, identity pair) before replicating; ``None`` lets the engine choose (the
    counts are identical either way). ``backend`` runs the counting passes (default: this process, see
    :class:`Backend`); every backend gives identical counts. ``keep_tail`` (all-pairs, sample- and
    identity-multinomial-level schemes, with FMR targets): the pass also keeps every comparison above the
    lowest target's window (``Counts.tail``), so identity-level counts at the plug-in thresholds (corrected
    Wilson, jackknife) need no second scoring pass; memory: 20 bytes per comparison above that floor (about
    ``WINDOW x`` the largest FMR target of the impostors). Ctrl-C stops between sub-tiles and re-raises
    KeyboardInterrupt.
    """
    reps = np.arange(1, replicates + 1) if np.isscalar(replicates) else np.asarray(replicates, np.int64)
    if scheme is None:
        reps = reps[:0]
    if grid is None:
        grid = build_grid(data, thresholds=thresholds)
    else:
        for t in thresholds:
            grid.edge_index(float(t))
    mode = _mode(scheme)
    backend = backend or LocalBackend()
    layout = _layout(data)
    targets = np.asarray(fmr_targets, dtype=np.float64)
    R = reps.size + 1
    if mode == -1:
        table, items = _comparison_level(data, scheme, reps, layout, grid, targets, fmr_reference, block_rows,
                                          progress)
        imputed = tail = None
    else:
        if collapse is None:
            collapse = _collapse_pays(data, mode)
        win = _window(data, grid, targets) if targets.size else np.zeros(0, np.bool_)
        keep_tail = keep_tail and bool(win.any()) and mode in (K.SAMPLE, K.PRODUCT) and data.protocol == "all-pairs"
        if keep_tail:
            win[np.argmax(win):] = True
        task = CountTask(grid=grid, mode=mode, scheme=scheme, replicates=reps, lanes=lanes,
                         collapse=bool(collapse and mode != K.SAMPLE), win=win, block_rows=block_rows)
        ent = task.entries(data)
        wt, imputed = task.weights(data, ent)
        table, found = backend.count(data, task, progress, wt)
        out = np.empty((R, ent.n_keys), np.int64)
        K.lanes_to_replicates(table, out)
        table = out.reshape(R, ent.n_kc, grid.n_cells)
        items = None
        if targets.size:
            want = _needed_cells(table, data.n_groups, targets, fmr_reference)
            missing = want & ~win
            if missing.any():
                found = found + backend.items(data, task, missing)
            second_pass = int(missing.sum())
        found = _concat(found)
        tail = _tail_hits(ent, found, grid, win) if keep_tail else None
        if targets.size:
            items = _items(ent, want, wt, found)
    G = data.n_groups
    thr, gacc, iacc = _exact_targets(table, G, targets, fmr_reference, items, grid.rule)
    info = {"collapse": bool(collapse) if mode != -1 else False, "mode": mode}
    if targets.size and mode != -1:
        info["second_pass_cells"] = second_pass  # needed cells outside the one-pass window (0: one pass)
    return Counts(
        scheme="plug-in" if scheme is None else scheme.name, seed=None if scheme is None else scheme.seed,
        replicates=np.concatenate([[0], reps]), grid=grid, group_names=tuple(data.group_names),
        categories=_categories(G), genuine=table[:, :G], impostor=table[:, G:], fmr_targets=targets,
        fmr_reference=fmr_reference, target_threshold=thr, target_genuine_accepted=gacc,
        target_impostor_accepted=iacc, imputed_pairs=imputed, tail=tail, info=info)


def _tail_hits(ent: _Entries, found: tuple[np.ndarray, ...], grid: Grid, win: np.ndarray) -> TailHits:
    """The comparisons among the items of a tail window (every cell from the first window cell up), by
    identity."""
    first = int(np.argmax(win))
    floor = -np.inf if first == 0 else float(grid.edges[first - 1])
    parts = K.split_by_identity(*found, win, grid.n_cells, ent.G, ent.mode, ent.n_units, ent.ident)
    return TailHits(floor, *parts)


def _key_slices(offsets: np.ndarray, n_batches: int) -> np.ndarray:
    """Key boundaries splitting the entries into slices of about equal size, so that batches x slices gives
    every thread a few jobs (the accumulate kernel's parallel grain)."""
    n = -(-4 * nb.get_num_threads() // n_batches)
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n + 1)).clip(0, offsets.size - 1).astype(np.int64)
    cuts[0], cuts[-1] = 0, offsets.size - 1
    return cuts


def _layout(data: MatchData) -> Layout:
    return Layout(identity_group=data.identity_group.astype(np.int64),
                  sample_identity=None if data.samples is None else data.samples.identity.astype(np.int64))


@dataclass(frozen=True)
class CountTask:
    """One counting pass as any worker rebuilds it: the weights are regenerated from the scheme's seed and
    the replicate numbers (counter-based, :mod:`matchaudit.rng`), never shipped. Small and picklable."""

    grid: Grid
    mode: int
    scheme: Scheme | None
    replicates: np.ndarray  # (B,) replicate numbers (lane 0, the plug-in, is implied)
    lanes: int
    collapse: bool
    win: np.ndarray  # cells whose entries are kept (with scores) during the pass
    block_rows: int

    def entries(self, data: MatchData) -> _Entries:
        return _Entries(data, self.grid, self.mode, self.scheme is not None and self.scheme.self_pairs)

    def weights(self, data: MatchData, ent: _Entries | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows x lanes int32 weight matrix (lane 0 = plug-in) and the vertex imputed draw pairs (``ent``: this
        task's entries, if already built)."""
        ent = ent or self.entries(data)
        return _weights(self.scheme, self.mode, self.replicates, _layout(data), ent.n_units, ent.G)

    def n_blocks(self, data: MatchData, part: tuple[int, int] = (0, 1)) -> int:
        return data.n_blocks(self.block_rows, part)

    def count(self, data: MatchData, part: tuple[int, int] = (0, 1), advance=None, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        """Counts table ``(n_keys, batches, lanes)`` int64 of the comparisons in ``part`` (see
        :meth:`MatchData.blocks`) and the items of the window cells. Tables of disjoint parts add up to the
        whole (integer counts). ``advance()`` is called after each block (progress); ``wt``: the weights if
        already made here (else regenerated)."""
        ent = self.entries(data)
        if wt is None:
            wt, _ = self.weights(data, ent)
        R = wt.shape[1]
        W = _batched(wt, min(self.lanes, -(-R // 16) * 16))  # whole 16-lane vectors
        return _count_pass(data, ent, W, R, self.block_rows, self.collapse, self.win, part, advance)

    def items(self, data: MatchData, want: np.ndarray, part: tuple[int, int] = (0, 1)) -> list:
        """Second, filtered pass: (keys, u, v, scores) of every entry of ``part`` in the cells ``want``."""
        ent = self.entries(data)
        out = []
        for block in data.blocks(self.block_rows, part):
            for n, keys, us, vs, sc in ent.pieces(block, want):
                if n:
                    out.append((keys[:n].copy(), us[:n].copy(), vs[:n].copy(), sc[:n].copy()))
        return out


class Backend:
    """Where counting passes run. Subclasses (GPU, Dask) override :meth:`count` and :meth:`items` and must
    return what :class:`LocalBackend` returns, bit for bit: the same table and the same multiset of items."""

    name = "cpu"

    def count(self, data: MatchData, task: CountTask, progress: bool, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        """Counts table and window items of the whole pass (``wt``: the weights, when the caller has them)."""
        raise NotImplementedError

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        """Items of the cells ``want`` (the second pass)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the backend started (a cluster, a client); nothing by default."""


class LocalBackend(Backend):
    """This process: Numba kernels on every core."""

    def count(self, data: MatchData, task: CountTask, progress: bool, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        total = task.n_blocks(data)
        with _progress(progress, total, "resampling") as bar:
            job = bar.add_task("", total=total)
            return task.count(data, advance=lambda: bar.advance(job), wt=wt)

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        return task.items(data, want)


def _count_pass(data: MatchData, ent: _Entries, W: np.ndarray, n_lanes: int, block_rows: int, collapse: bool,
                win: np.ndarray, part: tuple[int, int], advance) -> tuple[np.ndarray, list]:
    """Counts table (n_keys, batches, lanes) and the items of the window cells ``win`` (one scoring pass);
    ``n_lanes`` of the lanes of ``W`` are replicates."""
    table = np.zeros((ent.n_keys, W.shape[0], W.shape[2]), np.int64)
    codes: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    found: list = []
    rows = W.shape[1]
    w2 = max(1, int(W.max()) ** 2)
    if w2 > EXACT:
        raise ValueError(f"weights up to {int(W.max())} are too large for exact float32 products")
    if _direct_pays(data, ent, W, collapse):
        state = _Direct.new(W, ent.n_keys, n_lanes, _item_room(ent.grid, win))
        for block in data.blocks(block_rows, part, reuse=True):
            found.extend(ent.direct_pieces(block, win, state))
            if advance is not None:
                advance()
        return state.total(), found
    for block in data.blocks(block_rows, part, reuse=True):
        for n, offsets, suv, items in ent.sorted_pieces(block, win):
            if items is not None:
                found.append(items)
            if n == 0:
                continue
            if collapse:
                keys = np.repeat(np.arange(ent.n_keys, dtype=np.int64), np.diff(offsets))
                code = (keys * rows + (suv >> 32)) * rows + (suv & 0xFFFFFFFF)
                u, c = np.unique(code, return_counts=True)
                codes.append(u)
                counts.append(c)
                continue
            step = max(1, CALL_WORK // max(n * W.shape[2], 1))  # batches per call: Ctrl-C is seen between calls
            for b0 in range(0, W.shape[0], step):
                interrupt.check()
                sub = slice(b0, b0 + step)
                K.accumulate(W[sub], offsets, suv, suv, False, EXACT // w2, table[:, sub],
                             _key_slices(offsets, W[sub].shape[0]))
        if advance is not None:
            advance()
    offsets = np.empty(ent.n_keys + 1, np.int64)
    if collapse and codes:
        allc = np.concatenate(codes)
        alln = np.concatenate(counts)
        order = np.argsort(allc, kind="stable")
        allc, alln = allc[order], alln[order]
        first = np.flatnonzero(np.concatenate([[True], allc[1:] != allc[:-1]]))
        code = allc[first]
        cnt = np.add.reduceat(alln, first).astype(np.int64)
        cap = EXACT // w2  # split counts so every term cnt * w * w stays exact
        reps = -(-cnt // cap)
        code = np.repeat(code, reps)
        cnt = np.minimum(np.repeat(cnt, reps) - (np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)) * cap,
                         cap).astype(np.int32)
        v = (code % rows).astype(np.int32)
        u = ((code // rows) % rows).astype(np.int32)
        key = code // (rows * rows)
        offsets[:] = 0
        np.add.at(offsets, key + 1, 1)
        np.cumsum(offsets, out=offsets)
        K.accumulate(W, offsets, (u.astype(np.int64) << 32) | v, cnt, True, max(1, EXACT // (w2 * cap)), table,  # by key
                     _key_slices(offsets, W.shape[0]))
    return table, found


def _ref_mask(n_kc: int, G: int, ref: ThresholdImpostors) -> np.ndarray:
    """Classes/categories whose impostors define the FMR that sets thresholds."""
    m = np.zeros(n_kc, np.bool_)
    m[G:2 * G if ref == "same-group" else n_kc] = True
    return m


def _crossings(table: np.ndarray, G: int, targets: np.ndarray, ref: ThresholdImpostors) -> tuple[np.ndarray, np.ndarray]:
    R = table.shape[0]
    cstar = np.empty((R, targets.size), np.int64)
    nxt = np.empty((R, targets.size), np.int64)
    K.crossings(table, _ref_mask(table.shape[1], G, ref), targets, cstar, nxt)
    return cstar, nxt


def _needed_cells(table: np.ndarray, G: int, targets: np.ndarray, ref: ThresholdImpostors) -> np.ndarray:
    cstar, nxt = _crossings(table, G, targets, ref)
    want = np.zeros(table.shape[2], np.bool_)
    want[cstar[cstar >= 0]] = True
    want[nxt[nxt >= 0]] = True
    return want


@dataclass
class _Items:
    """Entries of the cells that can hold a target threshold; an item weighs ``wt[u, r] * wt[v, r]``."""

    cell: np.ndarray
    kc: np.ndarray
    score: np.ndarray
    u: np.ndarray
    v: np.ndarray
    wt: np.ndarray  # (rows, R) int32


WINDOW = 4.0  # refinement items are kept in one pass for cells whose estimated FMR is within this factor
WINDOW_SAMPLE = 1 << 18  # impostor scores in the estimate


def _sample_above(grid: Grid, imp: np.ndarray) -> np.ndarray:
    """(C+1,): how many of the sorted sample scores ``imp`` lie in cells >= c (scores >= edge c-1, or >)."""
    side = "left" if grid.rule == ">=" else "right"
    return np.concatenate([[imp.size], imp.size - np.searchsorted(imp, grid.edges, side=side)])


def _window(data: MatchData, grid: Grid, targets: np.ndarray) -> np.ndarray:
    """Cells likely to hold some replicate's threshold: estimated FMR range within a factor ``WINDOW`` of a
    target (plus one cell either side), from the grid's impostor sample (or a deterministic sample of
    impostor scores). Only a cost decision: cells found needed outside the window are collected by a
    second pass."""
    imp = grid.impostor_sample
    if imp is None:
        n = data.samples.ids.shape[0] if data.protocol == "all-pairs" else 1
        _, imp = _sample_scores(data, max_rows=max(1, WINDOW_SAMPLE // max(n, 1)), max_scores=WINDOW_SAMPLE)
        imp = np.sort(imp)
    win = np.zeros(grid.n_cells, np.bool_)
    if imp.size == 0:
        return win
    m = imp.size
    above = _sample_above(grid, imp)
    f_lo = above / m  # FMR at the cell's lower edge (threshold just above cell c-1)
    f_hi = np.concatenate([above[1:], [0]]) / m
    for a in targets:
        lo, hi = a / WINDOW, max(a * WINDOW, WINDOW / m)
        win |= (f_hi <= hi) & (f_lo >= lo)
    win[:-1] |= win[1:]
    win[1:] |= win[:-1].copy()
    return win


def _concat(found: list) -> tuple[np.ndarray, ...]:
    """The collected entries (chunks of key, u, v, score) as one array each: int64 keys, u, v, float64 scores."""
    if not found:
        z = np.zeros(0, np.int64)
        return z, z, z, np.zeros(0)
    cols = list(zip(*found))
    return (*(np.concatenate(c).astype(np.int64, copy=False) for c in cols[:3]), np.concatenate(cols[3]))


def _items(ent: _Entries, want: np.ndarray, wt: np.ndarray, found: tuple[np.ndarray, ...]) -> _Items:
    """The entries of every comparison in the wanted cells (collected in the window during the counting
    pass, plus those of a second, filtered pass for wanted cells outside it)."""
    C = ent.grid.n_cells
    keys, us, vs, sc = found
    cell = keys % C
    keep = want[cell]
    return _Items(cell[keep], keys[keep] // C, sc[keep], us[keep], vs[keep], wt)


def _exact_targets(table, G, targets, ref, items: _Items | None, rule):
    """Exact per-replicate thresholds at the FMR targets (the project definition: lowest positive-weight
    score of any comparison whose FMR is <= target, or +inf) and the accepted counts there."""
    R, n_kc, C = table.shape
    T = targets.size
    thr = np.full((R, T), np.inf)
    acc = np.zeros((R, T, n_kc), np.int64)
    if T == 0:
        return thr, acc[:, :, :G], acc[:, :, G:]
    cstar, nxt = _crossings(table, G, targets, ref)
    order = np.lexsort((items.score, items.cell))
    off = np.searchsorted(items.cell[order], np.arange(C + 1)).astype(np.int64)
    K.solve_targets(table, _ref_mask(n_kc, G, ref), targets, cstar, nxt, off, items.score[order],
                    items.kc[order].astype(np.int64), items.u[order], items.v[order], items.wt, rule == ">=", thr, acc)
    return thr, acc[:, :, :G], acc[:, :, G:]


# ---------------------------------------------------------------- comparison-level schemes (two-level, iid)

def _comparison_level(data, scheme, reps, layout, grid, targets, ref, block_rows, progress):
    ent = _Entries(data, grid, K.SAMPLE if data.protocol == "all-pairs" else K.PRODUCT, False)
    none = np.zeros(0, np.bool_)
    parts = []
    for block in data.blocks(block_rows):
        if isinstance(block, DenseBlock):
            for n, keys, us, vs, _ in ent.pieces(block, none):
                parts.append((keys[:n].copy(), layout.sample_identity[us[:n]], layout.sample_identity[vs[:n]]))
        else:
            for n, keys, us, vs, _ in ent.pieces(block, none):
                parts.append((keys[:n].copy(),))
    key = np.concatenate([p[0] for p in parts]).astype(np.int64)
    if data.protocol == "all-pairs":
        ka = np.concatenate([p[1] for p in parts])
        kb = np.concatenate([p[2] for p in parts])
    else:
        p = data.table(f"comparison-level resampling ({scheme.name})")
        ka, kb = p.identity_a.astype(np.int64), p.identity_b.astype(np.int64)
    C = grid.n_cells
    G = data.n_groups
    genuine = (key // C) < G
    lists = _lists(ka, kb, genuine, data.n_identities)
    R = reps.size + 1
    n_kc = ent.n_kc
    table = np.zeros((ent.n_keys, R), np.int64)
    table[:, 0] = np.bincount(key, minlength=ent.n_keys)
    chunk = max(1, (1 << 26) // max(lists.m, 1))
    for r0 in range(0, reps.size, chunk):
        w = scheme.comparison_weights(reps[r0:r0 + chunk], layout, lists)
        K.accumulate_draws(key, w, table, 1 + r0)
    table = table.T.reshape(R, n_kc, C)
    items = None
    if targets.size:
        want = _needed_cells(table, G, targets, ref)
        idx = np.flatnonzero(want[key % C])
        wt = np.ones((idx.size + 1, R), np.int32)  # row i: item i's weights; last row: one
        for r0 in range(0, reps.size, chunk):
            w = scheme.comparison_weights(reps[r0:r0 + chunk], layout, lists)
            wt[:-1, 1 + r0:1 + r0 + w.shape[0]] = w[:, idx].T
        sc = _scores_of(data, idx, ent, block_rows)
        items = _Items(key[idx] % C, key[idx] // C, sc, np.arange(idx.size, dtype=np.int64),
                       np.full(idx.size, idx.size, np.int64), wt)
    return table, items


def _scores_of(data, idx, ent, block_rows):
    """Scores of comparisons by their position in block order (refinement of comparison-level schemes)."""
    if data.protocol == "listed":
        return data.table("comparison-level resampling").score[idx].astype(np.float64)
    want = np.ones(ent.grid.n_cells, np.bool_)
    out = []
    for block in data.blocks(block_rows):
        for n, _, _, _, sc in ent.pieces(block, want):
            out.append(sc[:n].copy())
    return np.concatenate(out)[idx]


def _lists(ka, kb, genuine, n_ids) -> ComparisonLists:
    m = ka.size
    cid = np.arange(m, dtype=np.int64)
    g = np.flatnonzero(genuine)
    go = np.argsort(ka[g], kind="stable")
    goff = np.concatenate([[0], np.cumsum(np.bincount(ka[g], minlength=n_ids))])
    imp = np.flatnonzero(~genuine)
    side = np.concatenate([ka[imp], kb[imp]])
    ids = np.concatenate([cid[imp], cid[imp]])
    io = np.argsort(side, kind="stable")
    ioff = np.concatenate([[0], np.cumsum(np.bincount(side, minlength=n_ids))])
    return ComparisonLists(m=m, genuine=genuine, genuine_ids=g[go], genuine_off=goff.astype(np.int64),
                           impostor_ids=ids[io], impostor_off=ioff.astype(np.int64))


__all__ = ["Backend", "CountTask", "Counts", "LocalBackend", "TailHits", "run"]
