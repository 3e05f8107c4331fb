"""Which cells of the exact tally its pass collects: those where the FMR targets' thresholds will fall, predicted by
the engine's window predictor (:mod:`matchaudit.engine.window`), and those of the fixed thresholds.

Why: an exact all-pairs audit needs, besides the tally of every comparison (:func:`.tally.build_tally`), the
impostors of the few cells that the FMR targets' thresholds fall into (:func:`.tally.refine`). Collected on the way,
they cost no second pass (a second GEMM over all the data). Nothing here decides a number: a threshold outside its
window only means that :func:`.tally.refine` makes the second pass for its cell.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from matchaudit.cells import cell_of
from matchaudit.engine import window
from matchaudit.metrics.rates import Weighting
from matchaudit.model import MatchData

MIN_SAMPLES = 4096  # below it a second pass costs less than the sample (tests lower it)
MAX_COLLECTED = 50_000_000  # predicted impostors in the windows above which the second pass is cheaper in memory


def predicted_cells(data: MatchData, edges: np.ndarray, fmr_targets: Sequence[float], reference: np.ndarray,
                    weightings: Sequence[Weighting], thresholds: Sequence[float] = (),
                    pooled_targets: Sequence[float] = ()) -> tuple[np.ndarray, float] | None:
    """Cells of the tally (``edges``: its distinct genuine scores) to collect during its pass, and the number of
    impostors expected in them: the cells the FMR targets' windows touch (the impostors of the ``reference`` (G, G)
    group pairs, each weighting; ``pooled_targets``: the pooled weighting only) and those the fixed ``thresholds``
    fall into. None when a second pass is cheaper: fewer than ``MIN_SAMPLES`` samples, more than ``MAX_COLLECTED``
    impostors to collect, or data other than all pairs of embeddings."""
    if data.protocol != "all-pairs" or data.samples is None or data.samples.embeddings is None:
        return None
    n = data.samples.ids.shape[0]
    if n < MIN_SAMPLES or not (len(fmr_targets) or len(thresholds) or len(pooled_targets)):
        return None
    targets = [(w, float(a)) for w in weightings for a in fmr_targets] + [("pooled", float(a)) for a in pooled_targets]
    smp = window.sample(data)
    selected = window.target_cells(smp, data, reference, lambda s: cell_of(edges, s), edges.size + 1, targets)
    selected[cell_of(edges, np.asarray([t for t in thresholds if np.isfinite(t)], np.float64))] = True
    expected = window.share(smp, lambda s: cell_of(edges, s), selected) * (n * (n - 1) / 2)
    return (selected, float(expected)) if expected <= MAX_COLLECTED else None


__all__ = ["MAX_COLLECTED", "MIN_SAMPLES", "predicted_cells"]
