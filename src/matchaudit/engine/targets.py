"""Exact thresholds at FMR targets per replicate: the cells where each replicate's FMR crosses a target
(from the counts), the entries of those cells (items), and the kernel that finds the exact threshold
and the accepted counts there (the rule of :mod:`matchaudit.definitions`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from matchaudit.engine.target_kernels import crossings, solve_targets
from matchaudit.engine.entries import Entries


def ref_mask(G: int, ref: np.ndarray) -> np.ndarray:
    """Classes of the table (G genuine groups, then the impostor categories) whose impostors define the FMR
    that sets thresholds; ``ref``: the threshold impostor categories (:func:`matchaudit.pairings.category_mask`)."""
    return np.concatenate([np.zeros(G, np.bool_), np.asarray(ref, np.bool_)])


def target_crossings(table: np.ndarray, G: int, targets: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    R = table.shape[0]
    cstar = np.empty((R, targets.size), np.int64)
    nxt = np.empty((R, targets.size), np.int64)
    crossings(table, ref_mask(G, ref), targets, cstar, nxt)
    return cstar, nxt


def needed_cells(crossings: tuple[np.ndarray, np.ndarray], n_cells: int) -> np.ndarray:
    """The cells that can hold a replicate's exact threshold (from :func:`target_crossings`)."""
    cstar, nxt = crossings
    want = np.zeros(n_cells, np.bool_)
    want[cstar[cstar >= 0]] = True
    want[nxt[nxt >= 0]] = True
    return want


@dataclass
class Items:
    """Entries of the cells that can hold a target threshold; an item weighs ``wt[u, r] * wt[v, r]``."""

    cell: np.ndarray
    kc: np.ndarray
    score: np.ndarray
    u: np.ndarray
    v: np.ndarray
    wt: np.ndarray  # (rows, R) int32



def concat_items(found: list) -> tuple[np.ndarray, ...]:
    """The collected entries (chunks of key, u, v, score) as one array each: int64 keys, u, v, float64 scores."""
    if not found:
        z = np.zeros(0, np.int64)
        return z, z, z, np.zeros(0)
    cols = list(zip(*found))
    return (*(np.concatenate(c).astype(np.int64, copy=False) for c in cols[:3]), np.concatenate(cols[3]))


def wanted_items(ent: Entries, want: np.ndarray, wt: np.ndarray, found: tuple[np.ndarray, ...]) -> Items:
    """The entries of every comparison in the wanted cells (collected in the window during the counting
    pass, plus those of a second, filtered pass for wanted cells outside it)."""
    C = ent.grid.n_cells
    keys, us, vs, sc = found
    cell = keys % C
    keep = want[cell]
    return Items(cell[keep], keys[keep] // C, sc[keep], us[keep], vs[keep], wt)


def exact_targets(table, G, targets, ref, items: Items | None, rule, crossings):
    """Exact per-replicate thresholds at the FMR targets (the project definition: lowest positive-weight
    score of any comparison whose FMR is <= target, or +inf) and the accepted counts there; ``crossings``: the
    table's :func:`target_crossings` (the caller found them for the needed cells; None without targets)."""
    R, n_kc, C = table.shape
    T = targets.size
    thr = np.full((R, T), np.inf)
    acc = np.zeros((R, T, n_kc), np.int64)
    if T == 0:
        return thr, acc[:, :, :G], acc[:, :, G:]
    cstar, nxt = crossings
    order = np.lexsort((items.score, items.cell))
    off = np.searchsorted(items.cell[order], np.arange(C + 1)).astype(np.int64)
    solve_targets(table, ref_mask(G, ref), targets, cstar, nxt, off, items.score[order],
                    items.kc[order].astype(np.int64), items.u[order], items.v[order], items.wt, rule == ">=", thr, acc)
    return thr, acc[:, :, :G], acc[:, :, G:]
