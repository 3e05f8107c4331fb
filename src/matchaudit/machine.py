"""What this machine has, read where budgets are set (the bootstrap's memory budget, the out-of-core choice), and
how a process of ours shares its cores."""

from __future__ import annotations

import os


def physical_memory() -> float:
    """Physical memory in bytes."""
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def idle_threads_sleep() -> None:
    """Idle OpenMP threads sleep instead of spinning: ``OMP_WAIT_POLICY=PASSIVE`` unless the user has set a policy.

    Numba's parallel kernels run on OpenMP threads, which by default spin for a while after every parallel loop.
    When the cores are shared (test workers, Dask workers, BLAS strips, any other job) the spinning takes the
    cores from the work: the suite's statistical simulations, two workers on two cores, took 104 s (194 CPU-s)
    spinning and 62 s (115 CPU-s) sleeping; the demo's audit, alone, 13.8-14.4 s and 11.7-12.6 s; a 0.1 s audit
    of 1,000 samples pays ~10 ms of wake-ups. For processes we own (the command line, the test suite), before
    OpenMP is loaded (the first parallel kernel); a library user sets it in the environment (README)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


__all__ = ["idle_threads_sleep", "physical_memory"]
