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

    def row_chunks(self, rows: np.ndarray, c_lo: int, c_hi: int, n_chunks: int, self_pairs: bool = False
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Local ``rows`` against the tile's columns ``c_lo:c_hi``: their comparisons' start offsets ``cum`` (row
        order, ``cum[-1]`` in all; ``self_pairs``: each row's diagonal entry counted as one) and ``n_chunks`` ranges
        of positions into ``rows`` holding about equal comparisons (the rows of the triangle shorten, so equal row
        counts would give the first threads most of the work)."""
        i = self.row0 + rows
        cnt = np.maximum(0, c_hi - np.maximum(c_lo, i + 1 - self.col0))
        if self_pairs:
            cnt = cnt + ((i >= self.col0 + c_lo) & (i < self.col0 + c_hi))
        cum = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
        chunks = np.searchsorted(cum, np.linspace(0, cum[-1], n_chunks + 1), side="left").astype(np.int64)
        chunks[0], chunks[-1] = 0, rows.size
        return cum, np.maximum.accumulate(chunks)
