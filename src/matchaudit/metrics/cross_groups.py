"""The cross-group FMR matrix at fixed thresholds, in one pass over the comparisons: for every pair of groups,
the impostor comparisons accepted at each threshold (pooled counts and identity-balanced weights) and their totals.

Why a pass of its own: the tally counts every group pair in a category of its own only while its tables stay
small (:func:`matchaudit.metrics.tally.tally_categories`); with many groups it pools the cross-group pairs
(G(G+1)/2 categories times every distinct genuine score would not fit: 100 groups and 25,000 genuine scores are
4 GB), and the matrix is then needed at the audit's thresholds only: ``O(G^2 x thresholds)`` memory here. The
counts are those the tally gives (tests/test_many_groups.py checks them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from matchaudit.definitions import Rule, accepting_thresholds
from matchaudit.model import DenseBlock, MatchData
from matchaudit.pairings import PairCategories


@dataclass(frozen=True)
class CrossGroupCounts:
    """Per threshold ``t`` (in the order given) and group pair (category ``c`` of ``categories``, every pair its
    own): ``accepted[t, c]`` impostor comparisons accepted, ``accepted_weight[t, c]`` their identity-balanced
    weights; ``comparisons[c]`` all of them, ``units[c]`` identity pairs (the balanced divisor)."""

    thresholds: np.ndarray
    categories: PairCategories
    accepted: np.ndarray  # (T, n_cat) int64
    accepted_weight: np.ndarray  # (T, n_cat) float64
    comparisons: np.ndarray  # (n_cat,) int64
    units: np.ndarray  # (n_cat,) int64


def _impostors(data: MatchData, block_rows: int, pairs):
    """(score, group a, group b, balanced weight) of the impostor comparisons, block by block."""
    from matchaudit.metrics.tally import pair_weights

    group = data.identity_group
    ident = None if data.samples is None else data.samples.identity
    size = data.identity_sizes.astype(np.float64)
    for blk in data.blocks(block_rows):
        if isinstance(blk, DenseBlock):
            r, c = blk.scores.shape
            i = blk.row0 + np.arange(r)[:, None]
            j = blk.col0 + np.arange(c)[None, :]
            keep = (j > i) & (ident[i] != ident[j])
            ii, jj = np.broadcast_to(i, keep.shape)[keep], np.broadcast_to(j, keep.shape)[keep]
            ki, kj = ident[ii], ident[jj]
            yield (blk.scores[keep].astype(np.float64), group[ki], group[kj], 1.0 / (size[ki] * size[kj]))
        else:
            sub = blk.take(~blk.genuine)
            yield sub.score, sub.group_a, sub.group_b, pair_weights(pairs, sub, data.n_identities)


def cross_group_counts(data: MatchData, thresholds, rule: Rule = ">=", block_rows: int = 2048) -> CrossGroupCounts:
    """Accepted impostor comparisons per group pair at each of ``thresholds`` (see :class:`CrossGroupCounts`)."""
    from matchaudit.metrics.tally import impostor_units, pairs_of

    thr = np.atleast_1d(np.asarray(thresholds, np.float64))
    order = np.argsort(thr, kind="stable")
    ts = thr[order]
    G, T = data.n_groups, thr.size
    cats = PairCategories.full(np.ones((G, G), bool))
    pairs = pairs_of(data, block_rows)
    hist = np.zeros(cats.n * (T + 1), np.int64)
    whist = np.zeros(cats.n * (T + 1))
    for s, ga, gb, w in _impostors(data, block_rows, pairs):
        key = cats.slot[ga, gb] * (T + 1) + accepting_thresholds(s, ts, rule)
        hist += np.bincount(key, minlength=hist.size)
        whist += np.bincount(key, weights=np.nan_to_num(w), minlength=hist.size)
    hist, whist = hist.reshape(cats.n, T + 1), whist.reshape(cats.n, T + 1)
    # accepted at the j-th lowest threshold: level > j
    above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]
    wabove = np.cumsum(whist[:, ::-1], axis=1)[:, ::-1][:, 1:]
    accepted, weight = np.empty((T, cats.n), np.int64), np.empty((T, cats.n))
    accepted[order], weight[order] = above.T, wabove.T
    return CrossGroupCounts(thr, cats, accepted, weight, hist.sum(axis=1), impostor_units(data, pairs, cats))


__all__ = ["CrossGroupCounts", "cross_group_counts"]
