"""Posterior predictive checks: the data's KDE against KDEs of data sets replicated from posterior draws.

For ``n_rep`` posterior draws a data set of the group's size is simulated from the fitted mixture and smoothed
with the same bandwidth as the data, so the band is what the model says the data's KDE should look like.
The KS distance between the data and the posterior predictive CDF is compared with the replicates' own KS
distances: ``ks_pvalue`` is the share of replicates that fit worse (small = the model misses the data).

Cost O(cells), not O(scores), for large groups: the scores' cells (distinct values, or fine bins:
:func:`binned.compress`) are the unit, and every KS distance (data and replicates alike) is taken at the cuts
between cells against the predictive CDF there. Up to ``RAW_REPLICATES`` scores a replicate is simulated pair by
pair (its KDE from its own scores) and counted into the cells; above, it is drawn as counts per cell
(multinomial with the draw's mixture probability of each cell: the same distribution of counts) and smoothed
at the cells' values.
"""

from __future__ import annotations

import numpy as np

from matchaudit.labelfree.binned import COUNT_BINS, Compressed, compress
from matchaudit.labelfree.curves import band
from matchaudit.labelfree.starting_values import kde_grid
from matchaudit.labelfree.model import component
from matchaudit.labelfree.twopiece import TwoPiece

_CHUNK = 2_000_000  # draws x points of one CDF evaluation
RAW_REPLICATES = 100_000  # up to this many scores per group, replicates are simulated pair by pair


def _mixture_cdf(fam: TwoPiece, p: dict, x: np.ndarray) -> np.ndarray:
    """Mixture CDF at ``x`` for every draw in ``p``: (draws, points)."""
    col = {k: np.asarray(v)[:, None] for k, v in p.items()}
    return (1.0 - col["pi"]) * fam.cdf(x[None], *component(col, 0)) + col["pi"] * fam.cdf(x[None], *component(col, 1))


def _predictive_cdf(fam: TwoPiece, p: dict, x: np.ndarray) -> np.ndarray:
    """Posterior predictive CDF at ``x``: the mixture CDF averaged over the draws in ``p`` (in chunks of draws)."""
    m = np.asarray(p["pi"]).size
    step = max(1, _CHUNK // max(x.size, 1))
    total = np.zeros(x.size)
    for a in range(0, m, step):
        total += _mixture_cdf(fam, {k: np.asarray(v)[a : a + step] for k, v in p.items()}, x).sum(axis=0)
    return total / m


def _ks(counts: np.ndarray, n: int, cdf_cuts: np.ndarray) -> float:
    """KS distance at the cuts between cells: empirical CDF after each cell against the CDF at the cut."""
    return float(np.max(np.abs(np.cumsum(counts)[:-1] / n - cdf_cuts)))


def check(fam: TwoPiece, scores: np.ndarray, p: dict, rng: np.random.Generator, level: float = 0.89,
          n_rep: int = 50, grid_points: int = 256, cells: Compressed | None = None) -> dict:
    """PPC of one group. ``p``: natural parameters (arrays over draws, see ``model.constrain``); ``cells``: the
    scores' :func:`binned.compress` (default: at most ``COUNT_BINS`` cells)."""
    x = np.asarray(scores, dtype=float)
    cells = compress(x, COUNT_BINS) if cells is None else cells
    n = x.size
    pick = rng.choice(np.asarray(p["pi"]).size, size=n_rep, replace=n_rep > np.asarray(p["pi"]).size)
    q = {k: np.asarray(v)[pick] for k, v in p.items()}
    h = 1.06 * x.std() * n ** -0.2
    lo, hi = x.min() - 3 * h, x.max() + 3 * h
    grid, kde_data = kde_grid(x, h, lo, hi, grid_points)
    cdf_cuts = _predictive_cdf(fam, p, cells.cuts)
    reps, ks_rep = [], []
    for r in range(n_rep):
        if n <= RAW_REPLICATES:
            match = rng.random(n) < q["pi"][r]
            sim = np.where(match, fam.rvs(rng, n, *(np.asarray(v)[r] for v in component(q, 1))),
                           fam.rvs(rng, n, *(np.asarray(v)[r] for v in component(q, 0))))
            counts = np.bincount(np.searchsorted(cells.cuts, sim, side="right"), minlength=cells.size)
            reps.append(kde_grid(sim, h, lo, hi, grid_points)[1])
        else:
            own = _mixture_cdf(fam, {k: v[r : r + 1] for k, v in q.items()}, cells.cuts)[0]
            prob = np.maximum(np.diff(np.r_[0.0, np.clip(own, 0.0, 1.0), 1.0]), 0.0)
            counts = rng.multinomial(n, prob / prob.sum())
            reps.append(kde_grid(cells.values, h, lo, hi, grid_points, weights=counts)[1])
        ks_rep.append(_ks(counts, n, cdf_cuts))
    ks = _ks(cells.counts, n, cdf_cuts)
    b = band(np.asarray(reps), level)
    return {
        "grid": grid, "kde_data": kde_data, "kde_replicates": b, "bandwidth": float(h),
        "ks": ks, "ks_pvalue": float(np.mean(np.asarray(ks_rep) >= ks)),
    }
