"""Two-piece scale distributions with normal, Student-t and sinh-arcsinh kernels (Rubio & Steel "tp" form).

A two-piece distribution has mode ``mu``, a left scale ``sl`` and a right scale ``sr`` applied to one symmetric
unimodal kernel ``f(z; delta)``:

    f(x) = 2 / (sl + sr) * f((x - mu) / s(x); delta),   s(x) = sl if x < mu else sr,

so ``P(X < mu) = sl / (sl + sr)``. Kernels: ``normal`` (no shape), ``t`` (``delta`` = degrees of freedom) and
``sas`` (symmetric sinh-arcsinh of Jones & Pewsey: ``delta = 1`` is normal, ``delta < 1`` heavier tails,
``delta > 1`` lighter). Upper-tail probabilities and their inverse never use ``1 - cdf``: FMR targets
go down to 1e-8. All functions broadcast over their arguments. ``logpdf`` also runs on ``jax.numpy``
(pass ``xp``) so the NUTS sampler uses the very same density.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable

import numpy as np
from scipy import special

from matchaudit.choices import LABELFREE_FAMILIES
from matchaudit.errors import InputError

_LOG2 = float(np.log(2.0))
_HALF_LOG_2PI = float(0.5 * np.log(2.0 * np.pi))


def _gammaln(xp: ModuleType) -> Callable:
    if xp is np:
        return special.gammaln
    from jax.scipy.special import gammaln  # only reached from the NumPyro sampler

    return gammaln


# ----------------------------------------------------------------------------- kernels (standardised, symmetric)
def _normal_logpdf(z, delta, xp):
    return -0.5 * z * z - _HALF_LOG_2PI


def _t_logpdf(z, nu, xp):
    g = _gammaln(xp)
    return g((nu + 1.0) / 2.0) - g(nu / 2.0) - 0.5 * xp.log(nu * np.pi) - (nu + 1.0) / 2.0 * xp.log1p(z * z / nu)


def _sas_logpdf(z, delta, xp):
    y = delta * xp.arcsinh(z)
    logcosh = xp.abs(y) + xp.log1p(xp.exp(-2.0 * xp.abs(y))) - _LOG2
    return xp.log(delta) + logcosh - _HALF_LOG_2PI - 0.5 * xp.log1p(z * z) - 0.5 * xp.sinh(y) ** 2


@dataclass(frozen=True)
class Kernel:
    """A standardised symmetric kernel: log-density (NumPy or JAX), cdf, survival, quantile, upper quantile, sampler."""

    logpdf: Callable
    cdf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    sf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    ppf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    isf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    rvs: Callable[[np.random.Generator, tuple[int, ...], np.ndarray], np.ndarray]


_KERNELS = {
    "normal": Kernel(
        logpdf=_normal_logpdf,
        cdf=lambda z, d: special.ndtr(z),
        sf=lambda z, d: special.ndtr(-z),
        ppf=lambda p, d: special.ndtri(p),
        isf=lambda q, d: -special.ndtri(q),
        rvs=lambda rng, size, d: rng.standard_normal(size),
    ),
    "t": Kernel(
        logpdf=_t_logpdf,
        cdf=lambda z, nu: special.stdtr(nu, z),
        sf=lambda z, nu: special.stdtr(nu, -z),
        ppf=lambda p, nu: special.stdtrit(nu, p),
        isf=lambda q, nu: -special.stdtrit(nu, q),
        rvs=lambda rng, size, nu: rng.standard_t(np.broadcast_to(nu, size)),
    ),
    "sas": Kernel(
        logpdf=_sas_logpdf,
        cdf=lambda z, d: special.ndtr(np.sinh(d * np.arcsinh(z))),
        sf=lambda z, d: special.ndtr(-np.sinh(d * np.arcsinh(z))),
        ppf=lambda p, d: np.sinh(np.arcsinh(special.ndtri(p)) / d),
        isf=lambda q, d: np.sinh(np.arcsinh(-special.ndtri(q)) / d),
        rvs=lambda rng, size, d: np.sinh(np.arcsinh(rng.standard_normal(size)) / d),
    ),
}

FAMILY_NAMES = {
    "normal": "two-piece normal (TP-N)",
    "t": "two-piece Student-t (TP-T, shape = degrees of freedom)",
    "sas": "two-piece sinh-arcsinh (TP-SAS, shape delta: 1 normal tails, < 1 heavier)",
}


# ----------------------------------------------------------------------------- the two-piece family
@dataclass(frozen=True)
class TwoPiece:
    """A two-piece family over one kernel. Parameters: mode ``mu``, scales ``sl``/``sr``, shape ``delta``.

    ``delta`` is ignored by the normal family (pass anything, e.g. 1.0).
    """

    name: str

    @property
    def kernel(self) -> Kernel:
        return _KERNELS[self.name]

    @property
    def has_shape(self) -> bool:
        return self.name != "normal"

    @property
    def description(self) -> str:
        return FAMILY_NAMES[self.name]

    def logpdf(self, x, mu, sl, sr, delta, xp: ModuleType = np):
        left = x < mu
        scale = xp.where(left, sl, sr)
        z = (x - mu) / scale
        return _LOG2 - xp.log(sl + sr) + self.kernel.logpdf(z, delta, xp)

    def pdf(self, x, mu, sl, sr, delta):
        return np.exp(self.logpdf(x, mu, sl, sr, delta))

    def cdf(self, x, mu, sl, sr, delta):
        x, mu, sl, sr, delta = np.broadcast_arrays(*map(np.asarray, (x, mu, sl, sr, delta)))
        w = sl + sr
        with np.errstate(all="ignore"):
            low = 2.0 * sl / w * self.kernel.cdf((x - mu) / sl, delta)
            high = 1.0 - 2.0 * sr / w * self.kernel.sf((x - mu) / sr, delta)
        return np.where(x < mu, low, high)

    def sf(self, x, mu, sl, sr, delta):
        x, mu, sl, sr, delta = np.broadcast_arrays(*map(np.asarray, (x, mu, sl, sr, delta)))
        w = sl + sr
        with np.errstate(all="ignore"):
            high = 2.0 * sr / w * self.kernel.sf((x - mu) / sr, delta)
            low = 1.0 - 2.0 * sl / w * self.kernel.cdf((x - mu) / sl, delta)
        return np.where(x >= mu, high, low)

    def ppf(self, p, mu, sl, sr, delta):
        """Quantile: the x with cdf(x) = p."""
        p, mu, sl, sr, delta = np.broadcast_arrays(*map(np.asarray, (p, mu, sl, sr, delta)))
        w = sl + sr
        with np.errstate(all="ignore"):
            low = mu + sl * self.kernel.ppf(p * w / (2.0 * sl), delta)
            high = mu + sr * self.kernel.isf((1.0 - p) * w / (2.0 * sr), delta)
        return np.where(p < sl / w, low, high)

    def isf(self, q, mu, sl, sr, delta):
        """Upper-tail inverse: the x with sf(x) = q (a threshold at FMR q), accurate for tiny q."""
        q, mu, sl, sr, delta = np.broadcast_arrays(*map(np.asarray, (q, mu, sl, sr, delta)))
        w = sl + sr
        with np.errstate(all="ignore"):
            high = mu + sr * self.kernel.isf(q * w / (2.0 * sr), delta)
            low = mu + sl * self.kernel.ppf((1.0 - q) * w / (2.0 * sl), delta)
        return np.where(q < sr / w, high, low)

    def rvs(self, rng: np.random.Generator, size, mu, sl, sr, delta) -> np.ndarray:
        size = tuple(np.atleast_1d(size))
        mu, sl, sr, delta = (np.broadcast_to(np.asarray(v, dtype=float), size) for v in (mu, sl, sr, delta))
        z = np.abs(self.kernel.rvs(rng, size, delta))
        left = rng.random(size) < sl / (sl + sr)
        return np.where(left, mu - sl * z, mu + sr * z)


BOUND_SLACK = 1e-5  # cosine scores computed in float32 overshoot +-1 by a few ulps: up to this much is rounding
_EDGE = 1e-7  # scores at +-1 (duplicates) are moved this far inside, where atanh is finite (z = +-8.4)


@dataclass(frozen=True)
class OnFisherZ:
    """A two-piece family fitted to Fisher's ``z = atanh(s)`` of cosine-like scores ``s`` in [-1, 1], read back on
    the scores: a family with bounded support whose components may be skewed and heavy near the bounds (deep-model
    cosine scores: matches with a long low tail, non-matches bunched near 0). Parameters are on the ``z`` scale;
    every function takes and returns scores (``logpdf`` includes the Jacobian ``-log(1 - s^2)``), so the fit checks
    and rates compare it with the raw-scale families on the same footing. The model samples on ``z`` (:attr:`base`)."""

    base: TwoPiece

    @property
    def name(self) -> str:
        return f"{self.base.name}-atanh"

    @property
    def has_shape(self) -> bool:
        return self.base.has_shape

    @property
    def description(self) -> str:
        return f"{self.base.description} on Fisher's z = atanh(score) (bounded scores in [-1, 1])"

    @staticmethod
    def forward(s: np.ndarray) -> np.ndarray:
        """``atanh`` of the scores, ``+-1`` moved just inside; an :class:`InputError` for scores outside [-1, 1]."""
        s = np.asarray(s, float)
        out = np.flatnonzero(np.abs(s) > 1.0 + BOUND_SLACK)
        if out.size:
            raise InputError(f"{out.size} scores lie outside [-1, 1] (e.g. {s[out[0]]:g}): the *-atanh families are for "
                             "cosine-like similarities; choose a raw-scale family (sas, t, normal).", param="family")
        return np.arctanh(np.clip(s, -1.0 + _EDGE, 1.0 - _EDGE))

    def logpdf(self, x, mu, sl, sr, delta):
        z = self.forward(x)
        return self.base.logpdf(z, mu, sl, sr, delta) - np.log1p(-np.tanh(z) ** 2)

    def pdf(self, x, mu, sl, sr, delta):
        return np.exp(self.logpdf(x, mu, sl, sr, delta))

    def cdf(self, x, mu, sl, sr, delta):
        return self.base.cdf(self.forward(x), mu, sl, sr, delta)

    def sf(self, x, mu, sl, sr, delta):
        return self.base.sf(self.forward(x), mu, sl, sr, delta)

    def ppf(self, p, mu, sl, sr, delta):
        return np.tanh(self.base.ppf(p, mu, sl, sr, delta))

    def isf(self, q, mu, sl, sr, delta):
        return np.tanh(self.base.isf(q, mu, sl, sr, delta))

    def rvs(self, rng: np.random.Generator, size, mu, sl, sr, delta) -> np.ndarray:
        return np.tanh(self.base.rvs(rng, size, mu, sl, sr, delta))


Family = TwoPiece | OnFisherZ
KERNEL_NAMES = tuple(_KERNELS)
FAMILIES = LABELFREE_FAMILIES
SHOULDER_TEXT = "; non-matches a mixture of a bulk and a shoulder (look-alike impostors)"


def family(name: str) -> Family:
    """The component family of the model called ``name`` (:func:`parse`)."""
    return parse(name)[0]


def parse(name: str) -> tuple[Family, bool]:
    """The model called ``name``: its component family, a two-piece family on the raw scores (``"normal"``, ``"t"``,
    ``"sas"``) or on their Fisher z (``"normal-atanh"``, ...: cosine-like scores in [-1, 1]), and whether the
    non-matches are a mixture of two of them (suffix ``"-mix"``: a bulk and a shoulder)."""
    if name not in FAMILIES:
        raise InputError(f"unknown score family {name!r}; choose one of {', '.join(FAMILIES)}", param="family")
    shoulder = name.endswith("-mix")
    scale = name[:-4] if shoulder else name
    return (OnFisherZ(TwoPiece(scale[:-6])) if scale.endswith("-atanh") else TwoPiece(scale)), shoulder


def base(fam: Family) -> TwoPiece:
    """The two-piece family the model samples with (on the scores, or on their Fisher z)."""
    return fam.base if isinstance(fam, OnFisherZ) else fam


def fitted_scale(fam: Family, s: np.ndarray) -> np.ndarray:
    """The scores on the scale ``fam``'s parameters live on (the scores themselves, or their Fisher z)."""
    return fam.forward(s) if isinstance(fam, OnFisherZ) else np.asarray(s, float)
