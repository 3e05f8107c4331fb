"""One counting pass over the comparison blocks (:class:`CountTask`, its :class:`Counter`), one scoring pass feeding
several accumulators (:func:`feed`), and where a counting pass runs (:class:`Backend`; :class:`LocalBackend` is this
process)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol, Sequence

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
from matchaudit.model import Block, MatchData
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
    win_share: float = 1 / 16  # estimated share of the comparisons in the window cells (window items' buffers)

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
        counter = self.counter(data, ent, wt)
        feed(data, self.block_rows, [counter], part, advance)
        return counter.done()

    def counter(self, data: MatchData, ent: Entries, wt: np.ndarray) -> Counter:
        """The accumulator of this pass (``ent``, ``wt``: its entries and weights), to feed blocks to."""
        R = wt.shape[1]
        W = batched(wt, min(self.lanes, -(-R // 16) * 16))  # whole 16-lane vectors
        return Counter(data, ent, W, R, self.collapse, self.win, self.win_share)

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
    fuses = False
    """Whether :meth:`count_together` counts several runs in one scoring pass (else a pass each)."""

    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        """Counts table and window items of the whole pass (``wt``: the weights, when the caller has them).
        ``progress``: show a display, or advance this running one (:func:`pass_meter`) in comparisons x
        replicates."""
        raise NotImplementedError

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        """Items of the cells ``want`` (the second pass)."""
        raise NotImplementedError

    def serves(self, acc: Accumulator) -> bool:
        """Whether :meth:`count_together` feeds ``acc`` (an accumulator of ``data``'s comparisons, e.g. the identity
        pass) in its own scoring pass, else its caller feeds it in a pass of its own here. A fusing backend feeds any
        (:func:`count_many`, this process); Dask and torch override it (the accumulators they count their own way)."""
        return self.fuses

    def count_together(self, data: MatchData, runs: Sequence[tuple[MatchData, CountTask]], progress: bool | Meter,
                       also: Sequence[Accumulator] = ()) -> list[tuple[np.ndarray, list]]:
        """:meth:`count` of every run (its data: ``data`` or the same comparisons relabelled; one tiling), in one
        scoring pass of ``data`` where the backend can (:attr:`fuses`: :func:`count_many`), else a pass each; the
        same pass feeds ``also``'s accumulators (those the backend :meth:`serves`; the caller calls their ``done``)."""
        if not self.fuses:
            assert not also, "a backend that does not fuse serves no accumulator"
            return [self.count(d, task, progress) for d, task in runs]
        lanes = sum(task.replicates.size + 1 for _, task in runs)
        with block_meter(progress, data, lanes) as advance:
            return count_many(data, runs, advance=advance, also=also)

    def blocks(self, fn: Callable[[int, int], Any], spans: Sequence[tuple[int, int]]) -> Iterator[Any]:
        """``fn(lo, hi)`` for each of ``spans`` (blocks of replicates of a pass that is not over tiles: the score
        views' sweeps), yielded in their order; here one after the other, a backend with workers spreads them."""
        return (fn(lo, hi) for lo, hi in spans)

    def close(self) -> None:
        """Release what the backend started (a cluster, a client); nothing by default."""


class LocalBackend(Backend):
    """This process: Numba kernels on every core."""

    fuses = True

    @staticmethod
    def runs(backend: Backend | None) -> bool:
        """Whether ``backend`` counts here, as this class does (None, or this class: a subclass may count elsewhere),
        so that one scoring pass can feed several accumulators (:func:`feed`)."""
        return backend is None or type(backend) is LocalBackend

    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        R = task.replicates.size + 1
        with block_meter(progress, data, R) as advance:
            return task.count(data, advance=advance, wt=wt)

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        return task.items(data, want)


class Accumulator(Protocol):
    """What one scoring pass feeds, block by block (:func:`feed`): a counting pass's :class:`Counter`, the identity
    counts (:func:`matchaudit.engine.identity.identity_pass`)."""

    def feed(self, block: Block) -> None: ...

    def done(self) -> Any: ...


@contextmanager
def block_meter(progress: bool | Meter, data: MatchData, lanes: int) -> Iterator[Callable[[Block], None] | None]:
    """A counting pass's progress (:func:`pass_meter`, in comparisons x ``lanes``) as the ``advance(block)`` that
    :func:`feed` calls after each block; None without progress."""
    with pass_meter(progress, "resampling", data.n_comparisons() * lanes) as bar:
        yield (lambda block: bar.advance(block_comparisons(block) * lanes)) if progress else None


def count_many(data: MatchData, runs: Sequence[tuple[MatchData, CountTask]], part: tuple[int, int] = (0, 1),
               advance=None, also: Sequence[Accumulator] = ()) -> list[tuple[np.ndarray, list]]:
    """The counts table and window items of every run over the comparisons of ``part``, from one scoring pass of
    ``data`` (weights regenerated from each task's scheme, as a worker does) that also feeds ``also``'s accumulators
    (not done here). Parts add up as :meth:`CountTask.count`'s do."""
    counters = []
    for d, task in runs:
        ent = task.entries(d)
        counters.append(task.counter(d, ent, task.weights(d, ent)[0]))
    feed(data, runs[0][1].block_rows, [*counters, *also], part, advance)
    return [c.done() for c in counters]


def feed(data: MatchData, block_rows: int, accumulators: Sequence[Accumulator], part: tuple[int, int] = (0, 1),
         advance=None) -> None:
    """One scoring pass over the blocks of ``part``, each block fed to every accumulator in turn (each is done with
    it before the next block is scored into the same memory); ``advance(block)`` after each block (progress)."""
    for block in data.blocks(block_rows, part, reuse=True):
        for acc in accumulators:
            acc.feed(block)
        if advance is not None:
            advance(block)


class Counter:
    """The counting of one pass: a counts table ``(n_keys, batches, lanes)`` and the items of the window cells
    ``win``, fed block by block (:func:`feed`), alone (:meth:`CountTask.count`) or beside other accumulators fed by
    the same scoring pass (the same table either way); ``n_lanes`` of the lanes of ``W`` are replicates."""

    def __init__(self, data: MatchData, ent: Entries, W: np.ndarray, n_lanes: int, collapse: bool, win: np.ndarray,
                 win_share: float):
        self.ent, self.W, self.collapse, self.win = ent, W, collapse, win
        self.codes: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.held = 0
        self.found: list = []
        self.w2 = max(1, int(W.max()) ** 2)
        if self.w2 > en.EXACT:
            raise ValueError(f"weights up to {int(W.max())} are too large for exact float32 products")
        direct = direct_pays(data, ent, W, collapse)  # per-thread tables (DirectState), else one table
        self.state = DirectState.new(W, ent.n_keys, n_lanes, en.item_room(win, win_share)) if direct else None
        self.table = None if direct else np.zeros((ent.n_keys, W.shape[0], W.shape[2]), np.int64)

    def feed(self, block: Block) -> None:
        """Count the comparisons of ``block``."""
        ent, W = self.ent, self.W
        if self.state is not None:
            self.found.extend(ent.direct_pieces(block, self.win, self.state))
            return
        rows = W.shape[1]
        for n, offsets, suv, items in ent.sorted_pieces(block, self.win):
            if items is not None:
                self.found.append(items)
            if n == 0:
                continue
            if self.collapse:
                keys = np.repeat(np.arange(ent.n_keys, dtype=np.int64), np.diff(offsets))
                code = (keys * rows + (suv >> 32)) * rows + (suv & 0xFFFFFFFF)
                u, c = np.unique(code, return_counts=True)
                self.codes.append(u)
                self.counts.append(c)
                self.held += u.size
                if 16 * self.held > COLLAPSE_BYTES:  # the entries seldom repeat (e.g. 50,000 samples): add them up now
                    _add_collapsed(self.codes, self.counts, W, self.w2, self.table)
                    self.codes, self.counts, self.held = [], [], 0
                continue
            step = max(1, CALL_WORK // max(n * W.shape[2], 1))  # batches per call: Ctrl-C is seen between calls
            for b0 in range(0, W.shape[0], step):
                interrupt.check()
                sub = slice(b0, b0 + step)
                K.accumulate(W[sub], offsets, suv, suv, False, en.EXACT // self.w2, self.table[:, sub],
                             key_slices(offsets, W[sub].shape[0]))

    def done(self) -> tuple[np.ndarray, list]:
        """The counts table (n_keys, batches, lanes) and the window items."""
        if self.state is not None:
            return self.state.total(), self.found
        if self.codes:
            _add_collapsed(self.codes, self.counts, self.W, self.w2, self.table)
        return self.table, self.found


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
