"""One group's scores compressed to distinct values (exact) or fine bins, so that likelihoods and counts cost
O(bins), not O(scores). The binning choice is made here and nowhere else (docs/labelfree.md, "Likelihood").

:func:`compress` returns, in ascending order, one cell per distinct value or per bin, with its count:

* at most ``exact_up_to`` (default ``max_bins``) distinct scores: the distinct values with their counts.
  Exact: for any function ``g``, ``sum_i g(x_i) = sum_k c_k g(u_k)``; the per-value terms are the very same
  floating-point numbers as the per-score ones, only the order of the summation differs;
* more: at most ``max_bins`` bins. The edges are the union of ``max_bins // 2`` equal-width cells on the
  ``asinh`` scale (centre the median, unit the robust SD ``IQR / 1.349``: equal width in the bulk, equal
  *relative* width in heavy tails, so a few far outliers do not coarsen the bulk) and equal-count cells
  (quantiles: no bin holds more than about ``2 n / max_bins`` scores). Empty bins are dropped.

:meth:`Compressed.quadrature` gives the points and weights the mixture likelihood is evaluated at: the
distinct values with their counts (exact), or per bin the two-point Gauss rule of the bin's own scores, two
weighted points that reproduce the bin's count, mean, variance and third central moment. So
``sum_{i in b} g(x_i)`` is reproduced exactly for every cubic ``g``, and for a smooth ``g`` (the log mixture
density) the error is of fourth order in the bin width (``g''''(xi) / 24`` times the bin's sum of
``(x - p1)^2 (x - p2)^2``, at most its count times its width to the fourth; in the one bin holding a
component's mode, where the two-piece ``g''`` jumps, third order); a bin with one or two distinct scores is
reproduced exactly. (The bin mean alone,
the one-point rule, errs by ``g'' W / 2``, second order: at equal cost, 2,048 points for 1e6 scores, its error
varies 30-45 times as much over the posterior: docs/labelfree.md.) :func:`likelihood_cells` is the compression the likelihood uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LIKELIHOOD_POINTS = 2048  # per group: at most this many points per likelihood evaluation (2 per bin when binned)
COUNT_BINS = 65536  # per group: cells of the finite-sample counts and the posterior predictive check


@dataclass(frozen=True)
class Compressed:
    """Distinct values (``exact``) or bins of one group's scores, ascending: per cell the count, the mean of its
    scores (``values``) and their second and third central moments (zero when exact).

    ``cuts`` (one fewer than ``values``) separate consecutive cells: midpoints between distinct values, or the
    lower edges of the (non-empty) bins; cell ``k`` holds the ``counts[k]`` scores between ``cuts[k-1]`` and
    ``cuts[k]``.
    """

    values: np.ndarray
    counts: np.ndarray  # float64, integer-valued
    cuts: np.ndarray
    m2: np.ndarray  # per cell: mean squared deviation from ``values``
    m3: np.ndarray  # per cell: mean cubed deviation
    exact: bool
    n: int
    max_bins: int | None

    @property
    def size(self) -> int:
        return int(self.values.size)

    def quadrature(self) -> tuple[np.ndarray, np.ndarray]:
        """Points and weights (ascending points) with ``sum_i g(x_i) ~= sum_j w_j g(p_j)``: exact for distinct
        values; per bin the two-point Gauss rule of its scores (count, mean, variance, third moment)."""
        if self.exact:
            return self.values, self.counts
        one = self.m2 <= 0.0  # a single distinct value: itself
        sd = np.sqrt(np.where(one, 1.0, self.m2))
        skew = np.where(one, 0.0, self.m3 / sd**3)
        root = np.sqrt(skew * skew + 4.0)
        z1, z2 = 0.5 * (skew - root), 0.5 * (skew + root)  # roots of z^2 - skew z - 1 (standardised nodes)
        w1 = z2 / (z2 - z1)
        c, m = self.counts, self.values
        two = ~one
        points = np.concatenate([m[one], (m + sd * z1)[two], (m + sd * z2)[two]])
        weights = np.concatenate([c[one], (c * w1)[two], (c * (1.0 - w1))[two]])
        order = np.argsort(points, kind="stable")
        return points[order], weights[order]

    def describe(self) -> dict:
        """For the output: how the cells were formed, how many, and (binned) the spread within the bins."""
        out = {"method": "exact: distinct values with counts" if self.exact else "binned: bins of the scores",
               "scores": self.n, "cells": self.size}
        if not self.exact:
            out["max_bins"] = self.max_bins
            out["within_bin_rms"] = float(np.sqrt(np.sum(self.counts * self.m2) / self.n))
        return out


def _edges(u: np.ndarray, c: np.ndarray, max_bins: int) -> np.ndarray:
    """Bin edges (ascending, unique, the first = min) for distinct values ``u`` with counts ``c``."""
    n = c.sum()
    cum = np.cumsum(c)
    a = max_bins // 2  # equal-width cells on the asinh scale
    q = max_bins - a - 1  # interior equal-count edges
    at = lambda share: u[np.searchsorted(cum, share * n, side="right").clip(0, u.size - 1)]  # noqa: E731
    med, q1, q3 = at(0.5), at(0.25), at(0.75)
    unit = (q3 - q1) / 1.349
    if not unit > 0:
        mean = np.sum(c * u) / n
        unit = float(np.sqrt(np.sum(c * (u - mean) ** 2) / n)) or 1.0
    t = np.linspace(np.arcsinh((u[0] - med) / unit), np.arcsinh((u[-1] - med) / unit), a + 1)
    wide = med + unit * np.sinh(t[1:-1])
    counted = at(np.arange(1, q + 1) / (q + 1))
    return np.unique(np.concatenate([[u[0]], wide, counted]))


def compress(x: np.ndarray, max_bins: int | None, exact_up_to: int | None = None) -> Compressed:
    """``x`` as its distinct values with counts when it has at most ``exact_up_to`` (default ``max_bins``;
    ``max_bins=None``: always), else as at most ``max_bins`` bins. Deterministic; O(n log n) once."""
    x = np.asarray(x, dtype=float).ravel()
    u, c = np.unique(x, return_counts=True)
    c = c.astype(float)
    limit = max_bins if exact_up_to is None else exact_up_to
    if max_bins is None or u.size <= limit:
        zero = np.zeros(u.size)
        return Compressed(u, c, 0.5 * (u[:-1] + u[1:]), zero, zero, True, x.size, max_bins)
    if max_bins < 4:
        raise ValueError(f"max_bins {max_bins}: at least 4 bins are needed")
    edges = _edges(u, c, max_bins)
    b = np.searchsorted(edges, u, side="right") - 1  # bin of each distinct value; edges[0] = u[0]
    cnt = np.bincount(b, c, minlength=edges.size)
    keep = np.flatnonzero(cnt > 0)
    b = np.searchsorted(keep, b)  # index among the non-empty bins
    cnt = cnt[keep]
    upper = np.r_[edges[1:], np.inf][keep]
    mean = np.clip(np.bincount(b, c * u) / cnt, edges[keep], upper)  # rounding cannot leave the bin
    d = u - mean[b]
    m2 = np.bincount(b, c * d * d) / cnt
    m3 = np.bincount(b, c * d**3) / cnt
    return Compressed(mean, cnt, edges[keep][1:], m2, m3, False, x.size, max_bins)


def likelihood_cells(x: np.ndarray, max_points: int | None = LIKELIHOOD_POINTS) -> Compressed:
    """The likelihood's compression: distinct values when there are at most ``max_points`` of them (exact),
    else ``max_points // 2`` bins, evaluated at two points each (:meth:`Compressed.quadrature`); ``None``:
    distinct values however many."""
    if max_points is None:
        return compress(x, None)
    return compress(x, max(max_points // 2, 4), exact_up_to=max_points)
