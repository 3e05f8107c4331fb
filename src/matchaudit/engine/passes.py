"""One counting pass over the comparison blocks (:class:`CountTask`, :func:`count_pass`) and where it runs
(:class:`Backend`; :class:`LocalBackend` is this process)."""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from matchaudit import interrupt
from matchaudit.engine import kernels as K
from matchaudit.engine import entries as en
from matchaudit.engine.entries import DirectState, Entries, direct_pays
from matchaudit.engine.grid import Grid
from matchaudit.progress import Meter, pass_meter
from matchaudit.model import block_comparisons
from matchaudit.engine.weights import batched, layout_of, weight_matrix
from matchaudit.model import MatchData
from matchaudit.pairings import PairCategories
from matchaudit.resampling import Scheme

CALL_WORK = 1 << 31  # entry-lanes per accumulate call (about a second at most): Ctrl-C is seen between calls
COLLAPSE_BYTES = 1 << 28  # identity-level entries (16 bytes each) held for merging before they are added to the table


def key_slices(offsets: np.ndarray, n_batches: int) -> np.ndarray:
    """Key boundaries splitting the entries into slices of about equal size, so that batches x slices gives
    every thread a few jobs (the accumulate kernel's parallel grain)."""
    n = -(-4 * nb.get_num_threads() // n_batches)
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n + 1)).clip(0, offsets.size - 1).astype(np.int64)
    cuts[0], cuts[-1] = 0, offsets.size - 1
    return cuts


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
    cats: PairCategories  # the impostor category of each group pair

    def entries(self, data: MatchData) -> Entries:
        return Entries(data, self.grid, self.mode, self.scheme is not None and self.scheme.self_pairs, self.cats)

    def weights(self, data: MatchData, ent: Entries | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows x lanes int32 weight matrix (lane 0 = plug-in) and the vertex imputed draw pairs (``ent``: this
        task's entries, if already built)."""
        ent = ent or self.entries(data)
        return weight_matrix(self.scheme, self.mode, self.replicates, layout_of(data), ent.n_units, ent.G)

    def n_blocks(self, data: MatchData, part: tuple[int, int] = (0, 1)) -> int:
        return data.n_blocks(self.block_rows, part)

    def count(self, data: MatchData, part: tuple[int, int] = (0, 1), advance=None, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        """Counts table ``(n_keys, batches, lanes)`` int64 of the comparisons in ``part`` (see
        :meth:`MatchData.blocks`) and the items of the window cells. Tables of disjoint parts add up to the
        whole (integer counts). ``advance(block)`` is called after each block (progress); ``wt``: the weights if
        already made here (else regenerated)."""
        ent = self.entries(data)
        if wt is None:
            wt, _ = self.weights(data, ent)
        R = wt.shape[1]
        W = batched(wt, min(self.lanes, -(-R // 16) * 16))  # whole 16-lane vectors
        return count_pass(data, ent, W, R, self.block_rows, self.collapse, self.win, part, advance)

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

    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        """Counts table and window items of the whole pass (``wt``: the weights, when the caller has them).
        ``progress``: show a display, or advance this running one (:func:`pass_meter`) in comparisons x
        replicates."""
        raise NotImplementedError

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        """Items of the cells ``want`` (the second pass)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the backend started (a cluster, a client); nothing by default."""


class LocalBackend(Backend):
    """This process: Numba kernels on every core."""

    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        R = task.replicates.size + 1
        with pass_meter(progress, "resampling", data.n_comparisons() * R) as bar:
            advance = (lambda block: bar.advance(block_comparisons(block) * R)) if progress else None
            return task.count(data, advance=advance, wt=wt)

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        return task.items(data, want)


def count_pass(data: MatchData, ent: Entries, W: np.ndarray, n_lanes: int, block_rows: int, collapse: bool,
               win: np.ndarray, part: tuple[int, int], advance) -> tuple[np.ndarray, list]:
    """Counts table (n_keys, batches, lanes) and the items of the window cells ``win`` (one scoring pass);
    ``n_lanes`` of the lanes of ``W`` are replicates."""
    table = np.zeros((ent.n_keys, W.shape[0], W.shape[2]), np.int64)
    codes: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    held = 0
    found: list = []
    rows = W.shape[1]
    w2 = max(1, int(W.max()) ** 2)
    if w2 > en.EXACT:
        raise ValueError(f"weights up to {int(W.max())} are too large for exact float32 products")
    if direct_pays(data, ent, W, collapse):
        state = DirectState.new(W, ent.n_keys, n_lanes, en.item_room(ent.grid, win))
        for block in data.blocks(block_rows, part, reuse=True):
            found.extend(ent.direct_pieces(block, win, state))
            if advance is not None:
                advance(block)
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
                held += u.size
                if 16 * held > COLLAPSE_BYTES:  # the entries seldom repeat (e.g. 50,000 samples): add them up now
                    _add_collapsed(codes, counts, W, w2, table)
                    codes, counts, held = [], [], 0
                continue
            step = max(1, CALL_WORK // max(n * W.shape[2], 1))  # batches per call: Ctrl-C is seen between calls
            for b0 in range(0, W.shape[0], step):
                interrupt.check()
                sub = slice(b0, b0 + step)
                K.accumulate(W[sub], offsets, suv, suv, False, en.EXACT // w2, table[:, sub],
                             key_slices(offsets, W[sub].shape[0]))
        if advance is not None:
            advance(block)
    if codes:
        _add_collapsed(codes, counts, W, w2, table)
    return table, found


def _add_collapsed(codes: list[np.ndarray], counts: list[np.ndarray], W: np.ndarray, w2: int, table: np.ndarray
                   ) -> None:
    """Add the collapsed identity-level entries (codes ``(key * rows + u) * rows + v`` with their numbers of
    comparisons) to ``table``: equal codes merged, counts split so every term ``cnt * w * w`` stays exact. Integer
    sums, so adding the entries in several parts gives the same table."""
    rows = W.shape[1]
    allc = np.concatenate(codes)
    alln = np.concatenate(counts)
    order = np.argsort(allc, kind="stable")
    allc, alln = allc[order], alln[order]
    first = np.flatnonzero(np.concatenate([[True], allc[1:] != allc[:-1]]))
    code = allc[first]
    cnt = np.add.reduceat(alln, first).astype(np.int64)
    cap = en.EXACT // w2  # split counts so every term cnt * w * w stays exact
    reps = -(-cnt // cap)
    code = np.repeat(code, reps)
    cnt = np.minimum(np.repeat(cnt, reps) - (np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)) * cap,
                     cap).astype(np.int32)
    v = (code % rows).astype(np.int32)
    u = ((code // rows) % rows).astype(np.int32)
    key = code // (rows * rows)
    offsets = np.zeros(table.shape[0] + 1, np.int64)
    np.add.at(offsets, key + 1, 1)
    np.cumsum(offsets, out=offsets)
    K.accumulate(W, offsets, (u.astype(np.int64) << 32) | v, cnt, True, max(1, en.EXACT // (w2 * cap)), table,  # by key
                 key_slices(offsets, W.shape[0]))
