"""Every comparison of the score views, sorted once and held in memory (beyond its budget, on disk), and their
identity-aware bootstrap replicates: the exact path behind the calibration metrics (:mod:`.calibration`) and the
score distributions (:mod:`.distributions`).

Views: ``all`` (every genuine and impostor comparison) and, for grouped data, each group g (its genuine
comparisons and the impostors with both identities in g). A comparison belongs to ``all`` and to at most one
group, so one pass over the comparisons sorted by score serves every view (:func:`matchaudit.metrics.calibration.sweep`).

Replicate weights come from the counter-based schemes (:mod:`matchaudit.resampling`; same seed, same numbers):

* ``double-or-nothing``, ``vertex``: identity weights w; a genuine comparison of identity k weighs w_k, an
  impostor of identities k, l weighs w_k w_l;
* ``recentered``: within-identity sample counts c; comparison (i, j) weighs c_i c_j and, all-pairs only, each
  sample adds C(c_i, 2) genuine self-pairs at the self-score (docs/methods.md section 3). The interval is centred
  on the V-statistic version: the statistic at the expected weights (E c_i c_j = (n_k-1)/n_k within identity k,
  1 across identities, E C(c_i, 2) = (n_k-1)/(2 n_k)).

Cost: each replicate is one O(n) pass; replicates run in blocks of up to 64 lanes over one read of the comparisons
(:func:`matchaudit.metrics.calibration.lane_width`), the blocks in parallel.

Beyond memory (:func:`materialise`): the views' arrays are files on disk (``np.memmap``, the same values to the bit:
an external sort, :mod:`matchaudit.external_sort`), which the sweeps read as arrays; what else is derived per
comparison is computed a span at a time (:meth:`ScoreViews.spans`) or written beside them
(:meth:`ScoreViews.elementwise`), so that memory holds what the budget allows, one score tile (all-pairs), and
per genuine comparison its position and PAV stacks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence

import numba as nb
import numpy as np

from matchaudit.errors import InputError
from matchaudit.external_sort import Spill, SpillError, external_sort, runs_of
from matchaudit.metrics import calibration as cal
from matchaudit.definitions import ThresholdImpostors
from matchaudit.model import MatchData, PairBlock, view_names
from matchaudit.pairings import reference_pairs
from matchaudit.progress import pass_meter
from matchaudit.resampling import DoubleOrNothing, Layout, Vertex, WithinIdentity
from matchaudit.scores import self_score, upper_chunks
from matchaudit.sorting import stable_order

METHODS = ("double-or-nothing", "vertex", "recentered")
"""Interval methods of the score views: two identity bootstraps (percentile) and the recentered
within-identity bootstrap."""
MEMORY_GIB = 4.0
"""Default budget for holding a data set's comparisons sorted in memory; beyond it they are sorted on disk, in
runs of this budget (:func:`materialise`)."""
Method = Literal["double-or-nothing", "vertex", "recentered"]

BYTES_PER_COMPARISON = 64  # the sorted arrays (31 bytes) plus the sort's and the loaders' temporaries: 45-58 at
# the peak (tracemalloc, 5e5-8e6 comparisons; tests/test_calibration_intervals.py holds it)
TABLE_BYTES_PER_COMPARISON = 57  # a run of a table read from disk, as read (PairBlock: seven 8-byte fields, a bool)
DISK_BYTES_PER_COMPARISON = 62  # on disk, the views' 31 bytes twice at the peak: the sorted runs and their merge
SPAN = 1 << 22  # comparisons computed on at a time where the views are on disk
MIN_RUN = 1 << 16  # comparisons per run on disk at the least, whatever the budget (4 MiB: below it runs only cost)
BATCH = 128  # replicates per kernel call (progress, bounded weight memory)


@dataclass(frozen=True)
class ScoreViews:
    """The comparisons of every view, sorted by score ascending (self-pairs of the recentered bootstrap included,
    at weight 0 in the plug-in). ``view``: 0 (only in ``all``) or 1 + the group; ``kind``/``u``/``v``: how the
    weight follows from unit weights (:data:`matchaudit.metrics.calibration.SINGLE` ...), units being identities
    (``unit == "identity"``) or samples. Beyond the memory budget the per-comparison arrays are read-only files
    (``spill``: their folder, removed with the views, or on leaving a ``with`` block over them: callers close it
    there, so that the folder never waits for the garbage collector)."""

    score: np.ndarray
    genuine: np.ndarray
    view: np.ndarray
    kind: np.ndarray
    u: np.ndarray
    v: np.ndarray
    unit: Literal["identity", "sample"]
    n_units: int
    names: tuple[str, ...]
    layout: Layout
    unit_size: np.ndarray  # samples per identity of each sample (sample units), for the V-statistic
    reference: np.ndarray  # the impostors among the threshold impostors (threshold_impostors), for view 0
    spill: Spill | None = field(default=None, compare=False, repr=False)  # the folder of arrays on disk, if any

    def __enter__(self) -> ScoreViews:
        return self

    def __exit__(self, *exc: object) -> None:
        """Remove the folder on disk, if any (arrays on disk still held keep their data until dropped, on POSIX)."""
        if self.spill is not None:
            self.spill.close()

    @property
    def n(self) -> int:
        return int(self.score.shape[0])

    def spans(self) -> Iterator[slice]:
        """Ranges of the comparisons to compute on one at a time: all at once in memory, ``SPAN`` at a time on disk
        (so that no temporary has one entry per comparison)."""
        step = max(self.n if self.spill is None else SPAN, 1)
        return (slice(lo, min(lo + step, self.n)) for lo in range(0, self.n, step))

    def elementwise(self, fn: Callable[[slice], np.ndarray], dtype: type) -> np.ndarray:
        """``fn(span)`` of every span (:meth:`spans`), an elementwise function of the fields there, as one array of
        ``dtype``: in memory, ``fn`` of all at once; on disk, a file beside the views filled span by span."""
        if self.spill is None:
            return fn(slice(0, self.n))
        out = self.spill.array(dtype, self.n)
        for sl in self.spans():
            out[sl] = fn(sl)
        return out

    def per_view(self, mask: Callable[[slice], np.ndarray]) -> np.ndarray:
        """How many comparisons of each view (int64) ``mask(span)`` holds, counted span by span."""
        V = len(self.names)
        out = np.zeros(V, np.int64)
        for sl in self.spans():
            m = mask(sl)
            out[0] += np.count_nonzero(m)
            out[1:] += np.bincount(self.view[sl][m], minlength=V)[1:V]
        return out

    def comparisons(self) -> tuple[np.ndarray, np.ndarray]:
        """Genuine and impostor comparisons per view (self-pairs not counted)."""
        return tuple(self.per_view(lambda sl, g=g: (self.genuine[sl] == g) & (self.kind[sl] != cal.SELF))
                     for g in (True, False))

    @cached_property
    def genuine_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the genuine comparisons and the start of each one's tie block (where the thresholds at
        FNMR targets cut: :mod:`.dual_point`)."""
        pos = np.flatnonzero(self.genuine)
        return pos, np.searchsorted(self.score, self.score[pos], side="left").astype(np.int64)

    def weight_blocks(self, U: np.ndarray) -> np.ndarray:
        """Unit weights ``U`` (R, units) in the sweeps' lane blocks (blocks, units, lanes), as wide as
        :func:`matchaudit.metrics.calibration.lane_width` finds for R rows and these views' PAV stacks."""
        return cal.lanes(U, cal.lane_width(U.shape[0], int(self.bound.sum())))

    @cached_property
    def every_impostor_is_reference(self) -> bool:
        """Whether view 0's threshold impostors are all its impostors (``threshold_impostors="all"``)."""
        return all(np.array_equal(self.reference[sl], ~self.genuine[sl]) for sl in self.spans())

    @cached_property
    def bound(self) -> np.ndarray:
        """PAV stack room per view (int64): its genuine entries + 2."""
        return self.per_view(lambda sl: self.genuine[sl]) + 2


def _check_budget(n: int, total: int, memory_gib: float, feature: str, spill_dir: str | os.PathLike | None
                  ) -> Spill | None:
    """None when ``n`` comparisons fit ``memory_gib`` sorted in memory; else, when a ``spill_dir`` is given, a
    :class:`Spill` there with room to sort the ``total`` on disk; an :class:`InputError` saying what to do when
    neither serves. Sorting on disk is asked for, never chosen here: the B replicates then read every comparison
    from the disk, minutes where memory took seconds, and the files take ~62 bytes per comparison."""
    need = n * BYTES_PER_COMPARISON / 2**30
    if need <= memory_gib:
        return None
    head = (f"{feature}: {n:,} comparisons need about {need:.1f} GiB to be sorted in memory, over the "
            f"{memory_gib:g} GiB budget (memory_gib)")
    if spill_dir is None:
        raise InputError(f"{head}. Raise the memory budget (memory_gib) if the machine has the memory, give a folder "
                         f"to sort them on disk (spill_dir; about {total * DISK_BYTES_PER_COMPARISON / 2**30:.1f} GiB "
                         "there), or evaluate a listed trial list or a subset of the identities.", param="memory_gib")
    where = Path(spill_dir)
    head += ", so they are sorted on disk"
    remedies = ("give a folder on a disk with room (spill_dir), raise the memory budget (memory_gib) if the machine "
                "has the memory, or evaluate a listed trial list or a subset of the identities.")
    try:
        spill = Spill(spill_dir)
    except OSError as e:
        raise InputError(f"{head}, but no temporary folder can be made in {where} ({e.strerror or e}): {remedies}",
                         param="spill_dir") from e
    disk, free = total * DISK_BYTES_PER_COMPARISON, spill.free()
    if free < disk:
        spill.close()
        raise InputError(f"{head}: about {disk / 2**30:.1f} GiB in {where}, which has {free / 2**30:.1f} GiB free. "
                         f"Free space there, or {remedies}", param="spill_dir")
    return spill


@dataclass(frozen=True)
class _Plan:
    """What the fields of a run of comparisons follow from (:func:`_sorted_run`)."""

    sample: bool  # units are samples (recentered), else identities
    listed: bool
    ident: np.ndarray | None  # identity of each sample (int64)
    group: np.ndarray  # group of each identity (int32: 4 bytes per comparison while they last)
    grouped: bool
    reference: np.ndarray  # (groups, groups): the threshold impostors' group pairs
    m: int  # comparisons before the self-pairs in the stream (all-pairs)
    feature: str


def _sorted_run(plan: _Plan, parts: list[np.ndarray], start: int) -> list[np.ndarray]:
    """The per-comparison fields of :class:`ScoreViews` (score, genuine, view, kind, u, v, reference) of a run of
    the comparison stream (:func:`_stream`; its first at ``start``), sorted by
    score stably. ``parts`` (a listed table's :class:`PairBlock` fields, or all-pairs scores and samples) is emptied,
    and every temporary is dropped when done, so that the peak is the budget's (``BYTES_PER_COMPARISON``)."""
    if plan.listed:
        p = PairBlock(*parts)
        parts.clear()
        if plan.sample and (plan.ident is None or len(p) and p.sample_a.min() < 0):
            raise InputError(f"the recentered bootstrap of {plan.feature} re-draws samples, but this comparison "
                             "table names no samples: give the sample columns, or choose an identity bootstrap.",
                             param="method")
        s = np.asarray(p.score, float)
        order = stable_order(s)  # np.argsort(s, kind="stable"), by a radix sort
        s, gen = s[order], np.asarray(p.genuine, bool)[order]
        ia, ib = p.identity_a[order].astype(np.int64, copy=False), p.identity_b[order].astype(np.int64, copy=False)
        ga, gb = p.group_a.astype(np.int32)[order], p.group_b.astype(np.int32)[order]
        if plan.sample:
            sa, sb = p.sample_a[order].astype(np.int64, copy=False), p.sample_b[order].astype(np.int64, copy=False)
            own = np.zeros(s.size, bool)  # a table lists no self-pairs
        del order, p
    else:  # every comparison (and with samples re-drawn, each sample's self-pair) sorted, then its fields looked up
        s, a, b = parts
        parts.clear()
        order = stable_order(s)  # np.argsort(s, kind="stable"), by a radix sort
        s = s[order]  # one array at a time, and each temporary dropped when done: the peak is the budget's
        a = a[order]
        b = b[order]
        if plan.sample:
            own = order >= plan.m - start  # the self-pairs, after the m comparisons in the stream
        del order
        ia, ib = plan.ident[a], plan.ident[b]
        if plan.sample:
            sa, sb = a.astype(np.int64), b.astype(np.int64)
        del a, b
        gen = ia == ib
        ga, gb = plan.group[ia], plan.group[ib]
    if plan.sample:
        del ia, ib  # the units are samples
    view = np.where(plan.grouped & (ga == gb), ga + 1, 0).astype(np.int32, copy=False)
    reference = ~gen & plan.reference[ga, gb]
    del ga, gb
    if plan.sample:
        kind = np.where(own, cal.SELF, cal.PRODUCT).astype(np.int8)
        u, v = sa, sb
    else:
        kind = np.where(gen, cal.SINGLE, cal.PRODUCT).astype(np.int8)
        u, v = ia, ib
    return [s, gen, view, kind, u, v, reference]


def _stream(data: MatchData, plan: _Plan, size: int) -> Iterator[list[np.ndarray]]:
    """The comparisons of ``data`` as :func:`_sorted_run` takes them, in blocks: a listed table's blocks, or
    ``size`` all-pairs comparisons at a time and then (samples re-drawn) each sample's self-pair at the self-score."""
    if plan.listed:
        for blk in data.blocks():
            yield [getattr(blk, f) for f in PairBlock.__dataclass_fields__]
        return
    yield from upper_chunks(data.samples.embeddings, data.metric, size)
    if plan.sample:
        own = np.arange(data.samples.ids.shape[0], dtype=np.int32)
        yield [np.full(own.size, self_score(data.metric)), own, own]


def materialise(data: MatchData, method: Method, memory_gib: float = MEMORY_GIB, feature: str = "this analysis",
                threshold_impostors: ThresholdImpostors = "all", spill_dir: str | os.PathLike | None = None
                ) -> ScoreViews:
    """The views' comparisons of ``data``, sorted once (all-pairs: streamed from the score tiles). Within
    ``memory_gib`` in memory; beyond, when a folder ``spill_dir`` is given, by an external sort on disk in a
    temporary folder in it: runs of ``memory_gib`` (at least ``MIN_RUN`` comparisons) sorted in memory, spilled
    and merged into read-only arrays
    on disk (:mod:`matchaudit.external_sort`) equal to the in-memory ones to the bit; the folder goes with the views.
    An :class:`InputError` beyond the memory budget without a ``spill_dir`` or with no room there, or when the data
    lack what ``method`` resamples.
    ``threshold_impostors`` marks the overall view's threshold impostors (:mod:`matchaudit.pairings`)."""
    if not data.has_identities:
        raise InputError(f"{feature} resamples identities, but this comparison table has labels only: give the "
                         "identity columns.", param="method")
    sample = method == "recentered"
    listed = data.protocol == "listed"
    n_samples = 0 if data.samples is None else data.samples.ids.shape[0]
    m = data.n_comparisons()
    total = m + (n_samples if sample and not listed else 0)
    spill = _check_budget(m + (0 if listed else n_samples), total, memory_gib, feature, spill_dir)
    ident = None if data.samples is None else data.samples.identity.astype(np.int64)
    group = data.identity_group.astype(np.int64)
    plan = _Plan(sample, listed, ident, group.astype(np.int32), len(view_names(data.group_names)) > 1,
                 reference_pairs(threshold_impostors, data.group_names, data.group_by), m, feature)
    if spill is None:  # one run, the whole stream (a table in memory: the table itself, not a copy)
        whole = max(total, 1)
        if data.pairs is not None:
            parts = [getattr(data.pairs, f) for f in PairBlock.__dataclass_fields__]
        else:
            parts = next((run for _, run in runs_of(_stream(data, plan, whole), whole)), None) or _empty(listed)
        fields = _sorted_run(plan, parts, 0)
    else:
        per = BYTES_PER_COMPARISON + (TABLE_BYTES_PER_COMPARISON if data.source is not None else 0)
        size = max(MIN_RUN, int(memory_gib * 2**30 // per))
        try:
            fields = external_sort((_sorted_run(plan, run, start) for start, run in
                                    runs_of(_stream(data, plan, size), size)), total, spill)
        except SpillError as e:
            spill.close()
            raise InputError(f"{feature}: sorting the comparisons on disk in {spill.path.parent} failed "
                             f"({e.strerror or e}): free space there, give a folder on another disk (spill_dir, or "
                             "the TMPDIR environment variable), or raise the memory budget (memory_gib) if the "
                             "machine has the memory.", param="spill_dir") from e
        except BaseException:
            spill.close()
            raise
    s, gen, view, kind, u, v, reference = fields
    sizes = np.bincount(ident, minlength=data.n_identities)[ident] if ident is not None else np.zeros(0, np.int64)
    return ScoreViews(s, gen, view, kind, u, v, "sample" if sample else "identity",
                      int(n_samples if sample else data.n_identities), view_names(data.group_names),
                      Layout(group, ident), sizes.astype(np.int64, copy=False), reference, spill)


def _empty(listed: bool) -> list[np.ndarray]:
    """The stream's fields without comparisons (:func:`_stream`)."""
    if listed:
        e = np.empty(0, np.int64)
        return [np.empty(0), e, e, e, e, np.empty(0, bool), e, e]
    return [np.empty(0), np.empty(0, np.int32), np.empty(0, np.int32)]


@nb.njit(parallel=True, cache=True)
def _replicates(score, gen, view, sp, kind, u, v, UT, n_views, cut, ops, shift, calib, bound, out) -> None:
    """:func:`~matchaudit.metrics.calibration.sweep` for each lane block ``UT[c]`` (units, lanes), in parallel."""
    L = UT.shape[2]
    for c in nb.prange(UT.shape[0]):
        cal.sweep(score, gen, view, sp, kind, u, v, UT[c], n_views, cut, ops, shift, calib, bound,
                  out[c * L:(c + 1) * L])


@dataclass(frozen=True)
class Summaries:
    """Sweep summaries (:mod:`matchaudit.metrics.calibration` columns) per view: the plug-in (V, S), the
    V-statistic version (V, S; recentered only, else None) and the replicates (B, V, S); with FNMR targets, the
    rates there (:mod:`.dual_point`: plug-in (V, T, 2), V-statistic version, replicates (B, V, T, 2))."""

    estimate: np.ndarray
    v_estimate: np.ndarray | None
    replicates: np.ndarray
    ops: np.ndarray
    dual: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None


class Runner:
    """Runs sweeps over one :class:`ScoreViews` with fixed operating points and options."""

    def __init__(self, views: ScoreViews, ops=(), llr: bool = False, calib: bool = True, fnmr_targets=()):
        self.views, self.calib = views, calib
        self.betas = np.asarray(fnmr_targets, np.float64)
        self.ops = cal.operating_array(ops)
        self.cut = cal.cuts(views.score, self.ops)
        s, gen = views.score, views.genuine
        self.sp = views.elementwise(lambda sl: cal.softplus(np.where(gen[sl], -s[sl], s[sl])), np.float64) if llr \
            else np.zeros(0)
        finite = s[np.searchsorted(s, -np.inf, "right"):np.searchsorted(s, np.inf, "left")]  # sorted: NaN last
        self.shift = float(finite.mean()) if finite.size else 0.0

    def run(self, U: np.ndarray, kind: np.ndarray | None = None, u: np.ndarray | None = None) -> np.ndarray:
        """Summaries (R, V, S) for unit weights ``U`` (R, units); ``kind``/``u`` replace the views' own (the
        V-statistic's per-comparison weights)."""
        vw = self.views
        kind = vw.kind if kind is None else kind
        u = vw.u if u is None else u
        UT = vw.weight_blocks(U)
        out = np.empty((UT.shape[0] * UT.shape[2], len(vw.names), cal.N_FIXED + 2 * self.ops.shape[0]))
        _replicates(vw.score, vw.genuine, vw.view, self.sp, kind, u, vw.v, UT, len(vw.names), self.cut, self.ops,
                    self.shift, self.calib, vw.bound, out)
        return out[:U.shape[0]]

    def dual(self, U: np.ndarray, kind: np.ndarray | None = None, u: np.ndarray | None = None,
             summaries: np.ndarray | None = None) -> np.ndarray:
        """Rates at the FNMR targets (R, V, T, 2) for unit weights ``U`` (:func:`.dual_point.dual_rates`;
        ``summaries``: :meth:`run`'s of the same weights, which save most of the pass)."""
        from matchaudit.estimators.dual_point import dual_rates

        return dual_rates(self.views, self.betas, U, kind, u, summaries)

    def plug_in(self, dual: bool = False) -> np.ndarray:
        """Summaries (V, S) with every weight 1 (self-pairs weigh C(1, 2) = 0); ``dual``: the rates at the FNMR
        targets (V, T, 2) instead."""
        U = np.ones((1, self.views.n_units))
        return (self.dual(U) if dual else self.run(U))[0]

    def v_statistic(self, dual: bool = False) -> np.ndarray:
        """Summaries (V, S) at the within-identity bootstrap's expected weights (module doc); ``dual``: the rates
        at the FNMR targets instead. A comparison's expected weight depends only on how its samples relate and on
        its identity's sample count n, so each comparison points (as its "unit") into a table of those few weights
        instead of carrying its own: 9 bytes per comparison, not the 50 of the per-comparison weights and their
        lanes (at 8.0e6 comparisons this call was the score views' peak of memory)."""
        vw = self.views
        ident = vw.layout.sample_identity
        stride = int(vw.unit_size.max(initial=0)) + 1

        def position(sl: slice) -> np.ndarray:  # the weight's position in the table below
            u, v = vw.u[sl], vw.v[sl]
            case = (ident[u] == ident[v]).astype(np.int8)  # 1: within
            case[u == v] = 2  # a sample listed against itself
            case[vw.kind[sl] == cal.SELF] = 3  # a self-pair
            n = vw.unit_size[u]  # the samples of the identity (u and v share it wherever n is used)
            n += case * np.int64(stride)
            return n

        size = np.arange(stride, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):  # size 0 is no identity's
            table = np.concatenate([np.ones(stride), (size - 1) / size, 2 - 1 / size, (size - 1) / (2 * size)])
        args = (table[None], vw.elementwise(lambda sl: np.full(sl.stop - sl.start, cal.SINGLE, np.int8), np.int8),
                vw.elementwise(position, np.int64))
        return (self.dual(*args) if dual else self.run(*args))[0]

    def weights(self, method: Method, reps: np.ndarray, seed: int) -> np.ndarray:
        """Unit weights (R, units) of replicates ``reps`` (numbered from 1) of ``method``."""
        lay = self.views.layout
        if method == "recentered":
            return WithinIdentity(seed).sample_weights(reps, lay)
        return (Vertex(seed) if method == "vertex" else DoubleOrNothing(seed)).identity_weights(reps, lay)[0]

    def block(self, method: Method, lo: int, hi: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Replicates ``lo + 1 .. hi``: their summaries and rates at the FNMR targets (None without), from weights
        regenerated from the seed, so any worker holding these views makes the same numbers."""
        U = self.weights(method, np.arange(lo + 1, hi + 1), seed)
        reps = self.run(U)
        return reps, (self.dual(U, summaries=reps) if self.betas.size else None)

    def bootstrap(self, method: Method, n_resamples: int, seed: int, progress=False,
                  label: str = "score-view resamples", blocks: Blocks | None = None) -> Summaries:
        """The plug-in, the V-statistic version (recentered) and ``n_resamples`` replicates (and the rates at the
        FNMR targets, from the same weights), in blocks of ``BATCH`` replicates; ``blocks(fn, spans)``: how the
        blocks run (default here, one after the other; a backend's :meth:`~matchaudit.engine.passes.Backend.blocks`
        spreads them over its workers), each ``fn(lo, hi)`` yielded in the order of ``spans``."""
        V = len(self.views.names)
        reps = np.empty((n_resamples, V, cal.N_FIXED + 2 * self.ops.shape[0]))
        dual = np.empty((n_resamples, V, self.betas.size, 2))
        spans = [(lo, min(lo + BATCH, n_resamples)) for lo in range(0, n_resamples, BATCH)]
        run = partial(self.block, method, seed=seed)
        with pass_meter(progress, label, float(self.views.n) * n_resamples) as meter:
            for (lo, hi), (r, d) in zip(spans, (blocks or _here)(run, spans)):
                reps[lo:hi] = r
                if d is not None:
                    dual[lo:hi] = d
                meter.advance(float(self.views.n) * (hi - lo))
        rec = method == "recentered"
        duals = (self.plug_in(True), self.v_statistic(True) if rec else None, dual) if self.betas.size else None
        return Summaries(self.plug_in(), self.v_statistic() if rec else None, reps, self.ops, duals)


Blocks = Callable[[Callable[[int, int], Any], Sequence[tuple[int, int]]], Iterator[Any]]


def _here(fn: Callable[[int, int], Any], spans: Sequence[tuple[int, int]]) -> Iterator[Any]:
    """The blocks in this process, one after the other."""
    return (fn(lo, hi) for lo, hi in spans)


__all__ = ["MEMORY_GIB", "METHODS", "Blocks", "Runner", "ScoreViews", "Summaries", "materialise"]
