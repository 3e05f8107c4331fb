"""Where the FMR targets' thresholds will fall, predicted from a sample of rows before the exact pass.

Why: an exact all-pairs audit needs, besides the tally of every comparison (:func:`.tally.build_tally`), the
impostors of the few cells that the FMR targets' thresholds fall into (:func:`.tally.refine`). Found after the
pass, those cells cost a second pass: a second GEMM over all the data, half of a large audit's time. Predicted
before it, the tally pass collects their impostors on the way, and the refinement has nothing left to do.

How: score ``SAMPLE_ROWS`` random samples against every sample (0.5% of the products at 50,000 samples) and, for
each target and weighting, find a score window that holds the threshold with near certainty: ``lo`` is the highest
candidate score whose sample FMR exceeds the target by ``Z`` standard errors, ``hi`` the lowest whose sample FMR is
below it by ``Z`` (no such score: the window is open on that side). The standard error treats each sampled row as a
cluster (its comparisons share a sample and an identity). Every cell the window touches is collected.

Nothing here decides a number: a threshold outside its window (a sample that misled) only means that
:func:`.tally.refine` makes the second pass for its cell, as it always did.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from matchaudit.cells import cell_of
from matchaudit.metrics.rates import Weighting
from matchaudit.model import MatchData
from matchaudit.scores import quantise, row_scores
from matchaudit.sorting import stable_order

SAMPLE_ROWS = 128
MIN_SAMPLES = 4096  # below it a second pass costs less than the sample (tests lower it)
Z = 6.0  # standard errors between the sample FMR and the target at each end of the window
SPAN = 50.0  # candidate window ends within this factor of the target's tail fraction
MAX_COLLECTED = 50_000_000  # predicted impostors in the windows above which the second pass is cheaper in memory


def _sample(data: MatchData, reference: np.ndarray, seed: int = 0
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scores of ``SAMPLE_ROWS`` random samples against every sample, by the tiles' formula
    (:func:`matchaudit.scores.row_scores`): the threshold impostors' scores, their row (0..rows-1), their identity-balanced
    weight ``1 / (n_k n_l)``, the scores of every impostor of any category, and the sampled rows. ``reference``:
    the (G, G) group pairs whose impostors set the threshold."""
    s = data.samples
    n = s.ids.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, SAMPLE_ROWS), replace=False))
    q, scale = quantise(s.embeddings, data.metric)
    scores = row_scores(q, np.einsum("ij,ij->i", q, q), rows, data.metric, scale)
    ident = s.identity
    impostor = ident[rows, None] != ident[None, :]
    g = data.identity_group[ident]
    a, b = g[rows, None], g[None, :]
    ref = impostor & reference[a, b]
    r, c = np.nonzero(ref)
    size = data.identity_sizes.astype(np.float64)
    balanced = 1.0 / (size[ident[rows[r]]] * size[ident[c]])
    return scores[r, c], r, balanced, scores[impostor], rows


def _window(desc: np.ndarray, row: np.ndarray, w: np.ndarray, tail: np.ndarray, m: np.ndarray, alpha: float
            ) -> tuple[float, float]:
    """(lo, hi): the threshold at FMR ``alpha`` lies in (lo, hi] unless the sample misled by more than ``Z``
    standard errors; ``desc`` the sampled threshold impostors' scores, descending, ``row`` and ``w`` their row
    and weight, ``tail`` the sample FMR at or above each, ``m`` each row's total weight."""
    n_rows, total = m.size, m.sum()
    if total <= 0 or desc.size == 0:
        return -np.inf, np.inf
    # candidates spaced geometrically in the tail fraction, ~60 per decade, from alpha / SPAN to alpha * SPAN
    low, high = max(tail[0], alpha / SPAN, 1e-12), min(1.0, max(alpha, 1e-12) * SPAN)
    pos = np.unique(np.searchsorted(tail, np.geomspace(low, max(high, low), 240)).clip(0, desc.size - 1))
    lo, hi = -np.inf, np.inf
    x = np.zeros(n_rows)
    done = 0
    for p in pos:  # the cluster (row) standard error of the sample FMR at the candidate desc[p]
        x += np.bincount(row[done:p + 1], weights=w[done:p + 1], minlength=n_rows)
        done = p + 1
        se = np.sqrt(np.sum((x - tail[p] * m) ** 2)) / total
        if tail[p] + Z * se < alpha:  # surely below the target: the threshold is at most this score
            hi = min(hi, float(desc[p]))
        elif tail[p] - Z * se > alpha:  # surely above: the threshold is higher
            lo = max(lo, float(desc[p]))
    return lo, hi


def predicted_cells(data: MatchData, edges: np.ndarray, fmr_targets: Sequence[float], reference: np.ndarray,
                    weightings: Sequence[Weighting], thresholds: Sequence[float] = (),
                    pooled_targets: Sequence[float] = ()) -> tuple[np.ndarray, float] | None:
    """Cells of the tally (``edges``: its distinct genuine scores) to collect during its pass, and the number of
    impostors expected in them: the cells the FMR targets' windows touch (the impostors of the ``reference``
    (G, G) group pairs, each weighting; ``pooled_targets``: the pooled weighting only) and those the fixed
    ``thresholds`` fall into. None when a
    second pass is cheaper: fewer than ``MIN_SAMPLES`` samples, more than ``MAX_COLLECTED`` impostors to collect,
    or data other than all pairs of embeddings."""


    if data.protocol != "all-pairs" or data.samples is None or data.samples.embeddings is None:
        return None
    n = data.samples.ids.shape[0]
    if n < MIN_SAMPLES or not (len(fmr_targets) or len(thresholds) or len(pooled_targets)):
        return None
    selected = np.zeros(edges.size + 1, bool)
    finite = np.asarray([t for t in thresholds if np.isfinite(t)], np.float64)
    selected[cell_of(edges, finite)] = True
    ref, row, balanced, every, rows = _sample(data, reference)
    order = stable_order(-ref)  # any order of ties would do: the windows only choose what to collect
    desc, row, balanced = ref[order], row[order], balanced[order]
    for weighting, alphas in [(w, fmr_targets) for w in weightings] + [("pooled", pooled_targets)]:
        w = balanced if weighting == "balanced" else np.ones(desc.size)
        m = np.bincount(row, weights=w, minlength=rows.size)
        tail = np.cumsum(w) / m.sum()  # the sample FMR at or above each score
        for alpha in alphas:
            lo, hi = _window(desc, row, w, tail, m, float(alpha))
            selected[int(cell_of(edges, lo)):int(cell_of(edges, hi)) + 1] = True
    every = every[:: max(1, every.size // 1_000_000)].astype(np.float64)  # a million are plenty for a share
    expected = selected[cell_of(edges, every)].mean() * (n * (n - 1) / 2) if every.size else 0.0
    return (selected, float(expected)) if expected <= MAX_COLLECTED else None


__all__ = ["MAX_COLLECTED", "MIN_SAMPLES", "SAMPLE_ROWS", "Z", "predicted_cells"]
