"""The threshold grid: cell edges built from the data, dense where low FMR targets need them.

Cells (``C`` edges, ``C + 1`` cells): with rule ``>=`` cell ``k`` holds scores with exactly ``k`` edges
``<= s`` (``[e_{k-1}, e_k)``); with ``>`` exactly ``k`` edges ``< s`` (``(e_{k-1}, e_k]``). Either way the
comparisons accepted at threshold ``e_c`` are exactly those in cells ``> c``, so counts at every edge are
exact; requested thresholds are made edges. The grid only sets the curve's resolution: thresholds at FMR
targets are refined to exact values (see :mod:`matchaudit.engine.driver`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from matchaudit.cells import Lookup, cell_of, table
from matchaudit.definitions import Rule
from matchaudit.model import MatchData, PairBlock
from matchaudit.scores import row_scores, upper_triangle
from matchaudit.sorting import sorted_values


@dataclass(frozen=True)
class Grid:
    edges: np.ndarray  # (C,) float64, strictly increasing
    rule: Rule = ">="

    @property
    def n_cells(self) -> int:
        return int(self.edges.shape[0]) + 1

    def cell_of(self, s: np.ndarray | float) -> np.ndarray:
        """Cell index of scores (:func:`matchaudit.cells.cell_of`)."""
        return cell_of(self.edges, s, self.rule)

    def edge_index(self, t: float) -> int:
        """Index of threshold ``t`` among the edges (it must be one, or infinite): the comparisons accepted at it are
        those in cells ``> index``, so ``-inf`` is -1 (every score is accepted) and ``+inf`` is ``C`` (none is:
        scores are finite), whichever the rule."""
        if t == -np.inf:
            return -1
        if t == np.inf:
            return int(self.edges.shape[0])
        i = int(np.searchsorted(self.edges, t))
        if i >= self.edges.size or self.edges[i] != t:
            raise KeyError(f"threshold {t!r} is not a grid edge; pass it in `thresholds` when building the grid")
        return i

    def lookup(self) -> Lookup:
        """The fast lookup's tables (:func:`matchaudit.cells.table`)."""
        return table(self.edges, self.rule)


def strided(data: MatchData, size: int) -> Iterator[PairBlock]:
    """Every k-th comparison of a listed table (k = its comparisons // ``size``, at least 1), block by block, streamed
    (out-of-core tables too): a deterministic sample of about ``size`` (the grid's and the window's)."""
    step = max(1, data.n_comparisons() // size)
    at = 0
    for p in data.blocks():
        first = -at % step
        at += len(p)
        yield p.take(slice(first, None, step))


def sorted_sample(data: MatchData, max_rows: int, max_scores: int = 20_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor scores of a deterministic subsample, each sorted (rows every k-th sample against all;
    listed: every k-th comparison, at most about ``max_scores``). Every row (k = 1) holds each pair twice: its
    scores are then read from the all-pairs tiles (those an audit has cached, :func:`matchaudit.scores.tile_cache`)
    once per pair, sorted and repeated, the same sorted scores for half the sort and no product of its own (the
    sample of 1,000 samples was 63 of a 119 ms audit)."""
    if data.protocol == "listed":
        gen, imp = [], []
        for p in strided(data, max_scores):
            gen.append(p.score[p.genuine])
            imp.append(p.score[~p.genuine])
        return sorted_values(np.concatenate(gen)), sorted_values(np.concatenate(imp))
    assert data.samples is not None and data.samples.embeddings is not None
    ident = data.samples.identity
    n = ident.shape[0]
    if n // max_rows <= 1:
        s, a, b = upper_triangle(data.samples.embeddings, data.metric)
        same = ident[a] == ident[b]
        return np.repeat(sorted_values(s[same]), 2), np.repeat(sorted_values(s[~same]), 2)
    rows = np.arange(0, n, n // max_rows)
    s = row_scores(data.samples.embeddings, rows, data.metric)
    gen = ident[rows, None] == ident[None, :]
    off = rows[:, None] != np.arange(n)[None, :]
    return sorted_values(s[gen & off]), sorted_values(s[~gen])


def _sorted_quantile(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantiles of an already sorted array (no partitioning pass)."""
    pos = q * (x.size - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, x.size - 1)
    return x[lo] + (x[hi] - x[lo]) * (pos - lo)


def build_grid(
    data: MatchData,
    n_cells: int = 4096,
    rule: Rule = ">=",
    thresholds: np.ndarray | list[float] = (),
    max_rows: int = 1000,
    max_scores: int = 1 << 19,
) -> Grid:
    """Edges at impostor quantiles log-spaced in FMR (half the cells, down to the sample's resolution),
    impostor quantiles linear in FMR (a quarter) and genuine quantiles linear in FNMR (a quarter), plus the
    requested ``thresholds`` (exact edges). Quantiles that coincide (the top ranks of the log-spaced part)
    are replaced by requesting more, so the grid has at least ``n_cells`` distinct edges whenever the sample
    has that many distinct scores. The sample: at most ``max_rows`` rows of the score matrix and about
    ``max_scores`` scores (the sort of the sample is the grid's main cost). Thresholds at FMR targets are
    exact whatever the sample (see :mod:`matchaudit.engine.driver`); the sample sets the curve's resolution in
    the far tail (FMR steps below about ``1 / max_scores`` share one cell's range)."""
    n = data.samples.ids.shape[0] if data.protocol == "all-pairs" else 1
    gen, imp = sorted_sample(data, max(1, min(max_rows, max_scores // max(n, 1))), max_scores)
    enough = _distinct_up_to(imp, gen, n_cells)
    request = n_cells
    while True:
        e = _edges(imp, gen, request, thresholds)
        if e.size >= enough or request >= 16 * n_cells:
            break
        request = int(request * 1.25) + 1
    if e.size == 0:
        e = np.zeros(1)
    return Grid(edges=e, rule=rule)


def _distinct_up_to(a: np.ndarray, b: np.ndarray, cap: int) -> int:
    """``min(cap, distinct values in the union of two sorted arrays)``, from every k-th value of ``a`` when those
    already hold ``cap`` (a subsequence of a sorted array is sorted, with no more distinct values): a data set's
    scores usually do, and counting all of them was 3.4 of a 60 ms audit (K = 200 identities)."""
    step = max(1, a.size // (8 * cap))
    if step > 1 and _n_distinct(a[::step], b) >= cap:
        return cap
    return min(cap, _n_distinct(a, b))


def _n_distinct(a: np.ndarray, b: np.ndarray) -> int:
    """Distinct values in the union of two sorted arrays (without sorting their concatenation)."""
    ua = a[np.concatenate([[True], a[1:] != a[:-1]])] if a.size else a
    ub = b[np.concatenate([[True], b[1:] != b[:-1]])] if b.size else b
    if ua.size == 0 or ub.size == 0:
        return int(ua.size + ub.size)
    i = np.searchsorted(ua, ub).clip(0, ua.size - 1)
    return int(ua.size + ub.size - np.count_nonzero(ua[i] == ub))


def _edges(imp: np.ndarray, gen: np.ndarray, n_cells: int, thresholds) -> np.ndarray:
    """Distinct finite edges for a request of ``n_cells`` quantiles (sorted samples in)."""
    edges = [np.asarray(thresholds, dtype=np.float64)]
    if imp.size:
        m = imp.size
        tail = np.unique(np.round(np.geomspace(1, m, n_cells // 2)).astype(np.int64))  # ranks from the top
        edges += [imp[m - tail], _sorted_quantile(imp, np.linspace(0, 1, n_cells // 4))]
    if gen.size:
        edges.append(_sorted_quantile(gen, np.linspace(0, 1, n_cells // 4)))
    e = np.unique(np.concatenate(edges))
    return e[np.isfinite(e)]


def grid_from_edges(edges, rule: Rule = ">=") -> Grid:
    e = np.unique(np.asarray(edges, dtype=np.float64))
    return Grid(edges=e, rule=rule)


__all__ = ["build_grid", "Grid", "grid_from_edges", "sorted_sample"]
