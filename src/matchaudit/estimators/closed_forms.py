"""The closed-form intervals (Wilson with the identity-clustered variance, and the other methods of
:mod:`matchaudit.estimators.intervals`) from the engine's exact per-identity counts: which identities and impostor
categories a view holds, their totals at a threshold, and the (FMR, FNMR) intervals of a view."""

from __future__ import annotations

import numpy as np

from matchaudit.definitions import Alternative
from matchaudit.engine import IdentityCounts
from matchaudit.estimators import intervals as iv


def impostor_categories(ic: IdentityCounts, group: int | None, reference: np.ndarray | None = None) -> np.ndarray:
    """Impostor categories of a view: a group's same-group pairs, or (``group=None``) the threshold's impostor
    set: the group pairs that ``reference`` marks ((G, G) bool, :func:`matchaudit.pairings.reference_pairs`;
    None: every pair)."""
    if group is not None:
        return np.array([ic.categories.slot[group, group]], np.int64)
    if reference is None:
        return np.arange(ic.categories.n, dtype=np.int64)
    return np.flatnonzero(ic.categories.select(reference)).astype(np.int64)


def impostor_totals(ic: IdentityCounts, ti: int, categories: np.ndarray) -> iv.ImpostorTotals:
    """What the FMR variance needs at threshold index ``ti``, restricted to impostor ``categories``: row totals
    per identity, the identity pairs with accepted impostors (with their ``m_kl``) and ``sum m_kl^2``."""
    cats = np.asarray(categories, np.int64)
    keep = np.isin(ic.pair_cat[ti], cats)
    return iv.ImpostorTotals(ic.m_row_cat[cats].sum(axis=0), ic.e_row_cat[ti][cats].sum(axis=0),
                             ic.pair_m[ti][keep], ic.pair_e[ti][keep], float(sum(ic.sum_m2_cat[c] for c in cats)))


def view_identities(ic: IdentityCounts, group: int | None) -> np.ndarray:
    """(K,) bool: the identities of a view (``group``, or all for None)."""
    return np.ones(ic.g.size, bool) if group is None else ic.group == group


def genuine_totals(ic: IdentityCounts, ti: int, group: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per identity (of ``group``, or all): genuine comparisons ``g_k`` and genuine errors ``E_k`` at ``ti``."""
    keep = view_identities(ic, group)
    return ic.g[keep], ic.e[ti][keep]


def closed_form(method: str, ic: IdentityCounts, ti: int, group: int | None, level: float,
                alternative: Alternative, reference: np.ndarray | None = None) -> tuple[iv.IntervalResult, iv.IntervalResult]:
    """(FMR, FNMR) intervals at threshold index ``ti`` for one group (its genuine comparisons and its
    same-group impostors) or all (``group=None``: every genuine comparison; impostors of the ``reference``
    group pairs, :func:`impostor_categories`)."""
    fnmr = iv.fnmr_interval(method, *genuine_totals(ic, ti, group), level, alternative)
    fmr = iv.fmr_interval(method, impostor_totals(ic, ti, impostor_categories(ic, group, reference)), level,
                          alternative)
    return fmr, fnmr


__all__ = ["closed_form", "genuine_totals", "impostor_categories", "impostor_totals", "view_identities"]
