"""Every replicate's grid curves in one compiled pass: per (replicate, view), the FMR and FNMR at every grid edge,
the cell-level AUC and the share of tied (genuine, impostor) pairs.

The NumPy spelling of the same quantities (view sums, reversed cumulative sums, divisions, each a full
(replicates, views, cells) temporary) took most of a grouped audit's interval time: 5.3 of 19 s on the demo, most
of the 81 s of curve summaries at 100 groups. Here each row is read once. With integer counts every sum is exact,
so the values are those of the NumPy definitions bit for bit. Fractional counts (identity-balanced histograms,
the V-statistic's genuine histogram) are summed in NumPy's orders too: views over groups in turn, tails from the
top cell down (``cumsum``), totals and the AUC's sum pairwise (``ndarray.sum``), so the audit's numbers did not move
by a rounding when this pass replaced the NumPy one (tests/test_grid_curves.py).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(inline="always", cache=True)
def _block(a, lo, n):
    """NumPy's sum of a block of at most 128 float64 values: eight lanes, combined in pairs, then the rest."""
    if n < 8:
        res = -0.0
        for k in range(n):
            res += a[lo + k]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    k = 8
    while k < n - n % 8:
        j = lo + k
        r0, r1, r2, r3 = r0 + a[j], r1 + a[j + 1], r2 + a[j + 2], r3 + a[j + 3]
        r4, r5, r6, r7 = r4 + a[j + 4], r5 + a[j + 5], r6 + a[j + 6], r7 + a[j + 7]
        k += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while k < n:
        res += a[lo + k]
        k += 1
    return res


@nb.njit(cache=True)
def _pairwise(a):
    """``a.sum()`` as NumPy sums a contiguous float64 array (numpy/_core/src/umath/loops_utils.h.src: halves,
    each a multiple of 8 long, down to blocks of 128), so fractional totals equal NumPy's bit for bit. The halving
    runs on an explicit stack (Numba cannot cache a recursive function)."""
    lo_s, n_s = np.empty(64, np.int64), np.empty(64, np.int64)
    left, right_pending = np.empty(64), np.zeros(64, np.bool_)
    lo_s[0], n_s[0], top = 0, a.size, 0
    while True:
        n = n_s[top]
        if n > 128:  # a fresh frame: its left half first
            right_pending[top] = True
            lo_s[top + 1], n_s[top + 1] = lo_s[top], n // 2 - (n // 2) % 8
            top += 1
            continue
        value = _block(a, lo_s[top], n)
        while True:  # hand ``value`` to the frames waiting for it
            if top == 0:
                return value
            top -= 1
            if right_pending[top]:  # ``value`` is its left half: now the right one
                left[top], right_pending[top] = value, False
                half = n_s[top] // 2 - (n_s[top] // 2) % 8
                lo_s[top + 1], n_s[top + 1] = lo_s[top] + half, n_s[top] - half
                top += 1
                break
            value = left[top] + value


@nb.njit(parallel=True, cache=True)
def _fill(gen, imp, cats, x, y, auc, ties):
    """Rows of ``x``/``y`` (R, V, C+2): ``(1, FMR at edges 0..C-1, 0)`` and ``(0, FNMR ..., 1)``; ``auc`` and
    ``ties`` (R, V): cell-level AUC and the share of (genuine, impostor) pairs in one cell; the first V <= 1+G
    views (their number: the outputs' second axis). View 0 sums the groups' genuine counts and the impostor
    categories ``cats``; view ``v`` is group ``v - 1``'s same-group categories (``imp[:, v - 1]``)."""
    R, G, C1 = gen.shape
    V = x.shape[1]  # the first V views
    n_cat = imp.shape[1]
    for k in nb.prange(R * V):
        r, v = k // V, k % V
        g = np.empty(C1)
        i = np.empty(C1)
        for c in range(C1):
            if v == 0:
                sg = 0.0
                for j in range(G):
                    sg += gen[r, j, c]
                si = 0.0
                for j in range(n_cat):
                    if cats[j]:
                        si += imp[r, j, c]
                g[c], i[c] = sg, si
            else:
                g[c], i[c] = gen[r, v - 1, c], imp[r, v - 1, c]
        tg = 0.0  # tails from the top cell down: at edge e, the counts of cells e+1..C
        ti = 0.0
        for c in range(C1 - 1, 0, -1):
            tg += g[c]
            ti += i[c]
            x[r, v, c], y[r, v, c] = ti, tg
        tg, ti = _pairwise(g), _pairwise(i)
        x[r, v, 0], y[r, v, 0] = 1.0, 0.0
        x[r, v, C1], y[r, v, C1] = 0.0, 1.0
        for c in range(1, C1):
            x[r, v, c] = x[r, v, c] / ti if ti > 0 else np.nan
            y[r, v, c] = 1 - y[r, v, c] / tg if tg > 0 else np.nan
        area = np.empty(C1)
        tie = np.empty(C1)
        upto = 0.0  # impostors in cells 0..c; those below cell c as NumPy's cumsum(i) - i
        for c in range(C1):
            upto += i[c]
            area[c] = g[c] * ((upto - i[c]) + 0.5 * i[c])
            tie[c] = g[c] * i[c]
        both = tg * ti
        auc[r, v] = _pairwise(area) / both if both > 0 else np.nan
        ties[r, v] = _pairwise(tie) / both if both > 0 else np.nan


def fill(gen: np.ndarray, imp: np.ndarray, threshold_categories: np.ndarray, views: int | None = None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, auc, ties)`` of every (replicate, view) from histograms ``gen`` (R, G, C+1) and ``imp``
    (R, n_cat, C+1), integer or float (see :func:`_fill`); ``views``: only the first ones (default all 1+G)."""
    R, G, C1 = gen.shape
    V = G + 1 if views is None else views
    if not 1 <= V <= G + 1:
        raise ValueError(f"views must be 1 to {G + 1} (all, then the {G} groups), not {V}")
    x, y = np.empty((R, V, C1 + 1)), np.empty((R, V, C1 + 1))
    auc, ties = np.empty((R, V)), np.empty((R, V))
    _fill(gen, imp, np.asarray(threshold_categories, np.bool_), x, y, auc, ties)  # any layout: no copy
    return x, y, auc, ties


__all__ = ["fill"]
