"""Numba kernels for exact thresholds at FMR targets, per replicate: where each replicate's reference-impostor
FMR first passes each target on the grid (:func:`crossings`), then the exact threshold inside that cell from its
collected impostor items (:func:`solve_targets`). :func:`fmr_ok` is the definition's test
(:func:`matchaudit.definitions.fmr_passes`) in integers, property-tested against it."""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(inline="always", cache=True)
def fmr_ok(accepted, total, alpha):
    """FMR = accepted / total <= alpha, as :func:`matchaudit.definitions.fmr_passes` (one correctly rounded
    division; no threshold impostors never pass); held to it by tests/test_definitions.py."""
    return total > 0 and accepted / total <= alpha


@nb.njit(parallel=True, cache=True)
def crossings(table, ref_kc, targets, cstar, nxt):
    """Per replicate r and target a: ``cstar[r, a]`` = the first cell c whose upper edge passes (reference
    impostor weight in cells > c has FMR <= a), i.e. the cell holding the exact threshold; -1 when the
    replicate has no reference impostor weight. ``nxt[r, a]``: the first later cell with any positive weight
    (any class), where the threshold lies when no score in ``cstar`` passes; -1 if none.

    table: (R, n_kc, C) int64; ref_kc: (n_kc,) bool."""
    R, n_kc, C = table.shape
    for r in nb.prange(R):
        ref = np.zeros(C, np.int64)
        anyw = np.zeros(C, np.int64)
        for k in range(n_kc):
            for c in range(C):
                anyw[c] += table[r, k, c]
                if ref_kc[k]:
                    ref[c] += table[r, k, c]
        total = ref.sum()
        for ti in range(targets.shape[0]):
            cstar[r, ti] = -1
            nxt[r, ti] = -1
            if total == 0:
                continue
            above = total
            c0 = C - 1
            for c in range(C):
                above -= ref[c]
                if fmr_ok(above, total, targets[ti]):
                    c0 = c
                    break
            cstar[r, ti] = c0
            for c in range(c0 + 1, C):
                if anyw[c] > 0:
                    nxt[r, ti] = c
                    break


@nb.njit(parallel=True, cache=True)
def solve_targets(table, ref_kc, targets, cstar, nxt, off, score, kc, us, vs, wt, ge, thr, acc_out):
    """Exact thresholds and accepted counts at FMR targets, per replicate (lane r of ``wt``).

    ``t_alpha`` = the lowest score with positive weight (any class) whose FMR over the reference impostors
    is at most alpha, or +inf. Items are the entries of the cells that can hold it, sorted by (cell, score):
    cell c's items are ``off[c]:off[c+1]``, an item weighs ``wt[us, r] * wt[vs, r]``. Inside ``cstar`` the
    candidates are scanned downwards (FMR grows as the threshold falls, so the last passing value wins);
    if none passes, the threshold is the lowest positive-weight score of ``nxt``.
    thr: (R, T) float64 out; acc_out: (R, T, n_kc) int64 out (accepted weight per class/category)."""
    R, n_kc, C = table.shape
    for r in nb.prange(R):
        total = 0
        for k in range(n_kc):
            if ref_kc[k]:
                for c in range(C):
                    total += table[r, k, c]
        for ti in range(targets.shape[0]):
            thr[r, ti] = np.inf
            for k in range(n_kc):
                acc_out[r, ti, k] = 0
            c0 = cstar[r, ti]
            if c0 < 0:
                continue
            base = 0
            for k in range(n_kc):
                if ref_kc[k]:
                    for c in range(c0 + 1, C):
                        base += table[r, k, c]
            t = np.inf
            tcell = -1
            acc = base
            e = off[c0 + 1] - 1
            while e >= off[c0]:  # groups of equal score, descending
                v = score[e]
                g_ref = 0
                g_any = 0
                f = e
                while f >= off[c0] and score[f] == v:
                    w = np.int64(wt[us[f], r]) * np.int64(wt[vs[f], r])
                    g_any += w
                    if ref_kc[kc[f]]:
                        g_ref += w
                    f -= 1
                accepted = acc + g_ref if ge else acc  # at threshold v: scores >= v, or > v
                if g_any > 0:
                    if not fmr_ok(accepted, total, targets[ti]):
                        break
                    t = v
                    tcell = c0
                acc += g_ref
                e = f
            if tcell < 0 and nxt[r, ti] >= 0:
                c1 = nxt[r, ti]
                for e in range(off[c1], off[c1 + 1]):
                    if np.int64(wt[us[e], r]) * np.int64(wt[vs[e], r]) > 0:
                        t = score[e]
                        tcell = c1
                        break
            thr[r, ti] = t
            if tcell < 0:
                continue
            for k in range(n_kc):
                s = 0
                for c in range(tcell + 1, C):
                    s += table[r, k, c]
                acc_out[r, ti, k] = s
            for e in range(off[tcell], off[tcell + 1]):
                if score[e] > t or (ge and score[e] == t):
                    acc_out[r, ti, kc[e]] += np.int64(wt[us[e], r]) * np.int64(wt[vs[e], r])


__all__ = ["crossings", "fmr_ok", "solve_targets"]
