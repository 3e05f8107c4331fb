"""Label-free starting values per group: KDE modes at a critical bandwidth, Storey's share of matches, a GMM.

Follows the SPE-FR supplement, appendix D (share of true matches) and E.2 (hyper-parameters):

1. modes of the score KDE at the critical bandwidth for two modes (Silverman; Hall & York when a support is
   given: only modes inside it count); the match mode ``mu`` is the greater one. Heavy tails put modes on a
   few outlying scores (e.g. far below the non-matches, leaving the non-match mode the greater of two):
   only a mode above the GMM's midpoint with at least ``MODE_SHARE`` of the scores within one bandwidth
   counts, and the search goes on to at most ``MAX_MODES`` modes (our addition);
2. ``sigma^2 = (2 / n_U) * sum_{s >= mu} (s - mu)^2`` with ``n_U = #{s > mu}``, exactly as printed. For a
   normal match distribution this is twice the variance; it reproduces the supplement's Table 1, whose
   label-free Storey(0.05) and Storey(0.10) columns sit about 5% and 9% above the truth, which is what the
   factor 2 predicts (docs/labelfree.md);
3. two-sided p-values ``p = 2 (1 - Phi(|s - mu| / sigma))`` and Storey(lambda) ``#{p > lambda} / (n (1 - lambda))``;
4. a two-component Gaussian mixture (EM) whose means and SDs centre the priors of the non-match mode and
   scales, and of the match component's when the KDE has no separate match mode (then Storey's p-values,
   centred in the non-match bulk, say nothing and the GMM weight starts ``pi``). When it has one, the match
   priors are centred on the mode fit of step 2 (``mu``, ``sigma / sqrt(2)``, the RMS distance of the
   scores above the mode): with few matches the GMM's upper component models the non-matches' skew and
   tail instead (docs/labelfree.md, "Recovery").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

_GRID = 2**12
MODE_SHARE = 0.005  # a mode with fewer scores within one bandwidth is a tail outlier's, not the match mode
MAX_MODES = 4


def kde_grid(x: np.ndarray, h: float, lo: float, hi: float, n: int = _GRID,
             weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian KDE (bandwidth = kernel SD ``h``) of ``x`` on ``n`` points over [lo, hi]: linear binning + FFT.
    ``weights``: how many observations each ``x`` stands for (``None``: one each)."""
    grid = np.linspace(lo, hi, n)
    step = grid[1] - grid[0]
    pos = (np.clip(x, lo, hi) - lo) / step
    i = np.minimum(np.floor(pos).astype(np.int64), n - 2)
    frac = pos - i
    if weights is None:
        counts = np.bincount(i, 1.0 - frac, minlength=n) + np.bincount(i + 1, frac, minlength=n)
        total = x.size
    else:
        w = np.asarray(weights, dtype=float)
        counts = np.bincount(i, w * (1.0 - frac), minlength=n) + np.bincount(i + 1, w * frac, minlength=n)
        total = w.sum()
    m = 2 * n  # zero padding: no wrap-around
    freq = np.fft.rfftfreq(m, d=step)
    dens = np.fft.irfft(np.fft.rfft(counts, m) * np.exp(-0.5 * (2.0 * np.pi * freq * h) ** 2), m)[:n]
    return grid, np.maximum(dens, 0.0) / (total * step)


def _mode_index(grid: np.ndarray, dens: np.ndarray, support: tuple[float, float] | None) -> np.ndarray:
    """Grid indices of the local maxima (ignoring FFT round-off far below the peak; inside ``support``)."""
    d = np.where(dens > 1e-8 * dens.max(), dens, 0.0)
    up = np.diff(d)
    idx = np.flatnonzero((up[:-1] > 0) & (up[1:] <= 0)) + 1
    if support is not None:
        idx = idx[(grid[idx] >= support[0]) & (grid[idx] <= support[1])]
    return idx


@dataclass(frozen=True)
class Modes:
    """Mode locations (ascending) of the KDE at the critical bandwidth for at most ``k`` modes."""

    locations: np.ndarray
    bandwidth: float


def critical_modes(x: np.ndarray, k: int = 2, support: tuple[float, float] | None = None, tol: float = 1e-5) -> Modes:
    """Smallest Gaussian bandwidth with at most ``k`` KDE modes (bisection to relative ``tol``) and its modes."""
    x = np.asarray(x, dtype=float)
    spread = float(np.std(x)) or 1.0
    lo_x, hi_x = float(x.min()), float(x.max())

    def modes(h: float) -> np.ndarray:
        grid, dens = kde_grid(x, h, lo_x - 4.0 * spread, hi_x + 4.0 * spread)
        return grid[_mode_index(grid, dens, support)]

    hi = spread
    while modes(hi).size > k:
        hi *= 2.0
    lo = hi / 2.0
    while modes(lo).size <= k and lo > 1e-6 * spread:
        hi, lo = lo, lo / 2.0
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if modes(mid).size <= k:
            hi = mid
        else:
            lo = mid
    return Modes(np.sort(modes(hi)), hi)


def match_normal_fit(x: np.ndarray, mu: float) -> float:
    """Appendix D step 2: ``sigma`` with ``sigma^2 = (2/n_U) sum_{s >= mu} (s - mu)^2``, ``n_U = #{s > mu}``."""
    n_u = int(np.count_nonzero(x > mu))
    if n_u == 0:
        return float("nan")
    return float(np.sqrt(2.0 / n_u * np.sum((x[x >= mu] - mu) ** 2)))


def storey(x: np.ndarray, mu: float, sigma: float, lam: float = 0.05) -> float:
    """Appendix D steps 3-4: Storey(lambda) share of true matches from two-sided normal p-values (not clipped)."""
    p = 2.0 * special.ndtr(-np.abs((x - mu) / sigma))
    return float(np.count_nonzero(p > lam) / (x.size * (1.0 - lam)))


@dataclass(frozen=True)
class Gmm:
    """Two-component Gaussian mixture, components ordered by mean (0 = non-match, 1 = match for similarities)."""

    weight1: float
    means: tuple[float, float]
    sds: tuple[float, float]


def gmm2(x: np.ndarray, iters: int = 500, tol: float = 1e-10) -> Gmm:
    """EM for a two-component Gaussian mixture, started from the lower and upper quartiles."""
    x = np.asarray(x, dtype=float)
    m = np.quantile(x, [0.25, 0.75])
    s = np.full(2, np.std(x) / 2.0 or 1.0)
    w = np.array([0.5, 0.5])
    last = -np.inf
    for _ in range(iters):
        logp = np.log(w) - np.log(s) - 0.5 * ((x[:, None] - m) / s) ** 2
        norm = np.logaddexp(logp[:, 0], logp[:, 1])
        r = np.exp(logp - norm[:, None])
        nk = r.sum(0) + 1e-12
        w = nk / x.size
        m = (r * x[:, None]).sum(0) / nk
        s = np.sqrt(np.maximum((r * (x[:, None] - m) ** 2).sum(0) / nk, 1e-12 * np.var(x) + 1e-300))
        ll = float(norm.sum())
        if ll - last < tol * abs(ll):
            break
        last = ll
    o = np.argsort(m)
    return Gmm(float(w[o][1]), (float(m[o][0]), float(m[o][1])), (float(s[o][0]), float(s[o][1])))


@dataclass(frozen=True)
class Init:
    """Everything the label-free start of one group is built from (reported as is)."""

    gmm: Gmm
    modes: tuple[float, ...]
    critical_bandwidth: float
    match_mode: float
    match_sd: float
    pi_storey: float
    pi_start: float
    warnings: tuple[str, ...]
    separate_match_mode: bool = True

    @property
    def match_centre(self) -> tuple[float, float]:
        """(mean, SD) the match component's priors are centred on: the KDE mode fit when the KDE has a
        separate match mode (``sigma / sqrt(2)`` undoes step 2's factor 2), else the GMM's upper component."""
        if self.separate_match_mode:
            return self.match_mode, self.match_sd / np.sqrt(2.0)
        return self.gmm.means[1], self.gmm.sds[1]

    def to_dict(self) -> dict:
        return asdict(self)


def match_mode(x: np.ndarray, g: Gmm, support: tuple[float, float] | None = None) -> tuple[Modes, float | None]:
    """The match mode: the greatest KDE mode above the GMM's midpoint that has at least ``MODE_SHARE`` of the
    scores within one bandwidth, at the critical bandwidth for 2, 3, ... ``MAX_MODES`` modes (the first that
    has one), with those modes; ``None`` and the two-mode KDE when there is none."""
    mid = 0.5 * (g.means[0] + g.means[1])
    first = None
    for k in range(2, MAX_MODES + 1):
        modes = critical_modes(x, k, support)
        first = first or modes
        near = np.abs(x[:, None] - modes.locations[None, :]) <= modes.bandwidth
        ok = (modes.locations >= mid) & (near.sum(axis=0) >= MODE_SHARE * x.size)
        if modes.locations.size >= 2 and ok.any():
            return modes, float(modes.locations[ok].max())
    return first, None


def initialise(x: np.ndarray, lam: float = 0.05, support: tuple[float, float] | None = None,
               labelled_matches: int | None = 0) -> Init:
    """Appendix D + E.2 start for one group's similarity scores (labels are not used here, but for their number of
    matches: ``labelled_matches`` identify the match component whatever the mixture's share says; ``None``: every
    score is labelled, nothing rests on the mixture)."""
    x = np.asarray(x, dtype=float)
    g = gmm2(x)
    warnings: list[str] = []
    modes, found = match_mode(x, g, support)
    separate = found is not None
    mu = float(found) if separate else float(modes.locations[-1])
    if not separate:
        warnings.append(
            f"the KDE's upper mode ({mu:.4g}) is not a separate match mode (GMM means {g.means[0]:.4g}, "
            f"{g.means[1]:.4g}); the match-mode fit uses the GMM's upper component instead"
        )
        mu = g.means[1]
    sigma = match_normal_fit(x, mu)
    if not np.isfinite(sigma) or sigma <= 0:
        sigma = g.sds[1]
    pi_hat = storey(x, mu, sigma, lam)
    pi_start = float(np.clip(pi_hat if separate else g.weight1, 1.0 / x.size, 1.0 - 1.0 / x.size))
    if labelled_matches is not None and max(x.size * pi_start, labelled_matches) < 200:
        warnings.append(f"only about {x.size * pi_start:.0f} true matches expected: the match component is weakly identified")
    return Init(g, tuple(float(v) for v in modes.locations), modes.bandwidth, mu, sigma, pi_hat, pi_start, tuple(warnings),
                separate)
