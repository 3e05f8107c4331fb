"""Blockwise all-pairs scores: exact (bit-identical across tilings and with listed pairs), close to the
unquantised float64 similarity, self-scores exact, and never an n x n matrix."""

from __future__ import annotations

import json

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


def test_tile_cache_serves_the_same_scores_computed_once(monkeypatch):
    """Inside tile_cache every tile is computed once (all parts, any order) and is the streamed tile bit for bit;
    a triangle over CACHE_BYTES streams as before; outside, nothing is kept."""
    monkeypatch.setattr(scores, "TILE_COLS", 37)
    x = np.random.default_rng(3).standard_normal((120, 16))
    ref = _upper(iter_similarity_blocks(x, "euclidean", block_rows=25), 120)
    calls = []
    tile = scores._tile
    monkeypatch.setattr(scores, "_tile", lambda *a: (calls.append(a[2:6]), tile(*a)))
    with scores.tile_cache() as held:
        parts = [list(iter_similarity_blocks(x, "euclidean", block_rows=25, part=(i, 2), reuse=True))
                 for i in (1, 0)]
        n_tiles = len(calls)
        again = list(iter_similarity_blocks(x, "euclidean", block_rows=25))
        with scores.tile_cache() as inner:  # nested: the outer cache
            assert inner is held
            list(iter_similarity_blocks(x, "euclidean", block_rows=25))
    assert len(calls) == n_tiles == len(again) and len(set(calls)) == n_tiles
    assert {id(b.scores) for p in parts for b in p} == {id(b.scores) for b in again}
    i, j = np.triu_indices(120, k=1)
    assert np.array_equal(_upper(again, 120)[i, j], ref[i, j])
    assert np.array_equal(_upper([b for p in parts for b in p], 120)[i, j], ref[i, j])
    list(iter_similarity_blocks(x, "euclidean", block_rows=25))
    assert len(calls) == 2 * n_tiles  # outside the block: computed again
    monkeypatch.setattr(scores, "CACHE_BYTES", 8 * 120 * 120 // 2)  # less than the triangle's tiles
    with scores.tile_cache() as held:
        list(iter_similarity_blocks(x, "euclidean", block_rows=25))
        list(iter_similarity_blocks(x, "euclidean", block_rows=25))
        assert held == []
    assert len(calls) == 4 * n_tiles


def test_an_audit_leaves_the_cached_tiles_as_computed():
    """No reader writes into a served tile: after an audit with tests, calibration and every interval kind inside
    one cache, the held tiles equal freshly computed ones (and the audit equals one without the cache)."""
    import matchaudit as ma
    from matchaudit.auditing import audit

    data = ma.simulate(samples_per_identity=4, dim=16, seed=5).as_data()
    kw = dict(fmr=[1e-2], tests=ma.TestOptions(n_resamples=49),
              intervals=ma.IntervalOptions("wilson,double-or-nothing,vertex", n_resamples=40))
    with scores.tile_cache() as held:
        inside = audit(data, **kw).to_dict()
    assert len(held) == 1 and held[0].embeddings is data.samples.embeddings
    fresh = {(b.row0, b.col0): b.scores for b in iter_similarity_blocks(data.samples.embeddings, data.metric)}
    assert fresh.keys() == held[0].tiles.keys()
    for k, s in held[0].tiles.items():
        assert np.array_equal(s, fresh[k], equal_nan=True)
    outside = audit.__wrapped__(data, **kw).to_dict()
    inside.pop("command", None), outside.pop("command", None)
    assert json.dumps(inside, sort_keys=True, default=str) == json.dumps(outside, sort_keys=True, default=str)  # NaNs


def test_once_per_call_keys_by_identity_and_value(monkeypatch):
    """Outside tile_cache every call computes; inside, a result is served again only for the same objects (by
    identity, not by equal content) and equal values; results over RESULT_BYTES are not kept; ``derive`` serves
    another call from a held result of the same objects, and only when it says it can."""
    made = []

    def compute(tag):
        return lambda: (made.append(tag), np.full(4, float(len(made))))[1]

    a, b = np.zeros(3), np.zeros(3)
    scores.once_per_call((a,), (1,), compute("out"))
    scores.once_per_call((a,), (1,), compute("out"))
    assert made == ["out", "out"]
    with scores.tile_cache():
        first = scores.once_per_call((a,), (1,), compute("a1"))
        assert scores.once_per_call((a,), (1,), compute("again")) is first
        scores.once_per_call((b,), (1,), compute("b1"))  # equal content, another array
        scores.once_per_call((a,), (2,), compute("a2"))
        sub = lambda vals, held: held[:2] if vals == (2,) else None  # noqa: E731  (only from the values (2,))
        assert scores.once_per_call((a,), (5,), compute("never"), derive=sub).tolist() == [5.0, 5.0]
        scores.once_per_call((b,), (5,), compute("b5"), derive=sub)  # b holds (1,) only: computed
        monkeypatch.setattr(scores, "RESULT_BYTES", 16)
        scores.once_per_call((a,), (3,), compute("big"))
        scores.once_per_call((a,), (3,), compute("big"))
    assert made == ["out", "out", "a1", "b1", "a2", "b5", "big", "big"]
    scores.once_per_call((a,), (1,), compute("after"))  # the block's results are gone with it
    assert made[-1] == "after"


def _same_counts(x, y) -> bool:
    """Every field of two IdentityCounts equal (arrays and lists of arrays element by element)."""
    import dataclasses

    for f in dataclasses.fields(x):
        a, b = getattr(x, f.name), getattr(y, f.name)
        if isinstance(a, list):
            if len(a) != len(b) or not all(np.array_equal(u, v) for u, v in zip(a, b)):
                return False
        elif isinstance(a, np.ndarray):
            if not np.array_equal(a, b):
                return False
        elif f.name != "categories" and a != b:
            return False
    return True


def test_identity_counts_at_the_same_thresholds_pass_once_inside_a_call(monkeypatch):
    """An audit asks for identity counts at the same thresholds several times (Wilson intervals, cross-group cells):
    inside one call the pass over all pairs is made once, and every count equals a fresh computation's."""
    import matchaudit as ma
    from matchaudit.engine import identity

    data = ma.simulate(samples_per_identity=4, dim=16, seed=5).as_data()
    passes = []
    real = identity._all_pairs_hits
    monkeypatch.setattr(identity, "_all_pairs_hits", lambda *a: (passes.append(a[1].tolist()), real(*a))[1])
    fresh = [identity.identity_counts(data, t) for t in ([0.3, 0.5], [0.5, 0.3], [0.4])]
    assert len(passes) == 3
    with scores.tile_cache():
        inside = [identity.identity_counts(data, t) for t in ([0.3, 0.5], [0.5, 0.3], [0.4])]
    assert passes[3:] == [[0.3, 0.5], [0.4]]  # the second call sorts its thresholds the same: served
    assert all(_same_counts(a, b) for a, b in zip(inside, fresh))
    assert not _same_counts(inside[0], inside[2])  # the comparison can fail


@pytest.mark.parametrize("n, sizes", [(30, (1, 7, 435, 436)), (2100, (999_983, 2_097_152, 2_203_950, 2_203_951))])
def test_upper_chunks_are_the_upper_triangle_cut_anywhere(n, sizes):
    """Chunks of any size, cut inside rows and across the tiles of two row blocks (n = 2,100 > 2,048 rows),
    concatenate to every pair i < j once, in the tiles' order, with the pairs' own scores."""
    x = np.random.default_rng(4).standard_normal((n, 5)).astype(np.float32)
    s, a, b = scores.upper_triangle(x)
    assert s.size == n * (n - 1) // 2 and np.all(a < b)
    assert np.unique(a.astype(np.int64) * n + b).size == s.size
    np.testing.assert_array_equal(s, pair_scores(x, a, b))
    for size in sizes:
        chunks = list(scores.upper_chunks(x, "cosine", size))
        assert [len(c[0]) for c in chunks[:-1]] == [size] * (len(chunks) - 1)
        for k, want in enumerate((s, a, b)):
            np.testing.assert_array_equal(np.concatenate([c[k] for c in chunks]), want)


def test_a_derivation_sees_only_results_of_its_kind():
    """``once_per_call(derive=...)`` offers a held result only when its values differ from the call's in the last
    (the same kind of result at other arguments): a window sample or a triangle held for the same data never reaches
    the thresholds' or the identity counts' derivation (a listed table's sample once made one read text as floats)."""
    from matchaudit import scores

    obj = object()

    def never(vals, held):
        raise AssertionError(f"derived from {vals!r}")

    with scores.tile_cache():
        scores.once_per_call((obj,), ("window sample",), lambda: "sample")
        scores.once_per_call((obj,), ("thresholds", ">=", b"\x00"), lambda: "first")
        assert scores.once_per_call((obj,), ("counts", b"\x01"), lambda: "fresh", derive=never) == "fresh"
        got = scores.once_per_call((obj,), ("thresholds", ">=", b"\x01"), lambda: "fresh",
                                   derive=lambda vals, held: f"{held} at {vals[-1]!r}")
        assert got == "first at b'\\x00'"
        assert scores.hand_over((obj,), ("window sample",)) == "sample"
        assert scores.hand_over((obj,), ("window sample",)) is None
