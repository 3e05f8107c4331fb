"""The resampling engine: exact weighted counts for the plug-in and every replicate of a scheme."""

from matchaudit.engine.driver import Counts, run
from matchaudit.engine.grid import Grid, build_grid, grid_from_edges

__all__ = ["Counts", "Grid", "build_grid", "grid_from_edges", "run"]
