"""The score views in memory against the same views sorted on disk (an external sort: runs of the memory budget,
spilled and merged; estimators.score_views.materialise): wall time of materialising them and of a bootstrap of B
replicates over them (Cllr, minCllr, actDCF and minDCF at three operating points, the rates at an FNMR target; every
view), throughput in comparisons per second, the ratio disk / memory, and the peak growth of anonymous resident
memory (RssAnon, sampled every 5 ms: the files' pages are not in it). The two give the same numbers (checked here
on the bootstrap's summaries; tests/test_score_views_out_of_core.py holds them to the bit).

Usage: .venv/bin/python bench/score_views_out_of_core.py [--samples 2400] [--B 50] [--runs 16] [--repeat 3]
[--method double-or-nothing] [--spill-dir DIR]
All-pairs comparisons of simulated embeddings (64 dimensions, 6 samples per identity, the demo's three groups);
``--runs``: the on-disk budget is the in-memory need over this many runs. Timed after a warm-up on small data
(Numba compilation excluded), best of ``--repeat``. The files sit in the page cache where memory allows: this
measures the sort's and the files' cost, not a disk's speed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import tempfile
import threading
import time
from dataclasses import replace

import numba as nb
import numpy as np

from matchaudit.estimators.score_views import BYTES_PER_COMPARISON, METHODS, Runner, materialise
from matchaudit.simulation import DEMO_GROUPS, simulate_vmf

OPS = ((0.01, 1.0, 1.0), (0.05, 1.0, 1.0), (0.001, 1.0, 10.0))


def _data(samples: int):
    """All-pairs data of about ``samples`` samples in the demo's groups, scaled (6 samples per identity)."""
    scale = samples / 6 / sum(spec.n_identities for spec in DEMO_GROUPS.values())
    groups = {g: replace(spec, n_identities=max(1, round(spec.n_identities * scale))) for g, spec in DEMO_GROUPS.items()}
    return simulate_vmf(groups, dim=64, samples_per_identity=6, seed=0).as_data()


def _fixed_mmap_threshold() -> None:
    """Every allocation over 64 KiB mapped on its own and returned when freed (glibc ``mallopt(M_MMAP_THRESHOLD)``,
    which also stops the threshold's growth): else freed arrays stay in the heap and a later run's peak is hidden."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 16)
    except OSError:
        pass


def _anon_mib() -> float:
    """This process's anonymous resident memory (MiB; Linux): what the files on disk are not part of."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:")) / 1024


class _Peak:
    """The highest anonymous resident memory above the level at entry while the block runs, sampled every 5 ms."""

    def __enter__(self) -> "_Peak":
        self.base = self.peak = _anon_mib()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _watch(self) -> None:
        while not self.done.wait(0.005):
            self.peak = max(self.peak, _anon_mib())

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, _anon_mib()) - self.base


def _timed(data, method: str, B: int, memory_gib: float | None, spill_dir: str | None):
    """(materialise seconds, bootstrap seconds, n, summaries, peak anonymous memory growth in MiB) of one run."""
    kw = {} if memory_gib is None else {"memory_gib": memory_gib, "spill_dir": spill_dir}
    with _Peak() as peak:
        t0 = time.perf_counter()
        views = materialise(data, method, **kw)
        t1 = time.perf_counter()
        s = Runner(views, OPS, llr=True, fnmr_targets=(0.01,)).bootstrap(method, B, 0)
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1, views.n, s, peak.peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2400)
    ap.add_argument("--B", type=int, default=50)
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--method", default="double-or-nothing", choices=METHODS)
    ap.add_argument("--spill-dir", default=None)
    a = ap.parse_args()
    _fixed_mmap_threshold()
    data = _data(a.samples)
    n = data.n_comparisons() + (data.samples.ids.shape[0] if a.method == "recentered" else 0)
    on_disk = n * BYTES_PER_COMPARISON / 2**30 / a.runs
    small = _data(300)
    for budget in (None, small.n_comparisons() * BYTES_PER_COMPARISON / 2**30 / 4):  # warm-up: compilation
        _timed(small, a.method, 20, budget, a.spill_dir)
    print(f"threads: {nb.get_num_threads()}, load average: {os.getloadavg()[0]:.2f}, "
          f"spill folder: {a.spill_dir or tempfile.gettempdir()}")
    print(f"{data.samples.ids.shape[0]:,} samples, {n:,} comparisons, method {a.method}, B = {a.B}, on disk in "
          f"{a.runs} runs of {on_disk * 1024:.0f} MiB")
    print(f"{'where':<7} {'materialise s':>13} {'comparisons/s':>14} {'bootstrap s':>12} {'comp-reps/s':>12} "
          f"{'total s':>8} {'comparisons/s':>14} {'anon MiB':>9}")
    best, summaries, peaks = {}, {}, {}
    for _ in range(a.repeat):
        for where, budget in (("memory", None), ("disk", on_disk)):
            tm, tb, k, s, mib = _timed(data, a.method, a.B, budget, a.spill_dir)
            assert k == n
            summaries[where], peaks[where] = s, max(peaks.get(where, 0.0), mib)
            if where not in best or tm + tb < sum(best[where]):
                best[where] = (tm, tb)
    for where, (tm, tb) in best.items():
        print(f"{where:<7} {tm:>13.2f} {n / tm:>14.3g} {tb:>12.2f} {n * a.B / tb:>12.3g} {tm + tb:>8.2f} "
              f"{n / (tm + tb):>14.3g} {peaks[where]:>9.0f}")
    (mm, mb), (dm, db) = best["memory"], best["disk"]
    print(f"ratio disk / memory: materialise {dm / mm:.2f}, bootstrap {db / mb:.2f}, total {(dm + db) / (mm + mb):.2f}")
    same = all(np.array_equal(getattr(summaries["memory"], f), getattr(summaries["disk"], f), equal_nan=True)
               for f in ("estimate", "replicates"))
    print(f"same summaries: {same}")


if __name__ == "__main__":
    main()
