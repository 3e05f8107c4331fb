"""The cross-group FMR matrix at fixed thresholds, in one pass over the comparisons: for every pair of groups,
the impostor comparisons accepted at each threshold (pooled counts and identity-balanced weights) and their totals.

Why a pass of its own: the tally counts every group pair in a category of its own only while its tables stay
small (:func:`matchaudit.metrics.tally.tally_categories`); with many groups it pools the cross-group pairs
(G(G+1)/2 categories times every distinct genuine score would not fit: 100 groups and 25,000 genuine scores are
4 GB), and the matrix is then needed at the audit's thresholds only: ``O(G^2 x thresholds)`` memory here. The
counts are those the tally gives (tests/test_many_groups.py checks them equal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from matchaudit.definitions import Rule, accepting_thresholds
from matchaudit.errors import InputError
from matchaudit.model import DenseBlock, MatchData
from matchaudit.pairings import PairCategories, split_group_names


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


LOW_COUNT_ERRORS = 3.0
"""The rule of three: with zero false matches among ``n`` impostor comparisons the one-sided 95% upper bound on
FMR is about ``3 / n`` (exactly ``1 - 0.05 ** (1 / n)``), so a cell needs at least ``3 / target`` comparisons before
even a clean record could show its FMR below the target."""

LOW_COUNT_RULE = ("fewer than 3/target impostor comparisons (rule of three: even with no false match among n "
                  "comparisons, the 95% upper bound on FMR, about 3/n, would lie above the target)")
"""The rule of :func:`low_count` in words, for captions."""


def low_count(comparisons, target: float):
    """Whether a cell with ``comparisons`` impostor comparisons (a number or an array) has too few to resolve FMR at
    ``target``: ``0 < n`` and ``n * target < 3`` (:data:`LOW_COUNT_ERRORS`, the rule of three). A cell without
    comparisons is not low-count: it has no FMR at all. At target 0 every cell with comparisons is."""
    n = np.asarray(comparisons, dtype=np.float64)
    out = (n > 0) & (n * float(target) < LOW_COUNT_ERRORS)
    return bool(out) if out.ndim == 0 else out


def low_count_limit(target: float) -> int | None:
    """The fewest impostor comparisons that resolve FMR at ``target`` (3,000 at 0.001): a cell with fewer, and at
    least one, is :func:`low_count`; None at target 0, which no number of comparisons resolves."""
    if not target > 0:
        return None
    m = max(1, math.ceil(LOW_COUNT_ERRORS / target))
    while m > 1 and (m - 1) * float(target) >= LOW_COUNT_ERRORS:  # as low_count rounds n * target
        m -= 1
    while m * float(target) < LOW_COUNT_ERRORS:
        m += 1
    return m


_POINT_FIELDS = ("weighting", "kind", "target", "threshold", "rule", "threshold_impostors", "alias")
"""The fields a cross-group record shares with every other cell of its operating point."""


def attribute_list(attributes: str | Sequence[str], group_by: Sequence[str], param: str = "attributes") -> list[str]:
    """``"region,sex"`` or ``["region", "sex"]`` as a list of grouping attributes, each once and each one of
    ``group_by`` (an :class:`InputError` naming ``param`` otherwise)."""
    names = [a.strip() for a in attributes.split(",")] if isinstance(attributes, str) else [str(a) for a in attributes]
    names = [a for a in names if a]
    unknown = [a for a in names if a not in group_by]
    if not names or unknown or len(set(names)) < len(names):
        what = (f"{', '.join(unknown)} not among the grouping attributes" if unknown else
                "an attribute repeated" if names else "no attribute given")
        choices = ", ".join(group_by) or "none (the audit has no groups)"
        raise InputError(f"{param} {attributes!r}: {what}; the grouping attributes are {choices} (give one or "
                         "more, comma-separated).", param=param)
    return names


def group_values(name: str, group_by: Sequence[str]) -> dict[str, str]:
    """The attribute values of a group name (the values joined with '|' in the order of ``group_by``)."""
    (values,), odd = split_group_names([name], group_by)
    if odd:
        raise InputError(f"group {name!r} does not split into the {len(group_by)} attribute values of "
                         f"{list(group_by)} at '|' (an attribute value with a '|' in it?).")
    return dict(zip(group_by, values))


def aggregate_cross_group(records: Sequence[dict[str, Any]], group_by: Sequence[str],
                          attributes: str | Sequence[str]) -> list[dict[str, Any]]:
    """The cross-group FMR matrix of coarser groups: ``records`` (an audit's ``cross_group_fmr``, groups by
    ``group_by``) with every group replaced by its values of ``attributes`` (a subset of ``group_by``, in the order
    given: aggregated to ``"sex,region"`` the groups are named as by an audit with ``--group-by sex,region``).

    A coarse cell is the union of its fine cells, so its pooled FMR is ``sum errors / sum comparisons`` over them:
    the records an audit grouped by ``attributes`` alone gives (at the same thresholds; with
    ``threshold_impostors="all"`` they do not depend on the grouping). Only **pooled** records are aggregated; the
    others are left out: the identity-balanced FMR of a union needs the identity-pair weights of every fine cell,
    which the records do not hold. Records come back in the audit's order (per operating point in the order given,
    every unordered pair of the coarse groups seen, names sorted, ``group_a <= group_b``), with the same fields:
    those of the operating point copied, ``fmr`` None where no comparisons, and any other field (intervals of the
    fine cells) None, since an interval of the union is not computed here."""
    attrs = attribute_list(attributes, group_by)
    points: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("weighting", "pooled") == "pooled":
            points.setdefault((r.get("kind"), r.get("target"), str(r.get("threshold"))), []).append(r)
    coarse: dict[str, str] = {}

    def project(name: str) -> str:
        if name not in coarse:
            values = group_values(name, group_by)
            coarse[name] = "|".join(values[a] for a in attrs)
        return coarse[name]

    out: list[dict[str, Any]] = []
    for recs in points.values():
        names = sorted({project(g) for r in recs for g in (r["group_a"], r["group_b"])})
        index = {g: i for i, g in enumerate(names)}
        errors: dict[tuple[int, int], int] = {}
        comparisons: dict[tuple[int, int], int] = {}
        for r in recs:
            a, b = sorted((index[project(r["group_a"])], index[project(r["group_b"])]))
            errors[a, b] = errors.get((a, b), 0) + int(r.get("errors") or 0)
            comparisons[a, b] = comparisons.get((a, b), 0) + int(r.get("comparisons") or 0)
        first = recs[0]
        for a in range(len(names)):
            for b in range(a, len(names)):
                k, n = errors.get((a, b), 0), comparisons.get((a, b), 0)
                row = {f: first[f] if f in _POINT_FIELDS else None for f in first}  # the fields in their order
                row.update(group_a=names[a], group_b=names[b], fmr=k / n if n else None, errors=k, comparisons=n)
                out.append(row)
    return out


def heatmap_options(group_by: Sequence[str], order: str | None = None,
                    aggregate: str | Sequence[str] | None = None) -> dict:
    """The cross-group heat map's options checked against the audit's grouping attributes ``group_by`` (an :class:`InputError`
    naming ``heatmap_order`` / ``heatmap_aggregate`` otherwise): ``order``, one attribute to sort the groups by
    (default: the first of ``group_by``), and ``aggregate``, the attributes of the coarser groups to pool the
    cells into (``"region"``, ``"region,sex"``; default: none, every group)."""
    out: dict = {"order": None, "aggregate": None}
    if order is not None:
        names = attribute_list(order, group_by, "heatmap_order")
        if len(names) > 1:
            raise InputError(f"heatmap_order {order!r}: give one attribute to order the groups by.",
                             param="heatmap_order")
        out["order"] = names[0]
    if aggregate:
        out["aggregate"] = attribute_list(aggregate, group_by, "heatmap_aggregate")
    return out


__all__ = ["CrossGroupCounts", "cross_group_counts", "LOW_COUNT_ERRORS", "LOW_COUNT_RULE", "low_count",
           "low_count_limit", "aggregate_cross_group", "attribute_list", "group_values", "heatmap_options"]
