"""Closed-form intervals for FMR and FNMR at a fixed threshold (docs/methods.md section 4).

Every function here is pure arithmetic on counts; nothing resamples. Inputs are plain arrays:

* FNMR: per identity ``k`` its genuine comparisons ``g_k`` and genuine errors ``E_k``;
* FMR: per identity its impostor *row* totals (comparisons ``m_k.`` and errors ``E_k.``, summed over every
  other identity), the identity pairs with at least one error (``E_kl`` with their ``m_kl``), and
  ``sum_m2 = sum_{k<l} m_kl^2`` over all pairs. That is everything the cluster variance needs: with
  ``D_kl = E_kl - p m_kl``, ``sum_{k<l} D_kl^2 = sum E_kl^2 - 2 p sum E_kl m_kl + p^2 sum_m2`` (pairs without
  errors contribute only through ``sum_m2``) and the shared-identity covariances are
  ``sum_k (sum_l D_kl)^2 - 2 sum_{k<l} D_kl^2`` with ``sum_l D_kl = E_k. - p m_k.``.

Weighting: all of these are **pooled** (every comparison weighs the same), the project's default.

Methods (names are the API and the CLI's ``--ci-method``):

``wilson``          Wilson score interval with the effective size ``n_eff = p(1-p)/Var`` from the corrected,
                    identity-clustered plug-in variance, plus the reference code's small-count rules (1 error:
                    lower ``-ln(1-a)/N``; ``N-1`` errors: upper ``1+ln(1-a)/N``; ``a = 1 - level``). We do *not*
                    floor the FMR variance at the binomial ``p(1-p)/N`` as the reference R code does (the
                    Python package does not either); ``binomial_floor=True`` reproduces the R code.
``wilson-naive``    plain Wilson with ``N`` comparisons (assumes independent comparisons: too narrow for FMR).
``wald``            ``p +- z sqrt(Var)`` with the corrected variance, clipped to [0, 1] (fails at low rates).
``clopper-pearson`` exact binomial interval with ``N`` comparisons (independence baseline).
``jackknife``       Wilson form with ``n_eff`` from the delete-one-identity jackknife variance (pooled
                    analogue of the reference code: plain jackknife for FNMR, the U-statistic-corrected form
                    for FMR, see :func:`jackknife_variance_fmr`).

One-sided upper bounds (``alternative="less"``, for certification): the same constructions at one-sided
level.

Zero errors (any method, either alternative): ``[0, U]`` with ``U`` a one-sided ``level`` upper bound that
holds whatever the dependence inside an identity (docs/intervals.md, "Rules every interval follows"):
:func:`zero_fnmr` / :func:`zero_error_bound`
for FNMR (identities as clusters; ``1 - (1-level)^(1/K)``, about ``3/K``, for K identities of equal size) and
:func:`zero_fmr` / :func:`zero_false_match_bound` for FMR (``-ln(1-level) / floor(K/2)``, about ``6/K``). The comparison-level
rule of three ``1 - (1-level)^(1/N)`` (:func:`rule_of_three`) is valid only for independent comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from scipy.special import ndtri

from matchaudit.choices import CLOSED_FORM, SCOPE
from matchaudit.definitions import Alternative
from matchaudit.errors import InputError



class ConfidenceInterval(NamedTuple):
    low: Any
    high: Any


@dataclass
class IntervalResult:
    """An interval with everything needed to reproduce and judge it (modelled on ``scipy.stats`` results).

    ``estimate``/bounds are floats (or arrays for curves); ``errors``/``comparisons`` are the counts behind
    the point estimate (k/n); ``bootstrap_distribution`` holds the replicates a bootstrap used (None for
    closed forms); ``alternative="less"`` means a one-sided upper bound (``low`` is 0).
    """

    estimate: Any
    confidence_interval: ConfidenceInterval
    method: str
    level: float
    standard_error: Any = math.nan
    errors: Any = None
    comparisons: Any = None
    alternative: Alternative = "two-sided"
    weighting: str = "pooled"
    n_resamples: int | None = None
    seed: int | None = None
    resolution: dict | None = None
    bootstrap_distribution: np.ndarray | None = None
    note: str | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat record (no replicate arrays) for results.json and CSV."""
        def val(x):
            return x.tolist() if isinstance(x, np.ndarray) else (float(x) if isinstance(x, np.floating) else x)
        d = {"method": self.method, "level": self.level, "alternative": self.alternative,
             "weighting": self.weighting, "estimate": val(self.estimate),
             "low": val(self.confidence_interval.low), "high": val(self.confidence_interval.high),
             "standard_error": val(self.standard_error), "errors": val(self.errors),
             "comparisons": val(self.comparisons), "n_resamples": self.n_resamples, "seed": self.seed,
             "note": self.note, "scope": SCOPE.get(self.method)}
        if self.resolution is not None:
            d["grid_resolution"] = dict(self.resolution)
        d.update(self.extra)
        return d


def z_quantile(level: float, alternative: Alternative = "two-sided") -> float:
    """The normal quantile of a ``level`` interval: ``z_{(1+level)/2}`` two-sided, ``z_level`` for a one-sided upper
    bound (``less``); every Wald or Wilson interval and every normal-approximation plan uses this one."""
    if alternative == "greater":
        raise InputError("alternative 'greater' (a lower bound) is not offered for error rates: use 'two-sided' or "
                         "'less' (an upper bound).", param="alternative")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    return float(ndtri(level if alternative == "less" else 0.5 + level / 2))


def rule_of_three(comparisons: float, level: float = 0.95) -> float:
    """One-sided upper bound for zero errors in ``comparisons`` trials: ``1 - (1-level)^(1/N)`` (~3/N at 95%)."""
    return 1.0 - (1.0 - level) ** (1.0 / comparisons) if comparisons > 0 else 1.0


def zero_error_bound(cluster_sizes: np.ndarray, level: float = 0.95) -> float:
    """One-sided ``level`` upper bound for an error rate observed as 0 over clusters (identities) of the given
    numbers of comparisons, valid whatever the dependence inside a cluster, clusters independent.

    Cluster ``k`` with error rate ``p_k`` shows no error with probability at most ``1 - p_k``, so
    ``P(no error) <= prod_k (1 - p_k)``; the bound is the largest pooled rate ``sum w_k p_k / sum w_k`` for which
    the largest such product (water-filling: ``p_k = (1 - 1/(mu w_k))_+``) still reaches ``1 - level``. Equal
    sizes give ``1 - (1-level)^(1/K)``; one cluster gives ``level``."""
    w = np.sort(np.asarray(cluster_sizes, float)[np.asarray(cluster_sizes) > 0])[::-1]
    if not w.size:
        return 1.0
    target = -math.log(1 - level)  # sum over active clusters of log(mu w_k) must reach this
    # active set: the j largest clusters; mu solves sum_{k<j} log(mu w_k) = target
    for j in range(1, w.size + 1):
        log_mu = (target - np.log(w[:j]).sum()) / j
        if j == w.size or math.exp(log_mu) * w[j] <= 1:
            mu = math.exp(log_mu)
            return float(min(1.0, (w[:j] - 1 / mu).clip(0).sum() / w.sum()))
    raise AssertionError("unreachable")


def zero_false_match_bound(n_identities: int, level: float = 0.95) -> float:
    """One-sided ``level`` upper bound for an FMR observed as 0 among the impostor comparisons of
    ``n_identities`` independent identities: any matching of them into ``floor(K/2)`` disjoint pairs has
    independent pairs, each without a false match with probability at most ``exp(-p_kl)``, and some matching
    carries at least the average rate, so ``P(no false match) <= exp(-floor(K/2) FMR)``. Assumes about equal
    impostor comparisons per identity pair (all-pairs with similar samples per identity)."""
    pairs = n_identities // 2
    return 1.0 if pairs < 1 else float(min(1.0, -math.log(1 - level) / pairs))


def wilson_bounds(p: float, n: float, level: float = 0.95, alternative: Alternative = "two-sided") -> tuple[float, float]:
    """Wilson score bounds for proportion ``p`` with (effective) size ``n``."""
    z = z_quantile(level, alternative)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(max(p * (1 - p) + z2 / (4 * n), 0.0) / n) / (1 + z2 / n)
    lo, hi = max(centre - half, 0.0), min(centre + half, 1.0)
    return (0.0, hi) if alternative == "less" else (lo, hi)


_ZERO_DESIGN_EFFECT = 1e-9
"""A clustered variance below this fraction of the binomial one is the rounding residue of a plug-in variance that
is exactly 0 (every identity at the pooled rate, e.g. one identity pair: 2/20 gave n_eff = 4e16 and an interval
1e-8 wide); no real clustering makes a design effect that small."""


def effective_size(p: float, variance: float, comparisons: float) -> float:
    """``n_eff = p(1-p)/Var``; ``N`` when p is 0 or 1 or the variance is 0 (up to rounding: ``_ZERO_DESIGN_EFFECT``)
    or undefined (as the reference code)."""
    if not (0 < p < 1) or not math.isfinite(variance) or not variance > _ZERO_DESIGN_EFFECT * p * (1 - p) / comparisons:
        return float(comparisons)
    return p * (1 - p) / variance


def _empty(method: str, level: float, alternative: Alternative, comparisons) -> IntervalResult:
    return IntervalResult(math.nan, ConfidenceInterval(math.nan, math.nan), method, level, math.nan, 0,
                          comparisons, alternative, note="no comparisons")


def wilson(errors: int, comparisons: int, level: float = 0.95, *, variance: float | None = None,
           alternative: Alternative = "two-sided", method: str | None = None) -> IntervalResult:
    """Wilson interval: naive (``variance=None``: size ``N``) or with a corrected variance (``n_eff``).

    The corrected form applies the reference code's small-count rules (see module doc); ``errors`` and
    ``comparisons`` are counts of unordered comparisons.
    """
    name = method or ("wilson-naive" if variance is None else "wilson")
    if comparisons <= 0:
        return _empty(name, level, alternative, comparisons)
    p = errors / comparisons
    n = float(comparisons) if variance is None else effective_size(p, variance, comparisons)
    se = math.sqrt(p * (1 - p) / comparisons) if variance is None else math.sqrt(max(variance, 0.0))
    if alternative == "less" and errors == 0:
        return IntervalResult(p, ConfidenceInterval(0.0, rule_of_three(comparisons, level)), name, level, se,
                              errors, comparisons, alternative, note="zero errors: rule of three with N comparisons")
    lo, hi = wilson_bounds(p, n, level, alternative)
    note = None
    if variance is not None and not math.isfinite(variance):
        note = "variance undefined (too few identities): n_eff = N comparisons"
    if variance is not None and alternative == "two-sided":
        a = 1 - level
        if errors == 1:
            lo, note = -math.log(1 - a) / comparisons, "one error: lower bound -ln(1-a)/N"
        if errors == comparisons - 1:
            hi, note = 1 + math.log(1 - a) / comparisons, "N-1 errors: upper bound 1+ln(1-a)/N"
    if errors == 0:
        lo = 0.0
    if errors == comparisons:
        hi = 1.0
    return IntervalResult(p, ConfidenceInterval(max(lo, 0.0), hi), name, level, se, errors, comparisons,
                          alternative, note=note, extra={"n_eff": n})


def wald(errors: int, comparisons: int, variance: float, level: float = 0.95,
         alternative: Alternative = "two-sided") -> IntervalResult:
    """``p +- z sqrt(Var)`` with the given (corrected) variance, clipped to [0, 1]."""
    if comparisons <= 0:
        return _empty("wald", level, alternative, comparisons)
    p = errors / comparisons
    z, se = z_quantile(level, alternative), math.sqrt(max(variance, 0.0))
    lo, hi = max(p - z * se, 0.0), min(p + z * se, 1.0)
    return IntervalResult(p, ConfidenceInterval(0.0 if alternative == "less" else lo, hi), "wald", level, se,
                          errors, comparisons, alternative)


def clopper_pearson(errors: int, comparisons: int, level: float = 0.95,
                    alternative: Alternative = "two-sided") -> IntervalResult:
    """Exact binomial (Clopper-Pearson) interval with ``N`` independent comparisons."""
    if comparisons <= 0:
        return _empty("clopper-pearson", level, alternative, comparisons)
    from scipy.stats import beta  # here: scipy.stats takes 0.4 s to import, and only this method needs it

    x, n = errors, comparisons
    a = (1 - level) if alternative == "less" else (1 - level) / 2
    lo = 0.0 if x == 0 or alternative == "less" else float(beta.ppf(a, x, n - x + 1))
    hi = 1.0 if x == n else float(beta.ppf(1 - a, x + 1, n - x))
    p = x / n
    return IntervalResult(p, ConfidenceInterval(lo, hi), "clopper-pearson", level, math.sqrt(p * (1 - p) / n),
                          x, n, alternative)


# ----------------------------------------------------------------------------------------- variances

def fnmr_variance(genuine: np.ndarray, errors: np.ndarray) -> float:
    """Corrected plug-in ``Var(FNMR) = sum_k (E_k - p g_k)^2 / (sum_k g_k)^2`` (identities independent)."""
    g, e = np.asarray(genuine, float), np.asarray(errors, float)
    total = g.sum()
    if total <= 0:
        return math.nan
    p = e.sum() / total
    return float(((e - p * g) ** 2).sum() / total**2)


def weighted_fnmr_variance(genuine: np.ndarray, errors: np.ndarray, weights: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fnmr_variance` of a reweighted sample: identity k counted ``w_k`` times (a bootstrap's integer
    weights, a permutation's 0/1 group mask), for each row of ``weights`` (R, K) and each row of ``genuine`` /
    ``errors`` ((M, K), or (K,)). Returns the FNMRs and variances, (R, M) (or (R,)); NaN FNMR without comparisons.
    Expanded into products of the weights with per-identity sums, so R x M rates cost three matrix products."""
    g, e = np.asarray(genuine, float), np.asarray(errors, float)
    w = np.asarray(weights, float)
    g2, e2 = np.atleast_2d(g), np.atleast_2d(e)
    p, v = _variance_of_sums(w @ g2.T, w @ e2.T, w @ (e2 * e2).T, w @ (e2 * g2).T, w @ (g2 * g2).T)
    return (p[:, 0], v[:, 0]) if g.ndim == e.ndim == 1 else (p, v)


def rowwise_fnmr_variance(genuine: np.ndarray, errors: np.ndarray, weights: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`weighted_fnmr_variance` with errors of their own per row: row r of ``errors`` (R, K) counted with row r
    of ``weights`` (R, K) (a bootstrap replicate's errors at its own threshold); ``genuine`` (K,). (R,) each."""
    g, e, w = np.asarray(genuine, float)[None, :], np.asarray(errors, float), np.asarray(weights, float)
    return _variance_of_sums(*((w * x).sum(axis=1) for x in (g, e, e * e, e * g, g * g)))


def _variance_of_sums(n, se, se2, seg, sg2) -> tuple[np.ndarray, np.ndarray]:
    """FNMR ``sum e / sum g`` and its clustered variance from the weighted sums of g, e, e^2, e g and g^2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = se / n
        v = (se2 - 2 * p * seg + p * p * sg2) / n**2
    return p, np.maximum(v, 0.0)


@dataclass(frozen=True)
class ImpostorTotals:
    """What the FMR variance needs (pooled, unordered comparisons).

    ``row_comparisons``/``row_errors`` (K,): identity k's impostor comparisons/errors with all others;
    ``pair_comparisons``/``pair_errors`` (P,): the identity pairs with at least one error (others may be
    included); ``sum_m2``: ``sum_{k<l} m_kl^2`` over all pairs.
    """

    row_comparisons: np.ndarray
    row_errors: np.ndarray
    pair_comparisons: np.ndarray
    pair_errors: np.ndarray
    sum_m2: float

    @property
    def comparisons(self) -> int:
        return int(round(np.sum(self.row_comparisons) / 2))

    @property
    def errors(self) -> int:
        return int(round(np.sum(self.row_errors) / 2))

    @classmethod
    def from_matrices(cls, m: np.ndarray, e: np.ndarray) -> ImpostorTotals:
        """From dense symmetric K x K comparison and error matrices (diagonal ignored): small data, tests."""
        m, e = np.array(m, float), np.array(e, float)
        np.fill_diagonal(m, 0)
        np.fill_diagonal(e, 0)
        iu = np.triu_indices(m.shape[0], 1)
        return cls(m.sum(axis=1), e.sum(axis=1), m[iu], e[iu], float((m[iu] ** 2).sum()))


def _pair_terms(t: ImpostorTotals) -> tuple[float, float, float]:
    """(p, M, sum_{k<l} D_kl^2)."""
    M = float(np.sum(t.row_comparisons)) / 2
    p = float(np.sum(t.row_errors)) / 2 / M
    pe, pm = np.asarray(t.pair_errors, float), np.asarray(t.pair_comparisons, float)
    s = float((pe**2).sum() - 2 * p * (pe * pm).sum() + p * p * t.sum_m2)
    return p, M, max(s, 0.0)


def fmr_variance(t: ImpostorTotals, binomial_floor: bool = False) -> float:
    """Corrected plug-in ``Var(FMR) = [sum_{k<l} D_kl^2 + max(0, sum_k sum_{l != l'} D_kl D_kl')] / M^2``.

    ``binomial_floor=True`` floors it at ``p(1-p)/M`` as the reference R code does (off by default).
    """
    if np.sum(t.row_comparisons) <= 0:
        return math.nan
    p, M, s = _pair_terms(t)
    rows = np.asarray(t.row_errors, float) - p * np.asarray(t.row_comparisons, float)
    cov = float((rows**2).sum()) - 2 * s
    v = (s + max(cov, 0.0)) / M**2
    return max(v, p * (1 - p) / M) if binomial_floor else v


def jackknife_variance_fnmr(genuine: np.ndarray, errors: np.ndarray) -> float:
    """Delete-one-identity jackknife of the pooled FNMR over identities with genuine comparisons:
    ``(n-1)/n sum_k (FNMR_{-k} - FNMR)^2``."""
    g, e = np.asarray(genuine, float), np.asarray(errors, float)
    keep = g > 0
    g, e = g[keep], e[keep]
    n = g.size
    if n < 2:
        return math.nan
    p = e.sum() / g.sum()
    loo = (e.sum() - e) / (g.sum() - g)
    return float((n - 1) / n * ((loo - p) ** 2).sum())


def jackknife_variance_fmr(t: ImpostorTotals) -> float:
    """Delete-one-identity jackknife of the pooled FMR with the U-statistic correction of the reference code:
    ``(K-2)^2/K^2 sum_k (FMR_{-k} - FMR)^2 - sum_{k<l} D_kl^2 / M^2`` over the K identities with impostor
    comparisons (to first order it equals the corrected plug-in variance); floored at 0. NaN when fewer than 3
    identities, or when one identity takes part in every impostor pair (its deletion leaves no comparisons)."""
    rc, re = np.asarray(t.row_comparisons, float), np.asarray(t.row_errors, float)
    keep = rc > 0
    K = int(keep.sum())
    if K < 3:
        return math.nan
    p, M, s = _pair_terms(t)
    if np.any(rc[keep] >= M):  # an identity in every impostor pair: deleting it leaves no comparisons
        return math.nan
    loo = (M * p - re[keep]) / (M - rc[keep])
    return float(max((K - 2) ** 2 / K**2 * ((loo - p) ** 2).sum() - s / M**2, 0.0))


# ----------------------------------------------------------------------------------------- dispatch

def fnmr_interval(method: str, genuine: np.ndarray, errors: np.ndarray, level: float = 0.95,
                  alternative: Alternative = "two-sided") -> IntervalResult:
    """FNMR interval by a closed-form ``method`` from per-identity genuine comparisons and errors."""
    g, e = np.asarray(genuine), np.asarray(errors)
    x, n = int(e.sum()), int(g.sum())
    return _dispatch(method, x, n, lambda: fnmr_variance(g, e), lambda: jackknife_variance_fnmr(g, e), level,
                     alternative, lambda m: zero_fnmr(m, n, g, level, alternative))


def fmr_interval(method: str, totals: ImpostorTotals, level: float = 0.95, alternative: Alternative = "two-sided",
                 binomial_floor: bool = False) -> IntervalResult:
    """FMR interval by a closed-form ``method`` from impostor totals (see :class:`ImpostorTotals`)."""
    k = int((np.asarray(totals.row_comparisons) > 0).sum())
    return _dispatch(method, totals.errors, totals.comparisons, lambda: fmr_variance(totals, binomial_floor),
                     lambda: jackknife_variance_fmr(totals), level, alternative,
                     lambda m: zero_fmr(m, totals.comparisons, k, level, alternative))


def _zero_errors(method: str, comparisons: int, bound: float, level: float, alternative: Alternative, what: str
                 ) -> IntervalResult:
    """The interval for zero errors: ``[0, bound]`` (a one-sided ``level`` bound), said in the note."""
    return IntervalResult(0.0, ConfidenceInterval(0.0, bound), method, level, 0.0, 0, comparisons, alternative,
                          note=f"zero errors: one-sided {level:.0%} upper bound with {what}, valid whatever the "
                               "dependence within an identity")


def zero_fnmr(method: str, comparisons: int, genuine_per_identity: np.ndarray | None, level: float = 0.95,
              alternative: Alternative = "two-sided", n_identities: int | None = None) -> IntervalResult:
    """FNMR observed as 0 in ``comparisons``: ``[0, zero_error_bound]`` with the identities as clusters. Without
    per-identity counts (``None``), ``n_identities`` clusters of equal weight (and for identity-balanced rates,
    where every identity weighs the same)."""
    if genuine_per_identity is None:
        sizes, how = np.ones(n_identities or 0), f"{n_identities} identities as clusters of equal weight"
    else:
        sizes = np.asarray(genuine_per_identity)
        how = f"{int((sizes > 0).sum())} identities as clusters"
    return _zero_errors(method, comparisons, zero_error_bound(sizes, level), level, alternative, how)


def zero_fmr(method: str, comparisons: int, n_identities: int, level: float = 0.95,
             alternative: Alternative = "two-sided") -> IntervalResult:
    """FMR observed as 0 in ``comparisons`` among ``n_identities``: ``[0, zero_false_match_bound]``, the
    assumption-free bound; beside it (``extra``) the tighter bound if distinct identity pairs were independent
    (:func:`independent_pairs_bound`), labelled with that assumption (#43 item 6: 0/79,200 read "up to 6%")."""
    r = _zero_errors(method, comparisons, zero_false_match_bound(n_identities, level), level, alternative,
                     f"{n_identities} identities (floor(K/2) disjoint identity pairs)")
    tight = independent_pairs_bound(n_identities, level)
    r.extra.update(bound_if_pairs_independent=tight, bound_assumption=INDEPENDENT_PAIRS)
    r.note += f"; {tight:.3g} if {INDEPENDENT_PAIRS}"
    return r


INDEPENDENT_PAIRS = ("the K(K-1)/2 identity pairs are independent (they share identities, so this is an "
                     "assumption, not a guarantee)")


def independent_pairs_bound(n_identities: int, level: float = 0.95) -> float:
    """One-sided ``level`` upper bound for an FMR observed as 0 if the ``K(K-1)/2`` identity pairs were independent:
    each pair shows no false match with probability at most ``exp(-p_kl)``, so ``P(none) <= exp(-M FMR)`` with
    ``M`` the pairs (equal impostor comparisons per pair, as all-pairs designs have)."""
    pairs = n_identities * (n_identities - 1) // 2
    return 1.0 if pairs < 1 else float(min(1.0, -math.log(1 - level) / pairs))


def _dispatch(method, x, n, var, jack, level, alternative, zero) -> IntervalResult:
    if x == 0 and n > 0 and method in CLOSED_FORM:
        return zero(method)
    if method == "wilson":
        return wilson(x, n, level, variance=var(), alternative=alternative)
    if method == "wilson-naive":
        return wilson(x, n, level, alternative=alternative)
    if method == "wald":
        return wald(x, n, var(), level, alternative)
    if method == "clopper-pearson":
        return clopper_pearson(x, n, level, alternative)
    if method == "jackknife":
        r = wilson(x, n, level, variance=jack(), alternative=alternative, method="jackknife")
        r.note = (r.note + "; " if r.note else "") + "Wilson form with n_eff from the identity jackknife variance"
        return r
    raise ValueError(f"unknown closed-form method {method!r}; choose from {CLOSED_FORM}")


__all__ = ["CLOSED_FORM", "ConfidenceInterval", "ImpostorTotals", "IntervalResult", "clopper_pearson",
           "effective_size", "fmr_interval", "fmr_variance", "independent_pairs_bound", "fnmr_interval", "fnmr_variance", "weighted_fnmr_variance",
           "jackknife_variance_fmr", "jackknife_variance_fnmr", "rule_of_three", "wald", "wilson", "wilson_bounds",
           "zero_error_bound", "zero_false_match_bound", "zero_fmr", "zero_fnmr"]
