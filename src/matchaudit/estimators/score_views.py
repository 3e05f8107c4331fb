"""Every comparison of the score views, held in memory and sorted once, and their identity-aware bootstrap
replicates: the exact path behind the calibration metrics (:mod:`.calibration`) and the score distributions
(:mod:`.distributions`).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numba as nb
import numpy as np

from matchaudit.errors import InputError
from matchaudit.metrics import calibration as cal
from matchaudit.definitions import ThresholdImpostors
from matchaudit.model import MatchData, PairBlock, view_names
from matchaudit.pairings import reference_pairs
from matchaudit.progress import pass_meter
from matchaudit.resampling import DoubleOrNothing, Layout, Vertex, WithinIdentity
from matchaudit.scores import self_score, upper_triangle
from matchaudit.sorting import stable_order

METHODS = ("double-or-nothing", "vertex", "recentered")
MEMORY_GIB = 4.0
"""Default budget for holding a data set's comparisons sorted in memory (:func:`materialise`)."""
"""Interval methods of the score views: two identity bootstraps (percentile) and the recentered
within-identity bootstrap."""
Method = Literal["double-or-nothing", "vertex", "recentered"]

BYTES_PER_COMPARISON = 64  # the sorted arrays (31 bytes) plus the sort's and the loaders' temporaries: 45-58 at
# the peak (tracemalloc, 5e5-8e6 comparisons; tests/test_calibration_intervals.py holds it)
BATCH = 128  # replicates per kernel call (progress, bounded weight memory)


@dataclass(frozen=True)
class ScoreViews:
    """The comparisons of every view, sorted by score ascending (self-pairs of the recentered bootstrap included,
    at weight 0 in the plug-in). ``view``: 0 (only in ``all``) or 1 + the group; ``kind``/``u``/``v``: how the
    weight follows from unit weights (:data:`matchaudit.metrics.calibration.SINGLE` ...), units being identities
    (``unit == "identity"``) or samples."""

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

    @property
    def n(self) -> int:
        return int(self.score.shape[0])

    @property
    def real(self) -> np.ndarray:
        """Mask of the data's own comparisons (self-pairs excluded)."""
        return self.kind != cal.SELF

    def in_view(self, k: int) -> np.ndarray:
        """Mask of view k's comparisons (self-pairs included)."""
        return np.ones(self.n, bool) if k == 0 else self.view == k

    def comparisons(self) -> tuple[np.ndarray, np.ndarray]:
        """Genuine and impostor comparisons per view (self-pairs not counted)."""
        gen, real = self.genuine & self.real, self.real
        per = [(int(np.count_nonzero(gen & m)), int(np.count_nonzero(real & ~self.genuine & m)))
               for m in (self.in_view(k) for k in range(len(self.names)))]
        return np.array([p[0] for p in per]), np.array([p[1] for p in per])

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
        return bool(np.array_equal(self.reference, ~self.genuine))

    @cached_property
    def bound(self) -> np.ndarray:
        """PAV stack room per view (int64): its genuine entries + 2."""
        return np.array([int(np.count_nonzero(self.genuine & self.in_view(k))) + 2 for k in range(len(self.names))],
                        np.int64)


def _check_budget(n: int, memory_gib: float, feature: str) -> None:
    need = n * BYTES_PER_COMPARISON / 2**30
    if need > memory_gib:
        raise InputError(
            f"{feature}: the comparisons are held in memory, sorted: {n:,} comparisons need about {need:.1f} GiB, over "
            f"the {memory_gib:g} GiB budget. Raise the memory budget (memory_gib) if the machine has the memory, or "
            "evaluate a listed trial list or a subset of the identities.", param="memory_gib")


def materialise(data: MatchData, method: Method, memory_gib: float = MEMORY_GIB, feature: str = "this analysis",
                threshold_impostors: ThresholdImpostors = "all") -> ScoreViews:
    """The views' comparisons of ``data``, sorted once (all-pairs: streamed from :meth:`MatchData.blocks`). An
    :class:`InputError` when they exceed ``memory_gib`` or when the data lack what ``method`` resamples.
    ``threshold_impostors`` marks the overall view's threshold impostors (:mod:`matchaudit.pairings`)."""
    if not data.has_identities:
        raise InputError(f"{feature} resamples identities, but this comparison table has labels only: give the "
                         "identity columns.", param="method")
    sample = method == "recentered"
    listed = data.protocol == "listed"
    n_samples = 0 if data.samples is None else data.samples.ids.shape[0]
    _check_budget(data.n_comparisons() + (0 if listed else n_samples), memory_gib, feature)
    ident = None if data.samples is None else data.samples.identity.astype(np.int64)
    group = data.identity_group.astype(np.int64)
    sa = sb = None
    if listed:
        p = data.pairs if data.pairs is not None else PairBlock.concat(list(data.blocks()))  # out of core: read once
        if sample and (ident is None or len(p) and p.sample_a.min() < 0):
            raise InputError(f"the recentered bootstrap of {feature} re-draws samples, but this comparison table "
                             "names no samples: give the sample columns, or choose an identity bootstrap.",
                             param="method")
        s = np.asarray(p.score, float)
        order = stable_order(s)  # np.argsort(s, kind="stable"), by a radix sort
        s, gen = s[order], np.asarray(p.genuine, bool)[order]
        ia, ib = p.identity_a[order].astype(np.int64, copy=False), p.identity_b[order].astype(np.int64, copy=False)
        ga, gb = p.group_a.astype(np.int32)[order], p.group_b.astype(np.int32)[order]
        if sample:
            sa, sb = p.sample_a[order].astype(np.int64, copy=False), p.sample_b[order].astype(np.int64, copy=False)
            own = np.zeros(s.size, bool)  # a table lists no self-pairs
        del order
    else:  # every comparison (and with samples re-drawn, each sample's self-pair) sorted, then its fields looked up
        s, a, b = upper_triangle(data.samples.embeddings, data.metric)
        m = s.size
        if sample:  # the self-pairs: one genuine entry per sample at the self-score
            own = np.arange(n_samples, dtype=a.dtype)
            s = np.concatenate([s, np.full(n_samples, self_score(data.metric))])
            a, b = np.concatenate([a, own]), np.concatenate([b, own])
        order = stable_order(s)  # np.argsort(s, kind="stable"), by a radix sort
        s = s[order]  # one array at a time, and each temporary dropped when done: the peak is the budget's
        a = a[order]
        b = b[order]
        if sample:
            own = order >= m  # the self-pairs, appended after the m comparisons
        del order
        ia, ib = ident[a], ident[b]
        if sample:
            sa, sb = a.astype(np.int64), b.astype(np.int64)
        del a, b
        gen = ia == ib
        group32 = group.astype(np.int32)  # the comparisons' groups: 4 bytes each (only the views are kept)
        ga, gb = group32[ia], group32[ib]
    if sample:
        del ia, ib  # the units are samples
    grouped = len(view_names(data.group_names)) > 1
    view = np.where(grouped & (ga == gb), ga + 1, 0).astype(np.int32, copy=False)
    reference = ~gen & reference_pairs(threshold_impostors, data.group_names, data.group_by)[ga, gb]
    del ga, gb
    if sample:
        kind = np.where(own, cal.SELF, cal.PRODUCT).astype(np.int8)
        u, v, n_units = sa, sb, n_samples
    else:
        kind = np.where(gen, cal.SINGLE, cal.PRODUCT).astype(np.int8)
        u, v, n_units = ia, ib, data.n_identities
    sizes = np.bincount(ident, minlength=data.n_identities)[ident] if ident is not None else np.zeros(0, np.int64)
    return ScoreViews(s, gen, view, kind, u, v, "sample" if sample else "identity", int(n_units),
                      view_names(data.group_names), Layout(group, ident), sizes.astype(np.int64, copy=False),
                      reference)


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
        s = views.score
        self.sp = cal.softplus(np.where(views.genuine, -s, s)) if llr else np.zeros(0)
        finite = s[np.isfinite(s)]
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
        case = (vw.layout.sample_identity[vw.u] == vw.layout.sample_identity[vw.v]).astype(np.int8)  # 1: within
        case[vw.u == vw.v] = 2  # a sample listed against itself
        case[vw.kind == cal.SELF] = 3  # a self-pair
        n = vw.unit_size[vw.u]  # the samples of the identity (u and v share it wherever n is used)
        stride = int(n.max(initial=0)) + 1
        n += case * np.int64(stride)  # the weight's position in the table below
        size = np.arange(stride, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):  # size 0 is no identity's
            table = np.concatenate([np.ones(stride), (size - 1) / size, 2 - 1 / size, (size - 1) / (2 * size)])
        args = (table[None], np.full(vw.n, cal.SINGLE, np.int8), n)
        return (self.dual(*args) if dual else self.run(*args))[0]

    def weights(self, method: Method, reps: np.ndarray, seed: int) -> np.ndarray:
        """Unit weights (R, units) of replicates ``reps`` (numbered from 1) of ``method``."""
        lay = self.views.layout
        if method == "recentered":
            return WithinIdentity(seed).sample_weights(reps, lay)
        return (Vertex(seed) if method == "vertex" else DoubleOrNothing(seed)).identity_weights(reps, lay)[0]

    def bootstrap(self, method: Method, n_resamples: int, seed: int, progress=False,
                  label: str = "score-view resamples") -> Summaries:
        """The plug-in, the V-statistic version (recentered) and ``n_resamples`` replicates (and the rates at the
        FNMR targets, from the same weights)."""
        V = len(self.views.names)
        reps = np.empty((n_resamples, V, cal.N_FIXED + 2 * self.ops.shape[0]))
        dual = np.empty((n_resamples, V, self.betas.size, 2))
        with pass_meter(progress, label, float(self.views.n) * n_resamples) as meter:
            for lo in range(0, n_resamples, BATCH):
                hi = min(lo + BATCH, n_resamples)
                U = self.weights(method, np.arange(lo + 1, hi + 1), seed)
                reps[lo:hi] = self.run(U)
                if self.betas.size:
                    dual[lo:hi] = self.dual(U, summaries=reps[lo:hi])
                meter.advance(float(self.views.n) * (hi - lo))
        rec = method == "recentered"
        duals = (self.plug_in(True), self.v_statistic(True) if rec else None, dual) if self.betas.size else None
        return Summaries(self.plug_in(), self.v_statistic() if rec else None, reps, self.ops, duals)


__all__ = ["MEMORY_GIB", "METHODS", "Runner", "ScoreViews", "Summaries", "materialise"]
