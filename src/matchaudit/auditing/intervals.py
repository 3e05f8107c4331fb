"""An audit's intervals: MatchData + AuditConfig + interval options -> tidy interval records and DET bands.

This is the glue between the engine and the pure estimators of :mod:`intervals`, :mod:`bootstrap` and
:mod:`balanced`: it decides which engine runs a method needs (one per resampling scheme, plus the exact
per-identity counts for the closed forms, the V-statistic pass for recentering and the size-class run for
identity-balanced rates) and flattens the results. Point estimates and their counts are the audit's
(:func:`matchaudit.metrics.evaluate.evaluate`); replicates come from the engine.

Per-metric default methods (``method=None``): ``wilson`` for FMR/FNMR at a fixed threshold and
:data:`DEFAULT_BOOTSTRAP` (``double-or-nothing``) for everything else, FNMR@FMR, curves (DET, AUC, EER) and the
fairness measures, from one pass: every default record answers for a new population of identities, the question
the identity-level group tests answer (#43 item 4). A closed-form method asked for a curve or a fairness measure
falls back to the default (recorded as ``method``); a bootstrap asked for a fixed threshold is used as is, and a
bootstrap asked for is used for the fairness measures too.

Weightings (``weighting`` in every record): ``pooled``, and ``balanced`` (identity-balanced) when the audit
computes it. Balanced intervals are bootstraps only: the closed forms of docs/methods.md section 4 are defined
for pooled rates, so at fixed thresholds they fall back to the bootstrap (the default unless one is
asked for), ``two-level`` to ``vertex``; both recorded in ``method`` and ``note``. Balanced replicates'
thresholds at FMR targets are grid edges (resolution recorded), the plug-in's exact.
AUC/EER: the estimate is the audit's (exact AUC, ROCCH-EER); replicates are the same statistics of each
replicate's grid curve (``grid_estimate``: the plug-in's; exact for EER, within ``grid_bound`` for AUC).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from matchaudit import resampling as rs
from matchaudit.definitions import Alternative, Rule
from matchaudit.errors import InputError
from matchaudit.engine import Backend, Counts, LocalBackend, Plan, build_grid, identity_counts, plan, run_together
from matchaudit.engine.passes import Accumulator
from matchaudit.engine import chunks
from matchaudit.engine.identity import impostor_pair_counts
from matchaudit.progress import PASS_UNIT, Meter
from matchaudit.estimators import balanced
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.closed_forms import closed_form
from matchaudit.estimators import cross_group_intervals as cg
from matchaudit.estimators.studentized import STUDENTIZED
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult, evaluate
from matchaudit.metrics.rates import roc_hull
from matchaudit.model import IDENTITY_SOURCES, MatchData, view_names
from matchaudit.pairings import reference_pairs
from matchaudit.auditing.class_passes import balanced_plan, v_statistic
from matchaudit.auditing.options import IntervalOptions
from matchaudit.auditing.replicates import (ExactPoints, OwnThresholds, Studentizer, TargetStudentizer, ZeroBounds,
                                            bootstrap_records, det_bands, reducer, within_variances)

# ----------------------------------------------------------------------------- the audit's records

RECENTRED = bs.RECENTRED


def _scheme(method: str, seed: int) -> rs.Scheme:
    return rs.SCHEMES[bs.SCHEME_OF[method]](seed)


DEFAULT_BOOTSTRAP = "double-or-nothing"
"""The bootstrap of the intervals no method was asked for: identities redrawn, so that every default record
answers one question, a new population of identities like these (#43 item 4: the fairness measures, the group
tests and the Wilson rates ask it too); ``recentered`` ("these identities") on request."""


def default_bootstrap(data: MatchData) -> str:
    """:data:`DEFAULT_BOOTSTRAP`, for every input (with or without sample ids)."""
    return DEFAULT_BOOTSTRAP


def check_methods(data: MatchData, options: IntervalOptions) -> None:
    """Refuse, naming ``ci_method``, a bootstrap that redraws samples when the comparisons carry no sample ids."""
    if data.samples is not None or not data.has_identities:
        return
    bad = [m for m in options.methods if m in bs.SCHEME_OF and rs.SCHEMES[bs.SCHEME_OF[m]].level == "sample"]
    if bad:
        raise InputError(f"ci_method {','.join(bad)}: redraws the samples within each identity, and these "
                         "comparisons carry no sample ids (identities only). Use an identity-level bootstrap "
                         "(double-or-nothing, vertex) or a closed form (wilson), or give the sample columns.",
                         param="ci_method")


NO_IDENTITIES = ("comparisons that share an identity are dependent, and every interval here resamples or clusters "
                 f"them by identity; the input has no identities. Give them ({IDENTITY_SOURCES}) for intervals")


def intervals_without_identities(options: IntervalOptions) -> str:
    """The audit of data without identities has no intervals: the warning that says so when none was asked for, or
    an :class:`InputError` naming ``ci_method`` when methods were (their intervals would have crashed deep in a
    run, or been naive ones presented as the method's)."""
    if options.methods:
        raise InputError(f"ci_method {','.join(options.methods)}: {NO_IDENTITIES}, or audit without intervals.",
                         param="ci_method")
    return f"intervals skipped: {NO_IDENTITIES}. The exact metrics stand."


def balanced_method(data: MatchData, config: AuditConfig, options: IntervalOptions) -> tuple[str | None, str | None]:
    """The bootstrap of the identity-balanced intervals (the one asked for, or ``recentered`` when none or a
    closed form is asked for; ``vertex`` for ``two-level``, which has no balanced version), or None with the
    reason when there are none (:func:`matchaudit.estimators.balanced.unsupported`)."""
    if "balanced" not in config.weightings:
        return None, None
    boot = next((m for m in options.methods if m in bs.BOOTSTRAP), default_bootstrap(data))
    method = "vertex" if boot == "two-level" else boot
    reason = balanced.unsupported(data, bs.SCHEME_OF[method])
    return (None, f"identity-balanced intervals skipped: {reason}") if reason else (method, None)


def interval_weightings(config: AuditConfig, bal_method: str | None) -> tuple[str, ...]:
    """The weightings that get intervals: those of the audit, balanced only where :func:`balanced_method` allows."""
    return tuple(w for w in config.weightings if w == "pooled" or bal_method)


def hull_edges(result: AuditResult, rule: str) -> np.ndarray:
    """Thresholds of the ROCCH vertices of every exact curve of ``result`` (all weightings and views), as grid
    edges under ``rule`` (``>``: the float just below, which accepts the same comparisons as ``>= t``). With them
    in the grid, the grid's plug-in ROCCH-EER is the audit's: the grid's ROC points are exact ROC points, on or
    above the exact hull, and include its vertices."""
    t = [np.asarray(d["threshold"])[roc_hull(np.asarray(d["fmr"]), np.asarray(d["fnmr"]))] for d in result.det]
    t = np.concatenate(t) if t else np.zeros(0)
    t = t[np.isfinite(t)]
    return t if rule == ">=" else np.nextafter(t, -np.inf)


@dataclass(frozen=True)
class ChunkPlan:
    """How one weighting's replicates are counted: ``chunk`` replicates per engine run (``runs`` runs), each
    needing about ``per_replicate`` bytes while it is counted and reduced."""

    weighting: str
    chunk: int
    runs: int
    per_replicate: float


def plan_chunks(data: MatchData, options: IntervalOptions, weightings: tuple[str, ...], n_cells: int | None = None
                ) -> list[ChunkPlan]:
    """Replicate chunks of each weighting that fit the memory budget (``options.memory_gb``) beside the
    per-replicate statistics the whole run keeps; refused before any work when not even one replicate fits."""
    G, C = data.n_groups, n_cells or options.n_cells
    kept = _kept(data, options, len(weightings))
    plans = []
    for w in weightings:
        per = chunks.group_table_bytes(G, C)
        if w == "balanced":
            per = chunks.table_bytes(balanced.engine_categories(data), chunks.group_classes(G), C)
        size = chunks.chunk_size(per, options.n_resamples, options.memory_gb, fixed=kept)
        plans.append(ChunkPlan(w, size, chunks.n_runs(options.n_resamples, size), per))
    return plans


def _kept(data: MatchData, options: IntervalOptions, n_weightings: int) -> int:
    """Bytes of the per-replicate statistics the whole bootstrap keeps (what chunking cannot bound)."""
    return (options.n_resamples + 1) * (1 + data.n_groups) * 8 * (options.det_points + 16) * n_weightings


def one_pass(data: MatchData, options: IntervalOptions, plans: list[ChunkPlan]) -> bool:
    """Whether every weighting's replicates are one run and fit the memory budget all at once, beside the statistics
    kept: then one scoring pass counts them all (:func:`matchaudit.engine.run_together`), else each weighting makes
    its own runs."""
    tables = (options.n_resamples + 1) * sum(p.per_replicate for p in plans)
    return all(p.runs == 1 for p in plans) and tables + _kept(data, options, len(plans)) <= chunks.budget_bytes(
        options.memory_gb)


def plan_note(plans: list[ChunkPlan], options: IntervalOptions) -> str | None:
    """What a reader should know before a bootstrap in several runs (None when every weighting is one run)."""
    split = [p for p in plans if p.runs > 1]
    if not split:
        return None
    parts = ", ".join(f"{p.weighting} in {p.runs} runs of up to {p.chunk:,}" for p in split)
    return (f"{options.n_resamples:,} replicates do not fit the memory budget at once "
            f"({chunks.size_text(chunks.budget_bytes(options.memory_gb))}, {chunks.budget_source(options.memory_gb)}): "
            f"counted {parts} (the same numbers; each run scores the comparisons again).")


def compute_intervals(data: MatchData, config: AuditConfig, options: IntervalOptions, progress: bool = False,
                      result: AuditResult | None = None, backend: Backend | None = None,
                      also: Sequence[Accumulator] = (), own: OwnThresholds | None = None
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interval records for operating points, curve summaries, fairness measures and the normalized
    uncertainty, per weighting (``pooled``; ``balanced`` when in ``config.weightings`` and
    :func:`balanced_method` allows), and per-group DET bands ``{"weighting", "group", "fmr", "lower", "upper"}``.

    Point estimates and the counts behind them are the audit's (``result``, from
    :func:`~matchaudit.metrics.evaluate.evaluate`; computed when not given). Replicates are counted in chunks
    that fit the memory budget (:func:`plan_chunks`; the same numbers whatever the chunks). ``progress``: one
    display over every counting pass, in comparisons x replicates. ``backend``: where the main bootstrap pass
    runs (default: this process; see :mod:`matchaudit.engine.backends`). One scoring pass counts the pooled and the
    balanced replicates where the backend fuses runs (``Backend.fuses``: this process, Dask, torch) and each weighting
    is one run (:func:`one_pass`), and feeds ``also``'s accumulators (the audit's shared identity counts,
    :mod:`matchaudit.auditing.pass_plan`: on the backend where it serves them, ``Backend.serves``, else in a pass of
    their own here); else each weighting makes its runs (the balanced ones on this process). The same numbers either
    way.

    Several methods (``options.method`` a tuple): each bootstrap gives its records (and the first its bands), each
    closed form its records at the fixed thresholds (when no bootstrap is asked for, the first closed form's run
    also gives the default bootstrap's records of everything else); records in the order the methods were given.
    ``own``: each view's own threshold at ``own.targets`` in every pooled replicate, filled in by the same pass (the
    first bootstrap's; an engine scheme's, not a comparison-level one's).
    """
    if result is None:
        result = evaluate(data, config)
    if len(options.methods) > 1:
        return _several(data, config, options, progress, result, backend, also, own)
    bal_method, _ = balanced_method(data, config, options)
    boot_method = options.method if options.method in bs.BOOTSTRAP else default_bootstrap(data)
    fixed_method = options.method or "wilson"
    fixed = fixed_method not in iv.CLOSED_FORM
    thresholds = np.asarray(config.thresholds, float)
    exact = ExactPoints(result)
    bal_t = np.array([exact.op("balanced", "fmr_target", a, ALL)["threshold"] for a in config.fmr_targets]
                     if bal_method else [], float)
    edges = np.concatenate([thresholds, bal_t[np.isfinite(bal_t)], hull_edges(result, config.rule)])
    grid = build_grid(data, n_cells=options.n_cells, rule=config.rule, thresholds=edges)
    plans = {p.weighting: p for p in plan_chunks(data, options, interval_weightings(config, bal_method), grid.n_cells)}
    B = options.n_resamples

    def pooled(reps: np.ndarray, scheme: rs.Scheme | None, meter: Meter | bool = False) -> Plan:
        return plan(data, scheme, reps, grid=grid, fmr_targets=config.fmr_targets, thresholds=thresholds,
                    threshold_impostors=config.threshold_impostors, progress=meter,
                    view_targets=own.targets if own is not None and scheme is not None else ())

    total = sum(chunks.work(data.n_comparisons(), B, p.chunk) for p in plans.values())
    with Meter(progress, "bootstrap", total, PASS_UNIT) as meter:
        def planned(weighting: str, reps: np.ndarray) -> Plan:
            """The engine run of replicates ``reps`` of one weighting, under its method's scheme."""
            scheme = _scheme(boot_method if weighting == "pooled" else bal_method, options.seed)
            if weighting == "pooled":
                return pooled(reps, scheme, meter)
            return balanced_plan(data, scheme, reps, grid, thresholds, meter)

        def counts(weighting: str, c: Counts) -> Counts:
            return c if weighting == "pooled" else balanced.unit_weighted(data, c, config.threshold_impostors)

        together: dict[str, Counts] = {}
        if plans and (backend or LocalBackend()).fuses and one_pass(data, options, list(plans.values())):
            every = np.arange(1, B + 1)
            together = {w: counts(w, c) for w, c in zip(plans, run_together(
                data, [planned(w, every) for w in plans], meter, backend, also))}
        elif also:
            run_together(data, [], also=also)

        def counter(weighting: str) -> Callable[[np.ndarray], Counts]:
            """The engine counts of replicates for one weighting (those counted together, else a run's)."""
            if weighting in together:
                return lambda reps: together.pop(weighting)
            return lambda reps: counts(weighting, run_together(data, [planned(weighting, reps)], meter, backend
                                                               if weighting == "pooled" else None)[0])

        if "pooled" in plans:
            plug, stats = chunks.reduce_in_chunks(
                counter("pooled"), B, plans["pooled"].chunk,
                reducer("pooled", config, thresholds if fixed else (), options.det_points))
        else:  # the plug-in behind the V-statistic
            plug = run_together(data, [pooled(np.zeros(0, np.int64), None)], backend=backend)[0]
        if "balanced" in plans:
            bplug, bstats = chunks.reduce_in_chunks(
                counter("balanced"), B, plans["balanced"].chunk,
                reducer("balanced", config, thresholds, options.det_points))
    if own is not None and "pooled" in plans and "t_v" in stats:
        own.method, own.thresholds = boot_method, stats["t_v"]
    v = None
    if boot_method in RECENTRED:
        v = v_statistic(data, plug, thresholds, bal_t if bal_method in RECENTRED else None)
    records: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    if fixed_method in iv.CLOSED_FORM and "pooled" in plans:
        records += closed_form_records(data, config, options, (fixed_method,))
    if "pooled" in plans:
        target_t = np.array([exact.op("pooled", "fmr_target", a, ALL)["threshold"] for a in config.fmr_targets], float)
        student = None
        if fixed and thresholds.size and boot_method in STUDENTIZED and data.has_identities:
            student = Studentizer(data, _scheme(boot_method, options.seed), options.n_resamples,
                                   identity_counts(data, thresholds, config.rule, reference=reference_pairs(
                                       config.threshold_impostors, data.group_names, data.group_by)))
        targets = None
        if boot_method in STUDENTIZED and data.has_identities and "t_t" in stats and target_t.size:
            targets = TargetStudentizer(data, _scheme(boot_method, options.seed), stats, target_t, config.rule)
        records += bootstrap_records("pooled", plug, stats, v, boot_method, config, options, exact, fixed=fixed,
                                      zeros=ZeroBounds(data, options.level, options.alternative),
                                      within=within_variances(data, boot_method, thresholds, target_t, config.rule),
                                      student=student, targets=targets)
        bands += det_bands(plug, stats["det"], v, options, boot_method)
    if "balanced" in plans:
        bv = v.balanced if v is not None and bal_method in RECENTRED else None
        notes = {}
        if fixed_method in iv.CLOSED_FORM:
            notes["threshold"] = (f"{fixed_method} is defined for pooled rates only: "
                                  f"{bal_method} bootstrap")
        if bal_method != boot_method:
            notes["all"] = f"{boot_method} has no identity-balanced version: {bal_method} bootstrap"
        records += bootstrap_records("balanced", bplug, bstats, bv, bal_method, config, options, exact, fixed=True,
                                      notes=notes, zeros=ZeroBounds(data, options.level, options.alternative,
                                                                     balanced=True),
                                      within=within_variances(data, bal_method, thresholds, bal_t, config.rule, balanced=True))
        bands += det_bands(bplug, bstats["det"], bv, options, bal_method, "balanced")
    return records, bands


def _several(data: MatchData, config: AuditConfig, options: IntervalOptions, progress: bool, result: AuditResult,
             backend: Backend | None, also: Sequence[Accumulator], own: OwnThresholds | None
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`compute_intervals` for each of several methods (see there; the first one's pass feeds ``also``)."""
    methods = options.methods
    runs = [m for m in methods if m in bs.BOOTSTRAP] or [methods[0]]
    records: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    for i, m in enumerate(runs):
        r, b = compute_intervals(data, config, replace(options, method=m), progress, result, backend,
                                 also if i == 0 else (), own if i == 0 else None)
        records += r
        bands = bands or b
    records += closed_form_records(data, config, options, tuple(m for m in methods if m not in runs))
    order = {m: i for i, m in enumerate(methods)}
    return sorted(records, key=lambda r: order.get(r["method"], len(methods))), bands


def closed_form_records(data: MatchData, config: AuditConfig, options: IntervalOptions, methods: tuple[str, ...]
                        ) -> list[dict[str, Any]]:
    """Records of each closed-form method in ``methods`` for FMR and FNMR at the fixed thresholds, overall and per
    group (pooled rates: the closed forms have no identity-balanced version), from one pass of identity counts;
    ``options`` gives the level and sidedness."""
    if not methods or not len(config.thresholds) or "pooled" not in config.weightings:
        return []
    reference = reference_pairs(config.threshold_impostors, data.group_names, data.group_by)
    ic = identity_counts(data, np.asarray(config.thresholds, float), config.rule, reference=reference)
    records = []
    for method, (ti, t), (j, name) in itertools.product(methods, enumerate(config.thresholds),
                                                         enumerate(view_names(data.group_names))):
        fm, fn = closed_form(method, ic, ti, None if j == 0 else j - 1, options.level, options.alternative,
                             reference)
        for metric, r in (("FMR", fm), ("FNMR", fn)):
            records.append({"weighting": "pooled", "rule": config.rule,
                            "threshold_impostors": config.threshold_impostors, "scheme": None,
                            "metric": metric, "kind": "threshold", "target": float(t), "threshold": float(t),
                            "group": name, **r.to_dict()})
    return records


# ----------------------------------------------------------------------------- the cross-group FMR matrix

CROSS_GROUP_FIELDS = ("fmr_lower", "fmr_upper", "interval_method", "level")
"""The interval fields of every ``cross_group_fmr`` record (None where the cell has no interval)."""


def cross_group_method(options: IntervalOptions) -> str:
    """The closed form of the cross-group cells' intervals: the first closed form the audit asks for, else
    ``wilson`` (per-metric defaults, or bootstraps only: the cells have no bootstrap intervals). ``jackknife``
    also gives ``wilson``: its U-statistic correction is derived for one set of identities, not a bipartite cell."""
    first = next((m for m in options.methods if m in iv.CLOSED_FORM), "wilson")
    return "wilson" if first == "jackknife" else first


def cross_group_intervals(data: MatchData, thresholds, rule: Rule = ">=", method: str = "wilson",
                          level: float = 0.95, alternative: Alternative = "two-sided", block_rows: int = 2048
                          ) -> dict[cg.Cell, iv.IntervalResult]:
    """The pooled FMR interval of every cell ``(a, b)``, ``a <= b``, of the cross-group matrix at each of
    ``thresholds`` (accept iff ``score rule t``), keyed ``(threshold index, a, b)``: the identity counts there and,
    for listed data, the impostor comparisons per identity pair, then :func:`~matchaudit.estimators.
    cross_group_intervals.cell_intervals`. Needs identities (an :class:`InputError` otherwise)."""
    cg.check_identities(data)
    ic = identity_counts(data, np.atleast_1d(np.asarray(thresholds, np.float64)), rule, block_rows=block_rows)
    pairs = None if data.protocol == "all-pairs" else impostor_pair_counts(data, block_rows)
    return cg.cell_intervals(data, ic, pairs, method, level, alternative)


def add_cross_group_intervals(data: MatchData, result: AuditResult, options: IntervalOptions | None) -> list[str]:
    """Give every ``result.cross_group_fmr`` record the :data:`CROSS_GROUP_FIELDS`: on pooled records, with
    ``options``, the closed-form identity-clustered interval of the cell at the record's threshold
    (:func:`cross_group_intervals`, method :func:`cross_group_method`,
    the options' level and sidedness; at an FMR or FNMR target the threshold is taken as fixed). None elsewhere,
    so that tables keep stable columns: without ``options``, without identities (a warning, returned), on cells
    without comparisons, and on identity-balanced records (the balanced rate has no closed form here)."""
    for r in result.cross_group_fmr:
        r.update(dict.fromkeys(CROSS_GROUP_FIELDS))
    pooled = [r for r in result.cross_group_fmr if r["weighting"] == "pooled" and r["fmr"] is not None
              and not np.isnan(r["threshold"])]
    if options is None or not pooled:
        return []
    if not data.has_identities:
        return ["cross-group FMR intervals skipped: they cluster by identity, and the input has no identities."]
    thresholds = sorted({float(r["threshold"]) for r in pooled})
    index = {t: i for i, t in enumerate(thresholds)}
    code = {name: g for g, name in enumerate(data.group_names)}
    method = cross_group_method(options)
    cells = cross_group_intervals(data, thresholds, result.config.rule, method, options.level, options.alternative)
    for r in pooled:
        low, high = cells[index[float(r["threshold"])], code[r["group_a"]], code[r["group_b"]]].confidence_interval
        r.update(fmr_lower=float(low), fmr_upper=float(high), interval_method=method,
                 level=options.level)
    return []


__all__ = [
    "add_cross_group_intervals", "balanced_method", "ChunkPlan", "compute_intervals", "CROSS_GROUP_FIELDS",
    "cross_group_method", "hull_edges", "interval_weightings", "one_pass", "plan_chunks", "plan_note", "RECENTRED",
]
