"""What this machine has, read where budgets are set (the bootstrap's memory budget, the out-of-core choice)."""

from __future__ import annotations

import os


def physical_memory() -> float:
    """Physical memory in bytes."""
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


__all__ = ["physical_memory"]
