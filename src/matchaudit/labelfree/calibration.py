"""Bayesian Calibration (Ji, Smyth & Steyvers, NeurIPS 2020) adapted to 1:1 matching: the semi-supervised comparator.

A hierarchical beta-calibration model maps a score in (0, 1) to a match probability, learnt from the
labelled pairs only (without labels the model is not identified):

    logit p = min(c_g + exp(a_g) log s - exp(b_g) log(1 - s), 15),   y ~ Bernoulli(p)  (labelled pairs)
    a_g ~ N(mu_a, sd_a), b_g ~ N(mu_b, sd_b), c_g ~ N(mu_c, sd_c)     (non-centred)
    mu_a, mu_b ~ N(0, 0.4), mu_c ~ N(0, 2), sd_a, sd_b ~ HalfNormal(0.15), sd_c ~ HalfNormal(0.75)

(second arguments are SDs; this re-implementation uses ``b`` where the public code passes ``c`` twice).
Scores are mapped to (0, 1) and clipped to [0.01, 0.99] as in the original: ``clip`` keeps cosine-like scores
(the supplement's appendix H: cosine similarity clipped to [0, 1)), ``minmax`` rescales the observed range.
Per posterior draw, unlabelled pairs count with weight p (matches) and 1 - p (non-matches), labelled pairs
with their label; FNMR at FMR targets and at the pooled global threshold are then counted on the pairs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from matchaudit import checks
from matchaudit.errors import InputError
from matchaudit.labelfree import diagnostics, samplers
from matchaudit.encoding import jsonable
from matchaudit.labelfree.api import counted, validate
from matchaudit.definitions import Rule

HYPER_SD = {"mu_a": 0.4, "mu_b": 0.4, "mu_c": 2.0, "sd_a": 0.15, "sd_b": 0.15, "sd_c": 0.75}
ScoreMap = Literal["clip", "minmax"]


@dataclass(frozen=True)
class BayesCalibration:
    """Posterior summaries of the calibrated rates (same layout as one kind of :class:`Estimate` results)."""

    results: dict
    diagnostics: dict
    score_map: str
    level: float

    def to_dict(self) -> dict:
        return jsonable({"method": "Bayesian Calibration (Ji et al. 2020), hierarchical beta calibration",
                         "score_map": self.score_map, "level": self.level, "diagnostics": self.diagnostics,
                         "results": self.results})


class _Model:
    def __init__(self, s01: np.ndarray, group: np.ndarray, y: np.ndarray, n_groups: int):
        self.ls, self.l1s, self.group, self.y, self.g = np.log(s01), np.log1p(-s01), group, y, n_groups

    @property
    def dim(self) -> int:
        return 6 + 3 * self.g

    def coefs(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g = self.g
        sd = np.exp(theta[:, 3:6])
        return tuple(theta[:, k, None] + sd[:, k, None] * theta[:, 6 + k * g: 6 + (k + 1) * g] for k in range(3))

    def logit(self, theta: np.ndarray, ls: np.ndarray, l1s: np.ndarray, group: np.ndarray) -> np.ndarray:
        a, b, c = self.coefs(theta)
        return np.minimum(c[:, group] + np.exp(a[:, group]) * ls - np.exp(b[:, group]) * l1s, 15.0)

    def log_density(self, theta: np.ndarray) -> np.ndarray:
        lg = self.logit(theta, self.ls, self.l1s, self.group)
        ll = (self.y * lg - np.logaddexp(0.0, lg)).sum(axis=1)
        sd = np.exp(theta[:, 3:6])
        lp = -0.5 * ((theta[:, 0] / HYPER_SD["mu_a"]) ** 2 + (theta[:, 1] / HYPER_SD["mu_b"]) ** 2
                     + (theta[:, 2] / HYPER_SD["mu_c"]) ** 2)
        lp += (-0.5 * (sd / np.array([HYPER_SD["sd_a"], HYPER_SD["sd_b"], HYPER_SD["sd_c"]])) ** 2 + theta[:, 3:6]).sum(axis=1)
        lp += -0.5 * (theta[:, 6:] ** 2).sum(axis=1)
        return ll + lp


def bayesian_calibration(
    scores: Sequence[float] | np.ndarray,
    groups: Sequence | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    *,
    fmr: Sequence[float] = (1e-1, 1e-2, 1e-3),
    level: float = 0.89,
    rule: Rule = ">=",
    score_map: ScoreMap = "clip",
    chains: int = 4,
    warmup: int = 3000,
    draws: int = 3000,
    seed: int = 0,
    max_draws: int = 400,
) -> BayesCalibration:
    """Semi-supervised per-group rates from Bayesian Calibration; needs labelled pairs in every group."""
    s, g, y = validate(scores, groups, labels)
    names, code = np.unique(g, return_inverse=True)
    lab = ~np.isnan(y)
    missing = [n for i, n in enumerate(names) if not np.any(lab & (code == i))]
    if missing:
        raise InputError(f"Bayesian Calibration needs labelled pairs in every group; none in {', '.join(missing)}")
    if score_map == "clip":
        s01 = np.clip(s, 0.01, 0.99)
    elif score_map == "minmax":
        s01 = np.clip((s - s.min()) / (s.max() - s.min()), 0.01, 0.99)
    else:
        raise InputError(f"score_map must be 'clip' or 'minmax' (got {score_map!r})")
    model = _Model(s01[lab], code[lab], y[lab], names.size)
    rng = np.random.default_rng(checks.seed(seed))
    mode, cov = samplers.laplace(model.log_density, np.zeros(model.dim))
    d = samplers.sample_numpy(model.log_density, samplers.dispersed_starts(mode, cov, chains, rng), cov, warmup, draws, rng)
    chains_, kept = d.theta.shape[:2]  # diagnose the identified group coefficients, not the hyper-SDs
    coefs = np.concatenate(model.coefs(d.theta.reshape(-1, model.dim)), axis=1).reshape(chains_, kept, -1)
    diag = diagnostics.summarise(coefs, tuple(f"{k}_{n}" for k in "abc" for n in names))
    worst = max(v["rhat"] for v in diag.values())
    if worst > 1.01:
        warnings.warn(f"Bayesian Calibration: max R-hat {worst:.3f} > 1.01", stacklevel=2)
    flat = d.theta.reshape(-1, model.dim)
    flat = flat[np.unique(np.linspace(0, flat.shape[0] - 1, max_draws).astype(int))]
    targets = tuple(sorted(float(a) for a in fmr))
    grid = np.logspace(np.log10(min(1e-5, targets[0])), 0.0, 60)[:-1]
    sc, wt = [], []
    for i in range(names.size):
        idx = code == i
        p = 1.0 / (1.0 + np.exp(-model.logit(flat, np.log(s01[idx]), np.log1p(-s01[idx]), np.full(idx.sum(), i))))
        yi = y[idx]
        p[:, ~np.isnan(yi)] = yi[~np.isnan(yi)]
        sc.append(s[idx]), wt.append(p)
    n0 = np.array([(1.0 - w).sum(axis=1).mean() for w in wt])
    res = counted(sc, wt, targets, grid, level, list(names), rule, np.asarray(targets)[None] < 10.0 / n0[:, None])
    return BayesCalibration(res, {"max_rhat": worst, "min_ess": min(v["ess"] for v in diag.values())}, score_map, level)
