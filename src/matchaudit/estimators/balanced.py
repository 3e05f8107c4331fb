"""Identity-balanced replicate counts from the engine (docs/methods.md sections 2-3).

Balanced rates average unit rates: FNMR over identities with genuine comparisons (``FNMR_k``), FMR over
identity pairs (``FMR_kl``). On all-pairs data a unit's denominator depends only on identity sizes
(``C(n_k, 2)``, ``n_k n_l``), and every scheme below keeps it fixed per copy of a unit: the within-identity
bootstrap re-weights pairs by ``c_i c_j`` (plus ``C(c_i, 2)`` self-pairs), which sum to ``C(n_k, 2)`` and
``n_k n_l``; the identity schemes weight a copy of a unit as a whole (vertex, double-or-nothing: ``w_k``,
``w_k w_l``; subsets: ``u_k``, ``w_k + w_l``). So the balanced rate of a resampled data set is
``sum_units W_u x rate_u / sum_units W_u`` with ``W_u`` the unit's replicate weight — computable exactly from
counts per *size class*: the engine is run with the same scheme and seed (hence the same replicates) on the
data with identities relabelled into (group, size) classes (:func:`relabel`, :func:`class_pairs`; the run is
:func:`matchaudit.auditing.class_passes.balanced_counts`), and each class's (class pair's) weighted counts are
divided by its unit size (:func:`unit_weighted`). The result is a :class:`~matchaudit.engine.Counts` whose float "counts" are
those unit-weighted sums per group and category, so every function of :mod:`bootstrap` applies unchanged
(rates are still ratios of what is accepted to the total).

Not covered (:func:`unsupported` says why): listed protocols (a unit's denominator ``m_kl`` is not a
function of identity sizes, and within-identity denominators vary per replicate), the comparison-level
schemes (two-level redraws comparisons inside identity rows: no fixed unit), and more than
:data:`MAX_CLASSES` (group, size) classes (the engine's table grows with the square of the classes).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from matchaudit.engine import Counts
from matchaudit.model import MatchData
from matchaudit.pairings import PairCategories, reference_pairs

MAX_CLASSES = 64


def size_classes(data: MatchData) -> tuple[np.ndarray, np.ndarray]:
    """(group, identity size) classes: ``keys`` (C, 2) and the class of every identity (K,)."""
    sizes = data.identity_sizes
    group = data.identity_group.astype(np.int64)
    keys, cls = np.unique(np.stack([group, sizes], axis=1), axis=0, return_inverse=True)
    return keys, cls.reshape(-1).astype(np.int64)


def relabel(data: MatchData, cls: np.ndarray) -> MatchData:
    """The same data with each identity's group replaced by its class (sample order and identities kept,
    so every scheme draws the same weights)."""
    n = int(cls.max()) + 1 if cls.size else 0
    return dataclasses.replace(data, identity_group=cls, group_names=tuple(f"c{i}" for i in range(n)))


def unsupported(data: MatchData, scheme_name: str) -> str | None:
    """Why balanced replicates cannot be computed for this data and scheme, or None."""
    if not data.has_identities:
        return "the input has no identities"
    if data.protocol != "all-pairs":
        return ("the comparisons are a listed set, not all pairs: how many comparisons each pair of identities has "
                "varies, which identity-balanced resampling cannot follow")
    if scheme_name in ("two-level", "iid-comparison"):
        return f"the {scheme_name} scheme redraws comparisons, not whole units"
    n = size_classes(data)[0].shape[0]
    if n > MAX_CLASSES:
        return (f"{n} combinations of group and samples per identity, more than the {MAX_CLASSES} its resampling "
                "table holds")
    return None


def engine_categories(data: MatchData) -> int:
    """Categories of the engine run behind :func:`unit_weighted` (size classes and their pairs), for
    :func:`matchaudit.engine.chunks.table_bytes`."""
    C = size_classes(data)[0].shape[0]
    return C + C * (C + 1) // 2


def class_pairs(n_classes: int) -> PairCategories:
    """The categories of the size-class run: every pair of classes its own (its own unit size)."""
    return PairCategories.full(np.ones((n_classes, n_classes), bool))


def unit_weighted(data: MatchData, class_counts: Counts, threshold_impostors: str = "all") -> Counts:
    """Unit-weighted counts (see module doc) from the engine's counts (of one scheme) on the data relabelled into
    size classes (categories :func:`class_pairs`): ``genuine[r, g, c]`` = sum over identities k of group g of
    ``W_k x`` (share of k's genuine comparisons in cell c); ``impostor[r, cat, c]`` likewise over identity pairs.
    No exact FMR-target thresholds (``fmr_targets`` is empty): replicate thresholds are grid edges."""
    keys, _ = size_classes(data)
    G, C = data.n_groups, keys.shape[0]
    c, grid = class_counts, class_counts.grid
    cats = PairCategories.pooled_by(reference_pairs(threshold_impostors, data.group_names, data.group_by))
    n = keys[:, 1].astype(float)
    gen_unit = n * (n - 1) / 2
    to_group = np.zeros((C, G))
    to_group[np.arange(C), keys[:, 0]] = np.where(gen_unit > 0, 1 / np.where(gen_unit > 0, gen_unit, 1), 0)
    rel_cats = class_pairs(C)
    to_cat = np.zeros((rel_cats.n, cats.n))
    for j, (a, b) in enumerate(rel_cats.pairs):
        to_cat[j, cats.slot[keys[a, 0], keys[b, 0]]] = 1 / (n[a] * n[b])
    R = c.replicates.size
    return Counts(scheme=c.scheme, seed=c.seed, replicates=c.replicates, grid=grid,
                  group_names=tuple(data.group_names), categories=list(cats.pairs),
                  genuine=np.einsum("rac,ag->rgc", c.genuine, to_group),
                  impostor=np.einsum("rkc,kq->rqc", c.impostor, to_cat), fmr_targets=np.zeros(0),
                  threshold_impostors=threshold_impostors,
                  threshold_categories=cats.reference, target_threshold=np.zeros((R, 0)),
                  target_genuine_accepted=np.zeros((R, 0, G)), target_impostor_accepted=np.zeros((R, 0, cats.n)),
                  info={"weighting": "balanced", "size_classes": C})


__all__ = ["MAX_CLASSES", "class_pairs", "engine_categories", "relabel", "size_classes", "unit_weighted",
           "unsupported"]
