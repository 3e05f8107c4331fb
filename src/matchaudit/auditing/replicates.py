"""From an audit's replicates to its records: what each replicate contributes (the reducers), the bootstrap-t
studentization at fixed thresholds and at FMR targets, the zero-error bounds, the interval records of the rates,
curves and fairness measures, and the DET bands. :mod:`matchaudit.auditing.intervals` decides which passes run and
calls these on their outputs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from matchaudit.definitions import Alternative
from matchaudit import resampling as rs
from matchaudit.engine import Counts, IdentityCounts
from matchaudit.estimators import balanced
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.closed_forms import view_identities
from matchaudit.estimators.studentized import rate_studentization, target_studentization
from matchaudit.estimators.within_variance import WithinVariance, within_variance
from matchaudit.metrics import fairness
from matchaudit.estimators import fairness_projection as fp
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult
from matchaudit.metrics.rates import safe_ratio
from matchaudit.metrics.small_groups import excluded_groups, too_few_left
from matchaudit.metrics.tally import genuine_scores
from matchaudit.model import MatchData

from matchaudit.auditing.options import IntervalOptions
from matchaudit.estimators.bootstrap import RECENTRED

MEASURE_CORRECTION = "groups' FNMR replicates with the small-sample variance correction (docs/intervals.md)"


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


def reducer(weighting: str, config: AuditConfig, thresholds, det_points: int
             ) -> Callable[[Counts], dict[str, np.ndarray]]:
    """What the interval records and DET bands of one weighting read from each replicate, as arrays (R, ...):
    FNMR/FMR at the FMR targets (pooled: each replicate's exact threshold; balanced: grid edges) ``fn_t``,
    ``fm_t`` (R, T, 1+G); at the fixed ``thresholds`` ``fn_fixed``, ``fm_fixed`` (R, n, 1+G); ``auc``, ``eer``
    (R, 1+G); the DET curve on :func:`det_fmr_grid` ``det`` (R, 1+G, X); the grid curves' (the targets when
    balanced, AUC, EER, DET) only of the views reported (:func:`bs.view_names`: the overall only when ungrouped)."""
    at_targets = target_reducer(weighting, config)

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


def target_reducer(weighting: str, config: AuditConfig
                    ) -> Callable[[Counts, bs.GridCurves | None], dict[str, np.ndarray]]:
    """FNMR and FMR at the FMR targets per replicate and view, ``fn_t``, ``fm_t`` (R, T, 1+G): pooled at each
    replicate's exact threshold, balanced at grid edges (from the counts' grid curves, when already computed)."""
    def reduce(c: Counts, curves: bs.GridCurves | None = None) -> dict[str, np.ndarray]:
        if weighting == "pooled":  # with each replicate's thresholds (the bootstrap-t of FNMR@FMR reads them)
            own = {} if c.view_threshold is None else {"t_v": c.view_threshold}  # each view's own (portability)
            return {"fn_t": bs.fnmr_at_targets(c), "fm_t": bs.fmr_at_targets(c), "t_t": c.target_threshold, **own}
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


def within_variances(data: MatchData, method: str, thresholds: np.ndarray, target_t: np.ndarray, rule: str,
            balanced: bool = False) -> WithinVariance | None:
    """Within-identity variances at the fixed thresholds then the plug-in thresholds of the FMR targets, for the
    small-sample correction of recentered/gaussian FNMR intervals (:mod:`within_variance`); None otherwise."""
    if method not in RECENTRED or data.samples is None or not data.has_identities:
        return None
    return within_variance(data, np.concatenate([thresholds, target_t]), rule, balanced=balanced)


class Studentizer:
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


class TargetStudentizer:
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


@dataclass
class OwnThresholds:
    """Each view's own threshold at the FMR ``targets`` (all: over the threshold impostors; each group: over its
    same-group impostors) in every replicate of the audit's pooled bootstrap, ``thresholds`` (1 + B, T, 1 + G), row 0
    the plug-in, and the bootstrap's ``method``: asked of :func:`~matchaudit.auditing.intervals.compute_intervals`,
    which fills them from its own pass (the portability table's, :mod:`matchaudit.auditing.portability`)."""

    targets: tuple[float, ...]
    method: str | None = None
    thresholds: np.ndarray | None = None


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


def bootstrap_records(weighting: str, counts: Counts, stats: dict[str, np.ndarray], v, method: str,
                       config: AuditConfig, options: IntervalOptions, exact: ExactPoints, fixed: bool,
                       notes: dict[str, str] | None = None,
                       zeros: ZeroBounds | None = None, within: WithinVariance | None = None,
                       student: Studentizer | None = None, targets: TargetStudentizer | None = None
                       ) -> list[dict[str, Any]]:
    """Bootstrap records of one weighting from its plug-in counts and replicate statistics (:func:`reducer`;
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


__all__ = ["ExactPoints", "MEASURE_CORRECTION", "OwnThresholds", "Studentizer", "TargetStudentizer", "ZeroBounds", "bootstrap_records",
           "det_bands", "det_fmr_grid", "measure_records", "reducer", "target_reducer", "within_variances"]
