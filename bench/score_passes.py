"""How many times an audit scores the comparisons (#46 item 1: "at most twice" is the target), on each backend.

Counts the all-pairs comparisons an audit scores -- in this process (``scores._tile``), on a torch device
(``engine.torch_backend.tile_scores``) and on Dask workers (``scores._tile`` patched in each worker process) --
against the n(n-1)/2 comparisons of one pass over the score matrix, for the demo's population (2,000 samples: the
whole matrix fits ``scores.tile_cache``, so once here) and a larger one (12,000 samples x 64 dims, 72e6 comparisons:
streamed, once per pass that needs scores). The audit: FMR targets 1e-2, 1e-3, 1e-4, an FNMR target 1e-2, default
intervals (B = 200) and the group tests (99 relabellings).

    PYTHONPATH=src .venv/bin/python bench/score_passes.py                  # passes: the demo and 12,000 x 64 (cpu)
    PYTHONPATH=src .venv/bin/python bench/score_passes.py --backend dask   # the same on a local Dask cluster (2 workers)
    PYTHONPATH=src .venv/bin/python bench/score_passes.py --backend gpu    # the torch backend on CPU tensors
    PYTHONPATH=src .venv/bin/python bench/score_passes.py --time 256       # wall time of the cpu audit at 12,000 x 256

2026-11-28, 2 cores: 2,000 samples 1 tile = 1.0 pass; 12,000 samples 102 tiles = 17.0 passes (6 tiles a pass), 11 s.
2026-11-28, after ``auditing.pass_plan`` (the identity counts and the tests' plug-in thresholds shared): 12,000
samples 30 tiles = 5.0 passes (the exact tally, the tests' thresholds, the identity counts, the pooled and the
balanced bootstrap), 11 s.
2026-11-28, the tests' plug-in thresholds found by the exact tally's pass (``evaluate(also_fmr=...)``): 24 tiles =
4.0 passes, 8 s; then one scoring pass feeding the pooled and the balanced bootstrap counts and the shared identity
counts (``engine.run_together``): 12 tiles = 2.0 passes (the exact tally, the bootstrap), 7 s.
2026-11-28, per backend (``--backend``), 12,000 x 64, before -> after the identity counts on the backend
(``Backend.serves``) and the torch backend fusing: cpu 2.0 -> 2.0; dask (local cluster, 2 workers) 3.0 (here 2.0:
the exact tally and the identity counts; workers 1.0) -> 2.0 (here 1.0, workers 1.0), 11 s -> 7 s; torch on CPU
tensors 4.0 (here 3.0: the tally, the identity counts, the balanced bootstrap; device 1.0: the pooled) -> 2.0 (here
1.0, device 1.0), 87 s -> 104 s (the balanced replicates now counted by torch's CPU kernels, slower than Numba's; on
a GPU that is the point). The demo: cpu 1.0, dask and torch 2.0 before and after (the tiles here are cached).
2026-11-28 (session 46), where the score views fit in memory but the matrix not in the tile cache (10,000 x 64, two
groups, FMR 1e-2 and 1e-3, an FNMR target, B = 50, calibration on; not this script's populations: at 12,000 x 64 the
views exceed their 4 GiB budget and are skipped): 3.0 passes at 4afd4dc (the tally, the bootstrap, the views' own)
-> 2.0 (the bootstrap's pass keeps the comparisons for the views: ``auditing.pass_plan.triangle``).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack, contextmanager
from typing import Iterator

sys.path.insert(0, "src")
import numpy as np  # noqa: E402

import matchaudit as ma  # noqa: E402
from matchaudit import scores  # noqa: E402
from matchaudit.simulation import DEMO_GROUPS, GroupSpec, simulate_vmf  # noqa: E402


def comparisons(r0: int, r1: int, c0: int, c1: int) -> int:
    """The comparisons (row < column) of the tile rows ``r0:r1`` x columns ``c0:c1``."""
    return int(np.maximum(0, c1 - np.maximum(c0, np.arange(r0, r1) + 1)).sum())


@contextmanager
def counting(module, name: str) -> Iterator[list[int]]:
    """``module.name`` (a tile scorer taking ``q, sq, r0, r1, c0, c1, ...``) counting the comparisons it scores."""
    real, box = getattr(module, name), [0]

    def counted(q, sq, r0, r1, c0, c1, *rest):
        box[0] += comparisons(r0, r1, c0, c1)
        return real(q, sq, r0, r1, c0, c1, *rest)

    setattr(module, name, counted)
    try:
        yield box
    finally:
        setattr(module, name, real)


def _worker_start() -> None:
    """On a Dask worker: count the comparisons its tiles score (kept on the patched function)."""
    import matchaudit.scores as s

    stack = ExitStack()
    s._tile_count = (stack, stack.enter_context(counting(s, "_tile")))


def _worker_stop() -> int:
    import matchaudit.scores as s

    stack, box = s._tile_count
    stack.close()
    return box[0]


def passes(data: ma.MatchData, backend: str = "cpu") -> tuple[dict[str, float], float]:
    """Passes over the matrix scored by one default audit of ``data`` on ``backend``, where (``here``, ``device``,
    ``workers``), and its seconds."""
    from matchaudit.engine import torch_backend

    m = data.n_comparisons()
    with ExitStack() as stack:
        engine = None
        if backend == "dask":
            from matchaudit.engine.dask_backend import DaskBackend

            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, ["src", os.environ.get("PYTHONPATH")]))
            engine = stack.enter_context(DaskBackend(n_workers=2))
            engine.client.run(_worker_start)
        elif backend == "gpu":
            engine = torch_backend.TorchBackend("cpu")
        here = stack.enter_context(counting(scores, "_tile"))
        device = stack.enter_context(counting(torch_backend, "tile_scores"))
        t0 = time.time()
        ma.audit(data, fmr=(1e-2, 1e-3, 1e-4), fnmr=(1e-2,), intervals=ma.IntervalOptions(n_resamples=200),
                 tests=ma.TestOptions(n_resamples=99), backend=engine)
        seconds = time.time() - t0
        out = {"here": here[0] / m}
        if backend == "gpu":
            out["device"] = device[0] / m
        if backend == "dask":
            out["workers"] = sum(engine.client.run(_worker_stop).values()) / m
    return out, seconds


def _population(dim: int) -> ma.MatchData:
    return simulate_vmf({"A": GroupSpec(700, (100.0, 600.0)), "B": GroupSpec(500, (60.0, 300.0))}, dim=dim,
                        samples_per_identity=10, seed=1).as_data()


def timed(dim: int) -> float:
    """Best of two wall times (after a warm-up) of the audit of :func:`passes` at 12,000 x ``dim``."""
    data = _population(dim)
    passes(data)  # warm-up: the kernels from the cache
    return min(passes(data)[1] for _ in range(2))


def main() -> None:
    if sys.argv[1:2] == ["--time"]:
        dim = int(sys.argv[2])
        print(f"12,000 x {dim}: {timed(dim):.1f} s")
        return
    backend = sys.argv[2] if sys.argv[1:2] == ["--backend"] else "cpu"
    sets = {"demo (2,000 x 128)": simulate_vmf(DEMO_GROUPS, dim=128, samples_per_identity=10, seed=0).as_data(),
            "12,000 x 64": _population(64)}
    for name, data in sets.items():
        got, s = passes(data, backend)
        where = ", ".join(f"{k} {v:.1f}" for k, v in got.items())
        print(f"{backend} {name}: {data.n_comparisons():,} comparisons, passes {sum(got.values()):.1f} ({where}), "
              f"{s:.0f} s")


if __name__ == "__main__":
    main()
