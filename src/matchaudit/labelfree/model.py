"""The SPE-FR posterior of one group: a two-component two-piece mixture with empirical-Bayes priors.

Unconstrained parameter vector (``theta``, last axis), the order samplers and diagnostics use:

    mu0, log(mu1 - mu0), log s0L, log s0R, log s1L, log s1R, logit pi [, log delta0, log delta1]

Component 0 = non-matches, 1 = matches (similarities: ``mu1 > mu0`` by construction, no label switching).
Likelihood: the marginal mixture for unlabelled scores, the complete-data term for labelled ones; with
``label_sampling="stratified"`` (labels drawn per class) the ``log pi`` parts of labelled pairs are dropped.
Priors (supplement E.2): ``mu_j ~ N(GMM mean_j, GMM sd_j)``, scales ``~ Gamma(2, rate)`` with mean = GMM sd_j,
shape ``delta ~ Gamma(5, 0.25)`` (TP-T) or ``Gamma(50, 50)`` (TP-SAS) with ``shape_prior="supplement"``;
the default ``"weak"`` uses ``Gamma(2, 0.1)`` (TP-T) and ``log delta ~ N(0, 0.5^2)`` (TP-SAS), see
docs/labelfree.md "Recovery"; ``pi ~ Beta(1, 1)``; all Gammas in shape-rate form. ``log_density`` is written once for NumPy and JAX (``xp``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Literal

import numpy as np

from matchaudit.labelfree.init import Init
from matchaudit.labelfree.twopiece import TwoPiece

PARAM_NAMES = ("mu0", "log_gap", "log_s0L", "log_s0R", "log_s1L", "log_s1R", "logit_pi", "log_delta0", "log_delta1")
SCALE_SHAPE = 2.0
DELTA_PRIOR = {"t": (5.0, 5.0 / 20.0), "sas": (50.0, 50.0)}  # supplement E.2, Gamma(shape, rate)
# Shape priors: ("gamma", shape, rate) or ("lognormal", mean of log, sd of log), per family.
SHAPE_PRIORS = {
    "supplement": {"t": ("gamma", *DELTA_PRIOR["t"]), "sas": ("gamma", *DELTA_PRIOR["sas"])},
    "weak": {"t": ("gamma", 2.0, 0.1), "sas": ("lognormal", 0.0, 0.5)},
}
ShapePrior = Literal["supplement", "weak"]
LabelSampling = Literal["random", "stratified"]


@dataclass(frozen=True)
class Priors:
    """Empirical-Bayes hyper-parameters of one group (from the unlabelled scores)."""

    mu_mean: tuple[float, float]
    mu_sd: tuple[float, float]
    scale_mean: tuple[float, float]

    @classmethod
    def from_init(cls, init: Init) -> "Priors":
        return cls(init.gmm.means, init.gmm.sds, init.gmm.sds)


@dataclass(frozen=True)
class GroupModel:
    """Scores of one group (unlabelled, and labelled with 0/1 labels) with its family and priors."""

    family: TwoPiece
    priors: Priors
    scores_u: np.ndarray
    scores_l: np.ndarray
    labels_l: np.ndarray
    label_sampling: LabelSampling = "random"
    shape_prior: ShapePrior = "weak"

    @property
    def dim(self) -> int:
        return 9 if self.family.has_shape else 7

    @property
    def names(self) -> tuple[str, ...]:
        return PARAM_NAMES[: self.dim]

    def log_density(self, theta, xp: ModuleType = np):
        """Log posterior (up to a constant) of unconstrained ``theta`` shaped (..., dim); returns shape (...)."""
        p = constrain(theta, xp)
        fam = self.family
        col = {k: v[..., None] for k, v in p.items()}
        log_pi = -xp.logaddexp(0.0, -theta[..., 6])
        log_1m = -xp.logaddexp(0.0, theta[..., 6])

        def lf(x, j):
            return fam.logpdf(x, col[f"mu{j}"], col[f"s{j}L"], col[f"s{j}R"], col[f"delta{j}"], xp)

        ll = xp.sum(xp.logaddexp(log_1m[..., None] + lf(self.scores_u, 0), log_pi[..., None] + lf(self.scores_u, 1)), -1)
        if self.scores_l.size:
            y = self.labels_l
            ll = ll + xp.sum(y * lf(self.scores_l, 1) + (1.0 - y) * lf(self.scores_l, 0), -1)
            if self.label_sampling == "random":
                n1 = float(y.sum())
                ll = ll + n1 * log_pi + (y.size - n1) * log_1m
        pr = self.priors
        lp = -0.5 * ((p["mu0"] - pr.mu_mean[0]) / pr.mu_sd[0]) ** 2 - 0.5 * ((p["mu1"] - pr.mu_mean[1]) / pr.mu_sd[1]) ** 2
        lp = lp + theta[..., 1]  # Jacobian of mu1 = mu0 + exp(log_gap)
        for j in (0, 1):
            rate = SCALE_SHAPE / pr.scale_mean[j]
            for side in "LR":  # Gamma(shape, rate) density times the Jacobian of exp
                lp = lp + SCALE_SHAPE * theta[..., 2 + 2 * j + (side == "R")] - rate * p[f"s{j}{side}"]
        if fam.has_shape:
            kind, a, b = SHAPE_PRIORS[self.shape_prior][fam.name]
            if kind == "gamma":  # Gamma(a, b) density times the Jacobian of exp
                lp = lp + a * (theta[..., 7] + theta[..., 8]) - b * (p["delta0"] + p["delta1"])
            else:  # log delta ~ N(a, b): a normal density on the unconstrained coordinate itself
                lp = lp - 0.5 * (((theta[..., 7] - a) / b) ** 2 + ((theta[..., 8] - a) / b) ** 2)
        lp = lp + log_pi + log_1m  # Beta(1, 1) prior on pi, Jacobian of the logit
        return ll + lp

    def start(self, init: Init) -> np.ndarray:
        """The unconstrained point the supplement starts from: GMM means/SDs, Storey's pi, delta at its prior mean."""
        g = init.gmm
        gap = max(g.means[1] - g.means[0], 1e-3 * (g.sds[0] + g.sds[1]))
        pi = init.pi_start
        th = [g.means[0], np.log(gap), *np.log([g.sds[0], g.sds[0], g.sds[1], g.sds[1]]), np.log(pi / (1.0 - pi))]
        if self.family.has_shape:
            kind, a, b = SHAPE_PRIORS[self.shape_prior][self.family.name]
            th += [np.log(a / b) if kind == "gamma" else a] * 2
        return np.array(th, dtype=float)


def constrain(theta, xp: ModuleType = np) -> dict:
    """Natural parameters from unconstrained ``theta`` (..., 7 or 9): modes, scales, shapes (1.0 if none), pi."""
    exp = xp.exp
    out = {
        "mu0": theta[..., 0],
        "mu1": theta[..., 0] + exp(theta[..., 1]),
        "s0L": exp(theta[..., 2]),
        "s0R": exp(theta[..., 3]),
        "s1L": exp(theta[..., 4]),
        "s1R": exp(theta[..., 5]),
        "pi": 1.0 / (1.0 + exp(-theta[..., 6])),
    }
    if theta.shape[-1] == 9:
        out["delta0"], out["delta1"] = exp(theta[..., 7]), exp(theta[..., 8])
    else:
        out["delta0"] = out["delta1"] = xp.ones_like(theta[..., 0])
    return out


def component(p: dict, j: int) -> tuple:
    """``(mu, sl, sr, delta)`` of component ``j`` from a :func:`constrain` dictionary."""
    return p[f"mu{j}"], p[f"s{j}L"], p[f"s{j}R"], p[f"delta{j}"]
