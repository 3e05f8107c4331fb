"""An audit's analyses of the scores themselves, beside the error rates: the calibration and cost metrics, the
score distributions and the intervals at FNMR targets (one materialisation of the sorted score views and one pass
serve all three), and the warnings the exact metrics raise about the scores."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from matchaudit.engine.passes import Backend
from matchaudit.errors import InputError
from matchaudit.estimators.calibration import CalibrationResult, calibration_from
from matchaudit.estimators.distributions import DistributionResult, distributions_from
from matchaudit.estimators.dual_point import interval_records
from matchaudit.estimators.score_views import MEMORY_GIB, METHODS as SCORE_VIEW_METHODS, Runner, materialise
from matchaudit.auditing.options import IntervalOptions
from matchaudit.auditing.replicates import ExactPoints, ZeroBounds
from matchaudit.auditing.intervals import default_bootstrap
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult
from matchaudit.model import MatchData

def score_warnings(exact: AuditResult) -> list[str]:
    """Signs that the scores are not what the audit assumes: every score equal, or genuine comparisons scoring
    below impostors (distances read as similarities)."""
    curve = next((c for c in exact.curve_summaries if c["group"] == ALL), None)
    det = next((d for d in exact.det if d["group"] == ALL), None)
    # one distinct genuine score and no separation at all (binary scores that separate perfectly have one
    # genuine score too: AUC 1, and they said "every score is the same value")
    if det is not None and np.isfinite(det["threshold"]).sum() <= 1 and exact.summary["n_genuine"] \
            and exact.summary["n_impostor"] and curve is not None and curve["auc"] == 0.5:
        return ["every score is the same value: no threshold separates anything. Check the score column."]
    if curve is not None and np.isfinite(curve["auc"]) and curve["auc"] < 0.5:
        head = f"genuine comparisons score below impostors (AUC {curve['auc']:.3g} < 0.5): "
        if "distance" in str(exact.summary.get("score_kind", "")):  # negated as asked: the scores were similarities
            return [head + "the scores were negated as distances (--distance, distance=True); if they are "
                    "similarities (larger means more alike), leave --distance out."]
        return [head + "are these distances? Give --distance (distance=True) so that smaller means more alike."]
    return []


def score_analyses(data: MatchData, config: AuditConfig, exact: AuditResult, options: IntervalOptions,
                   dcf: Sequence[tuple[float, float, float]], llr: bool, progress: bool, backend: Backend | None = None
                   ) -> tuple[CalibrationResult | None, DistributionResult | None, list[dict], list[str]]:
    """The calibration and cost metrics, the score distributions and the intervals at the FNMR targets
    (:mod:`matchaudit.estimators.dual_point`: each replicate at its own threshold) of an audit, with intervals by
    the first score-view method the options name (default: the audit's default bootstrap), or a warning saying why
    they were skipped (the comparisons fit neither in memory nor, where a folder is given, on its disk; labels without
    identities). The blocks of replicates run where ``backend`` runs them (:meth:`Backend.blocks`: a Dask cluster's
    workers; the same numbers) while the views are in memory."""
    method = next((m for m in options.methods if m in SCORE_VIEW_METHODS), default_bootstrap(data))
    betas = tuple(config.fnmr_targets)
    try:  # one materialisation and one pass serve all three (the pass computes the moments with the costs)
        views = materialise(data, method, options.memory_gb or MEMORY_GIB,
                            "calibration metrics and score distributions", config.threshold_impostors,
                            options.spill_dir)
    except InputError as e:
        if e.param not in (None, "memory_gib", "spill_dir", "method"):  # the data cannot serve them: say so, audit the rest
            raise
        what = "calibration metrics, score distributions" + (" and intervals at FNMR targets" if betas else "")
        return None, None, [], [f"{what} skipped: {e}"]
    with views:  # the folder on disk, if any, goes as soon as the results are made
        s = Runner(views, dcf, llr=llr, fnmr_targets=betas).bootstrap(
            method, options.n_resamples, options.seed, progress, "calibration and score-distribution resamples",
            None if backend is None or views.spill is not None else backend.blocks)  # views on disk stay on it
        args = (method, options.level, options.n_resamples, options.seed)
        dual = []
        if betas:
            points = ExactPoints(exact)
            dual = interval_records(s, views.names, betas, method, options.level, options.alternative,
                                    options.n_resamples, options.seed,
                                    lambda b, g: points.op("pooled", "fnmr_target", b, g),
                                    {"weighting": "pooled", "rule": config.rule,
                                     "threshold_impostors": config.threshold_impostors, "scheme": method},
                                    ZeroBounds(data, options.level, options.alternative).interval)
        return calibration_from(views, s, llr, *args), distributions_from(views, s, *args), dual, []


__all__ = ["score_analyses", "score_warnings"]
