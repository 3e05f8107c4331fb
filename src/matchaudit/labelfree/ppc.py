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

The KS distance is dominated by the bulk of the scores, where the operating points are not: a fit can pass it
and still miss the tails that FNMR at FMR targets are read from (#19). :func:`tail_check` therefore counts the
scores in bins whose edges are the fitted thresholds near the operating points, and compares the counts with
the model's, draw by draw (a realised chi-square discrepancy, Gelman, Meng and Stern 1996). It sees a misfit of
the scores' distribution there; it cannot see two components that split the same distribution differently
(the marginal is all that unlabelled scores show): labelled pairs are the cure for that.
"""

from __future__ import annotations

import numpy as np

from matchaudit.labelfree.binned import COUNT_BINS, Compressed, compress
from matchaudit.labelfree.curves import band, population_at_fmr
from matchaudit.labelfree.starting_values import kde_grid
from matchaudit.labelfree.model import distribution
from matchaudit.labelfree.twopiece import Family

_CHUNK = 2_000_000  # draws x points of one CDF evaluation
RAW_REPLICATES = 100_000  # up to this many scores per group, replicates are simulated pair by pair
TAIL_ALARM = 0.05  # a tail check below this posterior predictive p-value warns
MIN_EXPECTED = 5.0  # tail bins are merged until the model expects at least this many scores in each


def _component_cdfs(fam: Family, p: dict, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-match and match CDFs at ``x`` for every draw in ``p``: each (draws, points)."""
    col = {k: np.asarray(v)[:, None] for k, v in p.items()}
    return distribution(fam, col, 0).cdf(x[None]), distribution(fam, col, 1).cdf(x[None])


def _mix(pi, non_match: np.ndarray, match: np.ndarray) -> np.ndarray:
    """The mixture of per-component arrays (draws, points), each draw with its share of matches ``pi``."""
    pi = np.asarray(pi)[:, None]
    return (1.0 - pi) * non_match + pi * match


def _mixture_cdf(fam: Family, p: dict, x: np.ndarray) -> np.ndarray:
    """Mixture CDF at ``x`` for every draw in ``p``: (draws, points)."""
    return _mix(p["pi"], *_component_cdfs(fam, p, x))


def _predictive_cdf(fam: Family, p: dict, x: np.ndarray) -> np.ndarray:
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


def check(fam: Family, scores: np.ndarray, p: dict, rng: np.random.Generator, level: float = 0.89,
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
            one = {k: v[r] for k, v in q.items()}
            sim = np.where(match, distribution(fam, one, 1).rvs(rng, n), distribution(fam, one, 0).rvs(rng, n))
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


def ladder(smallest: float) -> np.ndarray:
    """Rates 0.5, 0.2, 0.1, 0.05, ... (1-2-5 steps) down to ``smallest``, descending."""
    steps = [m * 10.0**-k for k in range(0, 13) for m in (0.5, 0.2, 0.1)]
    return np.array([r for r in steps if r >= smallest * (1 - 1e-9)])


def _edges(fam: Family, q: dict, fmr: np.ndarray, fnmr: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Bin edges near the operating points: the posterior-median thresholds at the FMR rates ``fmr`` (non-match
    upper tail, :func:`curves.population_at_fmr`) and at the FNMR rates ``fnmr`` (match lower tail), ascending,
    with their names."""
    t0 = np.median(population_at_fmr(distribution(fam, q, 0), distribution(fam, q, 1), fmr)[0], axis=0)
    t1 = np.median(distribution(fam, q, 1).column().ppf(fnmr[None, :]), axis=0)
    cuts = np.r_[t0, t1]
    names = [f"the threshold at FMR {a:g}" for a in fmr] + [f"the match {b:g} quantile" for b in fnmr]
    order = np.argsort(cuts, kind="stable")
    keep = np.r_[True, np.diff(cuts[order]) > 0] & np.isfinite(cuts[order])
    return cuts[order][keep], [names[i] for i in order[keep]]


def _merge(expected: np.ndarray) -> np.ndarray:
    """Start index of each merged bin: adjacent bins joined until each expects at least ``MIN_EXPECTED`` scores
    (a short last bin joins the one before)."""
    starts, acc = [0], 0.0
    for k, e in enumerate(expected):
        if acc >= MIN_EXPECTED:
            starts.append(k)
            acc = 0.0
        acc += e
    if acc < MIN_EXPECTED and len(starts) > 1:
        starts.pop()
    return np.asarray(starts)


def tail_check(fam: Family, cells: Compressed, p: dict, targets, rng: np.random.Generator,
               level: float = 0.89, labelled: tuple[int, int] = (0, 0)) -> dict:
    """Counts of scores between the fitted thresholds near the operating points against the model's.

    Bins: edges at the posterior-median thresholds at FMR 0.5, 0.2, 0.1, ... down to the smallest of
    ``targets`` (and the targets themselves) and at the match component's 0.5, 0.2, ..., 0.001 quantiles, merged
    until each expects ``MIN_EXPECTED`` scores. For each posterior draw in ``p`` (thinned by the caller) the chi-square
    distance of the observed counts from the draw's expected counts is compared with that of counts replicated
    from the draw (multinomial: exactly the distribution of binned mixture samples); ``pvalue`` is the share of
    draws whose replicate is at least as far (small: the model misses the scores there). ``bins``: per bin its
    edges, observed count, and the model's expected count (posterior median and ``[lower, upper]`` band at ``level``).
    ``cells``: the group's scores (:func:`binned.compress`); counted at the cells' values. ``labelled``: how many
    of them are labelled non-matches and matches: those are drawn from their own component (the unlabelled ones
    from the mixture), so that labels sampled per class (``stratified``) do not read as a misfit.
    """
    q = {k: np.asarray(v) for k, v in p.items()}
    fmr = np.union1d(ladder(min(targets)), np.asarray(targets, dtype=float))[::-1]
    cuts, names = _edges(fam, q, fmr, ladder(1e-3))
    ends = np.ones((q["pi"].size, 1))
    parts = [np.diff(np.concatenate([0 * ends, np.clip(cdf, 0.0, 1.0), ends], axis=1), axis=1).clip(0.0, None)
             for cdf in _component_cdfs(fam, q, cuts)]  # per component (R, K)
    n = cells.n
    sizes = (n - sum(labelled), *labelled)  # unlabelled, labelled non-matches, labelled matches
    mixture = _mix(q["pi"], *parts)
    starts = _merge(np.median(sizes[0] * mixture + sizes[1] * parts[0] + sizes[2] * parts[1], axis=0))
    laws = [np.add.reduceat(x, starts, axis=1) for x in (mixture, *parts)]
    lower = [None] + [names[k - 1] for k in starts[1:]]
    upper = [names[k - 1] for k in starts[1:]] + [None]
    edges = np.r_[-np.inf, cuts[starts[1:] - 1], np.inf]
    observed = np.bincount(np.searchsorted(edges[1:-1], cells.values, side="right"), cells.counts,
                           minlength=starts.size)
    expected = sum(m * law for m, law in zip(sizes, laws))
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = lambda o: np.nansum(np.where(expected > 0, (o - expected) ** 2 / expected, np.where(o > 0, np.inf, 0.0)),  # noqa: E731
                                   axis=-1)
        rep = sum(np.stack([rng.multinomial(m, row / row.sum()) for row in law]) for m, law in zip(sizes, laws) if m)
        pvalue = float(np.mean(dist(rep) >= dist(observed[None, :])))
    b = band(expected, level)
    bins = [{"from": lo, "to": hi, "low": float(edges[k]), "high": float(edges[k + 1]), "observed": int(observed[k]),
             "expected": float(b["median"][k]), "expected_lower": float(b["lower"][k]),
             "expected_upper": float(b["upper"][k])} for k, (lo, hi) in enumerate(zip(lower, upper))]
    return {"pvalue": pvalue, "alarm": pvalue < TAIL_ALARM, "bins": bins}


def worst_bin(tail: dict) -> dict:
    """The tail check's bin whose observed count is furthest from the model's, in standard deviations."""
    return max(tail["bins"], key=lambda b: abs(b["observed"] - b["expected"]) / np.sqrt(max(b["expected"], 1.0)))
