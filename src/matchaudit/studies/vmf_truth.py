"""Rates of the vMF generating model by quadrature: the coverage studies' ground truth.

An identity's samples are vMF(mu, kappa) on the unit sphere of R^d. A draw ``Y`` has cosine ``w = <Y, mu>`` with
density proportional to ``exp(kappa w) (1 - w^2)^((d-3)/2)``, and the rest of ``Y`` is a uniform direction
orthogonal to ``mu``. So for any unit ``x`` with ``c = <x, mu>``

    <x, Y> = w c + sqrt(1 - w^2) sqrt(1 - c^2) u,    (1 + u) / 2 ~ Beta((d-2)/2, (d-2)/2), independent of w,

and ``accept(c; t) = P(<x, Y> >= t | c)`` is a one-dimensional integral over ``w`` (Gauss-Legendre). From it:

* genuine, exact: ``FNMR(t; kappa) = 1 - E_c accept(c; t)`` where ``c`` has the law of ``w`` (a double
  integral, no simulation);
* impostor, identities fixed: ``P(<X_i, Y_j> >= t) = E accept_j(<X_i, mu_j>; t)``, a Monte Carlo over draws
  of ``X_i`` only, exact in ``Y_j`` (Rao-Blackwellised). Its error is about ``sqrt(n / 4m)`` of a data set's
  FMR spread with ``n`` samples per identity there and ``m`` here, versus ``sqrt(n / m)`` for all pairs of a
  large draw, at a fraction of the cost.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import betainc
from scipy.stats import beta

from matchaudit.simulation import VmfPopulation

W_NODES = 48  # Gauss-Legendre nodes over the cosine's support (smooth, unimodal: 48 and 96 agree to 1e-15 in FMR)
C_STEP = 1e-3  # grid of the impostor cosines c (linear binning: 4e-5 relative error at FMR 1e-4, d = 64)
BATCHES = 8  # independent batches of the impostor Monte Carlo, for its standard error
CHUNK = 1 << 22  # cosines per block of the impostor pass


KAPPA_NODES = 24  # Gauss-Legendre nodes over kappa ~ U[lo, hi] (FNMR(t; kappa) is smooth in kappa)


def uniform_impostor_threshold(targets: np.ndarray | float, dim: int) -> np.ndarray:
    """The cosine(s) at which impostors between uniform centres reach FMR ``targets`` (rule ``>=``): the cosine
    of two independent uniform directions has ``(1 + s) / 2 ~ Beta((d-1)/2, (d-1)/2)``."""
    h = (dim - 1) / 2
    return 2 * beta.isf(np.asarray(targets, float), h, h) - 1


def kappa_law(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights (summing to 1) of kappa ~ U[lo, hi]; one node when lo == hi: with
    :func:`mean_fnmr`, a group's exact FNMR when its identities' concentrations are uniform on [lo, hi]."""
    if hi <= lo:
        return np.array([lo]), np.ones(1)
    x, w = np.polynomial.legendre.leggauss(KAPPA_NODES)
    return lo + (x + 1) * (hi - lo) / 2, w / 2


@functools.lru_cache(maxsize=8192)
def cosine_rule(kappa: float, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature nodes and weights (summing to 1) for ``w = <Y, mu>``, ``Y ~ vMF(mu, kappa)`` in R^dim,
    on the interval where the log density is within 50 of its maximum (cached: every threshold tried by a
    root search reuses each identity's rule)."""
    fine = np.linspace(-1, 1, 4_001)[1:-1]
    logf = kappa * fine + (dim - 3) / 2 * np.log1p(-fine * fine)
    keep = fine[logf >= logf.max() - 50]
    step = fine[1] - fine[0]
    lo, hi = max(keep[0] - step, -1.0), min(keep[-1] + step, 1.0)
    x, q = np.polynomial.legendre.leggauss(W_NODES)
    w = lo + (x + 1) * (hi - lo) / 2
    logf = kappa * w + (dim - 3) / 2 * np.log1p(-w * w)
    p = q * np.exp(logf - logf.max())
    return w, p / p.sum()


def accept(c: np.ndarray, t: float, kappa: float, dim: int) -> np.ndarray:
    """``P(<x, Y> >= t)`` for unit ``x`` with cosine ``c`` to the centre of ``Y ~ vMF(mu, kappa)``, per ``c``."""
    w, p = cosine_rule(kappa, dim)
    c = np.clip(np.asarray(c, float), -1 + 1e-12, 1 - 1e-12)[:, None]
    scale = np.sqrt(1 - w * w)[None, :] * np.sqrt(1 - c * c)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.clip((t - w[None, :] * c) / scale, -1, 1)
    a = (dim - 2) / 2
    return betainc(a, a, (1 - u) / 2) @ p


def fnmr(t: np.ndarray, kappa: float, dim: int) -> np.ndarray:
    """Exact ``P(<X, Y> < t)`` for two independent draws of one identity, per threshold (rule ``>=``)."""
    w, p = cosine_rule(kappa, dim)
    return np.array([1 - p @ accept(w, float(x), kappa, dim) for x in np.atleast_1d(t)])


def mean_fnmr(t: np.ndarray, kappas: np.ndarray, dim: int, weights: np.ndarray | None = None) -> np.ndarray:
    """FNMR averaged over identities with concentrations ``kappas`` (equal weights, or ``weights`` summing to
    1 for a quadrature over a kappa law)."""
    w = np.full(len(kappas), 1 / len(kappas)) if weights is None else np.asarray(weights, float)
    return sum(wi * fnmr(t, float(k), dim) for wi, k in zip(w, kappas))


@dataclass(frozen=True)
class ImpostorCosines:
    """Binned cosines of independent draws of each identity to every other identity's centre: ``counts[b, j, h]``
    is batch ``b``'s (linearly binned) number of draws not of identity ``j`` at cosine ``-1 + h C_STEP`` to
    ``mu_j``; ``draws[b]`` the batch's number of (draw, other centre) pairs."""

    counts: np.ndarray  # (BATCHES, K, H)
    draws: np.ndarray  # (BATCHES,)
    kappas: np.ndarray  # (K,)
    dim: int

    @classmethod
    def draw(cls, pop: VmfPopulation, per_identity: int, seed: int) -> ImpostorCosines:
        """``per_identity`` draws of every identity of ``pop`` (seeded), binned against all other centres."""
        k, h = len(pop.kappas), int(round(2 / C_STEP)) + 1
        counts = np.zeros((BATCHES, k * h))
        draws = np.zeros(BATCHES)
        sim = pop.sample(per_identity, seed=seed)
        x = sim.embeddings.astype(np.float64)
        owner = np.repeat(np.arange(k), per_identity)
        batch = np.tile(np.arange(per_identity) % BATCHES, k)
        rows = max(1, CHUNK // k)
        cols = np.arange(k) * h
        for s in range(0, len(x), rows):
            c = x[s:s + rows] @ pop.centroids.T
            pos = (np.clip(c, -1, 1) + 1) / C_STEP
            lo = np.minimum(pos.astype(np.int64), h - 2)
            frac = pos - lo
            other = np.arange(k)[None, :] != owner[s:s + rows, None]
            for b in np.unique(batch[s:s + rows]):
                m = other & (batch[s:s + rows] == b)[:, None]
                idx = (cols[None, :] + lo)[m]
                f = frac[m]
                counts[b] += np.bincount(idx, 1 - f, k * h) + np.bincount(idx + 1, f, k * h)
                draws[b] += m.sum()
        return cls(counts.reshape(BATCHES, k, h), draws, np.asarray(pop.kappas, float), pop.dim)

    @functools.cached_property
    def support(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per identity: the occupied cosine bins and their cosines (the same for every threshold)."""
        total = self.counts.sum(axis=0)
        grid = -1 + C_STEP * np.arange(total.shape[1])
        return [(nz, grid[nz]) for nz in map(np.flatnonzero, total)]

    def fmr(self, t: float) -> np.ndarray:
        """(BATCHES,): each batch's impostor acceptance rate at ``t`` (exact over the other identity's draws)."""
        out = np.zeros(len(self.draws))
        for j, (kappa, (nz, c)) in enumerate(zip(self.kappas, self.support)):
            out += self.counts[:, j, nz] @ accept(c, t, float(kappa), self.dim)
        return out / self.draws


@dataclass(frozen=True)
class SharedTruth:
    thresholds: np.ndarray  # (T,) threshold with FMR = target, rule >=
    fmr_se: np.ndarray  # (T,) Monte-Carlo standard error of the FMR at those thresholds
    threshold_se: np.ndarray  # (T,) its consequence for the threshold (delta method)


def shared_thresholds(imp: ImpostorCosines, targets: np.ndarray) -> SharedTruth:
    """The thresholds at which the fixed identities' impostor FMR equals each target, with their errors."""
    rate = lambda t: float(imp.fmr(t) @ imp.draws / imp.draws.sum())  # noqa: E731
    ts, fse, tse = [], [], []
    for a in np.asarray(targets, float):
        gap = lambda x: np.log(max(rate(x), 1e-300)) - np.log(a)  # noqa: E731  decreasing in x
        guess, step = float(uniform_impostor_threshold(a, imp.dim)), 0.01  # the population's law (uniform centres)
        lo, hi = max(guess - step, -1.0), min(guess + step, 1.0)
        while gap(lo) < 0 and lo > -1:
            lo, step = max(lo - 2 * step, -1.0), 2 * step
        while gap(hi) > 0 and hi < 1:
            hi, step = min(hi + 2 * step, 1.0), 2 * step
        t = brentq(gap, lo, hi, xtol=1e-7)
        per = imp.fmr(t)
        se = float(per.std(ddof=1) / np.sqrt(len(per)))
        slope = (rate(t + 1e-4) - rate(t - 1e-4)) / 2e-4
        ts.append(t)
        fse.append(se)
        tse.append(se / abs(slope) if slope else np.inf)
    return SharedTruth(np.array(ts), np.array(fse), np.array(tse))


__all__ = ["ImpostorCosines", "KAPPA_NODES", "SharedTruth", "accept", "cosine_rule", "fnmr", "kappa_law", "mean_fnmr",
           "shared_thresholds", "uniform_impostor_threshold"]
