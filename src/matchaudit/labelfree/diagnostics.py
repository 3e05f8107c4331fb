"""Convergence diagnostics for several chains: rank-normalised split R-hat and bulk ESS (Vehtari et al. 2021)."""

from __future__ import annotations

import numpy as np
from scipy import special, stats


def _split(x: np.ndarray) -> np.ndarray:
    """(chains, draws) -> (2 chains, draws // 2): first and second halves as separate chains."""
    n = x.shape[1] // 2
    return np.concatenate([x[:, :n], x[:, x.shape[1] - n :]], axis=0)


def _rank_normal(x: np.ndarray) -> np.ndarray:
    r = stats.rankdata(x, axis=None).reshape(x.shape)
    return special.ndtri((r - 0.375) / (x.size + 0.25))


def _rhat(x: np.ndarray) -> float:
    n = x.shape[1]
    w = x.var(axis=1, ddof=1).mean()
    b_n = x.mean(axis=1).var(ddof=1)
    if w <= 0:
        return float("nan") if b_n <= 0 else float("inf")
    return float(np.sqrt(((n - 1) / n * w + b_n) / w))


def rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat of draws shaped (chains, draws): max of the bulk and folded (tail) versions."""
    x = _split(np.asarray(x, dtype=float))
    bulk = _rhat(_rank_normal(x))
    tail = _rhat(_rank_normal(np.abs(x - np.median(x))))
    return max(bulk, tail)


def ess(x: np.ndarray) -> float:
    """Bulk effective sample size of draws shaped (chains, draws): rank-normalised split chains, Geyer's
    initial monotone sequence on the multi-chain autocorrelation."""
    z = _rank_normal(_split(np.asarray(x, dtype=float)))
    m, n = z.shape
    zc = z - z.mean(axis=1, keepdims=True)
    f = np.fft.rfft(zc, 2 * n, axis=1)
    acov = np.fft.irfft(f * np.conj(f), 2 * n, axis=1)[:, :n] / n
    w = acov[:, 0].mean() * n / (n - 1)
    var_plus = (n - 1) / n * w + z.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return float("nan")
    rho = 1.0 - (w - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    pairs = rho[: 2 * (n // 2)].reshape(-1, 2).sum(axis=1)
    k = np.argmax(pairs <= 0) if np.any(pairs <= 0) else pairs.size
    pairs = np.minimum.accumulate(pairs[:k])
    tau = max(-1.0 + 2.0 * pairs.sum(), 1.0 / np.log10(m * n))
    return float(m * n / tau)


def summarise(draws: np.ndarray, names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """R-hat and bulk ESS per parameter for draws shaped (chains, draws, params)."""
    return {nm: {"rhat": rhat(draws[..., i]), "ess": ess(draws[..., i])} for i, nm in enumerate(names)}
