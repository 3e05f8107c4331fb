"""Identity-aware intervals for Cllr, minCllr, actDCF and minDCF, overall and per group, plus the APE curves
(docs/calibration.md).

The metrics are those of :mod:`matchaudit.metrics.calibration`, computed exactly on every replicate of the
score views (:mod:`matchaudit.estimators.score_views`). Intervals come from
:func:`matchaudit.estimators.bootstrap.interval_from_replicates`: percentile for the identity bootstraps,
recentered on the V-statistic version for ``recentered``. Cllr and actDCF read scores as natural-log
likelihood ratios: without ``llr=True`` they are not reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from matchaudit import checks
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.score_views import (MEMORY_GIB, METHODS, Method, Runner, ScoreViews, Summaries,
                                               materialise)
from matchaudit.metrics import calibration as cal
from matchaudit.model import MatchData

NOT_LLR = ("scores are not log-likelihood ratios: only calibration-free minCllr and minDCF are reported")
METRICS = ("cllr", "min_cllr", "act_dcf", "min_dcf")
BOUNDS = {"cllr": (0.0, np.inf), "min_cllr": (0.0, 1.0), "act_dcf": (0.0, np.inf), "min_dcf": (0.0, 1.0)}


@dataclass(frozen=True)
class CalibrationResult:
    """Calibration and cost metrics with identity-aware intervals: ``records`` (see :meth:`to_records`) and the
    plug-in APE curves of every view (``ape``, :class:`matchaudit.metrics.calibration.ApeCurve`)."""

    records: tuple[dict[str, Any], ...]
    ape: tuple[cal.ApeCurve, ...]
    method: str
    level: float
    n_resamples: int
    seed: int
    llr: bool
    operating_points: tuple[tuple[float, float, float], ...]
    groups: tuple[str, ...] = field(default=())

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per (group, metric, operating point): ``group``, ``metric`` (cllr, min_cllr, act_dcf,
        min_dcf), ``p_target``, ``c_miss``, ``c_fa`` (None for the Cllr ones), ``estimate``, ``low``, ``high``,
        ``method``, ``level``, ``n_resamples``, ``genuine_comparisons``, ``impostor_comparisons``, ``llr``,
        ``reason`` (why a value is None) and ``note`` (the interval's remarks)."""
        return [dict(r) for r in self.records]


def check_operating_points(operating_points: Any, name: str = "operating_points"
                           ) -> tuple[tuple[float, float, float], ...]:
    """Operating points as ((p_target, c_miss, c_fa), ...): p in (0, 1), positive finite costs, none repeated;
    ``name``: the parameter that gave them, for messages."""
    try:
        pts = [tuple(op) for op in operating_points]
    except TypeError:
        pts = []
    if not pts or any(len(op) != 3 for op in pts):
        raise InputError(f"{name} {operating_points!r}: give one or more (p_target, c_miss, c_fa).", param=name)
    out = tuple((checks.probability(p, name), checks.number(cm, name, low=0.0, low_open=True),
                 checks.number(cf, name, low=0.0, low_open=True)) for p, cm, cf in pts)
    if len(set(out)) < len(out):
        raise InputError(f"{name} {list(out)}: an operating point is repeated; give each once.", param=name)
    return out


def check_bootstrap(method: str, level: float, n_resamples: int, seed: int) -> tuple[str, float, int, int]:
    """The interval arguments shared by the score-view estimators, checked."""
    method = checks.choice(method, METHODS, "method")
    level = checks.probability(level, "level")
    n_resamples = bs.check_resamples(checks.integer(n_resamples, "n_resamples", low=1), level)
    return method, level, n_resamples, checks.seed(seed)


def interval(method: str, est: float, reps: np.ndarray, v_est: float | None, level: float, bounds: tuple[float, float] | None = None) -> tuple[float, float, str | None]:
    """(low, high, note) of one statistic from its replicates (``bs.interval_from_replicates``)."""
    res = bs.interval_from_replicates(method, est, reps, v_est, level, bounds=bounds)
    return float(res.confidence_interval.low), float(res.confidence_interval.high), res.note


def _value(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def calibration(data: MatchData, *, operating_points: Sequence[tuple[float, float, float]] = ((0.01, 1.0, 1.0),),
                llr: bool = False, method: Method = "double-or-nothing", level: float = 0.95,
                n_resamples: int = 1000, seed: int = 0, prior_log_odds: Sequence[float] | None = None,
                memory_gib: float = MEMORY_GIB, spill_dir: str | os.PathLike | None = None, progress: bool = False
                ) -> CalibrationResult:
    """Cllr, minCllr, actDCF and minDCF at each operating point (p_target, c_miss, c_fa), overall and per group
    (a group: its genuine comparisons and its same-group impostors), each with an identity-aware ``level``
    interval from ``n_resamples`` replicates of ``method`` (``double-or-nothing``, ``vertex``: percentile;
    ``recentered``: within-identity, centred on the V-statistic). ``llr``: the scores are natural-log likelihood
    ratios; without it Cllr and actDCF are None (their ``reason`` says why). Every comparison is held sorted in
    memory within ``memory_gib``, beyond it on disk in a temporary folder in ``spill_dir`` when given (slower: each
    block of replicates reads them from the disk), removed before it returns; an :class:`InputError` says what
    to do when neither serves.
    ``prior_log_odds``: the APE grid.
    """
    ops = check_operating_points(operating_points)
    method, level, n_resamples, seed = check_bootstrap(method, level, n_resamples, seed)
    memory_gib = checks.number(memory_gib, "memory_gib", low=0.0, low_open=True)
    eta = cal.DEFAULT_PRIOR_LOG_ODDS if prior_log_odds is None else np.asarray(
        checks.numbers(prior_log_odds, "prior_log_odds"), float)
    with materialise(data, method, memory_gib, "calibration intervals", spill_dir=spill_dir) as views:
        s = Runner(views, ops, llr=llr).bootstrap(method, n_resamples, seed, progress, "calibration resamples")
        return calibration_from(views, s, llr, method, level, n_resamples, seed, eta)


def calibration_from(views: ScoreViews, s: Summaries, llr: bool, method: Method, level: float, n_resamples: int,
                     seed: int, eta: np.ndarray = cal.DEFAULT_PRIOR_LOG_ODDS) -> CalibrationResult:
    """The :class:`CalibrationResult` of a bootstrap ``s`` of ``views`` already run (at ``s.ops``), so that one
    pass can serve the score distributions too (:func:`matchaudit.estimators.distributions.distributions_from`)."""
    ops = tuple(tuple(float(x) for x in op) for op in s.ops)
    n_gen, n_imp = views.comparisons()
    T = len(ops)
    records = []
    for k, group in enumerate(views.names):
        for metric in METRICS:
            for t in ((None,) if metric in ("cllr", "min_cllr") else range(T)):
                col = {"cllr": cal.CLLR, "min_cllr": cal.MIN_CLLR}.get(metric) if t is None else \
                    cal.N_FIXED + t + (T if metric == "min_dcf" else 0)
                rec: dict[str, Any] = {"group": group, "metric": metric,
                                       "p_target": None if t is None else ops[t][0],
                                       "c_miss": None if t is None else ops[t][1],
                                       "c_fa": None if t is None else ops[t][2]}
                if not llr and metric in ("cllr", "act_dcf"):
                    est = lo = hi = note = None
                    reason: str | None = NOT_LLR
                else:
                    v_est = None if s.v_estimate is None else s.v_estimate[k, col]
                    lo, hi, note = interval(method, s.estimate[k, col], s.replicates[:, k, col], v_est, level,
                                            BOUNDS[metric])
                    est, lo, hi, reason = _value(s.estimate[k, col]), _value(lo), _value(hi), None
                records.append({**rec, "estimate": est, "low": lo, "high": hi, "method": method, "level": level,
                                "n_resamples": n_resamples, "genuine_comparisons": int(n_gen[k]),
                                "impostor_comparisons": int(n_imp[k]), "llr": bool(llr), "reason": reason,
                                "note": note})
    ape = Runner(views, cal.ape_ops(eta)).plug_in()
    E = eta.size
    curves = tuple(cal.ApeCurve(g, eta, ape[k, cal.N_FIXED:cal.N_FIXED + E].copy() if llr else None,
                                ape[k, cal.N_FIXED + E:].copy(), cal.dr30(eta, int(n_gen[k]), int(n_imp[k])))
                   for k, g in enumerate(views.names))
    return CalibrationResult(tuple(records), curves, method, level, n_resamples, seed, bool(llr), ops, views.names)


__all__ = ["CalibrationResult", "NOT_LLR", "calibration", "calibration_from", "check_bootstrap", "check_operating_points", "interval"]
