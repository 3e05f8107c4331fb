"""The dense comparison block and the embedding metrics: the pieces ``model`` and ``scores`` both need,
below both so that neither imports the other inside a function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Metric = Literal["cosine", "euclidean"]


@dataclass(frozen=True)
class DenseBlock:
    """A tile of the all-pairs similarity matrix: rows ``row0..row0+r-1`` against columns ``col0..col0+c-1``.

    Only entries with global row index < global column index are comparisons (each unordered pair once);
    the diagonal holds self-scores, which the recentered bootstrap needs and plain metrics ignore.
    """

    row0: int
    col0: int
    scores: np.ndarray  # float32 or float64 (r, c)
