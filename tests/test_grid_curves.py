"""The compiled grid curves (:mod:`matchaudit.estimators.grid_curves`) equal their definitions, row by row.

Reference: for each replicate and view, the view's histograms (the bootstrap's own view definition: view 0 the
groups' genuine counts summed, the threshold categories' impostors summed; view v group v-1 and its same-group
category), the FMR and FNMR at every edge as tails over totals, the AUC as the share of (genuine, impostor) pairs
ordered correctly with ties in a cell counting 1/2, and the tied share, each by brute force over cells. Integer
counts: exact equality (every sum is exact). Fractional counts (balanced, V-statistic): equal to within rounding to
the brute force, and bit for bit to the NumPy spelling the pass replaced (the audit's numbers did not move).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.grid_curves import fill
from matchaudit.metrics.rates import safe_ratio


def _reference(gen, imp, cats):
    R, G, C1 = gen.shape
    x = np.full((R, G + 1, C1 + 1), np.nan)
    y = np.full_like(x, np.nan)
    auc = np.full((R, G + 1), np.nan)
    ties = np.full_like(auc, np.nan)
    # the views as the bootstrap defines them (all, then each group with its same-group impostors)
    counts = SimpleNamespace(group_names=[f"g{j}" for j in range(G)], threshold_categories=cats)
    gv = np.moveaxis(bs.views_gen(np.moveaxis(gen, 1, -1)), -1, 1)
    iv = np.moveaxis(bs.views_imp(np.moveaxis(imp, 1, -1), counts), -1, 1)
    for r in range(R):
        for v in range(G + 1):
            g, i = gv[r, v], iv[r, v]
            tg, ti = g.sum(), i.sum()
            x[r, v, 0], x[r, v, -1], y[r, v, 0], y[r, v, -1] = 1, 0, 0, 1
            for e in range(C1 - 1):  # edge e: cells e+1..C are accepted
                if ti > 0:
                    x[r, v, e + 1] = i[e + 1:].sum() / ti
                if tg > 0:
                    y[r, v, e + 1] = 1 - g[e + 1:].sum() / tg
            if tg * ti > 0:
                pairs = sum(g[a] * i[b] * (1.0 if a > b else 0.5 if a == b else 0.0)
                            for a in range(C1) for b in range(C1))
                auc[r, v] = pairs / (tg * ti)
                ties[r, v] = sum(g[a] * i[a] for a in range(C1)) / (tg * ti)
    return x, y, auc, ties


def _counts(rng, R=5, G=3, cross=2, C1=9, empty=True):
    gen = rng.integers(0, 4, size=(R, G, C1)).astype(np.int64)
    imp = rng.integers(0, 6, size=(R, G + cross, C1)).astype(np.int64)
    if empty:
        gen[1, 0] = 0  # a replicate that drew no genuine comparisons of group 0
        imp[2, 1] = 0  # ... and no same-group impostors of group 1
    return gen, imp


@pytest.mark.parametrize("cats", [[True, True, True, False, False], [True, True, True, True, True],
                                  [False, True, False, True, False]])
def test_integer_counts_equal_the_definitions_exactly(cats):
    gen, imp = _counts(np.random.default_rng(7))
    cats = np.array(cats)
    got, want = fill(gen, imp, cats), _reference(gen, imp, cats)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert np.isnan(got[1][1, 1, 1:-1]).all() and np.isnan(got[2][1, 1])  # no genuine: FNMR and AUC undefined
    assert np.isnan(got[0][2, 2, 1:-1]).all()  # no impostors: FMR undefined


@pytest.mark.parametrize("views", [1, 2, 4])
def test_the_first_views_alone_equal_those_of_all_views(views):
    """``views``: only the first ones are made (the audit's reported views), the same bits as in the full pass."""
    gen, imp = _counts(np.random.default_rng(11))
    cats = np.array([True, True, True, False, True])
    for a, b in zip(fill(gen, imp, cats, views), fill(gen, imp, cats)):
        assert a.shape[1] == views
        np.testing.assert_array_equal(a, b[:, :views])
    for wrong in (0, gen.shape[1] + 2):  # no view, or one past the groups
        with pytest.raises(ValueError, match="views must be 1 to 4"):
            fill(gen, imp, cats, wrong)


def test_fractional_genuine_counts_equal_the_definitions_to_rounding():
    gen, imp = _counts(np.random.default_rng(8), empty=False)
    gen = gen * (2 / 3)  # the V-statistic's weights (n - 1) / n
    cats = np.array([True, True, True, False, True])
    got, want = fill(gen, imp, cats), _reference(gen, imp, cats)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


def test_large_counts_on_a_fine_grid_are_exact():
    """An audit's sizes (4,097 cells, ~2^28 impostors, sums of products up to ~2^50): every sum is still exact,
    so the values are NumPy's spelling of the definitions bit for bit."""
    rng = np.random.default_rng(9)
    gen = rng.integers(0, 2**10, size=(1, 1, 4097)).astype(np.int64)
    imp = rng.integers(0, 2**16, size=(1, 1, 4097)).astype(np.int64)
    x, y, auc, _ = fill(gen, imp, np.array([True]))
    tails = np.cumsum(imp[0, 0, ::-1])[::-1][1:]
    np.testing.assert_array_equal(x[0, 1, 1:-1], tails / imp.sum())
    np.testing.assert_array_equal(y[0, 1, 1:-1], 1 - np.cumsum(gen[0, 0, ::-1])[::-1][1:] / gen.sum())
    below = np.cumsum(imp[0, 0]) - imp[0, 0]
    assert auc[0, 1] == (gen[0, 0] * (below + 0.5 * imp[0, 0])).sum() / (gen.sum() * imp.sum())


def test_fractional_counts_equal_the_numpy_spelling_bit_for_bit():
    """The NumPy code this pass replaced (reversed cumulative sums, ndarray.sum totals, cumsum - i below a cell):
    the same floats, so a balanced or recentered audit's numbers did not move."""
    rng = np.random.default_rng(10)
    for G, C1 in ((3, 300), (12, 4097)):
        gen = rng.integers(0, 5, (4, G, C1)) * (rng.random((4, G, C1)) / 3)
        imp = rng.integers(0, 50, (4, G + 5, C1)) * (rng.random((4, G + 5, C1)) / 7)
        cats = np.arange(G + 5) % 4 > 0
        counts = SimpleNamespace(group_names=[f"g{j}" for j in range(G)], threshold_categories=cats)
        g = np.moveaxis(bs.views_gen(np.moveaxis(gen, 1, -1)), -1, 1)
        i = np.moveaxis(bs.views_imp(np.moveaxis(imp, 1, -1), counts), -1, 1)

        def tail(a):
            return np.cumsum(a[..., ::-1], axis=-1)[..., ::-1][..., 1:]

        x, y, auc, ties = fill(gen, imp, cats)
        np.testing.assert_array_equal(x[..., 1:-1], safe_ratio(tail(i), i.sum(axis=-1)[..., None]))
        np.testing.assert_array_equal(y[..., 1:-1], 1 - safe_ratio(tail(g), g.sum(axis=-1)[..., None]))
        below = np.cumsum(i, axis=-1) - i
        both = g.sum(axis=-1) * i.sum(axis=-1)
        np.testing.assert_array_equal(auc, safe_ratio((g * (below + 0.5 * i)).sum(axis=-1), both))
        np.testing.assert_array_equal(ties, safe_ratio((g * i).sum(axis=-1), both))
