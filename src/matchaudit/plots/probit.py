"""The DET's normal-deviate (probit) axis, defined once: every DET figure (audit, compare, label-free) and the
thinning of DET curves (:func:`thin_curve`) map rates through :func:`probit`, with one
clip, and label its ticks as percentages. Imports SciPy's ``ndtri`` only (no matplotlib), so the tables can use it."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from scipy.special import ndtri

CLIP = 1e-7
"""Rates are clipped to [CLIP, 1 - CLIP] before the normal quantile: 0 and 1 have none, and no DET axis here starts
below 1e-6."""


def probit(p: Any) -> np.ndarray:
    """The normal deviate of rate ``p`` (clipped to :data:`CLIP`)."""
    return ndtri(np.clip(np.asarray(p, dtype=float), CLIP, 1 - CLIP))


def rate_ticks(ax: Any, x: Sequence[float], y: Sequence[float], label: Any, rotation: float = 0,
               axis: Any = probit) -> None:
    """Ticks of an axes drawn in ``axis`` coordinates (probit by default) at the rates ``x`` and ``y``, labelled by
    ``label(rate)``."""
    ax.set_xticks(axis(np.asarray(x)), [label(t) for t in x], rotation=rotation)
    ax.set_yticks(axis(np.asarray(y)), [label(t) for t in y])


MAX_CURVE_POINTS = 4000
"""DET points kept per curve in det.csv and the figures."""


def thin_curve(fmr: np.ndarray, fnmr: np.ndarray, max_points: int = MAX_CURVE_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` curve points, spread evenly along the DET (probit) arc length."""
    if fmr.size <= max_points:
        return np.arange(fmr.size)
    x, y = probit(fmr), probit(fnmr)
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    keep = np.searchsorted(arc, np.linspace(0, arc[-1], max_points))
    return np.unique(np.concatenate([[0, fmr.size - 1], np.minimum(keep, fmr.size - 1)]))


__all__ = ["CLIP", "MAX_CURVE_POINTS", "probit", "rate_ticks", "thin_curve"]
