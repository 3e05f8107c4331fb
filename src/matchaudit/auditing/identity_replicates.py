"""One data set's identity bootstrap of FNMR and FMR at FMR targets, planned before any work (grid, chunks within
the memory budget) so that one progress display counts every run: both models of a model comparison
(:mod:`matchaudit.auditing.model_comparison`), the equivalence tests (:mod:`matchaudit.auditing.equivalence`)."""

from __future__ import annotations

import numpy as np

from matchaudit import resampling as rs
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.engine import Counts, build_grid, chunks, run
from matchaudit.estimators import bootstrap as bs
from matchaudit.model import MatchData
from matchaudit.progress import Meter


class IdentityReplicates:
    """The grid and replicate chunks of one data set's identity bootstrap (see module doc)."""

    def __init__(self, data: MatchData, n_resamples: int, rule: Rule, n_targets: int):
        self.data, self.n = data, n_resamples
        self.grid = build_grid(data, rule=rule)
        kept = 2 * 8 * (n_resamples + 1) * n_targets * (1 + data.n_groups)  # both models' FNMR and FMR
        self.chunk = chunks.chunk_size(chunks.group_table_bytes(data.n_groups, self.grid.n_cells), n_resamples, None,
                                       fixed=2 * kept, param="n_resamples")
        self.work = chunks.work(data.n_comparisons(), n_resamples, self.chunk)

    def run(self, scheme: rs.Scheme, targets: np.ndarray, threshold_impostors: ThresholdImpostors, meter: Meter
            ) -> tuple[Counts, np.ndarray, np.ndarray]:
        """The plug-in counts, FNMR (R, T, 1+G) and achieved FMR (R, T, 1+G) at each replicate's own thresholds."""
        plug, x = chunks.reduce_in_chunks(
            lambda reps: run(self.data, scheme, reps, grid=self.grid, fmr_targets=targets,
                             threshold_impostors=threshold_impostors, progress=meter),
            self.n, self.chunk, lambda c: {"fnmr": bs.fnmr_at_targets(c), "fmr": bs.fmr_at_targets(c)})
        return plug, x["fnmr"], x["fmr"]


__all__ = ["IdentityReplicates"]
