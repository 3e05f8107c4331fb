"""How many times a default audit scores the comparisons (#46 item 1: "at most twice" is the target).

Counts the all-pairs tiles an audit computes (``scores._tile`` calls) against the tiles of one pass over the score
matrix, for the demo's population (2,000 samples: the whole matrix fits ``scores.tile_cache``, so once) and a larger
one (12,000 samples x 64 dims, 72e6 comparisons: streamed, once per pass that needs scores). The audit: FMR targets
1e-2, 1e-3, 1e-4, an FNMR target 1e-2, default intervals (B = 200) and the group tests (99 relabellings).

    .venv/bin/python bench/score_passes.py            # passes: the demo and 12,000 x 64
    .venv/bin/python bench/score_passes.py --time 256  # wall time of the same audit at 12,000 x 256 (best of two)

2026-11-28, 2 cores: 2,000 samples 1 tile = 1.0 pass; 12,000 samples 102 tiles = 17.0 passes (6 tiles a pass), 11 s.
2026-11-28, after ``auditing.pass_plan`` (the identity counts and the tests' plug-in thresholds shared): 12,000
samples 30 tiles = 5.0 passes (the exact tally, the tests' thresholds, the identity counts, the pooled and the
balanced bootstrap), 11 s.
2026-11-28, the tests' plug-in thresholds found by the exact tally's pass (``evaluate(also_fmr=...)``): 24 tiles =
4.0 passes, 8 s; then one scoring pass feeding the pooled and the balanced bootstrap counts and the shared identity
counts (``engine.run_together``): 12 tiles = 2.0 passes (the exact tally, the bootstrap), 7 s.
"""

from __future__ import annotations

import sys
import time

sys.path.insert(0, "src")
import matchaudit as ma  # noqa: E402
from matchaudit import scores  # noqa: E402
from matchaudit.simulation import DEMO_GROUPS, GroupSpec, simulate_vmf  # noqa: E402

CALLS = {"tiles": 0}
_REAL = scores._tile


def _counted(*args, **kwargs):
    CALLS["tiles"] += 1
    return _REAL(*args, **kwargs)


def passes(data: ma.MatchData) -> tuple[int, float, float]:
    """(tiles computed, passes over the matrix, seconds) of one default audit of ``data``."""
    CALLS["tiles"] = 0
    scores._tile = _counted
    try:
        t0 = time.time()
        ma.audit(data, fmr=(1e-2, 1e-3, 1e-4), fnmr=(1e-2,), intervals=ma.IntervalOptions(n_resamples=200),
                 tests=ma.TestOptions(n_resamples=99))
        seconds = time.time() - t0
    finally:
        scores._tile = _REAL
    per_pass = sum(1 for _ in scores.tiles(data.samples.ids.shape[0], 2048))
    return CALLS["tiles"], CALLS["tiles"] / per_pass, seconds


def _population(dim: int) -> ma.MatchData:
    return simulate_vmf({"A": GroupSpec(700, (100.0, 600.0)), "B": GroupSpec(500, (60.0, 300.0))}, dim=dim,
                        samples_per_identity=10, seed=1).as_data()


def timed(dim: int) -> float:
    """Best of two wall times (after a warm-up) of the audit of :func:`passes` at 12,000 x ``dim``."""
    data = _population(dim)
    passes(data)  # warm-up: the kernels from the cache
    return min(passes(data)[2] for _ in range(2))


def main() -> None:
    if sys.argv[1:2] == ["--time"]:
        dim = int(sys.argv[2])
        print(f"12,000 x {dim}: {timed(dim):.1f} s")
        return
    sets = {"demo (2,000 x 128)": simulate_vmf(DEMO_GROUPS, dim=128, samples_per_identity=10, seed=0).as_data(),
            "12,000 x 64": _population(64)}
    for name, data in sets.items():
        n = data.samples.ids.shape[0]
        tiles, p, s = passes(data)
        print(f"{name}: {n * (n - 1) // 2:,} comparisons, {tiles} tiles computed = {p:.1f} passes, {s:.0f} s")


if __name__ == "__main__":
    main()
