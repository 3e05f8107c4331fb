"""The one cell lookup (matchaudit.cells) against its definition, np.searchsorted, for both rules: the scalar
binary search, the row-wise branch-free form with its fix-ups, and the tables of the grid and of the tally."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit import cells as L


def _scalar(s: np.ndarray, look: L.Lookup) -> np.ndarray:
    return np.array([L.cell(x, look.padded, look.start, look.lo, look.scale, look.ge) for x in s])


def _row(s: np.ndarray, look: L.Lookup) -> np.ndarray:
    out, fix = np.empty(s.size, np.int64), np.empty(s.size, np.int64)
    L.row_cells(s[None, :], 0, 0, s.size, look.padded, look.start, look.lo, look.scale, look.ge, out, fix)
    return out


def _probes(edges: np.ndarray, g: np.random.Generator) -> np.ndarray:
    finite = edges[np.isfinite(edges)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
    span = max(hi - lo, 1.0)
    return np.concatenate([g.uniform(lo - span / 5, hi + span / 5, 5000), edges, np.nextafter(edges, -np.inf),
                           np.nextafter(edges, np.inf), [np.inf, -np.inf, 1e300, -1e300, 0.0]])


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("case", ["clustered", "one edge", "two equal-ish", "many edges", "infinite", "tally empty"])
def test_lookup_counts_the_edges_below_each_score(rule, case):
    """Buckets holding none, one and hundreds of edges (a cluster of 300 edges within one bucket's width), more
    edges than ``MAX_BUCKETS / 4`` (the table's cap), a single edge (zero range), infinite edges (the tally's
    ``[inf]`` when nothing is genuine; a -inf edge: zero scale), scores equal to edges and one ulp either side."""
    g = np.random.default_rng(3)
    edges = {
        "clustered": np.concatenate([g.uniform(-1, 1, 3000), 0.25 + g.uniform(0, 1e-6, 300), [-1.0, 1.0]]),
        "one edge": np.array([0.5]),
        "two equal-ish": np.array([0.5, np.nextafter(0.5, 1.0)]),
        "many edges": g.normal(size=L.MAX_BUCKETS // 2),
        "infinite": np.array([-np.inf, -0.5, 0.0, 0.5]),
        "tally empty": np.array([np.inf]),
    }[case]
    edges = np.unique(edges)
    look = L.table(edges, rule)
    assert look.start.size - 1 <= L.MAX_BUCKETS and look.start[-1] == edges.size
    if case == "clustered":
        per = np.diff(look.start)
        assert per.max() >= 100 and (per == 1).any() and (per == 0).any()
    s = _probes(edges, g)
    want = L.cell_of(edges, s, rule)
    np.testing.assert_array_equal(_scalar(s, look), want)
    np.testing.assert_array_equal(_row(s, look), want)


def test_the_rule_picks_the_side():
    """At a score equal to an edge, rule ">=" counts the edge (the comparison is accepted there), ">" does not."""
    edges = np.array([0.0, 1.0, 2.0])
    assert L.cell_of(edges, 1.0, ">=") == 2 and L.cell_of(edges, 1.0, ">") == 1
    for rule in (">=", ">"):
        look = L.table(edges, rule)
        assert _scalar(np.array([1.0]), look)[0] == L.cell_of(edges, 1.0, rule)


def test_grid_and_tally_use_this_lookup():
    """The engine's grid and the exact tally build their tables here (one lookup, one bucket rule)."""
    from matchaudit.engine.grid import grid_from_edges

    edges = np.linspace(-1, 1, 4096)
    grid = grid_from_edges(edges, ">")
    look = grid.lookup()
    assert not look.ge and look.start.size - 1 == 4 * 4096
    np.testing.assert_array_equal(grid.cell_of(edges), L.cell_of(edges, edges, ">"))
