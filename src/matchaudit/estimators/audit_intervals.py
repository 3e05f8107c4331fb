"""Intervals for an audit: MatchData + AuditConfig + interval options -> tidy interval records and DET bands.

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
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal

import numpy as np

from matchaudit import checks
from matchaudit.choices import INTERVAL_METHODS as METHODS
from matchaudit.definitions import Alternative
from matchaudit import resampling as rs
from matchaudit.errors import InputError
from matchaudit.engine import Backend, Counts, IdentityCounts, build_grid, identity_counts, run
from matchaudit.engine import chunks
from matchaudit.progress import PASS_UNIT, Meter
from matchaudit.estimators import balanced
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.cross_group_intervals import cross_group_intervals
from matchaudit.estimators.studentized import STUDENTIZED, rate_studentization, target_studentization
from matchaudit.estimators.within_variance import WithinVariance, within_variance
from matchaudit.metrics import fairness
from matchaudit.estimators import fairness_projection as fp
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult, evaluate
from matchaudit.metrics.rates import roc_hull, safe_ratio
from matchaudit.metrics.small_groups import excluded_groups, too_few_left
from matchaudit.metrics.tally import genuine_scores
from matchaudit.model import IDENTITY_SOURCES, MatchData, view_names
from matchaudit.pairings import reference_pairs

Band = Literal["simultaneous", "pointwise"]


@dataclass(frozen=True)
class IntervalOptions:
    """How to compute intervals; every field is recorded."""

    method: str | tuple[str, ...] | None = None  # None: per-metric defaults; several: each where it applies
    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    one_sided: bool = False  # upper bounds
    band: Band = "simultaneous"
    n_cells: int = 4096
    det_points: int = 60
    memory_gb: float | None = None  # budget for the bootstrap; None: MEMORY_SHARE of physical memory

    def __post_init__(self) -> None:
        """Validate every field, whoever builds the options."""
        if self.method is not None:
            several = checks.choices(self.method, METHODS, "ci_method")
            object.__setattr__(self, "method", several[0] if len(several) == 1 else several)
        object.__setattr__(self, "level", checks.probability(self.level, "level"))
        object.__setattr__(self, "n_resamples", checks.integer(self.n_resamples, "n_resamples", low=1))
        object.__setattr__(self, "seed", checks.seed(self.seed))
        checks.choice(self.band, Band, "band")
        object.__setattr__(self, "n_cells", checks.integer(self.n_cells, "n_cells", low=2))
        object.__setattr__(self, "det_points", checks.integer(self.det_points, "det_points", low=2))
        bs.check_resamples(self.n_resamples, self.level, self.alternative)
        if self.memory_gb is not None:
            object.__setattr__(self, "memory_gb", checks.number(self.memory_gb, "memory_gb", low=0.0, low_open=True))

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods asked for, in the order given (empty: the per-metric defaults)."""
        return () if self.method is None else (self.method,) if isinstance(self.method, str) else self.method

    @property
    def alternative(self) -> Alternative:
        return "less" if self.one_sided else "two-sided"


# ----------------------------------------------------------------------------- engine identity counts -> closed forms

def impostor_categories(ic: IdentityCounts, group: int | None, reference: np.ndarray | None = None) -> np.ndarray:
    """Impostor categories of a view: a group's same-group pairs, or (``group=None``) the threshold's impostor
    set: the group pairs that ``reference`` marks ((G, G) bool, :func:`matchaudit.pairings.reference_pairs`;
    None: every pair)."""
    if group is not None:
        return np.array([ic.categories.slot[group, group]], np.int64)
    if reference is None:
        return np.arange(ic.categories.n, dtype=np.int64)
    return np.flatnonzero(ic.categories.select(reference)).astype(np.int64)


def impostor_totals(ic: IdentityCounts, ti: int, categories: np.ndarray) -> iv.ImpostorTotals:
    """What the FMR variance needs at threshold index ``ti``, restricted to impostor ``categories``: row totals
    per identity, the identity pairs with accepted impostors (with their ``m_kl``) and ``sum m_kl^2``."""
    cats = np.asarray(categories, np.int64)
    keep = np.isin(ic.pair_cat[ti], cats)
    return iv.ImpostorTotals(ic.m_row_cat[cats].sum(axis=0), ic.e_row_cat[ti][cats].sum(axis=0),
                             ic.pair_m[ti][keep], ic.pair_e[ti][keep], float(sum(ic.sum_m2_cat[c] for c in cats)))


def view_identities(ic: IdentityCounts, group: int | None) -> np.ndarray:
    """(K,) bool: the identities of a view (``group``, or all for None)."""
    return np.ones(ic.g.size, bool) if group is None else ic.group == group


def genuine_totals(ic: IdentityCounts, ti: int, group: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per identity (of ``group``, or all): genuine comparisons ``g_k`` and genuine errors ``E_k`` at ``ti``."""
    keep = view_identities(ic, group)
    return ic.g[keep], ic.e[ti][keep]


def closed_form(method: str, ic: IdentityCounts, ti: int, group: int | None, level: float,
                alternative: Alternative, reference: np.ndarray | None = None) -> tuple[iv.IntervalResult, iv.IntervalResult]:
    """(FMR, FNMR) intervals at threshold index ``ti`` for one group (its genuine comparisons and its
    same-group impostors) or all (``group=None``: every genuine comparison; impostors of the ``reference``
    group pairs, :func:`impostor_categories`)."""
    fnmr = iv.fnmr_interval(method, *genuine_totals(ic, ti, group), level, alternative)
    fmr = iv.fmr_interval(method, impostor_totals(ic, ti, impostor_categories(ic, group, reference)), level,
                          alternative)
    return fmr, fnmr


# ----------------------------------------------------------------------------- the audit's records

class ZeroBounds:
    """Zero-error intervals of each view (0: all, then the groups) for the bootstrap records."""

    def __init__(self, data: MatchData, level: float, alternative: Alternative, balanced: bool = False):
        """``balanced``: identity-balanced rates weigh every identity the same (clusters of equal size)."""
        self.level, self.alternative = level, alternative
        self.sizes = None if balanced else data.genuine_per_identity()
        self.group = data.identity_group

    def interval(self, metric: str, view: int, method: str, comparisons: int) -> iv.IntervalResult:
        keep = np.ones(self.group.size, bool) if view == 0 else self.group == view - 1
        k = int(keep.sum())
        if metric == "FMR":
            return iv.zero_fmr(method, comparisons, k, self.level, self.alternative)
        return iv.zero_fnmr(method, comparisons, None if self.sizes is None else self.sizes[keep], self.level,
                            self.alternative, n_identities=k)


RECENTRED = bs.RECENTRED
MEASURE_CORRECTION = "groups' FNMR replicates with the small-sample variance correction (docs/intervals.md)"


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
    views = 1 + G
    kept = (options.n_resamples + 1) * views * 8 * (options.det_points + 16) * len(weightings)
    plans = []
    for w in weightings:
        per = chunks.group_table_bytes(G, C)
        if w == "balanced":
            per = chunks.table_bytes(balanced.engine_categories(data), chunks.group_classes(G), C)
        size = chunks.chunk_size(per, options.n_resamples, options.memory_gb, fixed=kept)
        plans.append(ChunkPlan(w, size, chunks.n_runs(options.n_resamples, size), per))
    return plans


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
                      result: AuditResult | None = None, backend: Backend | None = None
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interval records for operating points, curve summaries, fairness measures and the normalized
    uncertainty, per weighting (``pooled``; ``balanced`` when in ``config.weightings`` and
    :func:`balanced_method` allows), and per-group DET bands ``{"weighting", "group", "fmr", "lower", "upper"}``.

    Point estimates and the counts behind them are the audit's (``result``, from
    :func:`~matchaudit.metrics.evaluate.evaluate`; computed when not given). Replicates are counted in chunks
    that fit the memory budget (:func:`plan_chunks`; the same numbers whatever the chunks). ``progress``: one
    display over every counting pass, in comparisons x replicates. ``backend``: where the main bootstrap pass
    runs (default: this process; see :mod:`matchaudit.engine.backends`).

    Several methods (``options.method`` a tuple): each bootstrap gives its records (and the first its bands), each
    closed form its records at the fixed thresholds (when no bootstrap is asked for, the first closed form's run
    also gives the default bootstrap's records of everything else); records in the order the methods were given.
    """
    if result is None:
        result = evaluate(data, config)
    if len(options.methods) > 1:
        return _several(data, config, options, progress, result, backend)
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

    def pooled(reps: np.ndarray, scheme: rs.Scheme | None, meter: Meter | bool = False) -> Counts:
        return run(data, scheme, reps, grid=grid, fmr_targets=config.fmr_targets, thresholds=thresholds,
                   threshold_impostors=config.threshold_impostors, progress=meter, backend=backend)

    total = sum(chunks.work(data.n_comparisons(), B, p.chunk) for p in plans.values())
    with Meter(progress, "bootstrap", total, PASS_UNIT) as meter:
        def counter(weighting: str, method: str) -> Callable[[np.ndarray], Counts]:
            """The engine counts of replicates under ``method``'s scheme for one weighting."""
            scheme = _scheme(method, options.seed)
            if weighting == "pooled":
                return lambda reps: pooled(reps, scheme, meter)
            return lambda reps: balanced.balanced_counts(data, scheme, reps, grid, config.threshold_impostors,
                                                         thresholds, meter)

        if "pooled" in plans:
            plug, stats = chunks.reduce_in_chunks(
                counter("pooled", boot_method), B, plans["pooled"].chunk,
                _reducer("pooled", config, thresholds if fixed else (), options.det_points))
        else:  # the plug-in behind the V-statistic
            plug = pooled(np.zeros(0, np.int64), None)
        if "balanced" in plans:
            bplug, bstats = chunks.reduce_in_chunks(
                counter("balanced", bal_method), B, plans["balanced"].chunk,
                _reducer("balanced", config, thresholds, options.det_points))
    v = None
    if boot_method in RECENTRED:
        v = bs.v_statistic(data, plug, thresholds, bal_t if bal_method in RECENTRED else None)
    records: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    if fixed_method in iv.CLOSED_FORM and "pooled" in plans:
        records += closed_form_records(data, config, options, (fixed_method,))
    if "pooled" in plans:
        target_t = np.array([exact.op("pooled", "fmr_target", a, ALL)["threshold"] for a in config.fmr_targets], float)
        student = None
        if fixed and thresholds.size and boot_method in STUDENTIZED and data.has_identities:
            student = _Studentizer(data, _scheme(boot_method, options.seed), options.n_resamples,
                                   identity_counts(data, thresholds, config.rule, reference=reference_pairs(
                                       config.threshold_impostors, data.group_names, data.group_by)))
        targets = None
        if boot_method in STUDENTIZED and data.has_identities and "t_t" in stats and target_t.size:
            targets = _TargetStudentizer(data, _scheme(boot_method, options.seed), stats, target_t, config.rule)
        records += _bootstrap_records("pooled", plug, stats, v, boot_method, config, options, exact, fixed=fixed,
                                      zeros=ZeroBounds(data, options.level, options.alternative),
                                      within=_within(data, boot_method, thresholds, target_t, config.rule),
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
        records += _bootstrap_records("balanced", bplug, bstats, bv, bal_method, config, options, exact, fixed=True,
                                      notes=notes, zeros=ZeroBounds(data, options.level, options.alternative,
                                                                     balanced=True),
                                      within=_within(data, bal_method, thresholds, bal_t, config.rule, balanced=True))
        bands += det_bands(bplug, bstats["det"], bv, options, bal_method, "balanced")
    return records, bands


def _several(data: MatchData, config: AuditConfig, options: IntervalOptions, progress: bool, result: AuditResult,
             backend: Backend | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`compute_intervals` for each of several methods (see there)."""
    methods = options.methods
    runs = [m for m in methods if m in bs.BOOTSTRAP] or [methods[0]]
    records: list[dict[str, Any]] = []
    bands: list[dict[str, Any]] = []
    for m in runs:
        r, b = compute_intervals(data, config, replace(options, method=m), progress, result, backend)
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

CROSS_GROUP_FIELDS = ("fmr_lower", "fmr_upper", "interval_method", "confidence_level")
"""The interval fields of every ``cross_group_fmr`` record (None where the cell has no interval)."""


def cross_group_method(options: IntervalOptions) -> str:
    """The closed form of the cross-group cells' intervals: the first closed form the audit asks for, else
    ``wilson`` (per-metric defaults, or bootstraps only: the cells have no bootstrap intervals). ``jackknife``
    also gives ``wilson``: its U-statistic correction is derived for one set of identities, not a bipartite cell."""
    first = next((m for m in options.methods if m in iv.CLOSED_FORM), "wilson")
    return "wilson" if first == "jackknife" else first


def add_cross_group_intervals(data: MatchData, result: AuditResult, options: IntervalOptions | None) -> list[str]:
    """Give every ``result.cross_group_fmr`` record the :data:`CROSS_GROUP_FIELDS`: on pooled records, with
    ``options``, the closed-form identity-clustered interval of the cell at the record's threshold
    (:func:`~matchaudit.estimators.cross_group_intervals.cross_group_intervals`, method :func:`cross_group_method`,
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
                 confidence_level=options.level)
    return []


def _reducer(weighting: str, config: AuditConfig, thresholds, det_points: int
             ) -> Callable[[Counts], dict[str, np.ndarray]]:
    """What the interval records and DET bands of one weighting read from each replicate, as arrays (R, ...):
    FNMR/FMR at the FMR targets (pooled: each replicate's exact threshold; balanced: grid edges) ``fn_t``,
    ``fm_t`` (R, T, 1+G); at the fixed ``thresholds`` ``fn_fixed``, ``fm_fixed`` (R, n, 1+G); ``auc``, ``eer``
    (R, 1+G); the DET curve on :func:`det_fmr_grid` ``det`` (R, 1+G, X); the grid curves' (the targets when
    balanced, AUC, EER, DET) only of the views reported (:func:`bs.view_names`: the overall only when ungrouped)."""
    at_targets = _target_reducer(weighting, config)

    def reduce(c: Counts) -> dict[str, np.ndarray]:
        curves = bs.grid_curves(c, reported=True)  # once per chunk: targets (balanced), AUC/EER, DET read it
        rates = at_targets(c, curves)
        fixed = [bs.rates_at_threshold(c, float(t))[:2] for t in thresholds]
        shape = (c.replicates.size, 0, rates["fn_t"].shape[-1])
        auc, eer = bs.auc_eer(curves, config.eer_method)
        return {**rates, "auc": auc, "eer": eer,
                "fn_fixed": np.stack([f[0] for f in fixed], axis=1) if fixed else np.zeros(shape),
                "fm_fixed": np.stack([f[1] for f in fixed], axis=1) if fixed else np.zeros(shape),
                "det": bs.det_replicates(c, det_fmr_grid(c, det_points), curves=curves)[0]}
    return reduce


def _target_reducer(weighting: str, config: AuditConfig
                    ) -> Callable[[Counts, bs.GridCurves | None], dict[str, np.ndarray]]:
    """FNMR and FMR at the FMR targets per replicate and view, ``fn_t``, ``fm_t`` (R, T, 1+G): pooled at each
    replicate's exact threshold, balanced at grid edges (from the counts' grid curves, when already computed)."""
    def reduce(c: Counts, curves: bs.GridCurves | None = None) -> dict[str, np.ndarray]:
        if weighting == "pooled":  # with each replicate's thresholds (the bootstrap-t of FNMR@FMR reads them)
            return {"fn_t": bs.fnmr_at_targets(c), "fm_t": bs.fmr_at_targets(c), "t_t": c.target_threshold}
        fn_t, fm_t = bs.targets_on_grid(c, config.fmr_targets, curves)
        return {"fn_t": fn_t, "fm_t": fm_t}
    return reduce


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _bounded_note(within: WithinVariance, view: int) -> str | None:
    """The note on identities whose within-identity variance is bounded, not estimated (None when there are none)."""
    n = int(within.bounded[view])
    return (f"{n:,} identities with 2-3 samples: their within-identity variance is bounded above, not estimated "
            "(conservative)") if n else None


def _within(data: MatchData, method: str, thresholds: np.ndarray, target_t: np.ndarray, rule: str,
            balanced: bool = False) -> WithinVariance | None:
    """Within-identity variances at the fixed thresholds then the plug-in thresholds of the FMR targets, for the
    small-sample correction of recentered/gaussian FNMR intervals (:mod:`within_variance`); None otherwise."""
    if method not in RECENTRED or data.samples is None or not data.has_identities:
        return None
    return within_variance(data, np.concatenate([thresholds, target_t]), rule, balanced=balanced)


class _Studentizer:
    """Bootstrap-t inputs ``(se, t*)`` of FNMR at fixed threshold ``ti`` in view ``j`` (0: all, then groups) under
    an identity bootstrap (:mod:`studentized`), from exact identity counts: every (threshold, view) rate in one
    pass over the scheme's weights (identities outside a view count as having no comparisons)."""

    def __init__(self, data: MatchData, scheme: rs.Scheme, n_resamples: int, ic: IdentityCounts):
        inside = np.array([view_identities(ic, None if j == 0 else j - 1) for j in range(data.n_groups + 1)])
        self.views = inside.shape[0]
        e = (ic.e[:, None, :] * inside[None]).reshape(-1, ic.g.size)  # (T * views, K)
        g = np.broadcast_to(ic.g[None, None, :] * inside[None], (ic.e.shape[0],) + inside.shape).reshape(e.shape)
        self.se, self.t, _ = rate_studentization(scheme, data, e, g, n_resamples)

    def fnmr(self, ti: int, j: int) -> tuple[float, np.ndarray]:
        m = ti * self.views + j
        return float(self.se[m]), self.t[:, m]


class _TargetStudentizer:
    """Bootstrap-t inputs ``(se, t*)`` of FNMR at FMR target ``ti`` in view ``j`` (0: all, then groups), each
    replicate at its own exact threshold (``stats["t_t"]``), under an identity bootstrap
    (:func:`studentized.target_studentization`). Its ``p*`` must equal the engine's replicates; where it does not
    (a scheme whose genuine weights are not the engine's), the view keeps its percentile interval."""

    def __init__(self, data: MatchData, scheme: rs.Scheme, stats: dict[str, np.ndarray], t_hat: np.ndarray,
                 rule: str):
        genuine = genuine_scores(data)
        inside = np.array([data.identity_group == g for g in range(data.n_groups)], float)
        inside = np.concatenate([np.ones((1, data.n_identities)), inside])
        self.out: dict[tuple[int, int], tuple[float, np.ndarray]] = {}
        for ti, t in enumerate(t_hat):
            se, t_star, reps = target_studentization(scheme, data, genuine, float(t), stats["t_t"][1:, ti], rule,
                                                     inside)
            engine = stats["fn_t"][1:, ti, :]
            for j in range(inside.shape[0]):
                if np.allclose(reps[:, j], engine[:, j], rtol=1e-12, atol=1e-15, equal_nan=True):
                    self.out[(ti, j)] = (float(se[j]), t_star[:, j])

    def fnmr(self, ti: int, j: int) -> tuple[float, np.ndarray] | None:
        return self.out.get((ti, j))


class ExactPoints:
    """The audit's exact numbers, by key."""

    def __init__(self, result: AuditResult):
        self._ops = {(p["weighting"], p["kind"], p["target"], p["group"]): p for p in result.operating_points}
        # the groups the fairness measures leave out (small groups, when the audit excludes them)
        self.excluded = excluded_groups(result.summary["groups"], result.config.exclude_small_groups)
        self._curves = {(c["weighting"], c["group"]): c for c in result.curve_summaries}

    def op(self, weighting: str, kind: str, target: float, group: str) -> dict[str, Any]:
        return self._ops[(weighting, kind, target, group)]

    def curve(self, weighting: str, group: str) -> dict[str, Any]:
        return self._curves[(weighting, group)]


def _bootstrap_records(weighting: str, counts: Counts, stats: dict[str, np.ndarray], v, method: str,
                       config: AuditConfig, options: IntervalOptions, exact: ExactPoints, fixed: bool,
                       notes: dict[str, str] | None = None,
                       zeros: ZeroBounds | None = None, within: WithinVariance | None = None,
                       student: _Studentizer | None = None, targets: _TargetStudentizer | None = None
                       ) -> list[dict[str, Any]]:
    """Bootstrap records of one weighting from its plug-in counts and replicate statistics (:func:`_reducer`;
    pooled: exact replicate thresholds at FMR targets; balanced: grid-edge replicate thresholds). ``fixed``: also FMR/FNMR at
    the fixed thresholds. ``notes`` by kind (``"threshold"``) or ``"all"``: appended to the records' notes.
    ``zeros``: a rate with zero errors gets its zero-error bound instead of a (zero-width) bootstrap interval.
    ``within``: the within-identity variances (fixed thresholds, then targets) that correct recentered FNMR
    intervals and the FNMR side of fairness measures for few samples per identity. ``student``: FNMR at the fixed
    thresholds gets bootstrap-t bounds (identity bootstraps); ``targets``: FNMR at the FMR targets too."""
    notes = notes or {}
    names = bs.view_names(counts)
    level, alt, res = options.level, options.alternative, counts.resolution
    base = {"weighting": weighting, "rule": config.rule, "threshold_impostors": config.threshold_impostors,
            "scheme": counts.scheme}
    out: list[dict[str, Any]] = []

    def add(r: iv.IntervalResult, **keys):
        r.weighting = weighting
        extra = [n for n in (notes.get("all"), notes.get(keys["kind"])) if n]
        if extra:
            r.note = "; ".join([r.note] * bool(r.note) + extra)
        out.append({**base, **keys, **r.to_dict()})

    def boot(est, reps, vest=None, bounds=(0.0, 1.0), zero=None, at=None, studentized=None, **kw):
        """``zero``: the (metric, view) whose zero-error bound replaces the bootstrap when there are no errors.
        ``at``: (threshold index, view) of ``within`` whose small-sample correction applies (FNMR)."""
        if zeros is not None and zero is not None and kw.get("errors") == 0 and kw.get("comparisons"):
            r = zeros.interval(*zero, method, kw["comparisons"])
            r.n_resamples, r.seed = int(np.shape(reps)[0]), options.seed
            return r
        corr = None if within is None or at is None else (within.estimate[at], within.bootstrap[at])
        r = bs.interval_from_replicates(method, est, reps, vest if v is not None else None, level, alt,
                                        seed=options.seed, resolution=res, bounds=bounds,
                                        within=corr, studentized=studentized, **kw)
        if corr is not None:
            r.note = _join(r.note, _bounded_note(within, at[1]))
        return r

    def nu(est, reps, vest):
        return float(bs.normalized_uncertainty(est, reps, vest))

    n_fixed = len(config.thresholds)

    # FNMR and FMR at the FMR targets (each replicate at its own threshold)
    fn_t, fm_t = stats["fn_t"], stats["fm_t"]
    fn_v = bs.fnmr_v_at_targets(counts, v) if v is not None else None
    for ti, a in enumerate(config.fmr_targets):
        for j, name in enumerate(names):
            op = exact.op(weighting, "fmr_target", a, name)
            vv = None if fn_v is None else fn_v[ti, j]
            r = boot(op["fnmr"], fn_t[1:, ti, j], vv, errors=op["fnmr_errors"], comparisons=op["fnmr_comparisons"],
                     zero=("FNMR", j), at=(n_fixed + ti, j),
                     studentized=None if targets is None else targets.fnmr(ti, j))
            add(r, metric="FNMR", kind="fmr_target", target=a, threshold=op["threshold"], group=name,
                normalized_uncertainty=nu(op["fnmr"], fn_t[1:, ti, j], vv))
            # each group's FMR at the global threshold (all: the target's achieved FMR), the threshold re-derived
            add(boot(op["fmr"], fm_t[1:, ti, j], errors=op["fmr_errors"], comparisons=op["fmr_comparisons"],
                     zero=("FMR", j)), metric="FMR", kind="fmr_target", target=a, threshold=op["threshold"],
                group=name, normalized_uncertainty=nu(op["fmr"], fm_t[1:, ti, j], None))

    # FMR and FNMR at fixed thresholds
    gt = bs.views_gen(counts.genuine_total[0])
    for ti, t in enumerate(config.thresholds if fixed else ()):
        fnmr, fmr = stats["fn_fixed"][:, ti], stats["fm_fixed"][:, ti]
        vfn = None if v is None else 1 - safe_ratio(bs.views_gen(v.threshold_genuine_accepted[ti]), gt)
        for j, name in enumerate(names):
            op = exact.op(weighting, "threshold", t, name)
            keys = {"kind": "threshold", "target": float(t), "threshold": float(t), "group": name}
            add(boot(op["fmr"], fmr[1:, j], errors=op["fmr_errors"], comparisons=op["fmr_comparisons"],
                     zero=("FMR", j)), metric="FMR", **keys)
            add(boot(op["fnmr"], fnmr[1:, j], None if vfn is None else vfn[j], errors=op["fnmr_errors"],
                     comparisons=op["fnmr_comparisons"], zero=("FNMR", j), at=(ti, j),
                     studentized=None if student is None else student.fnmr(ti, j)), metric="FNMR", **keys)

    # curve summaries: the audit's AUC and ROCCH-EER; replicates on the grid curve
    auc, eer = stats["auc"], stats["eer"]
    auc_v = eer_v = None
    if v is not None:
        auc_v, eer_v = bs.auc_eer(bs.v_curves(counts, v), config.eer_method)
    bound = bs.auc_grid_bound(counts)
    for j, name in enumerate(names):
        c = exact.curve(weighting, name)
        for metric, x, xv, est in (("AUC", auc, auc_v, c["auc"]), ("EER", eer, eer_v, c["eer"])):
            vv = None if xv is None else xv[0, j]
            r = boot(est, x[1:, j], vv)
            r.extra["grid_estimate"] = float(x[0, j])
            if metric == "AUC":
                r.extra["grid_bound"] = float(bound[j])
            add(r, metric=metric, kind="curve", target=None, threshold=None, group=name,
                normalized_uncertainty=nu(est, x[1:, j], vv))

    # fairness measures at each FMR target (replicate's own global threshold)
    if len(names) > 2 and len(config.fmr_targets):
        # over the groups the audit's exact measures are taken over (small groups excluded when it asks)
        keep = np.array([name not in exact.excluded for name in names[1:]])
        scope = None
        if exact.excluded:
            scope = (f"over the groups that are not small, as the estimate ({config.small_groups.describe()}; "
                     f"excluded: {', '.join(exact.excluded)})")
            if keep.sum() < 2:
                scope = too_few_left(int(keep.sum()), exact.excluded, config.small_groups)
        out += measure_records(method, weighting, names[1:], fm_t, fn_t, fn_v, within, keep, config, options,
                               exact, zeros, base, _join(scope, notes.get("all"), notes.get("fmr_target")))
    return out


def measure_records(method: str, weighting: str, groups: list[str], fm_t: np.ndarray, fn_t: np.ndarray,
                    fn_v: np.ndarray | None, within: WithinVariance | None, keep: np.ndarray, config: AuditConfig,
                    options: IntervalOptions, exact: ExactPoints, zeros: ZeroBounds | None, base: dict[str, Any],
                    scope: str | None) -> list[dict[str, Any]]:
    """The fairness measures' records at each FMR target: the range of each measure over a box of the kept
    groups' rate intervals that hold simultaneously (:mod:`matchaudit.estimators.fairness_projection`), built from
    ``method``'s replicates of the groups' rates ``(R+1, T, 1+G)``; a group without errors has its zero-error bound
    as the box's upper end. An undefined estimate (every kept group at 0: a ratio 0/0; fewer than two groups kept)
    gets no interval."""
    names = [n for n, k in zip(groups, keep) if k]
    n_fixed, level = len(config.thresholds), options.level
    fm, fn = bs.group_replicates(method, fm_t, fn_t, fn_v, None if within is None else
                                 (within.estimate[n_fixed:], within.bootstrap[n_fixed:]), keep)
    floors = {rate: np.zeros((len(config.fmr_targets), len(names))) for rate in ("FMR", "FNMR")}
    for ti, a in enumerate(config.fmr_targets):
        for j, name in enumerate(names):
            op = exact.op(weighting, "fmr_target", a, name)
            for rate in ("FMR", "FNMR"):
                low = rate.lower()
                if zeros is not None and op[f"{low}_errors"] == 0 and op[f"{low}_comparisons"]:
                    view = groups.index(name) + 1
                    floors[rate][ti, j] = zeros.interval(rate, view, method, op[f"{low}_comparisons"]
                                                         ).confidence_interval.high
    plug = bs.measure_replicates(fm_t[0][..., 1:][..., keep], fn_t[0][..., 1:][..., keep])
    if len(names) >= 2:
        bounds, boxes = fp.projected_intervals(fm, fn, level, floors["FMR"], floors["FNMR"])
    else:
        bounds, boxes = {key: np.full((len(config.fmr_targets), 2), np.nan) for key in plug}, None
    correction = MEASURE_CORRECTION if within is not None else None
    out = []
    for (rate, measure), b in bounds.items():
        for ti, a in enumerate(config.fmr_targets):
            est = float(plug[(rate, measure)][ti])
            lo, hi = (float(x) for x in bs.snap(b[ti], fairness.RANGE[measure]))
            if np.isnan(est) or boxes is None:
                lo = hi = math.nan
                note = None if boxes is None else "undefined estimate (every group without errors: 0/0): no interval"
            else:
                lo, hi = (min(lo, est), max(hi, est)) if np.isfinite(est) else (lo, hi)
                which = "FMR and FNMR" if rate == "combined" else rate
                note = (f"{fp.CONSTRUCTION}: the measure's range over the groups' {which} intervals holding together "
                        f"at {level:.0%} (each group's at {boxes[rate].group_level[ti]:.2%}); it contains parity "
                        "exactly when no two groups' intervals are apart")
            r = iv.IntervalResult(est, iv.ConfidenceInterval(float(lo), float(hi)), method, level,
                                  n_resamples=int(fm.shape[0]), seed=options.seed, weighting=weighting,
                                  note=_join(note, correction if rate != "FMR" else None, scope))
            r.extra["construction"] = fp.CONSTRUCTION
            parity = fairness.PARITY[measure]
            r.extra["excludes_parity"] = bool(np.isfinite(lo) and not lo <= parity <= hi)
            out.append({**base, "metric": f"{rate}:{measure}", "kind": "fmr_target", "target": a,
                        "threshold": exact.op(weighting, "fmr_target", a, ALL)["threshold"], "group": "all",
                        **r.to_dict()})  # no normalized uncertainty: it is the rates' (eq. 11), not a measure's
    return out


def det_fmr_grid(counts: Counts, points: int) -> np.ndarray:
    """The FMR values of the DET bands: a log grid from the resolution limit (one impostor of the plug-in) to 0.5."""
    n_imp = float(counts.impostor_total[0].sum())
    return np.geomspace(max(1.0 / max(n_imp, 1.0), 1e-6), 0.5, points)


def det_bands(counts: Counts, reps: np.ndarray, v, options: IntervalOptions, method: str, weighting: str = "pooled"
              ) -> list[dict[str, Any]]:
    """Per view: FNMR band over :func:`det_fmr_grid` from the plug-in ``counts`` and the replicates' curves
    ``reps`` (R, 1+G, X), row 0 the plug-in."""
    grid_fmr = det_fmr_grid(counts, options.det_points)
    vcurve = None if v is None else bs.det_replicates(counts, grid_fmr, v)[1]
    out = []
    for j, name in enumerate(bs.view_names(counts)):
        est, r = reps[0, j], reps[1:, j]
        vc = vcurve[j] if vcurve is not None and method in RECENTRED else None
        if options.band == "simultaneous":
            low, high, c = bs.sup_t_band(est, r, vc, options.level)
        else:
            res = bs.interval_from_replicates(method, est, r, vc, options.level, bounds=(0.0, 1.0))
            low, high, c = res.confidence_interval.low, res.confidence_interval.high, None
        dropped = int(np.isnan(r).all(axis=1).sum())
        note = ("the plug-in curve is undefined (no impostor or no genuine comparisons)" if np.isnan(est).all()
                else f"{dropped} resamples without impostor or genuine comparisons of this view dropped" if dropped
                else None)
        out.append({"weighting": weighting, "group": name, "fmr": grid_fmr, "estimate": est, "lower": low,
                    "upper": high, "band": options.band, "critical_value": c, "method": method,
                    "level": options.level, "n_resamples": int(r.shape[0]), "seed": options.seed, "note": note})
    return out


__all__ = [
    "METHODS",
    "RECENTRED",
    "IntervalOptions",
    "ExactPoints",
    "ZeroBounds",
    "CROSS_GROUP_FIELDS",
    "add_cross_group_intervals",
    "balanced_method",
    "ChunkPlan",
    "plan_chunks",
    "plan_note",
    "closed_form",
    "compute_intervals",
    "cross_group_method",
    "det_bands",
    "genuine_totals",
    "view_identities",
    "hull_edges",
    "interval_weightings",
    "impostor_categories",
    "impostor_totals",
]
