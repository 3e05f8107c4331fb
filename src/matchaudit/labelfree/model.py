"""The SPE-FR posterior of one group: a two-component two-piece mixture with empirical-Bayes priors.

Unconstrained parameter vector (``theta``, last axis), the order samplers and diagnostics use:

    mu0, log(mu1 - mu0), log s0L, log s0R, log s1L, log s1R, logit pi [, log delta0, log delta1]
    [, logit b, log sb, logit w]   (``shoulder``: non-matches a mixture of two components)

Component 0 = non-matches, 1 = matches (similarities: ``mu1 > mu0`` by construction, no label switching).
Likelihood: the marginal mixture for unlabelled scores (``counts_u``: the weight of each value, the distinct
values with counts or the bins' quadrature points of :func:`binned.likelihood_cells`, see
:meth:`GroupModel.compressed`), the complete-data term for labelled ones (per score, exact); with
``label_sampling="stratified"`` (labels drawn per class) the ``log pi`` parts of labelled pairs are dropped.
Priors (supplement E.2): ``mu_j ~ N(m_j, sd_j)``, scales ``~ Gamma(2, rate)`` with mean = sd_j,
``pi ~ Beta(1, 1)``, with ``(m_0, sd_0)`` the GMM's lower component and ``(m_1, sd_1)``
:attr:`Init.match_centre` (the KDE match-mode fit; the GMM's upper component only when the KDE has no
separate match mode: a deviation from E.2). Shape priors per ``shape_prior`` (:data:`SHAPE_PRIORS`):
``"jeffreys"`` (default) the independence Jeffreys prior of the t d.o.f. (Fonseca, Ferreira & Migon 2008) for TP-T and
``log delta ~ N(0, 0.5^2)`` for TP-SAS; ``"weak"`` ``Gamma(2, 0.1)`` (TP-T) and the same TP-SAS prior;
``"supplement"`` E.2's ``Gamma(5, 0.25)`` (TP-T) / ``Gamma(50, 50)`` (TP-SAS). Why: docs/labelfree.md
"Recovery". All Gammas in shape-rate form. ``log_density`` is written once for NumPy and JAX (``xp``).

With ``shoulder`` the non-matches are ``(1 - w) f0 + w fb``: a bulk ``f0`` and a shoulder ``fb`` of the same
family (its shape ``delta0``, one scale ``sb`` on both sides, ``~ Gamma(2, rate)`` with mean ``sd_0``) whose mode
``mu0 + b (mu1 - mu0)`` lies between the two modes (``b ~ U(0, 1)``), ``w ~ Beta(2, 18)`` (mean 0.1; measured
against Beta(1, 19), whose shoulder emptied on scores that have one: docs/labelfree.md, "Real-like recovery"; the
shoulder's place wanders where the data say little, so convergence is judged on the rates: ``api._estimands``):
look-alike impostors above the bulk (deep-model cosine scores), which the two-component model can only give to
the matches (#44).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Literal

import numpy as np
from scipy import special

from matchaudit.labelfree.binned import LIKELIHOOD_POINTS, Compressed, likelihood_cells
from matchaudit.labelfree.starting_values import Init
from matchaudit.labelfree.twopiece import TwoPiece

PARAM_NAMES = ("mu0", "log_gap", "log_s0L", "log_s0R", "log_s1L", "log_s1R", "logit_pi", "log_delta0", "log_delta1")
SHOULDER_NAMES = ("logit_b", "log_sb", "logit_w")
SHOULDER_W = (2.0, 18.0)  # Beta prior of the shoulder's share of the non-matches (mean 0.1)
SHOULDER_START_W = 0.1
SCALE_SHAPE = 2.0
DELTA_PRIOR = {"t": (5.0, 5.0 / 20.0), "sas": (50.0, 50.0)}  # supplement E.2, Gamma(shape, rate)
# Shape priors per family: ("gamma", shape, rate), ("lognormal", mean of log, sd of log) or ("jeffreys-t",).
SHAPE_PRIORS = {
    "jeffreys": {"t": ("jeffreys-t",), "sas": ("lognormal", 0.0, 0.5)},
    "weak": {"t": ("gamma", 2.0, 0.1), "sas": ("lognormal", 0.0, 0.5)},
    "supplement": {"t": ("gamma", *DELTA_PRIOR["t"]), "sas": ("gamma", *DELTA_PRIOR["sas"])},
}
ShapePrior = Literal["jeffreys", "weak", "supplement"]
_JEFFREYS_SERIES = 200.0  # above this many d.o.f. the Jeffreys bracket is taken from its expansion in 1/nu
LabelSampling = Literal["random", "stratified"]


@dataclass(frozen=True)
class Priors:
    """Empirical-Bayes hyper-parameters of one group (from the unlabelled scores)."""

    mu_mean: tuple[float, float]
    mu_sd: tuple[float, float]
    scale_mean: tuple[float, float]

    @classmethod
    def from_init(cls, init: Init) -> "Priors":
        m1, sd1 = init.match_centre
        return cls((init.gmm.means[0], m1), (init.gmm.sds[0], sd1), (init.gmm.sds[0], sd1))


@dataclass(frozen=True)
class GroupModel:
    """Scores of one group (unlabelled, and labelled with 0/1 labels) with its family and priors."""

    family: TwoPiece
    priors: Priors
    scores_u: np.ndarray
    scores_l: np.ndarray
    labels_l: np.ndarray
    label_sampling: LabelSampling = "random"
    shape_prior: ShapePrior = "jeffreys"
    counts_u: np.ndarray | None = None  # weight of each unlabelled value (binned.likelihood_cells); None: 1 each
    shoulder: bool = False  # non-matches a mixture of a bulk and a shoulder (module docstring)

    @classmethod
    def compressed(cls, family: TwoPiece, priors: Priors, scores_u: np.ndarray, scores_l: np.ndarray,
                   labels_l: np.ndarray, label_sampling: LabelSampling = "random", shape_prior: ShapePrior = "jeffreys",
                   max_points: int | None = LIKELIHOOD_POINTS, shoulder: bool = False) -> tuple["GroupModel", Compressed]:
        """The model with its unlabelled scores compressed by :func:`binned.likelihood_cells` (their distinct
        values with counts: exact; above ``max_points`` distinct values, bins at two quadrature points each),
        and that compression. Labelled scores stay per score."""
        cells = likelihood_cells(scores_u, max_points)
        points, weights = cells.quadrature()
        return cls(family, priors, points, scores_l, labels_l, label_sampling, shape_prior, weights, shoulder), cells

    @property
    def dim(self) -> int:
        return (9 if self.family.has_shape else 7) + (3 if self.shoulder else 0)

    @property
    def names(self) -> tuple[str, ...]:
        return PARAM_NAMES[: 9 if self.family.has_shape else 7] + (SHOULDER_NAMES if self.shoulder else ())

    def log_density(self, theta, xp: ModuleType = np):
        """Log posterior (up to a constant) of unconstrained ``theta`` shaped (..., dim); returns shape (...)."""
        return self.log_likelihood(theta, xp) + self.log_prior(theta, xp)

    def log_likelihood(self, theta, xp: ModuleType = np):
        """Log-likelihood of the scores (unlabelled: mixture; labelled: complete data) at ``theta`` (..., dim)."""
        mix = self.log_mixture(theta, xp)
        ll = xp.sum(mix if self.counts_u is None else self.counts_u * mix, -1)
        if self.scores_l.size:
            col = {k: v[..., None] for k, v in constrain(theta, xp).items()}
            y = self.labels_l
            lf1, lf0 = self._logpdf(self.scores_l, col, 1, xp), self._nonmatch_logpdf(self.scores_l, col, xp)
            ll = ll + xp.sum(y * lf1 + (1.0 - y) * lf0, -1)
            if self.label_sampling == "random":
                n1 = float(y.sum())
                log_pi, log_1m = -xp.logaddexp(0.0, -theta[..., 6]), -xp.logaddexp(0.0, theta[..., 6])
                ll = ll + n1 * log_pi + (y.size - n1) * log_1m
        return ll

    def log_mixture(self, theta, xp: ModuleType = np):
        """Log mixture density at each unlabelled value: (..., values), before the ``counts_u`` weights."""
        col = {k: v[..., None] for k, v in constrain(theta, xp).items()}
        log_pi = -xp.logaddexp(0.0, -theta[..., 6])
        log_1m = -xp.logaddexp(0.0, theta[..., 6])
        return xp.logaddexp(log_1m[..., None] + self._nonmatch_logpdf(self.scores_u, col, xp),
                            log_pi[..., None] + self._logpdf(self.scores_u, col, 1, xp))

    def _logpdf(self, x, col: dict, j: int | str, xp: ModuleType):
        return self.family.logpdf(x, col[f"mu{j}"], col[f"s{j}L"], col[f"s{j}R"], col[f"delta{0 if j == 'b' else j}"],
                                  xp)

    def _nonmatch_logpdf(self, x, col: dict, xp: ModuleType):
        """Log density of the non-matches: the bulk, or (``shoulder``) the bulk and shoulder mixture."""
        if not self.shoulder:
            return self._logpdf(x, col, 0, xp)
        return xp.logaddexp(xp.log1p(-col["w"]) + self._logpdf(x, col, 0, xp), xp.log(col["w"]) + self._logpdf(x, col, "b", xp))

    def log_prior(self, theta, xp: ModuleType = np):
        """Log prior density of unconstrained ``theta`` (..., dim), Jacobians of the transforms included."""
        p = constrain(theta, xp)
        log_pi = -xp.logaddexp(0.0, -theta[..., 6])
        log_1m = -xp.logaddexp(0.0, theta[..., 6])
        fam = self.family
        pr = self.priors
        lp = -0.5 * ((p["mu0"] - pr.mu_mean[0]) / pr.mu_sd[0]) ** 2 - 0.5 * ((p["mu1"] - pr.mu_mean[1]) / pr.mu_sd[1]) ** 2
        lp = lp + theta[..., 1]  # Jacobian of mu1 = mu0 + exp(log_gap)
        for j in (0, 1):
            rate = SCALE_SHAPE / pr.scale_mean[j]
            for side in "LR":  # Gamma(shape, rate) density times the Jacobian of exp
                lp = lp + SCALE_SHAPE * theta[..., 2 + 2 * j + (side == "R")] - rate * p[f"s{j}{side}"]
        if fam.has_shape:
            spec = SHAPE_PRIORS[self.shape_prior][fam.name]
            lp = lp + shape_log_prior(spec, theta[..., 7], xp) + shape_log_prior(spec, theta[..., 8], xp)
        if self.shoulder:
            k = 9 if fam.has_shape else 7
            u, w = theta[..., k], theta[..., k + 2]
            lp = lp - xp.logaddexp(0.0, -u) - xp.logaddexp(0.0, u)  # b ~ U(0, 1), Jacobian of the logit
            rate = SCALE_SHAPE / pr.scale_mean[0]
            lp = lp + SCALE_SHAPE * theta[..., k + 1] - rate * xp.exp(theta[..., k + 1])
            a, b = SHOULDER_W  # Beta(a, b) on w times the logit's Jacobian w (1 - w)
            lp = lp - a * xp.logaddexp(0.0, -w) - b * xp.logaddexp(0.0, w)
        return lp + log_pi + log_1m  # Beta(1, 1) prior on pi, Jacobian of the logit

    def start(self, init: Init) -> np.ndarray:
        """The unconstrained start: the prior centres of modes and scales, ``init.pi_start``, delta at its prior centre."""
        pr = self.priors
        gap = max(pr.mu_mean[1] - pr.mu_mean[0], 1e-3 * (pr.mu_sd[0] + pr.mu_sd[1]))
        pi = init.pi_start
        s0, s1 = pr.scale_mean
        th = [pr.mu_mean[0], np.log(gap), *np.log([s0, s0, s1, s1]), np.log(pi / (1.0 - pi))]
        if self.family.has_shape:
            th += [_shape_start(SHAPE_PRIORS[self.shape_prior][self.family.name])] * 2
        if self.shoulder:  # half way between the modes, half the bulk's scale, a small share
            th += [0.0, np.log(0.5 * s0), np.log(SHOULDER_START_W / (1.0 - SHOULDER_START_W))]
        return np.array(th, dtype=float)


def _shape_start(spec: tuple) -> float:
    """Start of ``log delta``: the prior mean of a Gamma, the centre of a log-normal, 10 d.o.f. for Jeffreys."""
    if spec[0] == "gamma":
        return float(np.log(spec[1] / spec[2]))
    return float(spec[1]) if spec[0] == "lognormal" else float(np.log(10.0))


def _trigamma(xp: ModuleType):
    if xp is np:
        return lambda x: special.polygamma(1, x)
    from jax.scipy.special import polygamma  # only reached from the NumPyro sampler

    return lambda x: polygamma(1, x)


def log_jeffreys_t(nu, xp: ModuleType = np):
    """Log of the independence Jeffreys prior of the Student-t d.o.f. (Fonseca et al. 2008), unnormalised:

        p(nu) ~ (nu / (nu + 3))^(1/2) * (psi'(nu/2) - psi'((nu+1)/2) - 2 (nu+3) / (nu (nu+1)^2))^(1/2).

    Proper, ``~ nu^(-1/2)`` at 0 and ``~ sqrt(6) nu^(-2)`` at infinity: uniform-like on the tail scale
    ``1/nu``. The bracket cancels catastrophically for large ``nu``; above ``nu = 200`` its expansion
    ``6 e^4 (1 - 2e + 7/3 e^2 - 2e^3 + 11/3 e^4 - 10 e^5)``, ``e = 1/nu``, is used (log-density error below
    1e-9 on both sides of the switch; both branches stay finite, so JAX gradients do too)."""
    tg = _trigamma(xp)
    small = xp.minimum(nu, _JEFFREYS_SERIES)
    direct = tg(small / 2.0) - tg((small + 1.0) / 2.0) - 2.0 * (small + 3.0) / (small * (small + 1.0) ** 2)
    e = 1.0 / xp.maximum(nu, _JEFFREYS_SERIES)
    series = 6.0 * e**4 * (1.0 - 2.0 * e + 7.0 / 3.0 * e**2 - 2.0 * e**3 + 11.0 / 3.0 * e**4 - 10.0 * e**5)
    bracket = xp.where(nu < _JEFFREYS_SERIES, direct, series)
    return 0.5 * (xp.log(nu) - xp.log(nu + 3.0) + xp.log(bracket))


def shape_log_prior(spec: tuple, log_delta, xp: ModuleType = np):
    """Log prior density of the unconstrained ``log delta`` (Jacobian of ``exp`` included) for one spec."""
    if spec[0] == "gamma":  # Gamma(a, b) density of delta times delta
        return spec[1] * log_delta - spec[2] * xp.exp(log_delta)
    if spec[0] == "lognormal":  # log delta ~ N(a, b): a normal density on the coordinate itself
        return -0.5 * ((log_delta - spec[1]) / spec[2]) ** 2
    return log_jeffreys_t(xp.exp(log_delta), xp) + log_delta


def constrain(theta, xp: ModuleType = np) -> dict:
    """Natural parameters from unconstrained ``theta`` (..., 7, 9, 10 or 12: without or with shapes, without or
    with a shoulder): modes, scales, shapes (1.0 if none), pi; with a shoulder its mode ``mub``, scales ``sbL`` =
    ``sbR`` and share ``w``."""
    exp = xp.exp
    dim = theta.shape[-1]
    out = {
        "mu0": theta[..., 0],
        "mu1": theta[..., 0] + exp(theta[..., 1]),
        "s0L": exp(theta[..., 2]),
        "s0R": exp(theta[..., 3]),
        "s1L": exp(theta[..., 4]),
        "s1R": exp(theta[..., 5]),
        "pi": 1.0 / (1.0 + exp(-theta[..., 6])),
    }
    if dim in (9, 12):
        out["delta0"], out["delta1"] = exp(theta[..., 7]), exp(theta[..., 8])
    else:
        out["delta0"] = out["delta1"] = xp.ones_like(theta[..., 0])
    if dim in (10, 12):
        k = dim - 3
        out["mub"] = theta[..., 0] + exp(theta[..., 1]) / (1.0 + exp(-theta[..., k]))
        out["sbL"] = out["sbR"] = exp(theta[..., k + 1])
        out["w"] = 1.0 / (1.0 + exp(-theta[..., k + 2]))
    return out


def component(p: dict, j: int | str) -> tuple:
    """``(mu, sl, sr, delta)`` of component ``j`` (0, 1, or ``"b"``: the shoulder, with the bulk's shape) from a
    :func:`constrain` dictionary."""
    return p[f"mu{j}"], p[f"s{j}L"], p[f"s{j}R"], p[f"delta{0 if j == 'b' else j}"]


@dataclass(frozen=True)
class Distribution:
    """The score distribution of one class per posterior draw: a weighted sum of components of one family (the
    matches: one; the non-matches: one, or the bulk and the shoulder). Parameter arrays broadcast with the
    scores; every rate and check reads the classes through this, whatever the model."""

    family: object  # twopiece.Family
    parts: tuple[tuple[object, tuple], ...]  # (weight, (mu, sl, sr, delta))

    def column(self) -> "Distribution":
        """The same with every parameter array given a trailing axis (draws down, points across)."""
        col = lambda v: np.asarray(v)[..., None]  # noqa: E731
        return Distribution(self.family, tuple((col(w), tuple(col(v) for v in c)) for w, c in self.parts))

    def take(self, rows) -> "Distribution":
        """The draws ``rows`` only."""
        pick = lambda v: np.asarray(v)[rows]  # noqa: E731
        return Distribution(self.family, tuple((pick(w), tuple(pick(v) for v in c)) for w, c in self.parts))

    def logpdf(self, x):
        f = self.family
        if len(self.parts) == 1:
            return f.logpdf(x, *self.parts[0][1])
        with np.errstate(divide="ignore"):
            return np.logaddexp.reduce([np.log(w) + f.logpdf(x, *c) for w, c in self.parts])

    def cdf(self, x):
        return sum(w * self.family.cdf(x, *c) for w, c in self.parts) if len(self.parts) > 1 \
            else self.family.cdf(x, *self.parts[0][1])

    def sf(self, x):
        return sum(w * self.family.sf(x, *c) for w, c in self.parts) if len(self.parts) > 1 \
            else self.family.sf(x, *self.parts[0][1])

    def isf(self, q, iters: int = 80):
        """The score whose survival is ``q`` (a threshold at FMR ``q``): exact for one component; for two, by
        bisection between the components' own (which bracket it)."""
        if len(self.parts) == 1:
            return self.family.isf(q, *self.parts[0][1])
        return self._invert(self.sf, [self.family.isf(q, *c) for _, c in self.parts], q, iters, decreasing=True)

    def ppf(self, p, iters: int = 80):
        """The score whose CDF is ``p``."""
        if len(self.parts) == 1:
            return self.family.ppf(p, *self.parts[0][1])
        return self._invert(self.cdf, [self.family.ppf(p, *c) for _, c in self.parts], p, iters, decreasing=False)

    @staticmethod
    def _invert(fn, ends: list, target, iters: int, decreasing: bool):
        lo, hi = np.minimum(*ends), np.maximum(*ends)
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            right = (fn(mid) > target) if decreasing else (fn(mid) < target)  # the root lies above mid
            lo, hi = np.where(right, mid, lo), np.where(right, hi, mid)
        return 0.5 * (lo + hi)

    def rvs(self, rng: np.random.Generator, size):
        """Draws of the class (each from its component, chosen by the weights)."""
        f = self.family
        if len(self.parts) == 1:
            return f.rvs(rng, size, *self.parts[0][1])
        (w0, c0), (_, cb) = self.parts
        first = rng.random(size) < np.broadcast_to(np.asarray(w0, float), size)
        return np.where(first, f.rvs(rng, size, *c0), f.rvs(rng, size, *cb))


def distribution(family, p: dict, j: int) -> Distribution:
    """Class ``j`` (0 non-matches, 1 matches) of the draws ``p`` (:func:`constrain`): with a shoulder in ``p``
    the non-matches are its mixture with the bulk."""
    if j == 0 and "w" in p:
        return Distribution(family, ((1.0 - np.asarray(p["w"]), component(p, 0)), (np.asarray(p["w"]), component(p, "b"))))
    return Distribution(family, ((np.ones_like(np.asarray(p["pi"], float)), component(p, j)),))


def match_probability(family, p: dict, values: np.ndarray) -> np.ndarray:
    """Posterior probability that a pair scoring each of ``values`` is a match, per draw: (draws, values) for
    draws ``p`` given as columns (each array (draws, 1))."""
    l0 = np.log1p(-p["pi"]) + distribution(family, p, 0).logpdf(values[None])
    l1 = np.log(p["pi"]) + distribution(family, p, 1).logpdf(values[None])
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(np.exp(l1 - np.logaddexp(l0, l1)), nan=0.0)
