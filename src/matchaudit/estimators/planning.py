"""Planning an evaluation: variance components from a pilot, detectable differences, sample sizes, and
the predicted variance of a comparison protocol (:mod:`matchaudit.protocols` designs one; the pilot's identity
counts come from :func:`matchaudit.studies.planning.pilot_components`).

Model (pooled rates at a fixed threshold; docs/methods.md section 4). A genuine comparison belongs to one
identity, an impostor comparison to two. Comparisons that share an identity are correlated with covariance
``s_b`` (genuine: same identity) or ``s_a`` (impostor: one shared identity); otherwise independent. Then for a
protocol with ``g_k`` genuine comparisons of identity ``k`` (``G = sum g_k``) and ``c_k`` impostor comparisons
involving ``k`` (``sum c_k = 2M``):

    Var(FNMR) = [p(1-p) G + s_b sum_k g_k (g_k - 1)] / G^2
    Var(FMR)  = [p(1-p) M + s_a sum_k c_k (c_k - 1)] / M^2

``s_b`` and ``s_a`` are moment estimates from the pilot's per-identity counts: the sum over ordered pairs of
distinct comparisons sharing an identity of ``(x - p)(x' - p)``, divided by the number of such pairs (this
is the covariance part of the clustered variance, spread per pair). The first term is the within part; the
second, the between-identity part, which only spreading comparisons over identities removes: with one
genuine comparison per identity it vanishes. The prediction ignores the extra correlation of comparisons
that share a *sample* (designed protocols avoid re-using samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from matchaudit.engine import IdentityCounts
from matchaudit.errors import InputError
from matchaudit.estimators.intervals import z_quantile


@dataclass(frozen=True)
class Components:
    """Pilot variance components of one rate: ``p``, per-comparison variance ``p(1-p)``, and the covariance
    ``s`` of two comparisons sharing an identity (``icc = s / p(1-p)``)."""

    rate: str
    p: float
    s: float
    comparisons: int
    identities: int

    @property
    def icc(self) -> float:
        v = self.p * (1 - self.p)
        return self.s / v if v > 0 else math.nan

    def variance(self, sum_units: float, sum_pairs: float) -> float:
        """``[p(1-p) n + s sum_k u_k(u_k - 1)] / n^2`` with ``n = sum_units`` comparisons and
        ``sum_pairs = sum_k u_k(u_k - 1)`` (u_k: comparisons involving identity k)."""
        return (self.p * (1 - self.p) * sum_units + self.s * sum_pairs) / sum_units**2

    def to_dict(self) -> dict:
        return {"rate": self.rate, "p": self.p, "shared_identity_covariance": self.s, "icc": self.icc,
                "pilot_comparisons": self.comparisons, "pilot_identities": self.identities}


def _moment(p: float, dev_row: np.ndarray, err_row: np.ndarray, n_row: np.ndarray) -> float:
    """sum_k [(sum_{c in k} (x_c - p))^2 - sum_{c in k} (x_c - p)^2] / sum_k n_k (n_k - 1)."""
    own = err_row * (1 - 2 * p) + n_row * p * p
    den = float((n_row * (n_row - 1)).sum())
    return float(((dev_row**2) - own).sum() / den) if den > 0 else 0.0


def components(ic: IdentityCounts, group_names: list[str], group: str | None = None) -> tuple[Components, Components]:
    """(FNMR, FMR) components from a pilot's identity counts at one threshold (``group``: its identities and
    same-group impostors only; default every comparison)."""
    if group is None:
        keep = np.ones(ic.g.size, bool)
        m_row, e_row = ic.m_row.astype(float), ic.e_row[0].astype(float)
    else:
        if group not in group_names:
            raise InputError(f"no group {group!r}; groups present: {', '.join(group_names)}.")
        gi = group_names.index(group)
        keep = ic.group == gi
        m_row, e_row = ic.m_row_cat[gi].astype(float), ic.e_row_cat[0, gi].astype(float)
    g, e = ic.g[keep].astype(float), ic.e[0][keep].astype(float)
    if g.sum() <= 0 or m_row.sum() <= 0:
        raise InputError("the pilot needs genuine and impostor comparisons (for the group asked).")
    pg = e.sum() / g.sum()
    pi = e_row.sum() / m_row.sum()
    fn = Components("FNMR", pg, _moment(pg, e - pg * g, e, g), int(g.sum()), int(keep.sum()))
    fm = Components("FMR", pi, _moment(pi, e_row - pi * m_row, e_row, m_row), int(m_row.sum() // 2),
                    int((m_row > 0).sum()))
    return fn, fm


def balanced_variance(c: Components, n_identities: int, per_identity: float) -> float:
    """Variance with ``n_identities`` identities each in ``per_identity`` comparisons (genuine: its own;
    impostor: comparisons it takes part in, so ``M = K r / 2``)."""
    K, r = float(n_identities), float(per_identity)
    n = K * r if c.rate == "FNMR" else K * r / 2
    return c.variance(n, K * r * (r - 1))


def minimum_detectable_difference(a: Components, b: Components, n_identities: int, per_identity: float,
                                  alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest |rate_A - rate_B| a two-sided level-``alpha`` test detects with probability ``power`` when each
    group has ``n_identities`` identities with ``per_identity`` comparisons each: ``(z_{1-a/2} + z_power)
    sqrt(Var_A + Var_B)`` (normal approximation, variances at the pilot rates)."""
    v = balanced_variance(a, n_identities, per_identity) + balanced_variance(b, n_identities, per_identity)
    return (ndtri(1 - alpha / 2) + ndtri(power)) * math.sqrt(v)


def identities_for_width(c: Components, width: float, per_identity: float, level: float = 0.95,
                         max_identities: int = 10**8) -> int:
    """Fewest identities (each with ``per_identity`` comparisons) for a Wald interval of total ``width``."""
    z = z_quantile(level)
    unit = balanced_variance(c, 1, per_identity)  # variance scales as 1/K
    k = math.ceil(unit * (2 * z / width) ** 2)
    if k > max_identities:
        raise InputError(f"a width of {width:g} needs more than {max_identities:,} identities at this rate.")
    return max(k, 1 if c.rate == "FNMR" else 2)


def predict(fnmr: Components, fmr: Components, sums: dict[str, float], level: float = 0.95) -> dict[str, float]:
    """Predicted SDs and Wald interval widths of FNMR and FMR for a protocol's (or expected) usage sums."""
    z = z_quantile(level)
    vg = fnmr.variance(sums["genuine"], sums["genuine_pairs"])
    vi = fmr.variance(sums["impostor"], sums["impostor_pairs"])
    return {"fnmr_sd": math.sqrt(vg), "fmr_sd": math.sqrt(vi), "fnmr_width": 2 * z * math.sqrt(vg),
            "fmr_width": 2 * z * math.sqrt(vi)}


def identities_to_settle(identities: int, estimate: float, bound: float, limit: float) -> int | None:
    """Identities (at today's comparisons per identity) at which a confidence bound now at ``bound`` would reach
    ``limit``, if the estimate stays where it is: the variance scales as ``1 / K`` (:func:`balanced_variance`), so the
    bound's distance from the estimate as ``1 / sqrt(K)``. None when the estimate itself is not on the limit's far
    side from the bound (no number of identities moves the bound past the limit then)."""
    gap, reach = abs(bound - estimate), abs(limit - estimate)
    if not (math.isfinite(gap) and math.isfinite(reach)) or reach == 0 or (bound - estimate) * (limit - estimate) <= 0:
        return None
    factor = (gap / reach) ** 2 * (1.0 - 1e-12)  # an exact square (4.000000000000001) is not one identity more
    return max(int(identities), math.ceil(identities * factor)) if gap > reach else int(identities)


__all__ = ["Components", "balanced_variance", "components", "identities_for_width", "identities_to_settle",
           "minimum_detectable_difference", "predict"]
