"""Where the thresholds at FMR targets will fall, predicted from a sample before a pass over the comparisons: the
one window predictor of the exact tally and the resampling engine.

Why: a threshold at an FMR target lies strictly inside a cell (between two genuine scores of the exact tally, two
edges of the engine's grid); its exact value needs the impostors of that cell. Found after the pass, those cells
cost a second pass over all the data (a second GEMM: half of a large audit's time). Predicted before it, the pass
collects their comparisons on the way (the tally's refined impostors, the engine's window items).

How: score ``SAMPLE_ROWS`` random samples against every sample (listed data: every k-th comparison) and, for each
target and weighting, find a score window that holds the threshold with near certainty: ``lo`` is the highest
candidate score whose sample FMR exceeds the target by ``Z`` standard errors, ``hi`` the lowest whose sample FMR is
below it by ``Z`` (no such score: the window is open on that side). The standard error treats the comparisons of each
sampled row's identity as a cluster (they share an identity, and a sample row by row). The sample's standard error is
that of 128 rows, far wider than the whole data's, so the window also holds the engine's replicates' thresholds (their spread is the whole
data's); where the sample is the whole data (small data), ``Z = 6`` of its standard errors still do.

Nothing here decides a number: a threshold outside its window (a sample that misled) only means that its cell is
collected by a second pass, as it always can be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from matchaudit.engine.grid import strided
from matchaudit.model import MatchData
from matchaudit.scores import once_per_call, row_scores
from matchaudit.sorting import stable_order

SAMPLE_ROWS = 128
LISTED_SAMPLE = 1 << 20  # comparisons of a listed table in the sample
Z = 6.0  # standard errors between the sample FMR and the target at each end of the window
SPAN = 50.0  # candidate window ends within this factor of the target's tail fraction
SHARE_SCORES = 1_000_000  # sampled impostors that estimate a share of the comparisons


@dataclass(frozen=True)
class Sample:
    """Sampled impostor comparisons, by score descending: score, cluster (the sampled row's identity; listed: the
    first identity), and the two sides' identities (all pairs, so that data relabelled into other groups share the
    sample) or groups (listed). 20 bytes each (6.4 million at 50,000 samples)."""

    score: np.ndarray  # float64
    row: np.ndarray  # int32, the cluster: 0 .. n_rows - 1
    a: np.ndarray  # int32
    b: np.ndarray  # int32
    n_rows: int
    by_identity: bool

    def groups(self, data: MatchData) -> tuple[np.ndarray, np.ndarray]:
        """The groups of the two sides in ``data``."""
        if self.by_identity:
            return data.identity_group[self.a], data.identity_group[self.b]
        return self.a, self.b

    def balanced(self, data: MatchData, keep: np.ndarray) -> np.ndarray:
        """The identity-balanced weights ``1 / (n_k n_l)`` of the comparisons ``keep`` selects (listed: 1)."""
        if not self.by_identity:
            return np.ones(int(np.count_nonzero(keep)))
        size = data.identity_sizes.astype(np.float64)
        return 1.0 / (size[self.a[keep]] * size[self.b[keep]])


def sample(data: MatchData, seed: int = 0) -> Sample:
    """The sample of ``data`` (held for the audit: :func:`matchaudit.scores.once_per_call`; all pairs: the same for
    data that share the embeddings and identities)."""
    if data.protocol == "listed":
        return once_per_call((data,), ("window sample",), lambda: _listed(data))
    return once_per_call((data.samples.embeddings, data.samples.identity), ("window sample", data.metric, seed),
                         lambda: _all_pairs(data, seed))


def _all_pairs(data: MatchData, seed: int) -> Sample:
    """``SAMPLE_ROWS`` random samples against every sample, scored by the tiles' formula
    (:func:`matchaudit.scores.row_scores`)."""
    s = data.samples
    n = s.ids.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, SAMPLE_ROWS), replace=False))
    scores = row_scores(s.embeddings, rows, data.metric)
    ident = s.identity
    r, c = np.nonzero(ident[rows, None] != ident[None, :])
    kinds, of_row = np.unique(ident[rows], return_inverse=True)  # the sampled rows' identities: the clusters
    return _sorted(scores[r, c], of_row.ravel()[r], ident[rows[r]], ident[c], kinds.size, True)


def _listed(data: MatchData) -> Sample:
    """Every k-th impostor comparison of the table (at most about ``LISTED_SAMPLE``), clustered by its first
    identity (each comparison its own cluster without identities), at weight 1 under either weighting."""
    parts = []
    for p in strided(data, LISTED_SAMPLE):
        imp = ~p.genuine
        parts.append((p.score[imp], p.identity_a[imp], p.group_a[imp], p.group_b[imp]))
    score, ida, ga, gb = (np.concatenate(x) for x in zip(*parts))
    cluster = ida if ida.size and ida.min() >= 0 else np.arange(ida.size)
    row = np.unique(cluster, return_inverse=True)[1].ravel()
    return _sorted(score.astype(np.float64), row, ga, gb, int(row.max(initial=-1)) + 1, False)


def _sorted(score: np.ndarray, row: np.ndarray, a: np.ndarray, b: np.ndarray, n_rows: int, by_identity: bool
            ) -> Sample:
    order = stable_order(-score)  # any order of ties would do: the windows only choose what to collect
    return Sample(score[order], *(x.astype(np.int32, copy=False)[order] for x in (row, a, b)), n_rows, by_identity)


def score_window(desc: np.ndarray, row: np.ndarray, w: np.ndarray, n_rows: int, alpha: float, z: float = Z
                 ) -> tuple[float, float]:
    """(lo, hi): the threshold at FMR ``alpha`` lies in (lo, hi] unless the sample misled by more than ``z`` standard
    errors; ``desc`` the sampled threshold impostors' scores, descending, ``row`` and ``w`` their cluster and
    weight."""
    m = np.bincount(row, weights=w, minlength=n_rows)
    total = m.sum()
    if total <= 0 or desc.size == 0:
        return -np.inf, np.inf
    tail = np.cumsum(w) / total  # the sample FMR at or above each score
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
        if tail[p] + z * se < alpha:  # surely below the target: the threshold is at most this score
            hi = min(hi, float(desc[p]))
        elif tail[p] - z * se > alpha:  # surely above: the threshold is higher
            lo = max(lo, float(desc[p]))
    return lo, hi


def target_cells(smp: Sample, data: MatchData, reference: np.ndarray, cell_of: Callable[[np.ndarray], np.ndarray],
                 n_cells: int, targets: Sequence[tuple[str, float]], z: float = Z) -> np.ndarray:
    """Mask of the ``n_cells`` cells (``cell_of``: scores to cells) that the windows of ``targets`` ((weighting,
    FMR) pairs: "pooled" or "balanced") touch, the FMR of the impostors of the ``reference`` (G, G) group pairs of
    ``data`` (``smp``: its :func:`sample`), ``z`` standard errors of the sample wide on either side."""
    selected = np.zeros(n_cells, bool)
    ref = reference[smp.groups(data)]
    desc, row = smp.score[ref], smp.row[ref]
    balanced = smp.balanced(data, ref) if any(w == "balanced" for w, _ in targets) else None
    for weighting, alpha in targets:
        w = balanced if weighting == "balanced" else np.ones(desc.size)
        lo, hi = score_window(desc, row, w, smp.n_rows, float(alpha), z)
        selected[int(cell_of(np.float64(lo))):int(cell_of(np.float64(hi))) + 1] = True
    return selected


def share(smp: Sample, cell_of: Callable[[np.ndarray], np.ndarray], cells: np.ndarray) -> float:
    """The share of the impostor comparisons (any group pair) that fall into the ``cells`` (a mask), from the
    sample ``smp``."""
    every = smp.score[:: max(1, smp.score.size // SHARE_SCORES)]
    return float(cells[cell_of(every)].mean()) if every.size else 0.0


def window_cells(smp: Sample, data: MatchData, grid_cell_of: Callable[[np.ndarray], np.ndarray], n_cells: int,
                 targets: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The engine's window: cells likely to hold some replicate's threshold at an FMR target (either weighting:
    the pooled runs and the identity-balanced ones) of ``data`` (``smp``: its :func:`sample`), whose comparisons the
    counting pass keeps with their scores.
    A replicate's threshold strays from the data's by the whole data's standard error, that of a U-statistic: about
    ``2 / sqrt(K)`` of a cluster's spread (both sides of a comparison vary) where the sample's is ``1 / sqrt(m)`` (its
    ``m`` clusters on one side): the window is ``Z`` times the larger of the two wide."""
    z = Z * max(1.0, 2.0 * np.sqrt(smp.n_rows / max(data.n_identities, 1)))
    pairs = [(w, float(a)) for a in targets for w in ("pooled", "balanced")]
    return target_cells(smp, data, reference, grid_cell_of, n_cells, pairs, z)


__all__ = ["SAMPLE_ROWS", "Sample", "Z", "sample", "score_window", "share", "target_cells", "window_cells"]
