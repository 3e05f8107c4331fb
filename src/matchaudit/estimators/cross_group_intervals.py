"""Closed-form, identity-clustered intervals for every cell of the cross-group FMR matrix at fixed thresholds.

Cell ``(a, b)``, ``a <= b`` (group codes): the impostor comparisons between an identity of group ``a`` and one
of group ``b`` (``a == b``: two identities of ``a``), the cells of the audit's ``cross_group_fmr``. Each cell's
interval is :func:`~matchaudit.estimators.intervals.fmr_interval` of the cell's own
:class:`~matchaudit.estimators.intervals.ImpostorTotals`: the one clustered FMR variance of docs/methods.md
section 4, unchanged. Its rows run over the identities of both groups (identity k's comparisons and errors with
the partner group), its pairs over the cell's identity pairs; in a bipartite cell ``sum_k row_k^2 - 2 sum D_kl^2``
is exactly the covariance of two comparisons sharing an identity on either side, so no second formula is needed.

One exception, the zero-error bound of a bipartite cell (``a != b``): the documented bound counts ``floor(K/2)``
disjoint identity pairs among the cell's K identities, but disjoint pairs of a bipartite cell take one identity
from each side, so at most ``min(K_a, K_b)`` of them exist (the complete bipartite pairs split into
``max(K_a, K_b)`` matchings of that size, one of which carries at least the average rate). The bound there is
:func:`~matchaudit.estimators.intervals.zero_false_match_bound` with ``min(K_a, K_b)`` pairs (the same as the
documented one for groups of equal size; with unequal sizes the documented one would be too low).

Cost: the identity counts at the thresholds (one pass over the comparisons; listed data one more for the
comparisons per identity pair: both made by :func:`matchaudit.auditing.intervals.cross_group_intervals`), then per
threshold a few bincounts and one sort of the accepted identity pairs,
and one :func:`fmr_interval` call per cell: ``G(G+1)/2 x T`` calls. Memory ``O(K x G)`` per threshold.
"""

from __future__ import annotations

import numpy as np

from matchaudit.definitions import Alternative
from matchaudit.engine import IdentityCounts
from matchaudit.errors import InputError
from matchaudit.estimators import intervals as iv
from matchaudit.model import MatchData

Cell = tuple[int, int, int]
"""(threshold index, group a, group b) with ``a <= b``."""


def _comparisons(data: MatchData, group: np.ndarray, G: int, pair_comparisons: tuple[np.ndarray, np.ndarray] | None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Impostor comparisons of each identity with each group, (K, G), and ``sum m_kl^2`` over each cell's identity
    pairs, (G, G) (upper triangle used). All-pairs: ``m_kl = n_k n_l`` in closed form from per-group sums; listed:
    from ``pair_comparisons``."""
    K = data.n_identities
    if data.protocol == "all-pairs":
        n = data.identity_sizes.astype(np.int64)
        S = np.bincount(group, weights=n, minlength=G).astype(np.int64)
        own = np.where(group[:, None] == np.arange(G)[None, :], n[:, None], 0)
        rows = (n[:, None] * (S[None, :] - own)).astype(np.float64)
        big = n.astype(object)  # exact Python ints for the squared sums, as identity_counts
        s2 = np.array([sum(int(x) ** 2 for x in big[group == g]) for g in range(G)], dtype=object)
        s4 = np.array([sum(int(x) ** 4 for x in big[group == g]) for g in range(G)], dtype=object)
        m2 = np.outer(s2, s2)
        m2[np.diag_indices(G)] = (s2 * s2 - s4) // 2
        return rows, m2.astype(np.float64)
    keys, m = pair_comparisons
    k, l, mf = keys // K, keys % K, m.astype(np.float64)
    gk, gl = group[k], group[l]
    rows = (np.bincount(k * G + gl, weights=mf, minlength=K * G)
            + np.bincount(l * G + gk, weights=mf, minlength=K * G)).reshape(K, G)
    cell = np.minimum(gk, gl) * G + np.maximum(gk, gl)
    return rows, np.bincount(cell, weights=mf * mf, minlength=G * G).reshape(G, G)


def _bipartite_zero(r: iv.IntervalResult, pairs: int, level: float) -> iv.IntervalResult:
    """The zero-error interval of a bipartite cell: at most ``pairs`` disjoint identity pairs (module doc)."""
    r.confidence_interval = iv.ConfidenceInterval(0.0, iv.zero_false_match_bound(2 * pairs, level))
    r.note = (f"zero errors: one-sided {level:.0%} upper bound with min(K_a, K_b) = {pairs} disjoint cross-group "
              "identity pairs, valid whatever the dependence within an identity")
    return r


def check_identities(data: MatchData) -> None:
    """Refuse data without identities (the intervals cluster by identity), before any pass."""
    if not data.has_identities:
        raise InputError("cross-group FMR intervals cluster by identity; this comparison table has labels only.")


def cell_intervals(data: MatchData, ic: IdentityCounts, pair_comparisons: tuple[np.ndarray, np.ndarray] | None,
                   method: str = "wilson", level: float = 0.95, alternative: Alternative = "two-sided"
                   ) -> dict[Cell, iv.IntervalResult]:
    """The pooled FMR interval of every cell ``(a, b)``, ``a <= b``, of the cross-group matrix at each threshold of
    the identity counts ``ic``, keyed ``(threshold index, a, b)`` (see module doc); ``pair_comparisons``: listed
    data's impostor comparisons per identity pair (:func:`~matchaudit.engine.identity.impostor_pair_counts`), None
    for all pairs.

    ``method``: a closed form of :func:`~matchaudit.estimators.intervals.fmr_interval`; ``wilson`` (Wilson with the
    identity-clustered effective size) is the one built for this. A cell without comparisons gets the NaN interval
    of ``fmr_interval`` (note "no comparisons")."""
    thr = ic.thresholds
    K, G = data.n_identities, data.n_groups
    group = data.identity_group.astype(np.int64)
    m_rows, m2 = _comparisons(data, group, G, pair_comparisons)
    order = np.argsort(group, kind="stable")
    members = np.split(order, np.searchsorted(group[order], np.arange(1, G)))
    out: dict[Cell, iv.IntervalResult] = {}
    for ti in range(thr.size):
        k, l, e, m = ic.pair_k[ti], ic.pair_l[ti], ic.pair_e[ti], ic.pair_m[ti]
        gk, gl = group[k], group[l]
        ef = e.astype(np.float64)
        e_rows = (np.bincount(k * G + gl, weights=ef, minlength=K * G)
                  + np.bincount(l * G + gk, weights=ef, minlength=K * G)).reshape(K, G)
        cell = np.minimum(gk, gl) * G + np.maximum(gk, gl)
        srt = np.argsort(cell, kind="stable")
        start = np.searchsorted(cell[srt], np.arange(G * G + 1))
        pm, pe = m[srt], e[srt]
        for a in range(G):
            for b in range(a, G):
                ia, ib = members[a], members[b]
                if a == b:
                    rm, re_ = m_rows[ia, a], e_rows[ia, a]
                else:
                    rm = np.concatenate([m_rows[ia, b], m_rows[ib, a]])
                    re_ = np.concatenate([e_rows[ia, b], e_rows[ib, a]])
                s = slice(start[a * G + b], start[a * G + b + 1])
                totals = iv.ImpostorTotals(rm, re_, pm[s], pe[s], float(m2[a, b]))
                r = iv.fmr_interval(method, totals, level, alternative)
                if a != b and totals.errors == 0 and totals.comparisons > 0:
                    pairs = min(int((m_rows[ia, b] > 0).sum()), int((m_rows[ib, a] > 0).sum()))
                    r = _bipartite_zero(r, pairs, level)
                out[ti, a, b] = r
    return out


__all__ = ["Cell", "cell_intervals", "check_identities"]
