"""Blockwise all-pairs scores: exact (bit-identical across tilings and with listed pairs), close to the
unquantised float64 similarity, self-scores exact, and never an n x n matrix."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit import scores
from matchaudit.scores import iter_similarity_blocks, pair_scores, quantisation_bits


def _upper(blocks, n):
    out = np.full((n, n), np.nan)
    for b in blocks:
        r, c = b.scores.shape
        out[b.row0:b.row0 + r, b.col0:b.col0 + c] = b.scores
    return out


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_tiles_are_bit_identical_across_tilings_and_with_listed_pairs(metric, monkeypatch):
    x = np.random.default_rng(0).standard_normal((300, 48)).astype(np.float32)
    ref = _upper(iter_similarity_blocks(x, metric, block_rows=300), 300)
    monkeypatch.setattr(scores, "TILE_COLS", 37)
    small = _upper(iter_similarity_blocks(x, metric, block_rows=7), 300)
    reused = []
    for b in iter_similarity_blocks(x, metric, block_rows=7, reuse=True):
        if reused:  # written over the previous tile's memory
            assert np.shares_memory(b.scores, reused[-1][1])
        reused.append((b, b.scores, b.scores.copy()))
    reused = _upper((type(b)(row0=b.row0, col0=b.col0, scores=kept) for b, _, kept in reused), 300)
    i, j = np.triu_indices(300, k=1)
    assert np.array_equal(ref[i, j], small[i, j])
    assert np.array_equal(ref[i, j], reused[i, j])
    assert np.array_equal(ref[i, j], pair_scores(x, i, j, metric))
    assert np.isnan(ref[j, i]).all()  # below the diagonal: not comparisons


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_scores_are_close_to_float64_similarity_and_self_scores_exact(metric):
    x = np.random.default_rng(1).standard_normal((200, 512)).astype(np.float32)
    s = _upper(iter_similarity_blocks(x, metric, block_rows=64), 200)
    x64 = x.astype(np.float64)
    if metric == "cosine":
        u = x64 / np.linalg.norm(x64, axis=1, keepdims=True)
        exact = u @ u.T
        tol = 1e-6
    else:
        exact = -np.sqrt(((x64[:, None, :] - x64[None, :, :]) ** 2).sum(-1))
        tol = 1e-5 * np.abs(exact).max()
    i, j = np.triu_indices(200, k=1)
    assert np.abs(s[i, j] - exact[i, j]).max() < tol
    assert (np.diag(s) == (1.0 if metric == "cosine" else 0.0)).all()


def test_quantised_dot_products_cannot_overflow_the_float64_mantissa():
    for dim in (2, 128, 512, 4096):
        assert dim * 2 ** (2 * quantisation_bits(dim, "cosine")) <= 2**52
        assert 4 * dim * 2 ** (2 * quantisation_bits(dim, "euclidean")) <= 2**52


def test_tiles_are_bounded(monkeypatch):
    monkeypatch.setattr(scores, "TILE_COLS", 64)
    x = np.random.default_rng(2).standard_normal((500, 8))
    assert max(b.scores.size for b in iter_similarity_blocks(x, "cosine", block_rows=32)) <= 32 * 64
