"""The resampling engine: exact weighted counts for the plug-in and every replicate of a scheme."""

from matchaudit.engine.counts import Counts
from matchaudit.engine.driver import Plan, plan, run, run_together, target_thresholds
from matchaudit.engine.passes import Backend, CountTask, LocalBackend
from matchaudit.engine.grid import Grid, build_grid, grid_from_edges
from matchaudit.engine.identity import IdentityCounts, identity_counts, identity_pass

__all__ = ["Backend", "CountTask", "Counts", "Grid", "LocalBackend", "IdentityCounts", "Plan", "build_grid",
           "grid_from_edges", "identity_counts", "identity_pass", "plan", "run", "run_together", "target_thresholds"]
