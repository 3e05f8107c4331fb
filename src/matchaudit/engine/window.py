"""The refinement window: grid cells likely to hold some replicate's threshold at an FMR target, whose
entries the counting pass keeps (with scores) so that those thresholds come out exact in one pass."""

from __future__ import annotations

import numpy as np

from matchaudit.engine.grid import Grid, sorted_sample
from matchaudit.model import MatchData

WINDOW = 4.0  # refinement items are kept in one pass for cells whose estimated FMR is within this factor
WINDOW_SAMPLE = 1 << 18  # impostor scores in the estimate


def sample_above(grid: Grid, imp: np.ndarray) -> np.ndarray:
    """(C+1,): how many of the sorted sample scores ``imp`` lie in cells >= c (scores >= edge c-1, or >)."""
    side = "left" if grid.rule == ">=" else "right"
    return np.concatenate([[imp.size], imp.size - np.searchsorted(imp, grid.edges, side=side)])


def window_cells(data: MatchData, grid: Grid, targets: np.ndarray) -> np.ndarray:
    """Cells likely to hold some replicate's threshold: estimated FMR range within a factor ``WINDOW`` of a
    target (plus one cell either side), from the grid's impostor sample (or a deterministic sample of
    impostor scores). Only a cost decision: cells found needed outside the window are collected by a
    second pass."""
    imp = grid.impostor_sample
    if imp is None:
        n = data.samples.ids.shape[0] if data.protocol == "all-pairs" else 1
        _, imp = sorted_sample(data, max_rows=max(1, WINDOW_SAMPLE // max(n, 1)), max_scores=WINDOW_SAMPLE)
    win = np.zeros(grid.n_cells, np.bool_)
    if imp.size == 0:
        return win
    m = imp.size
    above = sample_above(grid, imp)
    f_lo = above / m  # FMR at the cell's lower edge (threshold just above cell c-1)
    f_hi = np.concatenate([above[1:], [0]]) / m
    for a in targets:
        lo, hi = a / WINDOW, max(a * WINDOW, WINDOW / m)
        win |= (f_hi <= hi) & (f_lo >= lo)
    win[:-1] |= win[1:]
    win[1:] |= win[:-1].copy()
    return win
