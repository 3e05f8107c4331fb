"""Replicates in chunks, so that peak memory follows a budget instead of the number of replicates.

A counting run keeps a table of ``(replicates + 1) x categories x cells`` integers; a statistic needs only a few
numbers per replicate. :func:`reduce_in_chunks` runs the engine on one chunk of replicate numbers at a time and
reduces each chunk's counts to per-replicate statistics at once. The weights are keyed by replicate number
(:mod:`matchaudit.rng`), so a chunked run gives the same numbers as one run, bit for bit, whatever the chunk
size; each chunk repeats the plug-in (replicate 0), which is kept once. The cost of a chunk beyond the first is
one more scoring pass over the comparisons.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from matchaudit.engine.counts import Counts
from matchaudit.errors import InputError
from matchaudit.machine import physical_memory

MEMORY_SHARE = 0.25  # default budget: this share of physical memory (more buys fewer scoring passes, little time)
# peak bytes per replicate and score cell while a chunk is counted and reduced, per count category: the engine's
# int64 table and its transposed copy, then the float curves of the reduction. Measured on the demo (3 groups,
# 9 categories, 4,096 cells): 2.25 MB per replicate (peak RSS 0.61 / 1.40 GB at chunks of 50 / 400 replicates)
ENGINE_BYTES = 16
REDUCE_BYTES = 48


def size_text(n: float) -> str:
    """Bytes as a reader takes them in, in decimal units: '6.3 GB', '350 MB', '100 kB', '2,432 TB' (a budget of
    0.0001 GB printed as '0.0 GB' said nothing)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            v = n / scale
            return f"{v:,.0f} {unit}" if v >= 100 else f"{v:.2g} {unit}" if v < 10 else f"{v:.0f} {unit}"
    return f"{n:.0f} bytes"


def budget_bytes(memory_gb: float | None) -> float:
    """The memory budget: ``memory_gb`` GB, or :data:`MEMORY_SHARE` of physical memory."""
    return memory_gb * 1e9 if memory_gb is not None else MEMORY_SHARE * physical_memory()


def budget_source(memory_gb: float | None) -> str:
    return "memory_gb" if memory_gb is not None else f"{MEMORY_SHARE:.0%} of this machine's {size_text(physical_memory())}"


def table_bytes(engine_categories: int, reduced_categories: int, n_cells: int) -> int:
    """Peak bytes per replicate of a chunk whose engine run counts ``engine_categories`` and whose reduction reads
    ``reduced_categories`` (the same, except where counts are folded first: identity-balanced size classes)."""
    return (ENGINE_BYTES * engine_categories + REDUCE_BYTES * reduced_categories) * n_cells


def group_classes(n_groups: int) -> int:
    """Classes of a counts table per group: G genuine groups and at most G + 2 impostor categories (same-group
    pairs, cross-group pairs pooled: :meth:`matchaudit.pairings.PairCategories.pooled_by`)."""
    return 2 * n_groups + 2


def group_table_bytes(n_groups: int, n_cells: int) -> int:
    """:func:`table_bytes` of a run counted and reduced per group (:func:`group_classes`)."""
    return table_bytes(group_classes(n_groups), group_classes(n_groups), n_cells)


def check_budget(kept: float, n_resamples: int, param: str = "n_resamples", memory_gb: float | None = None) -> None:
    """Refuse before any work a run whose ``kept`` bytes across all replicates (relabellings, per-replicate
    statistics: what chunking cannot bound) exceed the budget, naming ``param``."""
    if kept > budget_bytes(memory_gb):
        raise InputError(f"{param} {n_resamples:,} keeps about {size_text(kept)} across replicates for this "
                         f"data, over the budget of {size_text(budget_bytes(memory_gb))} "
                         f"({budget_source(memory_gb)}): give a smaller {param}.", param=param)


def chunk_size(per_replicate: float, n_resamples: int, memory_gb: float | None, fixed: float = 0.0,
               param: str = "memory_gb") -> int:
    """Replicates per chunk (at most ``n_resamples``) whose tables fit the budget beside ``fixed`` bytes (what the
    whole run keeps: per-replicate statistics, relabellings); refused, naming ``param`` (what the caller can
    change), when not even one replicate fits."""
    budget = budget_bytes(memory_gb) - fixed
    fits = int(budget // per_replicate) - 1  # every chunk also counts the plug-in
    if fits < 1:
        raise InputError(
            f"one replicate and the plug-in counted beside it need about {size_text(2 * per_replicate)} for this "
            f"data, and n_resamples {n_resamples:,} keeps {size_text(fixed)} across replicates, over the budget of "
            f"{size_text(budget_bytes(memory_gb))} ({budget_source(memory_gb)}): give a smaller n_resamples"
            f"{' or a larger budget (memory_gb)' if param == 'memory_gb' else ''}.", param=param)
    return max(1, min(n_resamples, fits))


def n_runs(n_resamples: int, chunk: int) -> int:
    """Engine runs of :func:`reduce_in_chunks`."""
    return -(-max(n_resamples, 1) // chunk)


def work(n_comparisons: int, n_resamples: int, chunk: int) -> int:
    """Comparisons x replicates counted by :func:`reduce_in_chunks` (each run also counts the plug-in): the total
    of a progress display over the runs."""
    return n_comparisons * (n_resamples + n_runs(n_resamples, chunk))


def reduce_in_chunks(count: Callable[[np.ndarray], Counts], n_resamples: int, chunk: int,
                     reduce: Callable[[Counts], dict[str, np.ndarray]]) -> tuple[Counts, dict[str, np.ndarray]]:
    """Counts of replicates ``1..n_resamples`` by ``count(replicate_numbers)`` in chunks of ``chunk``, each reduced
    by ``reduce`` to arrays whose first axis is the run's rows (plug-in first). Returns the plug-in's counts
    (:meth:`Counts.plug_in`) and every statistic over rows ``0..n_resamples``."""
    reps = np.arange(1, n_resamples + 1)
    parts: list[dict[str, np.ndarray]] = []
    plug: Counts | None = None
    for lo in range(0, max(n_resamples, 1), chunk):
        c = count(reps[lo:lo + chunk])
        stats = reduce(c)
        parts.append(stats if plug is None else {k: x[1:] for k, x in stats.items()})
        if plug is None:
            plug = c.plug_in()
        del c
    assert plug is not None
    return plug, {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


__all__ = ["ENGINE_BYTES", "MEMORY_SHARE", "REDUCE_BYTES", "budget_bytes", "budget_source", "check_budget",
           "chunk_size", "group_classes", "group_table_bytes", "n_runs", "reduce_in_chunks", "table_bytes", "work"]
