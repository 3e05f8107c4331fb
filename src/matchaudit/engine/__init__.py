"""The resampling engine: exact weighted counts for the plug-in and every replicate of a scheme."""

from matchaudit.engine.counts import Counts
from matchaudit.engine.driver import run, target_thresholds
from matchaudit.engine.passes import Backend, CountTask, LocalBackend
from matchaudit.engine.grid import Grid, build_grid, grid_from_edges
from matchaudit.engine.identity import IdentityCounts, identity_counts

__all__ = ["Backend", "CountTask", "Counts", "Grid", "LocalBackend", "IdentityCounts", "build_grid", "grid_from_edges", "identity_counts", "run", "target_thresholds"]
