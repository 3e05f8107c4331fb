"""Weight distributions of the schemes, and the per-unit reproducibility the distributed backends need."""

from __future__ import annotations

import numpy as np

from matchaudit import resampling as rs
from matchaudit.engine.comparison_level import comparison_lists

SIZES = np.array([1, 2, 3, 5, 8])
LAYOUT = rs.Layout(identity_group=np.array([0, 1, 0, 1, 1]), sample_identity=np.repeat(np.arange(5), SIZES))
B = 4000


def test_within_identity_multinomial_moments():
    """Counts of a sample of an identity of size n: mean 1, variance 1 - 1/n (multinomial), sums exactly n.
    Tolerance: 5 standard errors of the mean / variance estimates over B = 4000 replicates."""
    c = rs.WithinIdentity(3).sample_weights(np.arange(1, B + 1), LAYOUT)
    ident = LAYOUT.sample_identity
    for k, n in enumerate(SIZES):
        ck = c[:, ident == k]
        assert (ck.sum(axis=1) == n).all()
        var = 1 - 1 / n
        assert abs(ck.mean() - 1) <= 5 * np.sqrt(var / B)
        if n > 1:
            assert abs(ck[:, 0].var() - var) < 5 * np.sqrt(2 * var**2 / B) + 0.05


def test_within_identity_subset_reproduces():
    full = rs.WithinIdentity(5).sample_weights([3, 9], LAYOUT)
    part = rs.WithinIdentity(5).sample_weights([9], LAYOUT, identities=np.array([3, 1]))
    mask = np.isin(LAYOUT.sample_identity, [3, 1])
    np.testing.assert_array_equal(part[0, mask], full[1, mask])
    assert (part[0, ~mask] == 0).all()


def test_double_or_nothing_balanced_and_per_unit():
    lay = rs.Layout(identity_group=np.zeros(200, np.int64))
    w, _ = rs.DoubleOrNothing(1).identity_weights(np.arange(1, 501), lay)
    assert set(np.unique(w)) == {0, 2}
    share = (w == 2).mean()  # 100,000 fair coins: sd 0.0016
    assert abs(share - 0.5) < 0.008
    sub, _ = rs.DoubleOrNothing(1).identity_weights([7], lay, identities=np.array([5, 150]))
    np.testing.assert_array_equal(sub[0], w[6, [5, 150]])


def test_vertex_and_subsets_counts():
    lay = rs.Layout(identity_group=np.zeros(50, np.int64))
    w, iw = rs.Vertex(2).identity_weights(np.arange(1, 2001), lay)
    assert (w.sum(axis=1) == 50).all() and w is iw
    assert abs(w.var() - (1 - 1 / 50)) < 0.05  # multinomial variance, 100,000 counts
    u, w2 = rs.Subsets(2).identity_weights(np.arange(1, 11), lay)
    assert (u.sum(axis=1) == 49).all() and (w2.sum(axis=1) == 50).all()
    assert ((w2 - u) >= 0).all()  # u is the first K-1 of the same draws


def test_permutation_preserves_group_sizes_and_is_uniform():
    g = rs.GroupPermutation(9).identity_groups(np.arange(1, 3001), LAYOUT)
    assert (np.sort(g, axis=1) == np.sort(LAYOUT.identity_group)).all()
    # identity 0 lands in group 1 with probability 3/5 (sd 0.009 over 3000)
    assert abs((g[:, 0] == 1).mean() - 0.6) < 0.04


def test_comparison_level_totals():
    ident = LAYOUT.sample_identity
    a, b = np.triu_indices(ident.size, 1)
    gen = ident[a] == ident[b]
    lists = comparison_lists(ident[a], ident[b], gen, 5)
    w = rs.IIDComparison(1).comparison_weights(np.arange(1, 50), LAYOUT, lists)
    assert (w[:, gen].sum(axis=1) == gen.sum()).all() and (w[:, ~gen].sum(axis=1) == (~gen).sum()).all()
    t = rs.TwoLevel(1).comparison_weights(np.arange(1, 50), LAYOUT, lists)
    v, _ = rs.Vertex(1).identity_weights(np.arange(1, 50), LAYOUT)
    sizes = SIZES
    # genuine: each draw of k re-draws its n_k(n_k-1) ordered genuine pairs
    np.testing.assert_array_equal(t[:, gen].sum(axis=1), (v * sizes * (sizes - 1)).sum(axis=1))
    np.testing.assert_array_equal(t[:, ~gen].sum(axis=1), (v * sizes * (sizes.sum() - sizes)).sum(axis=1))
