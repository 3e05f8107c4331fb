"""Blockwise all-pairs similarity that is exact, hence identical on every backend and any tiling.

Embeddings are quantised once to integers (held in float64) small enough that every dot product, norm
and squared distance is an exactly representable integer: then a GEMM gives the same bits whatever the
BLAS, the summation order, the tile shape, the worker or the device (fp64). The final score is one
correctly rounded division or square root. The quantisation step (2^-bits of the largest coordinate) is
below float32 resolution for typical dimensions; ``quantisation_bits`` reports it.

Memory: one tile of ``block_rows x TILE_COLS`` float64 scores at a time (256 MiB at the defaults);
all-pairs never holds n x n floats, except inside :func:`tile_cache` when all the tiles fit in ``CACHE_BYTES``
(the same block also keeps the results of other passes made twice with the same arguments: :func:`once_per_call`).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable, Iterator, TypeVar

import numba as nb
import numpy as np
from threadpoolctl import ThreadpoolController

from matchaudit.blocks import DenseBlock, Metric

TILE_COLS = 16384
R = TypeVar("R")
CACHE_BYTES = 256 << 20  # what tile_cache may hold: one default tile's memory
RESULT_BYTES = 1 << 30  # what once_per_call may hold: results are what a pass built anyway, and a pass saved each
_MANTISSA = 52  # exact integers in float64 up to 2^53; keep a bit of headroom


def quantisation_bits(dim: int, metric: Metric) -> int:
    """Bits per coordinate so that all sums stay exact integers in float64 (see module doc)."""
    headroom = 0 if metric == "cosine" else 2  # |x|^2 + |y|^2 - 2 x.y needs 4x the range
    return int(min(24, (_MANTISSA - headroom - math.ceil(math.log2(max(dim, 2)))) // 2))


def quantise(embeddings: np.ndarray, metric: Metric) -> tuple[np.ndarray, float]:
    """Integer-valued float64 copy of the embeddings and the scale to undo it (x ~ q / scale).

    Cosine: rows are unit-normalised first (zero rows must have been rejected by validation).
    """
    x = np.array(embeddings, dtype=np.float64)  # a copy, worked in place: the caller's array stays as it was
    if metric == "cosine":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        top = 1.0
    else:
        top = float(np.abs(x).max()) or 1.0
    scale = float(2 ** quantisation_bits(x.shape[1], metric)) / top
    x *= scale
    return np.rint(x, out=x), scale


def self_score(metric: Metric) -> float:
    """Score of a sample against itself (the recentered bootstrap's self-pairs)."""
    return 1.0 if metric == "cosine" else 0.0


@nb.njit(cache=True, inline="always")
def score_of(dot: float, sq_a: float, sq_b: float, cosine: bool, scale: float) -> float:
    """The score formula, once: the exact (integer) dot product and squared norms of two quantised embeddings ->
    cosine similarity, or the negated Euclidean distance. Correctly rounded IEEE operations only, so every caller
    (tiles, listed pairs, sampled rows) gives the same bits; the GPU backend mirrors it in PyTorch
    (``engine/torch_backend.tile_scores``) and is tested bit for bit against it."""
    if cosine:
        return dot / np.sqrt(sq_a * sq_b)
    return -np.sqrt(max(sq_a + sq_b - 2.0 * dot, 0.0)) / scale


@nb.njit(cache=True, parallel=True)
def _finish_tile(dots: np.ndarray, sq_r: np.ndarray, sq_c: np.ndarray, cosine: bool, scale: float, diag: bool) -> None:
    """Exact dot products -> scores (:func:`score_of`), in place, in one parallel pass. ``diag`` (a tile on the
    diagonal): the entries below the diagonal become NaN. Whole rows are finished first (what is below the
    diagonal too): a row loop starting at the diagonal is not vectorised as well, and took 1.6x as long for the
    2,048 x 4,000 diagonal tile."""
    r, c = dots.shape
    for i in nb.prange(r):
        for j in range(c):
            dots[i, j] = score_of(dots[i, j], sq_r[i], sq_c[j], cosine, scale)
        if diag:
            for j in range(min(i, c)):
                dots[i, j] = np.nan


def row_scores(embeddings: np.ndarray, rows: np.ndarray, metric: Metric) -> np.ndarray:
    """Scores of the samples ``rows`` against every sample, (len(rows), n), as the all-pairs tiles compute them: the
    window predictor's and the grid's samples."""
    q, scale = quantise(embeddings, metric)
    sq = np.einsum("ij,ij->i", q, q)  # exact: integer-valued sums below 2^53
    with one_blas_thread():
        dots = q[rows] @ q.T
    _finish_tile(dots, sq[rows], sq, metric == "cosine", scale, False)
    return dots


@cache
def _controller() -> ThreadpoolController:
    """The thread pools of the loaded libraries, found once (``threadpool_limits`` looks them up on every call: 5 ms
    under load, a tenth of a small audit's time when paid at every pass)."""
    return ThreadpoolController()


def one_blas_thread():
    """Context: BLAS single-threaded inside (see :func:`iter_similarity_blocks`)."""
    return _controller().limit(limits=1, user_api="blas")


@dataclass
class _Held:
    """The tiles of one embeddings array under one metric and tiling, kept by :func:`tile_cache`."""

    embeddings: np.ndarray
    metric: Metric
    block_rows: int
    tiles: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


_HELD: ContextVar[list[_Held] | None] = ContextVar("matchaudit_tiles", default=None)
_RESULTS: ContextVar[list[tuple[tuple, tuple, Any]] | None] = ContextVar("matchaudit_results", default=None)


@contextmanager
def tile_cache() -> Iterator[list[_Held]]:
    """Inside the block, all-pairs tiles are computed once and served again whenever the tiles of the whole
    triangle fit in ``CACHE_BYTES`` together (else they stream as always). An audit reads the score matrix about
    ten times (exact metrics, counting passes, identity counts, calibration); on small data computing it again was
    half the job (K = 800 identities x 5: 0.33 of 0.71 s). The same scores either way (exact, module doc). The
    embeddings must not change inside the block: a library call's block, where they do not. Nested blocks share
    the outer one's tiles; other threads and processes compute their own."""
    held = _HELD.get()
    if held is not None:
        yield held
        return
    token, results = _HELD.set([]), _RESULTS.set([])
    try:
        yield _HELD.get()
    finally:
        _HELD.reset(token)
        _RESULTS.reset(results)


def _same(held: tuple, objects: tuple) -> bool:
    """Whether a held key's objects are these very objects (compared by identity)."""
    return len(held) == len(objects) and all(a is b for a, b in zip(held, objects))


def once_per_call(objects: tuple, values: tuple, compute: Callable[[], R],
                  derive: Callable[[tuple, Any], R | None] | None = None) -> R:
    """``compute()``, or inside :func:`tile_cache` its result for the same key computed before in the block: the key
    is ``objects`` (compared by identity, and kept alive with the result) and ``values`` (compared by ``==``). A
    pass over all pairs that several parts of one audit make with the same arguments (the identity counts at the
    same thresholds: the Wilson intervals, the cross-group cells, the studentized bootstrap) is made once.
    ``derive(held_values, held_result)``: this call's result from a held one of its kind -- the same ``objects``,
    ``values`` that differ in the last only (e.g. counts at a subset of the thresholds) -- or None; derived results
    are exact, not kept. Results whose arrays exceed ``RESULT_BYTES`` are not kept; callers must not change what
    they get."""
    results = _RESULTS.get()
    if results is None:
        return compute()
    held = [(vals, result) for objs, vals, result in results if _same(objs, objects)]
    for vals, result in held:
        if vals == values:
            return result
    for vals, result in held if derive is not None else ():
        if vals[:-1] != values[:-1]:  # another kind of result held for the same objects
            continue
        got = derive(vals, result)
        if got is not None:
            return got
    result = compute()
    if sum(x.nbytes for x in (result if isinstance(result, tuple) else (result,)) if isinstance(x, np.ndarray)
           ) <= RESULT_BYTES:
        results.append((objects, values, result))
    return result


def _held_tiles(embeddings: np.ndarray, metric: Metric, block_rows: int) -> dict[tuple[int, int], np.ndarray] | None:
    """The cache's tiles of this array and tiling, or None outside :func:`tile_cache` or when they do not fit."""
    held = _HELD.get()
    if held is None:
        return None
    for h in held:
        if h.embeddings is embeddings and h.metric == metric and h.block_rows == block_rows:
            return h.tiles
    n = embeddings.shape[0]
    size = 8 * sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in tiles(n, block_rows))
    used = 8 * sum(t.size for h in held for t in h.tiles.values())
    if used + size > CACHE_BYTES:
        return None
    held.append(_Held(embeddings, metric, block_rows))
    return held[-1].tiles


def iter_similarity_blocks(
    embeddings: np.ndarray, metric: Metric = "cosine", block_rows: int = 2048, part: tuple[int, int] = (0, 1),
    reuse: bool = False,
) -> Iterator[DenseBlock]:
    """Yield tiles covering the upper triangle (diagonal included) of the all-pairs score matrix.

    Tiles are ``block_rows x TILE_COLS``; a tile starting left of the diagonal is cut at it, so each
    unordered pair lies in exactly one tile with row index < column index. Diagonal entries are set to the
    exact self-score; entries below the diagonal are not comparisons (NaN). ``part=(i, P)``: only row blocks
    ``i, i+P, i+2P, ...`` (interleaved, so the P parts of the triangle carry similar work). ``reuse``: every
    tile is written into the first tile's memory (tiles only shrink), so a block's scores are overwritten
    when the next block is asked for; fresh memory for each tile costs the kernel's page faults and zeroing
    (about 15 ms per 64 MiB tile here, a tenth of a small job). Inside :func:`tile_cache`, tiles computed
    before are served from it (callers only read a block's scores).

    Threads: each tile's GEMM is cut into row strips computed by the engine's threads with single-threaded
    BLAS (for as long as the generator runs). A multi-threaded BLAS keeps its threads spinning after every
    call, and on a machine with few cores they take the cores from the Numba kernels that consume the tile
    (measured: twice the CPU time for the same work).
    """
    held = _held_tiles(embeddings, metric, block_rows)
    n = embeddings.shape[0]
    cosine = metric == "cosine"
    memory = q = None
    with ExitStack() as stack:
        for r0, r1, c0, c1 in tiles(n, block_rows, part):
            s = held.get((r0, c0)) if held is not None else None
            if s is None:
                if q is None:  # the first tile to compute: quantise, and the threads for the GEMM
                    q, scale = quantise(embeddings, metric)
                    sq = np.einsum("ij,ij->i", q, q)  # exact integers
                    stack.enter_context(one_blas_thread())
                    pool = stack.enter_context(ThreadPoolExecutor(nb.get_num_threads()))
                size = (r1 - r0) * (c1 - c0)
                if held is not None:
                    s = held[r0, c0] = np.empty((r1 - r0, c1 - c0))
                else:
                    if not reuse or memory is None or memory.size < size:
                        memory = np.empty(size)
                    s = memory[:size].reshape(r1 - r0, c1 - c0)
                _tile(q, sq, r0, r1, c0, c1, cosine, scale, pool, s)
                if c0 == r0:
                    k = np.arange(r1 - r0)
                    s[k, k] = self_score(metric)
            yield DenseBlock(row0=r0, col0=c0, scores=s)


def tiles(n: int, block_rows: int = 2048, part: tuple[int, int] = (0, 1)) -> Iterator[tuple[int, int, int, int]]:
    """``(r0, r1, c0, c1)`` of the tiles :func:`iter_similarity_blocks` yields for ``n`` samples, in its order."""
    for r0 in range(part[0] * block_rows, n, part[1] * block_rows):
        for c0 in range(r0, n, TILE_COLS):
            yield r0, min(n, r0 + block_rows), c0, min(n, c0 + TILE_COLS)


@nb.njit(cache=True)
def _upper(scores: np.ndarray, row0: int, col0: int, skip: int, s: np.ndarray, a: np.ndarray, b: np.ndarray,
           pos: int) -> int:
    """Copy a tile's comparisons (global row < global column) from its ``skip``-th on to s, a, b from ``pos``, until
    the tile or s ends; returns the new end."""
    r, c = scores.shape
    for i in range(r):
        lo = max(0, row0 + i + 1 - col0)
        row = max(c - lo, 0)
        if skip >= row:
            skip -= row
            continue
        take = min(row - skip, s.shape[0] - pos)
        for j in range(lo + skip, lo + skip + take):
            s[pos] = scores[i, j]
            a[pos] = row0 + i
            b[pos] = col0 + j
            pos += 1
        if pos == s.shape[0]:
            return pos
        skip = 0
    return pos


def hand_over(objects: tuple, values: tuple) -> Any | None:
    """The result :func:`once_per_call` holds for exactly ``objects`` and ``values``, taken out of the block's results
    (its one consumer takes it, and its memory goes with that consumer), or None."""
    results = _RESULTS.get()
    for k, (objs, vals, result) in enumerate(results or ()):
        if _same(objs, objects) and vals == values:
            del results[k]
            return result
    return None


class Triangle:
    """An accumulator of a scoring pass (:func:`matchaudit.engine.passes.feed`) that keeps every comparison ``i < j``
    of the tiles it is fed -- scores and samples, 16 bytes each -- and holds them for the audit (:func:`once_per_call`)
    so that :func:`upper_chunks` serves them instead of scoring the matrix again: the score views ride the bootstrap's
    pass. Only where the tiles' order is the one :func:`upper_chunks` yields whatever their rows: ``n <= TILE_COLS``
    (each tile spans every later column, so the order is row by row)."""

    def __init__(self, embeddings: np.ndarray, metric: Metric):
        n = embeddings.shape[0]
        assert n <= TILE_COLS, "the order of a wider matrix's tiles depends on their rows"
        m = n * (n - 1) // 2
        self.key = ((embeddings,), ("upper triangle", metric))
        self.s, self.a, self.b, self.pos = np.empty(m), np.empty(m, np.int32), np.empty(m, np.int32), 0

    def feed(self, block: DenseBlock) -> None:
        self.pos = _upper(block.scores, block.row0, block.col0, 0, self.s, self.a, self.b, self.pos)

    def done(self) -> None:
        assert self.pos == self.s.size, "a triangle fed part of the tiles"
        once_per_call(*self.key, lambda: (self.s, self.a, self.b))


def upper_chunks(embeddings: np.ndarray, metric: Metric, size: int) -> Iterator[list[np.ndarray]]:
    """Every comparison ``i < j`` of the all-pairs tiles, in their order, ``size`` (>= 1) at a time (the last fewer):
    [scores (float64), samples ``a``, ``b`` (int32)], a list this generator keeps no other reference to (a consumer
    may empty it to free the arrays); one tile and one chunk in memory (an external sort's runs). A :class:`Triangle`
    held for these embeddings is served instead (and handed over: no pass)."""
    got = hand_over((embeddings,), ("upper triangle", metric))
    if got is not None:
        for lo in range(0, got[0].size, size):
            yield [x[lo:lo + size] for x in got]
        return
    s = a = b = None
    pos = 0
    for block in iter_similarity_blocks(embeddings, metric, reuse=True):
        done = 0
        while True:
            if s is None:
                s, a, b, pos = np.empty(size), np.empty(size, np.int32), np.empty(size, np.int32), 0
            end = _upper(block.scores, block.row0, block.col0, done, s, a, b, pos)
            done, pos = done + end - pos, end
            if pos < size:
                break
            chunk, s, a, b = [s, a, b], None, None, None
            yield chunk
    if s is not None and pos:
        yield [s[:pos], a[:pos], b[:pos]]


def upper_triangle(embeddings: np.ndarray, metric: Metric = "cosine") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every comparison ``i < j`` of the all-pairs tiles, in their order: scores (float64) and samples ``a``, ``b``
    (int32); n(n-1)/2 of each, for callers that hold them all (served from :func:`tile_cache` when cached)."""
    n = embeddings.shape[0]
    m = n * (n - 1) // 2
    for s, a, b in upper_chunks(embeddings, metric, max(m, 1)):
        return s, a, b
    return np.empty(0), np.empty(0, np.int32), np.empty(0, np.int32)


STRIP = 256  # rows per GEMM strip


def _tile(q: np.ndarray, sq: np.ndarray, r0: int, r1: int, c0: int, c1: int, cosine: bool, scale: float,
          pool: ThreadPoolExecutor, s: np.ndarray) -> None:
    """Scores of rows ``r0:r1`` x columns ``c0:c1`` into ``s``, the GEMM in strips of ``STRIP`` rows spread
    over ``pool``. On the diagonal tile (``c0 == r0``) a strip starts at its first row's
    column, so the GEMM skips most of the square's lower triangle (half the tile's work when it is square);
    the entries below the diagonal are NaN."""

    def strip(a: int) -> None:
        b = min(r1, a + STRIP)
        lo = a if c0 == r0 else c0
        np.matmul(q[a:b], q[lo:c1].T, out=s[a - r0:b - r0, lo - c0:])

    list(pool.map(strip, range(r0, r1, STRIP)))
    _finish_tile(s, sq[r0:r1], sq[c0:c1], cosine, scale, c0 == r0)


@nb.njit(cache=True, parallel=True)
def _pair_scores(q: np.ndarray, sq: np.ndarray, a: np.ndarray, b: np.ndarray, cosine: bool, scale: float
                 ) -> np.ndarray:
    """Scores (:func:`score_of`) of rows ``a[k]`` and ``b[k]`` of ``q`` without gathering the rows (the dot products
    are exact integers: the order of the sums cannot change them)."""
    out = np.empty(a.shape[0])
    d = q.shape[1]
    for k in nb.prange(a.shape[0]):
        x, y = q[a[k]], q[b[k]]
        acc = 0.0
        for c in range(d):
            acc += x[c] * y[c]
        out[k] = score_of(acc, sq[a[k]], sq[b[k]], cosine, scale)
    return out


def pair_scores_exact(q: np.ndarray, sq: np.ndarray, a: np.ndarray, b: np.ndarray, cosine: bool, scale: float
                      ) -> np.ndarray:
    """Scores of rows ``a[k]``, ``b[k]`` of the quantised embeddings ``q`` (:func:`quantise`; ``sq`` their squared
    norms), bit for bit the all-pairs tiles' (what another device's scores are checked against)."""
    return _pair_scores(q, sq, np.asarray(a, np.int64), np.asarray(b, np.int64), cosine, scale)


def pair_scores(embeddings: np.ndarray, a: np.ndarray, b: np.ndarray, metric: Metric = "cosine") -> np.ndarray:
    """Scores of listed pairs, computed exactly as the all-pairs tiles compute them."""
    q, scale = quantise(embeddings, metric)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    s = pair_scores_exact(q, np.einsum("ij,ij->i", q, q), a, b, metric == "cosine", scale)
    if metric == "cosine":
        s[a == b] = 1.0
    return s