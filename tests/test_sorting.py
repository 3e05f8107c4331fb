"""The radix sorts give NumPy's sorted values and stable order, and the grid's score sample is the same sorted multiset
whichever way it is read (every row: the all-pairs tiles once per pair, repeated; a stride of rows: a product)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from matchaudit.engine import grid as grid_module
from matchaudit.sorting import merge_order, sorted_values, stable_order
from tests.engine_reference import make_data, score_matrix


def _hostile(size: int, decimals: int) -> np.ndarray:
    """Rounded normal scores (many ties) with both NaNs, both zeros, infinities, subnormals and huge values."""
    g = np.random.default_rng(size)
    x = np.round(g.standard_normal(size), decimals)
    for value, share in ((np.nan, 0.02), (-np.nan, 0.01), (-np.inf, 0.01), (np.inf, 0.01), (-0.0, 0.02),
                         (5e-324, 0.005), (-5e-324, 0.005), (1e30, 0.005), (-1e30, 0.005)):
        x[g.random(size) < share] = value
    return x


@pytest.mark.parametrize("size", [0, 1, 5, 65_537, 196_615])
def test_sorted_values_equal_numpy_sort(size):
    x = _hostile(size, 2)
    before = x.copy()
    for y in (x, x.astype(np.float32), x[::3]):
        out = sorted_values(y)
        assert out.dtype == y.dtype and np.array_equal(out, np.sort(y), equal_nan=True)
        assert np.array_equal(np.signbit(out[out == 0]), np.sort(np.signbit(y[y == 0]))[::-1])  # -0.0 kept
    assert np.array_equal(x, before, equal_nan=True)  # the input is not sorted in place


@pytest.mark.parametrize("size", [0, 1, 5, 65_537, 196_615])
def test_stable_order_is_numpys_stable_argsort(size):
    x = _hostile(size, 1)  # many ties: a stable order is one permutation; -0.0 and 0.0 equal, as NumPy's
    before = x.copy()
    assert np.array_equal(stable_order(x), np.argsort(x, kind="stable"))
    assert np.array_equal(stable_order(x.astype(np.float32)), np.argsort(x.astype(np.float32), kind="stable"))
    assert np.array_equal(stable_order(x[::3]), np.argsort(x[::3], kind="stable"))  # a strided view
    assert np.array_equal(x, before, equal_nan=True)


def test_stable_order_of_all_equal_and_of_scores_in_one_binade():
    """Every pass skipped (one key), and scores whose high bytes agree (cosine scores in [0.5, 1))."""
    assert np.array_equal(stable_order(np.full(1000, 0.25)), np.arange(1000))
    x = 0.5 + np.random.default_rng(1).integers(0, 2000, 50_000) / 4096
    assert np.array_equal(stable_order(x), np.argsort(x, kind="stable"))
    with pytest.raises(TypeError, match="floats"):
        stable_order(np.arange(5))
    with pytest.raises(TypeError, match="floats"):
        sorted_values(np.arange(5))


def _brute_sample(data, rows):
    """The grid sample by definition: rows ``rows`` against every sample, the diagonal left out, sorted."""
    S = score_matrix(data)
    ident = data.samples.identity
    n = ident.size
    same = ident[rows, None] == ident[None, :]
    off = rows[:, None] != np.arange(n)[None, :]
    return np.sort(S[rows][same & off]), np.sort(S[rows][~same])


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("max_rows", [1000, 12, 5])  # every row (from the tiles), then strides of 2 and 5 rows
def test_grid_sample_is_the_sorted_scores_of_its_rows(metric, max_rows):
    data = make_data(seed=3, sizes=(1, 2, 3, 4, 1, 5, 2, 3, 4, 2), groups=(0, 1, 0, 2, 1, 2, 0, 1, 0, 2), dim=4)
    data = dataclasses.replace(data, metric=metric, score_kind="cosine" if metric == "cosine" else "negated euclidean")
    n = data.samples.ids.shape[0]
    gen, imp = grid_module.sorted_sample(data, max_rows)
    ref_gen, ref_imp = _brute_sample(data, np.arange(0, n, max(1, n // max_rows)))
    assert np.array_equal(gen, ref_gen)
    assert np.array_equal(imp, ref_imp)


@pytest.mark.parametrize("levels", [3, 50, 4000, None])  # distinct values: few, some, about the cap, all
def test_distinct_up_to_is_the_capped_count_of_the_union(levels):
    """The grid's stopping rule reads ``min(cap, distinct values of both samples)``; its strided shortcut must give
    exactly that (here the stride's values hold the cap for ``None`` only; 4,000 levels reach it in full only)."""
    g = np.random.default_rng(7)
    for n_a, n_b in ((0, 0), (0, 9), (9, 0), (300_000, 2_000), (300_000, 0)):
        a = g.standard_normal(n_a) if levels is None else g.integers(0, levels, n_a) / levels
        b = g.standard_normal(n_b) if levels is None else g.integers(0, 2 * levels, n_b) / levels
        a, b = np.sort(np.repeat(a, 2)), np.sort(b)  # repeated, as the sample of every row is
        full = np.unique(np.concatenate([a, b])).size
        for cap in (1, 64, 4096, 5000):
            assert grid_module._distinct_up_to(a, b, cap) == min(cap, full), (n_a, n_b, cap)


@pytest.mark.parametrize("size, run", [(0, 5), (1, 5), (1000, 7), (65_537, 1000), (10_007, 10_007), (3000, 1)])
def test_merged_runs_are_the_stable_order_of_the_stream(size, run):
    """Runs of a hostile stream (ties, both NaNs and zeros, infinities) each in stable order, merged a few at a
    time: ``np.argsort(kind="stable")`` of the whole stream (ties by run, then position in the run)."""
    x = _hostile(size, 1)
    bounds = list(range(0, size, run)) + [size]
    orders = [np.arange(a, b)[stable_order(x[a:b])] for a, b in zip(bounds[:-1], bounds[1:])]
    stream = np.concatenate(orders) if orders else np.zeros(0, np.int64)  # stream position of each run entry
    heads, ends = np.array(bounds[:-1], np.int64), np.array(bounds[1:], np.int64)
    got = [merge_order(x[stream], heads, ends, 333) for _ in range(size // 333 + 2)]
    assert [g.size for g in got] == [min(333, max(size - 333 * i, 0)) for i in range(len(got))]
    assert np.array_equal(stream[np.concatenate(got)], np.argsort(x, kind="stable"))
