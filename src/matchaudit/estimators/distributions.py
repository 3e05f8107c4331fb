"""Genuine and impostor score distributions per group, with identity-aware intervals (ISO/IEC 19795-10's
"shift in comparison scores"; docs/calibration.md).

Per view (``all`` and each group: its genuine comparisons and same-group impostors): the genuine and impostor
score mean and SD (population, ddof 0), d' = (mu_gen - mu_imp) / sqrt((sd_gen^2 + sd_imp^2) / 2), and for each
group its shift from the overall, mu_gen,g - mu_gen,all and mu_imp,g - mu_imp,all. Replicates are the exact
weighted moments of the score views (:mod:`matchaudit.estimators.score_views`, the same pass as the calibration
metrics), intervals as :mod:`matchaudit.estimators.calibration`. Plus plug-in histograms on common bin edges.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from matchaudit import checks
from matchaudit.estimators.calibration import check_bootstrap, interval
from matchaudit.estimators.score_views import MEMORY_GIB, Method, Runner, ScoreViews, Summaries, materialise
from matchaudit.metrics import calibration as cal
from matchaudit.model import MatchData

METRICS = ("genuine_mean", "genuine_sd", "impostor_mean", "impostor_sd", "d_prime", "genuine_shift", "impostor_shift")


@dataclass(frozen=True)
class Histogram:
    """Plug-in densities of one view's genuine and impostor scores on :attr:`DistributionResult.edges`."""

    group: str
    genuine: np.ndarray
    impostor: np.ndarray


@dataclass(frozen=True)
class DistributionResult:
    """Score moments, d' and per-group shifts with intervals (``records``, see :meth:`to_records`) and the
    histograms of every view on common bin ``edges``."""

    records: tuple[dict[str, Any], ...]
    edges: np.ndarray
    histograms: tuple[Histogram, ...]
    method: str
    level: float
    n_resamples: int
    seed: int

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per (group, metric): ``group``, ``metric`` (one of :data:`METRICS`; shifts for groups
        only), ``estimate``, ``low``, ``high``, ``method``, ``level``, ``n_resamples``, ``genuine_comparisons``,
        ``impostor_comparisons``, ``note``."""
        return [dict(r) for r in self.records]


def statistics(x: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric of :data:`METRICS` from sweep summaries ``(..., V, S)`` (shifts: NaN for view 0)."""
    mt, st, mn, sn = (x[..., c] for c in (cal.MEAN_TAR, cal.SD_TAR, cal.MEAN_NON, cal.SD_NON))
    with np.errstate(divide="ignore", invalid="ignore"):
        dp = (mt - mn) / np.sqrt((st**2 + sn**2) / 2)
    shift_t, shift_n = mt - mt[..., :1], mn - mn[..., :1]
    shift_t[..., 0] = shift_n[..., 0] = np.nan
    return dict(zip(METRICS, (mt, st, mn, sn, dp, shift_t, shift_n)))


def score_distributions(data: MatchData, *, method: Method = "double-or-nothing", level: float = 0.95,
                        n_resamples: int = 1000, seed: int = 0, bins: int = 60, memory_gib: float = MEMORY_GIB,
                        spill_dir: str | os.PathLike | None = None, progress: bool = False) -> DistributionResult:
    """Genuine and impostor score mean and SD, d' and each group's shift from the overall, each with an
    identity-aware ``level`` interval (``method``, ``memory_gib``, ``spill_dir`` as
    :func:`matchaudit.estimators.calibration.calibration`), and histogram densities of every view on ``bins``
    common bins (self-pairs never included)."""
    method, level, n_resamples, seed = check_bootstrap(method, level, n_resamples, seed)
    bins = checks.integer(bins, "bins", low=1)
    memory_gib = checks.number(memory_gib, "memory_gib", low=0.0, low_open=True)
    with materialise(data, method, memory_gib, "score distributions", spill_dir=spill_dir) as views:
        s = Runner(views, calib=False).bootstrap(method, n_resamples, seed, progress, "score-distribution resamples")
        return distributions_from(views, s, method, level, n_resamples, seed, bins)


def sorted_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(x, edges)[0]`` of an already sorted ``x``, by NumPy's own expressions (bins closed on the left,
    the last on both sides; counts as differences of searches), without the sort NumPy makes of every 65,536
    values (0.28 s of the score distributions at 8.0e6 comparisons)."""
    return np.diff(np.concatenate((x.searchsorted(edges[:-1], "left"), x.searchsorted(edges[-1:], "right"))))


def density(n: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Densities of the bin counts ``n``, as ``np.histogram(..., density=True)`` forms them."""
    return n / np.array(np.diff(edges), float) / n.sum()


def sorted_density(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(x, edges, density=True)[0]`` of an already sorted ``x`` (:func:`sorted_counts`)."""
    return density(sorted_counts(x, edges), edges)


def histograms(views: ScoreViews, bins: int) -> tuple[np.ndarray, tuple[Histogram, ...]]:
    """Common bin edges over the finite scores of the data's comparisons (self-pairs left out) and each view's
    genuine and impostor densities on them, as ``np.histogram`` gives them, counted span by span
    (:meth:`ScoreViews.spans`: the same counts, so the same densities, in memory and on disk)."""

    def kept(sl: slice) -> np.ndarray:
        return (views.kind[sl] != cal.SELF) & np.isfinite(views.score[sl])

    ends = np.array([(x.min(), x.max()) for sl in views.spans() if (x := views.score[sl][kept(sl)]).size])
    edges = np.histogram_bin_edges(np.array([ends[:, 0].min(), ends[:, 1].max()]) if ends.size else ends, bins)
    V = len(views.names)
    counts, present = np.zeros((V, 2, bins), np.int64), np.zeros((V, 2), np.int64)
    for sl in views.spans():
        m, s, gen, view = kept(sl), views.score[sl], views.genuine[sl], views.view[sl]
        for k in range(V):
            mk = m if k == 0 else m & (view == k)
            for c, g in enumerate((True, False)):
                x = s[mk & (gen == g)]
                counts[k, c] += sorted_counts(x, edges)
                present[k, c] += x.size
    return edges, tuple(Histogram(group, *(density(counts[k, c], edges) if present[k, c] else np.zeros(bins)
                                           for c in range(2))) for k, group in enumerate(views.names))


def distributions_from(views: ScoreViews, s: Summaries, method: Method, level: float, n_resamples: int, seed: int,
                       bins: int = 60) -> DistributionResult:
    """The :class:`DistributionResult` of a bootstrap ``s`` of ``views`` already run (its moment columns: a
    calibration pass serves as well)."""
    est, reps = statistics(s.estimate), statistics(s.replicates)
    v_est = None if s.v_estimate is None else statistics(s.v_estimate)
    n_gen, n_imp = views.comparisons()
    records = []
    for k, group in enumerate(views.names):
        for metric in METRICS:
            if k == 0 and metric.endswith("_shift"):
                continue
            bounds = (0.0, np.inf) if metric.endswith("_sd") else None
            lo, hi, note = interval(method, est[metric][k], reps[metric][:, k],
                                    None if v_est is None else v_est[metric][k], level, bounds)
            records.append({"group": group, "metric": metric, "estimate": float(est[metric][k]), "low": lo,
                            "high": hi, "method": method, "level": level, "n_resamples": n_resamples,
                            "genuine_comparisons": int(n_gen[k]), "impostor_comparisons": int(n_imp[k]),
                            "note": note})
    edges, hists = histograms(views, bins)
    return DistributionResult(tuple(records), edges, hists, method, level, n_resamples, seed)


__all__ = ["METRICS", "DistributionResult", "Histogram", "density", "distributions_from", "histograms",
           "score_distributions", "sorted_counts", "sorted_density", "statistics"]
