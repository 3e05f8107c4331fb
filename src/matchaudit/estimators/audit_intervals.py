"""Intervals for an audit: MatchData + AuditConfig + interval options -> tidy interval records and DET bands.

This is the glue between the engine and the pure estimators of :mod:`intervals` and :mod:`bootstrap`:
it decides which engine runs a method needs (one per resampling scheme, plus the exact per-identity
counts for the closed forms and the V-statistic pass for recentering) and flattens the results.

Per-metric default methods (``method=None``): ``wilson`` for FMR/FNMR at a fixed threshold, ``recentered``
for FNMR@FMR, curves (DET, AUC, EER) and fairness measures. A closed-form method asked for a curve or a
fairness measure falls back to the default (recorded as ``method``); a bootstrap asked for a fixed
threshold is used as is. All rates are pooled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from matchaudit import resampling as rs
from matchaudit.engine import IdentityCounts, build_grid, identity_counts, run
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.metrics.evaluate import AuditConfig
from matchaudit.model import MatchData

METHODS = iv.CLOSED_FORM + bs.BOOTSTRAP
Band = Literal["simultaneous", "pointwise"]


@dataclass(frozen=True)
class IntervalOptions:
    """How to compute intervals; every field is recorded."""

    method: str | None = None  # None: per-metric defaults
    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    one_sided: bool = False  # upper bounds
    band: Band = "simultaneous"
    n_cells: int = 4096
    det_points: int = 60

    @property
    def alternative(self) -> iv.Alternative:
        return "less" if self.one_sided else "two-sided"


# ----------------------------------------------------------------------------- engine identity counts -> closed forms

def impostor_categories(ic: IdentityCounts, group: int | None, reference: str = "all") -> np.ndarray:
    """Impostor categories of a view: a group's same-group pairs, or (``group=None``) the threshold's impostor
    set: every category (``reference="all"``) or the same-group ones (``"same-group"``)."""
    same = np.array([c for c, (a, b) in enumerate(ic.categories) if a == b], np.int64)
    if group is not None:
        return same[group:group + 1]
    if reference == "same-group":
        return same
    if reference != "all":
        raise ValueError(f"threshold impostors {reference!r}: use 'all' or 'same-group'")
    return np.arange(len(ic.categories), dtype=np.int64)


def impostor_totals(ic: IdentityCounts, ti: int, categories: np.ndarray) -> iv.ImpostorTotals:
    """What the FMR variance needs at threshold index ``ti``, restricted to impostor ``categories``: row totals
    per identity, the identity pairs with accepted impostors (with their ``m_kl``) and ``sum m_kl^2``."""
    cats = np.asarray(categories, np.int64)
    keep = np.isin(ic.pair_cat[ti], cats)
    return iv.ImpostorTotals(ic.m_row_cat[cats].sum(axis=0), ic.e_row_cat[ti][cats].sum(axis=0),
                             ic.pair_m[ti][keep], ic.pair_e[ti][keep], float(sum(ic.sum_m2_cat[c] for c in cats)))


def genuine_totals(ic: IdentityCounts, ti: int, group: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per identity (of ``group``, or all): genuine comparisons ``g_k`` and genuine errors ``E_k`` at ``ti``."""
    keep = slice(None) if group is None else ic.group == group
    return ic.g[keep], ic.e[ti][keep]


def closed_form(method: str, ic: IdentityCounts, ti: int, group: int | None, level: float,
                alternative: iv.Alternative, reference: str = "all") -> tuple[iv.IntervalResult, iv.IntervalResult]:
    """(FMR, FNMR) intervals at threshold index ``ti`` for one group (its genuine comparisons and its
    same-group impostors) or all (``group=None``: every genuine comparison; impostors of the ``reference``
    set, ``"all"`` or ``"same-group"``)."""
    fnmr = iv.fnmr_interval(method, *genuine_totals(ic, ti, group), level, alternative)
    fmr = iv.fmr_interval(method, impostor_totals(ic, ti, impostor_categories(ic, group, reference)), level,
                          alternative)
    return fmr, fnmr


# ----------------------------------------------------------------------------- the audit's records

def _scheme(method: str, seed: int) -> rs.Scheme:
    return rs.SCHEMES[bs.SCHEME_OF[method]](seed)


def compute_intervals(data: MatchData, config: AuditConfig, options: IntervalOptions, progress: bool = False
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interval records (pooled weighting) for operating points, curve summaries, fairness measures and the
    normalized uncertainty, and per-group DET bands ``{"weighting", "group", "fmr", "lower", "upper"}``.
    ``progress``: show the engine's progress bar over comparison blocks."""
    if options.method is not None and options.method not in METHODS:
        raise ValueError(f"unknown interval method {options.method!r}; choose from {METHODS}")
    boot_method = options.method if options.method in bs.BOOTSTRAP else "recentered"
    fixed_method = options.method or "wilson"
    level, alt = options.level, options.alternative
    thresholds = np.asarray(config.thresholds, float)
    grid = build_grid(data, n_cells=options.n_cells, rule=config.rule, thresholds=thresholds)
    scheme = _scheme(boot_method, options.seed)
    counts = run(data, scheme, options.n_resamples, grid=grid, fmr_targets=config.fmr_targets,
                 thresholds=thresholds, fmr_reference=config.threshold_impostors, progress=progress)
    recentred = boot_method in ("recentered", "gaussian")
    v = bs.v_statistic(data, counts, thresholds) if recentred else None
    names = bs.view_names(counts)
    res = counts.resolution
    base = {"weighting": "pooled", "rule": config.rule, "threshold_impostors": config.threshold_impostors,
            "scheme": counts.scheme}
    records: list[dict[str, Any]] = []

    def add(r: iv.IntervalResult, **keys):
        d = {**base, **keys, **r.to_dict()}
        if r.method in iv.CLOSED_FORM:
            d["scheme"] = None
        records.append(d)

    def boot(est, reps, vest=None, rate=True, **kw):
        return bs.interval_from_replicates(boot_method, est, reps, vest if recentred else None, level, alt,
                                           seed=options.seed, resolution=res, bounds=(0.0, 1.0) if rate else None,
                                           **kw)

    # FNMR@FMR targets (each replicate at its own threshold)
    fn_t = bs.fnmr_at_targets(counts)
    fn_v = bs.fnmr_v_at_targets(counts, v) if v is not None else None
    gt = bs._views_gen(counts.genuine_total[0])
    for ti, a in enumerate(config.fmr_targets):
        t = float(counts.target_threshold[0, ti])
        for j, name in enumerate(names):
            errs = gt[j] - bs._views_gen(counts.target_genuine_accepted[0, ti])[j]
            r = boot(fn_t[0, ti, j], fn_t[1:, ti, j], None if fn_v is None else fn_v[ti, j],
                     errors=int(errs), comparisons=int(gt[j]))
            add(r, metric="FNMR", kind="fmr_target", target=a, threshold=t, group=name,
                normalized_uncertainty=float(bs.normalized_uncertainty(
                    fn_t[0, ti, j], fn_t[1:, ti, j], None if fn_v is None else fn_v[ti, j])))

    # FMR and FNMR at fixed thresholds
    if thresholds.size:
        if fixed_method in iv.CLOSED_FORM:
            ic = identity_counts(data, thresholds, config.rule)
            for ti, t in enumerate(thresholds):
                for j, name in enumerate(names):
                    fm, fn = closed_form(fixed_method, ic, ti, None if j == 0 else j - 1, level, alt,
                                         config.threshold_impostors)
                    add(fm, metric="FMR", kind="threshold", target=float(t), threshold=float(t), group=name)
                    add(fn, metric="FNMR", kind="threshold", target=float(t), threshold=float(t), group=name)
        else:
            imp_n = bs._views_imp(counts.impostor_total[0], counts)
            for ti, t in enumerate(thresholds):
                fnmr, fmr, errs, n = bs.rates_at_threshold(counts, float(t))
                imp_e = bs._views_imp(counts.accepted_at(float(t))[1][0], counts)
                vfn = None
                if v is not None:
                    vfn = 1 - bs._div(bs._views_gen(v.threshold_genuine_accepted[ti]), gt)
                for j, name in enumerate(names):
                    add(boot(fmr[0, j], fmr[1:, j], errors=int(imp_e[j]), comparisons=int(imp_n[j])),
                        metric="FMR", kind="threshold", target=float(t), threshold=float(t), group=name)
                    add(boot(fnmr[0, j], fnmr[1:, j], None if vfn is None else vfn[j], errors=int(errs[0, j]),
                             comparisons=int(n[0, j])),
                        metric="FNMR", kind="threshold", target=float(t), threshold=float(t), group=name)

    # curve summaries: AUC and EER (cell level)
    auc, eer = bs.auc_eer(counts, counts.genuine, counts.impostor)
    if v is not None:
        auc_v, eer_v = bs.auc_eer(counts, v.genuine[None], counts.impostor[:1])
    for j, name in enumerate(names):
        for metric, x, xv in (("AUC", auc, None if v is None else auc_v), ("EER", eer, None if v is None else eer_v)):
            r = boot(x[0, j], x[1:, j], None if xv is None else xv[0, j])
            add(r, metric=metric, kind="curve", target=None, threshold=None, group=name,
                normalized_uncertainty=float(bs.normalized_uncertainty(x[0, j], x[1:, j],
                                                                       None if xv is None else xv[0, j])))

    # fairness measures at each FMR target (replicate's own global threshold)
    G = data.n_groups
    if G >= 2 and len(config.fmr_targets):
        fm_t = bs.fmr_at_targets(counts)[..., 1:]
        meas = bs.measure_replicates(fm_t, fn_t[..., 1:])
        meas_v = bs.measure_replicates(fm_t[0], fn_v[:, 1:]) if fn_v is not None else None
        for (rate, measure), x in meas.items():
            for ti, a in enumerate(config.fmr_targets):
                xv = None if meas_v is None else meas_v[(rate, measure)][ti]
                r = boot(x[0, ti], x[1:, ti], xv, rate=False)
                add(r, metric=f"{rate}:{measure}", kind="fmr_target", target=a,
                    threshold=float(counts.target_threshold[0, ti]), group="all",
                    normalized_uncertainty=float(bs.normalized_uncertainty(x[0, ti], x[1:, ti], xv)))

    bands = det_bands(counts, v, options, boot_method)
    return records, bands


def det_bands(counts, v, options: IntervalOptions, method: str) -> list[dict[str, Any]]:
    """Per view: FNMR band over a log grid of FMR values (from the resolution limit to 0.5)."""
    n_imp = float(counts.impostor_total[0].sum())
    lo = max(1.0 / max(n_imp, 1.0), 1e-6)
    grid_fmr = np.geomspace(lo, 0.5, options.det_points)
    reps, vcurve = bs.det_replicates(counts, grid_fmr, v)
    out = []
    for j, name in enumerate(bs.view_names(counts)):
        est, r = reps[0, j], reps[1:, j]
        vc = vcurve[j] if vcurve is not None and method in ("recentered", "gaussian") else None
        if options.band == "simultaneous":
            low, high, c = bs.sup_t_band(est, r, vc, options.level)
        else:
            res = bs.interval_from_replicates(method, est, r, vc, options.level, bounds=(0.0, 1.0))
            low, high, c = res.confidence_interval.low, res.confidence_interval.high, None
        out.append({"weighting": "pooled", "group": name, "fmr": grid_fmr, "estimate": est, "lower": low,
                     "upper": high, "band": options.band, "critical_value": c, "method": method,
                     "level": options.level, "n_resamples": int(r.shape[0]), "seed": options.seed})
    return out


__all__ = ["IntervalOptions", "METHODS", "closed_form", "compute_intervals", "det_bands", "genuine_totals",
           "impostor_categories", "impostor_totals"]
