"""Posterior predictive checks: the data's KDE against KDEs of data sets replicated from posterior draws.

For ``n_rep`` posterior draws a data set of the group's size is simulated from the fitted mixture and smoothed
with the same bandwidth as the data, so the band is what the model says the data's KDE should look like.
The KS distance between the data and the posterior predictive CDF is compared with the replicates' own KS
distances: ``ks_pvalue`` is the share of replicates that fit worse (small = the model misses the data).
"""

from __future__ import annotations

import numpy as np

from matchaudit.labelfree.curves import band
from matchaudit.labelfree.starting_values import kde_grid
from matchaudit.labelfree.model import component
from matchaudit.labelfree.twopiece import TwoPiece


def _mixture_cdf(fam: TwoPiece, p: dict, x: np.ndarray) -> np.ndarray:
    """Posterior predictive CDF at ``x``: the mixture CDF averaged over the draws in ``p``."""
    col = {k: np.asarray(v)[:, None] for k, v in p.items()}
    cdf = (1.0 - col["pi"]) * fam.cdf(x[None], *component(col, 0)) + col["pi"] * fam.cdf(x[None], *component(col, 1))
    return cdf.mean(axis=0)


def _ks(x_sorted: np.ndarray, cdf: np.ndarray) -> float:
    n = x_sorted.size
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - cdf), np.max(cdf - (i - 1) / n)))


def check(fam: TwoPiece, scores: np.ndarray, p: dict, rng: np.random.Generator, level: float = 0.89,
          n_rep: int = 50, grid_points: int = 256) -> dict:
    """PPC of one group. ``p``: natural parameters (arrays over draws, see ``model.constrain``)."""
    x = np.sort(np.asarray(scores, dtype=float))
    n = x.size
    pick = rng.choice(np.asarray(p["pi"]).size, size=n_rep, replace=n_rep > np.asarray(p["pi"]).size)
    q = {k: np.asarray(v)[pick] for k, v in p.items()}
    h = 1.06 * x.std() * n ** -0.2
    lo, hi = x[0] - 3 * h, x[-1] + 3 * h
    grid, kde_data = kde_grid(x, h, lo, hi, grid_points)
    cdf_data = _mixture_cdf(fam, p, x)
    reps, ks_rep = [], []
    for r in range(n_rep):
        match = rng.random(n) < q["pi"][r]
        sim = np.where(match, fam.rvs(rng, n, *(np.asarray(v)[r] for v in component(q, 1))),
                       fam.rvs(rng, n, *(np.asarray(v)[r] for v in component(q, 0))))
        reps.append(kde_grid(sim, h, lo, hi, grid_points)[1])
        ks_rep.append(_ks(np.sort(sim), _mixture_cdf(fam, p, np.sort(sim))))
    ks = _ks(x, cdf_data)
    b = band(np.asarray(reps), level)
    return {
        "grid": grid, "kde_data": kde_data, "kde_replicates": b, "bandwidth": float(h),
        "ks": ks, "ks_pvalue": float(np.mean(np.asarray(ks_rep) >= ks)),
    }
