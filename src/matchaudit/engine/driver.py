"""The driver: one pass over the comparison blocks accumulates, for the plug-in (replicate 0, all weights
1) and every replicate of a scheme, exact integer weighted counts per class, group (pair) and grid cell,
and keeps the entries of the cells likely to hold a threshold at an FMR target (a window estimated from a
sample of impostor scores), which makes those thresholds exact; only if some replicate's threshold falls
outside the window does a second, filtered pass collect the missing cells (``Counts.info``).

Per sub-tile (one-entry-per-comparison modes on all-pairs tiles): parallel entry generation (cell lookup,
keys) with per-thread key histograms, a parallel counting-sort scatter, then the accumulate kernel,
parallel over (replicate batch x key slice).

Memory bound (all-pairs or listed, any n): the counts table, ``(B+1) x (G + n_cat) x (C+1)`` int64, n_cat <= G + 2
impostor categories by default (twice
while it is transposed to the final layout); the weight matrix, ``(B+1) x rows`` float32 (rows = 2n+1
sample-level, 3K+1 identity-level, K*G+1 relabel); one sub-tile of entries (``ENTRIES`` x 28 bytes with
scores, 112 MiB); one score tile of ``model.blocks`` (256 MiB at its defaults). Comparison-level schemes
(two-level, iid) additionally hold every comparison's key and identities (17 bytes per comparison) and a
chunk of per-comparison weights (at most 256 MiB). The identity-level collapse (where it pays:
:func:`collapse_pays`) holds the distinct (class, category, cell, identity, identity) entries (16 bytes each), at
most ``passes.COLLAPSE_BYTES`` of them at a time (then they are added to the table and the merging starts again).
FMR-target refinement holds the entries of the window cells (20 bytes each: the comparisons whose scores may set a
replicate's threshold at a target, :mod:`matchaudit.engine.window`) and computes their per-replicate weights on the fly;
the direct path collects them in per-thread buffers of 1.5x a sub-tile's estimated share (grown to twice a
sub-tile's need if that falls short).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.engine import kernels as K
from matchaudit.engine import window
from matchaudit.engine.comparison_level import comparison_level_counts
from matchaudit.engine.counts import Counts, TailHits
from matchaudit.engine.entries import Entries
from matchaudit.engine.grid import Grid, build_grid
from matchaudit.engine.passes import Accumulator, Backend, CountTask, LocalBackend, block_meter, feed
from matchaudit.progress import Meter
from matchaudit.engine.targets import concat_items, exact_targets, needed_cells, target_crossings, wanted_items
from matchaudit.engine.weights import layout_of, mode_of
from matchaudit.model import MatchData
from matchaudit.pairings import PairCategories, reference_pairs
from matchaudit.resampling import Scheme
from matchaudit.scores import once_per_call


# The identity-level collapse against counting every entry (bench/collapse.py, 8,000 samples, 2 cores): merging
# costs about COLLAPSE_COST replicates' worth of counting per comparison (sorting the entries' codes), and a merged
# entry costs about MERGED_COST entries counted directly, per replicate. Measured break-even: B ~ 1,100 at 1,000
# samples per identity, ~1,900 at 400; never below ~100 samples per identity (at 10 per identity merging is 3-10x
# slower, and the entries hardly repeat).
COLLAPSE_COST = 1020.0
MERGED_COST = 17.0


def expected_repeats(data: MatchData, n_cells: int) -> float:
    """A lower bound on comparisons per merged (identity pair, cell) entry, weighted by comparisons: an impostor
    identity pair of ``m_a m_b`` comparisons fills at most ``n_cells`` cells."""
    m = np.bincount(data.samples.identity).astype(np.float64)
    s1, s2, s4 = m.sum(), (m * m).sum(), (m ** 4).sum()
    pairs = (s1 * s1 - s2) / 2
    return max(1.0, (s2 * s2 - s4) / 2 / (n_cells * pairs)) if pairs > 0 else 1.0


def collapse_pays(data: MatchData, mode: int, n_replicates: int, n_cells: int) -> bool:
    """Merge identity-level entries first when the replicates saved outweigh the merging (module constants)."""
    if mode == K.SAMPLE or data.protocol != "all-pairs":
        return False
    return n_replicates * (1.0 - MERGED_COST / expected_repeats(data, n_cells)) > COLLAPSE_COST


@dataclass
class Plan:
    """One run up to its counting pass (:func:`plan`): what :func:`run_together` counts, alone or in one scoring pass
    with other runs over the same comparisons."""

    data: MatchData
    scheme: Scheme | None
    reps: np.ndarray  # replicate numbers (without the plug-in)
    grid: Grid
    targets: np.ndarray
    threshold_impostors: ThresholdImpostors
    cats: PairCategories
    block_rows: int
    collapse: bool
    keep_tail: bool
    task: CountTask | None  # None: a comparison-level scheme (it makes its own passes: comparison_level_counts)
    ent: Entries | None
    wt: np.ndarray | None  # rows x lanes weights (lane 0: the plug-in)
    imputed: np.ndarray | None
    view_targets: np.ndarray = field(default_factory=lambda: np.zeros(0))  # FMR targets of each view's own threshold


def plan(
    data: MatchData,
    scheme: Scheme | None = None,
    replicates: int | np.ndarray = 0,
    grid: Grid | None = None,
    fmr_targets: np.ndarray | list[float] = (),
    thresholds: np.ndarray | list[float] = (),
    threshold_impostors: ThresholdImpostors = "all",
    lanes: int = 128,
    block_rows: int = 2048,
    collapse: bool | None = None,
    progress: bool | Meter = False,
    keep_tail: bool = False,
    categories: PairCategories | None = None,
    view_targets: np.ndarray | Sequence[float] = (),
) -> Plan:
    """The run of ``replicates`` of ``scheme`` (an int B means replicates 1..B), up to its counting pass (grid,
    window, task, weights): :func:`run` counts one, :func:`run_together` several in one pass.

    ``thresholds`` become exact grid edges (see :meth:`Counts.accepted_at`); ``fmr_targets`` get exact
    per-replicate thresholds and counts. ``collapse`` (identity-level schemes): merge comparisons with the
    same (class, category, cell, identity pair) before replicating; ``None`` lets the engine choose (the
    counts are identical either way). ``keep_tail`` (all-pairs, sample- and identity-multinomial-level schemes, with
    FMR targets): the pass also keeps every comparison above the lowest target's window (``Counts.tail``), so
    identity-level counts at the plug-in thresholds (corrected Wilson, jackknife) need no second scoring pass;
    memory: 20 bytes per comparison above that floor (about the largest FMR target's window's share of the impostors).
    ``categories``: which impostor categories are counted (default: same-group pairs, and cross-group pairs pooled by
    whether they are ``threshold_impostors``'s, at most G + 2: :meth:`PairCategories.pooled_by`). ``progress``: show
    a display, or advance a running :class:`Meter` (a job of several runs). ``view_targets``: FMR targets at which
    each view gets its own exact per-replicate threshold (``Counts.view_threshold``): the overall view over the
    ``threshold_impostors``, each group over its same-group impostors (not for comparison-level schemes)."""
    reps = np.arange(1, replicates + 1) if np.isscalar(replicates) else np.asarray(replicates, np.int64)
    if scheme is None:
        reps = reps[:0]
    if grid is None:
        grid = build_grid(data, thresholds=thresholds)
    else:
        for t in thresholds:
            grid.edge_index(float(t))
    mode = mode_of(scheme)
    if progress and data.protocol == "all-pairs" and data.samples is not None:
        # at least ~16 row blocks, so that the progress display moves on small data (same counts either way)
        block_rows = min(block_rows, max(256, -(-data.samples.ids.shape[0] // 16)))
    targets = np.asarray(fmr_targets, dtype=np.float64)
    views = np.asarray(view_targets, dtype=np.float64)
    reference = reference_pairs(threshold_impostors, data.group_names, data.group_by)
    cats = categories or PairCategories.pooled_by(reference)
    if mode == -1:
        return Plan(data, scheme, reps, grid, targets, threshold_impostors, cats, block_rows, False, False,
                    None, None, None, None)
    if collapse is None:
        collapse = collapse_pays(data, mode, reps.size, grid.n_cells)
    smp = window.sample(data) if targets.size or views.size else None
    win = window.window_cells(smp, data, grid.cell_of, grid.n_cells, targets, reference) if smp is not None else np.zeros(0, bool)
    for view in _view_pairs(data.n_groups, reference) if views.size else ():  # each view's own thresholds' cells
        win = win | window.window_cells(smp, data, grid.cell_of, grid.n_cells, views, view)
    keep_tail = keep_tail and bool(win.any()) and mode in (K.SAMPLE, K.PRODUCT) and data.protocol == "all-pairs"
    if keep_tail:
        win[np.argmax(win):] = True
    share = window.share(smp, grid.cell_of, win) if smp is not None else 0.0
    task = CountTask(grid=grid, mode=mode, scheme=scheme, replicates=reps, lanes=lanes,
                     collapse=bool(collapse and mode != K.SAMPLE), win=win, block_rows=block_rows, cats=cats,
                     win_share=share)
    ent = task.entries(data)
    wt, imputed = task.weights(data, ent)
    return Plan(data, scheme, reps, grid, targets, threshold_impostors, cats, block_rows, bool(collapse), keep_tail,
                task, ent, wt, imputed, views)


def _view_pairs(n_groups: int, reference: np.ndarray) -> list[np.ndarray]:
    """The (G, G) group pairs whose impostors set each view's own threshold: the threshold impostors' for the
    overall view, then each group's same-group pairs."""
    return [reference] + [np.diag(np.arange(n_groups) == g) for g in range(n_groups)]


def run(data: MatchData, scheme: Scheme | None = None, replicates: int | np.ndarray = 0, *,
        backend: Backend | None = None, **planning: Any) -> Counts:
    """Weighted counts for the plug-in and ``replicates`` of ``scheme`` (an int B means replicates 1..B): the run
    :func:`plan` describes with ``planning`` (its keyword arguments: grid, FMR targets, thresholds, ...), counted by
    ``backend`` (default: this process, see :class:`Backend`; every backend gives identical counts). Ctrl-C stops
    between sub-tiles and re-raises KeyboardInterrupt."""
    return run_together(data, [plan(data, scheme, replicates, **planning)], planning.get("progress", False),
                        backend)[0]


def fused(data: MatchData, plans: list[Plan]) -> bool:
    """Whether the counting passes of ``plans`` can be one scoring pass: over the all-pairs tiles of ``data``'s
    embeddings (a listed block carries its own data's groups, which a relabelled run must not read), in the same
    tiling."""
    return (data.protocol == "all-pairs" and data.samples is not None
            and all(p.data.protocol == "all-pairs" and p.data.samples is not None
                    and p.data.samples.embeddings is data.samples.embeddings and p.data.metric == data.metric
                    and p.block_rows == plans[0].block_rows for p in plans))


def run_together(data: MatchData, plans: list[Plan], progress: bool | Meter = False, backend: Backend | None = None,
                 also: Sequence[Accumulator] = ()) -> list[Counts]:
    """The counts of every planned run (:func:`plan`) over the comparisons of ``data`` (the runs' data: ``data`` or
    the same comparisons relabelled), and ``also``'s accumulators (of ``data``'s comparisons) fed every block (then
    done): one scoring pass for all of them where :func:`fused` allows (every block scored once, then fed to each run's
    counter and to each of ``also``), else a pass each (``also``'s first). On another backend than this process the
    runs are one pass there where that backend can (:meth:`Backend.count_together`), which also feeds the accumulators
    it :meth:`~Backend.serves` (Dask, torch: the identity pass); the others make a pass of their own here. The same
    counts either way: each accumulator sees every block once."""
    backend = backend or LocalBackend()
    counted = [p for p in plans if p.task is not None]
    together = bool(counted) and fused(data, counted)
    if together and LocalBackend.runs(backend) and len(counted) + len(also) > 1:
        counters = [p.task.counter(p.data, p.ent, p.wt) for p in counted]
        with block_meter(progress, data, sum(p.reps.size + 1 for p in counted)) as advance:
            feed(data, counted[0].block_rows, [*counters, *also], advance=advance)
        passes = [c.done() for c in counters]
    else:
        served = [acc for acc in also if backend.serves(acc)] if together else []
        here = [acc for acc in also if not any(acc is x for x in served)]
        if here:
            feed(data, counted[0].block_rows if counted else 2048, here)
        if together and len(counted) + len(served) > 1:
            passes = backend.count_together(data, [(p.data, p.task) for p in counted], progress, served)
        else:
            passes = [backend.count(p.data, p.task, progress, p.wt) for p in counted]
    for acc in also:
        acc.done()
    out = iter(passes)
    return [_counts(p, *(next(out) if p.task is not None else (None, [])), backend) for p in plans]


def _counts(p: Plan, table: np.ndarray | None, found: list, backend: Backend) -> Counts:
    """The run's :class:`Counts` from its counting pass's table and window items (a second, filtered pass for the
    cells a replicate's threshold needs outside the window); a comparison-level scheme counts here."""
    data, grid, targets, reps, ref = p.data, p.grid, p.targets, p.reps, p.cats.reference
    R = reps.size + 1
    cross = None  # the FMR targets' crossing cells, found once (passed on to the exact thresholds)
    view_thr = None
    view_refs = [p.cats.select(pairs) for pairs in _view_pairs(data.n_groups, reference_pairs(
        p.threshold_impostors, data.group_names, data.group_by))] if p.view_targets.size else []
    if p.task is None:
        table, items, cross = comparison_level_counts(data, p.scheme, reps, layout_of(data), grid, targets, p.cats,
                                                      p.block_rows)
        tail = None
    else:
        ent, wt, win = p.ent, p.wt, p.task.win
        out = table[:, 0, :R].T
        if table.shape[1] > 1 or not out.flags.c_contiguous:  # else replicate-major already (the direct pass)
            out = np.empty((R, ent.n_keys), np.int64)
            K.lanes_to_replicates(table, out)
        table = out.reshape(R, ent.n_kc, grid.n_cells)
        items = None
        views = p.view_targets.size > 0
        if targets.size or views:
            cross = target_crossings(table, data.n_groups, targets, ref) if targets.size else None
            view_cross = [target_crossings(table, data.n_groups, p.view_targets, r) for r in view_refs] \
                if views else []
            want = np.zeros(grid.n_cells, bool)
            for c in ([cross] if cross is not None else []) + view_cross:
                want |= needed_cells(c, grid.n_cells)
            missing = want & ~win
            if missing.any():
                found = found + backend.items(data, p.task, missing)
            second_pass = int(missing.sum())
        found = concat_items(found)
        tail = _tail_hits(ent, found, grid, win) if p.keep_tail else None
        if targets.size or views:
            items = wanted_items(ent, want, wt, found)
        if views:  # each view's own thresholds (R, T', 1 + G)
            view_thr = np.stack([exact_targets(table, data.n_groups, p.view_targets, r, items, grid.rule, c)[0]
                                 for r, c in zip(view_refs, view_cross)], axis=2)
    G = data.n_groups
    thr, gacc, iacc = exact_targets(table, G, targets, ref, items, grid.rule, cross)
    mode = p.task.mode if p.task is not None else -1
    info = {"collapse": p.collapse if mode != -1 else False, "mode": mode}
    if (targets.size or view_thr is not None) and mode != -1:
        info["second_pass_cells"] = second_pass  # needed cells outside the one-pass window (0: one pass)
    scheme = p.scheme
    return Counts(
        scheme="plug-in" if scheme is None else scheme.name, seed=None if scheme is None else scheme.seed,
        replicates=np.concatenate([[0], reps]), grid=grid, group_names=tuple(data.group_names),
        categories=list(p.cats.pairs), genuine=table[:, :G], impostor=table[:, G:], fmr_targets=targets,
        threshold_impostors=p.threshold_impostors, threshold_categories=ref, target_threshold=thr,
        target_genuine_accepted=gacc, target_impostor_accepted=iacc, imputed_pairs=p.imputed, tail=tail, info=info,
        view_targets=p.view_targets, view_threshold=view_thr)


def _thresholds_key(fmr_targets, rule: Rule, threshold_impostors: ThresholdImpostors) -> tuple[np.ndarray, tuple]:
    """The targets as float64 and the key under which :func:`target_thresholds` holds its result."""
    want = np.atleast_1d(np.asarray(fmr_targets, np.float64))
    return want, ("target thresholds", rule, threshold_impostors)


def target_thresholds(data: MatchData, fmr_targets, rule: Rule = ">=",
                      threshold_impostors: ThresholdImpostors = "all") -> np.ndarray:
    """The plug-in thresholds at ``fmr_targets`` over the ``threshold_impostors`` (the engine's exact definition;
    +inf where no threshold reaches a target), from one pass; inside :func:`matchaudit.scores.tile_cache` a call
    at targets that an earlier call covered is answered from it (exact: a target's threshold does not depend on
    the other targets of the pass), or from :func:`hold_target_thresholds`."""
    want, key = _thresholds_key(fmr_targets, rule, threshold_impostors)

    def held(vals: tuple, thr: np.ndarray) -> np.ndarray | None:
        have = np.frombuffer(vals[-1])
        if not np.isin(want, have).all():
            return None
        return thr[[int(np.flatnonzero(have == a)[0]) for a in want]]

    return once_per_call((data,), (*key, want.tobytes()), lambda: run(
        data, None, grid=build_grid(data, rule=rule), fmr_targets=want,
        threshold_impostors=threshold_impostors).target_threshold[0].copy(), derive=held)


def hold_target_thresholds(data: MatchData, fmr_targets, thresholds: np.ndarray, rule: Rule = ">=",
                           threshold_impostors: ThresholdImpostors = "all") -> None:
    """Inside :func:`matchaudit.scores.tile_cache`, let :func:`target_thresholds` answer ``fmr_targets`` with
    ``thresholds``, found by another exact pass (the plug-in tally's, :func:`matchaudit.metrics.evaluate.evaluate`:
    the same definition, so the same numbers) instead of a pass of its own."""
    want, key = _thresholds_key(fmr_targets, rule, threshold_impostors)
    once_per_call((data,), (*key, want.tobytes()), lambda: np.asarray(thresholds, np.float64))


def _tail_hits(ent: Entries, found: tuple[np.ndarray, ...], grid: Grid, win: np.ndarray) -> TailHits:
    """The comparisons among the items of a tail window (every cell from the first window cell up), by
    identity."""
    first = int(np.argmax(win))
    floor = -np.inf if first == 0 else float(grid.edges[first - 1])
    parts = K.split_by_identity(*found, win, grid.n_cells, ent.G, ent.mode, ent.n_units, ent.ident)
    return TailHits(floor, *parts)


__all__ = ["Plan", "fused", "hold_target_thresholds", "plan", "run", "run_together", "target_thresholds"]
