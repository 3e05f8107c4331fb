"""Generic permutation-test machinery for "is the gap real?" (DiCiccio et al., KDD 2020).

Everything here works on numbers, not data: per comparison, the observed difference ``T`` with its
estimated variance ``V``, and the same difference on ``B`` relabelled data sets (``T_pi``, and ``V_pi`` when
each relabelling has its own variance estimate). Any data source feeds these in: classifier tables
(:mod:`matchaudit.estimators.classifier`) now, the matching engine's group-label permutations later.

Studentization (the paper's fix; a plain permutation test is exact only under the strong null):

* ``studentize=True`` — ``S = T / sqrt(V)`` and ``S_pi = T_pi / sqrt(V_pi)`` (the paper's Algorithm 1);
* ``"permutation-sd"`` — the paper's fast variant (and LiFT's): ``S = T / sqrt(V)``, ``S_pi = T_pi / sd(T_pi)``;
* ``False`` — ``S = T``: the unstudentized baseline, labelled as invalid under the weak null.

Conventions (documented in docs/tests.md): a relabelled statistic with zero variance is ``0`` when
``T_pi = 0`` and ``±inf`` otherwise; an undefined (NaN) relabelled statistic counts as at least as extreme
as the observed one (conservative). Ties are judged with scipy's relative tolerance (100 machine epsilons).
A degenerate observed comparison (undefined statistic, zero variance, or a permutation distribution with
zero spread) is never reported as significant: its p-value is 1 when no difference was observed and NaN
otherwise, with a reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Sequence

import numpy as np
from scipy.special import ndtri, stdtr

from matchaudit.definitions import Alternative
from matchaudit.encoding import jsonable
from matchaudit.estimators.intervals import wilson_bounds, z_quantile

Studentize = bool | Literal["permutation-sd"]

MODES = {
    True: "studentized",
    "permutation-sd": "permutation-sd",
    False: "none",
}
METHOD = {
    "studentized": "studentized: T/se(T), each relabelled statistic by its own variance estimate "
                   "(valid under the weak null)",
    "permutation-sd": "studentized (fast variant): T/se(T); relabelled statistics by the permutation "
                      "distribution's SD (valid under the weak null)",
    "none": "unstudentized (baseline; invalid under the weak null)",
}
_TIE_RTOL = 100 * np.finfo(np.float64).eps


def mode_of(studentize: Studentize) -> str:
    """The internal name of a ``studentize=`` argument (True, "permutation-sd" or False)."""
    for key, name in MODES.items():
        if studentize is key or (isinstance(studentize, str) and studentize == key):
            return name
    raise ValueError(f"studentize={studentize!r}: use True, 'permutation-sd' or False.")


def ratio(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``t / sqrt(v)`` with the zero-variance convention: 0 when t == 0, ±inf otherwise; NaN stays NaN."""
    t = np.asarray(t, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = t / np.sqrt(v)
    zero = v == 0
    return np.where(zero, np.where(t == 0, 0.0, np.copysign(np.inf, t)), s)


@dataclass(frozen=True)
class Standardized:
    """Observed statistics (m,), their null distribution (B, m) on the same scale, and degeneracy reasons."""

    statistic: np.ndarray
    null: np.ndarray
    reasons: list[str | None]
    mode: str


def normal_scale(s: np.ndarray, df: np.ndarray | None) -> np.ndarray:
    """A studentized statistic read as a t with ``df`` degrees of freedom, mapped to the standard-normal quantile
    of the same tail probability (monotone, odd); ``df`` None, infinite or NaN, and infinite ``s``, unchanged."""
    s = np.asarray(s, dtype=np.float64)
    if df is None:
        return s
    d = np.broadcast_to(np.asarray(df, dtype=np.float64), s.shape)
    ok = np.isfinite(s) & np.isfinite(d) & (d > 0)
    dd = np.where(ok, d, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(s < 0, ndtri(stdtr(dd, s)), -ndtri(stdtr(dd, -s)))  # t cdf / sf, then normal quantiles
    return np.where(ok, z, s)


def standardize(t: Sequence[float] | np.ndarray, v: Sequence[float] | np.ndarray | None,
                t_perm: np.ndarray, v_perm: np.ndarray | None = None,
                studentize: Studentize = True, df: np.ndarray | None = None,
                df_perm: np.ndarray | None = None) -> Standardized:
    """Put the observed and relabelled differences of ``m`` comparisons on the test's scale.

    ``t``, ``v``: (m,) observed differences and variances; ``t_perm``, ``v_perm``: (B, m). ``df``, ``df_perm``
    (studentized only): each statistic's effective degrees of freedom; the statistic is then read as a t with
    them (:func:`normal_scale`), observed and relabelled alike, so the test stays exact under the strong null.
    """
    mode = mode_of(studentize)
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    v = np.full_like(t, np.nan) if v is None else np.atleast_1d(np.asarray(v, dtype=np.float64))
    t_perm = np.asarray(t_perm, dtype=np.float64).reshape(-1, t.size)
    finite = np.isfinite(t_perm)
    count = finite.sum(axis=0)
    mean = np.where(finite, t_perm, 0.0).sum(axis=0) / np.maximum(count, 1)
    sd = np.sqrt(np.where(finite, (t_perm - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1))
    if mode == "studentized":
        if v_perm is None:
            raise ValueError("studentize=True needs the relabelled variances v_perm; "
                             "use studentize='permutation-sd' when only the observed variance is known.")
        stat, null = ratio(t, v), ratio(t_perm, np.asarray(v_perm, dtype=np.float64).reshape(t_perm.shape))
        if df is not None and df_perm is not None:
            stat = normal_scale(stat, np.atleast_1d(np.asarray(df, dtype=np.float64)))
            null = normal_scale(null, np.asarray(df_perm, dtype=np.float64).reshape(t_perm.shape))
    elif mode == "permutation-sd":
        stat, null = ratio(t, v), ratio(t_perm, np.broadcast_to(sd ** 2, t_perm.shape))
    else:
        stat, null = t.copy(), t_perm.copy()
    reasons: list[str | None] = []
    for k in range(t.size):
        if not np.isfinite(t[k]):
            reasons.append("the observed difference is undefined (a group lacks the rows the metric needs)")
        elif mode != "none" and not v[k] > 0:
            reasons.append("the estimated variance of the observed difference is zero (or undefined), so the "
                           "studentized statistic is undefined; not reported as significant")
        elif count[k] < 2 or sd[k] == 0:
            reasons.append("the permutation distribution is degenerate (every relabelling gives the same "
                           "difference); not reported as significant")
        else:
            reasons.append(None)
    stat = np.where([r is None for r in reasons], stat, np.nan)
    return Standardized(stat, null, reasons, mode)


def exceedances(stat: np.ndarray, null: np.ndarray, alternative: Alternative = "two-sided") -> np.ndarray:
    """Per comparison, how many relabelled statistics are at least as extreme as the observed one.

    Ties within 100 machine epsilons (relative) count as extreme (scipy's rule); NaN counts as extreme.
    """
    stat = np.atleast_1d(np.asarray(stat, dtype=np.float64))
    null = np.asarray(null, dtype=np.float64).reshape(-1, stat.size)
    tol = _TIE_RTOL * np.abs(stat)
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            hit = np.abs(null) >= np.abs(stat) - tol
        elif alternative == "greater":
            hit = null >= stat - tol
        elif alternative == "less":
            hit = null <= stat + tol
        else:
            raise ValueError(f"alternative={alternative!r}: use 'two-sided', 'greater' or 'less'.")
    return (hit | np.isnan(null)).sum(axis=0)


def pvalue(k: np.ndarray | int, n: int, exact: bool) -> np.ndarray:
    """``k / n`` for an exhaustive enumeration (which contains the observed labelling), else ``(1 + k) / (1 + n)``."""
    k = np.asarray(k, dtype=np.float64)
    return k / n if exact else (1.0 + k) / (1.0 + n)


def monte_carlo_error(k: int, n: int, exact: bool, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Monte-Carlo standard error of a permutation p-value and a Wilson interval for the exceedance probability."""
    if exact:
        p = k / n
        return 0.0, (p, p)
    p = (1.0 + k) / (1.0 + n)
    return float(np.sqrt(p * (1 - p) / n)), wilson_bounds(k / n, n, level) if n > 0 else (np.nan, np.nan)


def _in_order(pvalues: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The p-values as float64 and the positions of the tested ones (not NaN) by increasing p, ties in input order:
    what every step-wise adjustment walks."""
    p = np.asarray(pvalues, dtype=np.float64)
    tested = np.flatnonzero(~np.isnan(p))
    return p, tested[np.argsort(p[tested], kind="stable")]


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN entries are untested: they stay NaN and do not count in m)."""
    p, order = _in_order(pvalues)
    out = np.full_like(p, np.nan)
    m = order.size
    if m:
        out[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    return out


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values (step-up): rejecting every q <= alpha keeps the expected share of false discoveries
    at most alpha (independent or positively dependent tests). NaN entries are untested: they stay NaN and do not
    count in m. The values of ``scipy.stats.false_discovery_control(method="bh")`` to the bit (tested), computed here
    because importing scipy.stats for them took 0.39 s of every audit with group tests."""
    p, order = _in_order(pvalues)
    out = np.full_like(p, np.nan)
    m = order.size
    if m:
        q = p[order] * (m / np.arange(1, m + 1))
        out[order] = np.minimum(1.0, np.minimum.accumulate(q[::-1])[::-1])
    return out


def maxt(stat: np.ndarray, null: np.ndarray, exact: bool = False) -> np.ndarray:
    """Single-step max-T adjusted p-values (two-sided) from the joint null of all comparisons.

    ``stat``: (m,) studentized statistics (NaN = degenerate, excluded); ``null``: (B, m) from the same
    relabellings. Adjusted p_k = (1 + #{b : max_j |S_bj| >= |S_k|}) / (1 + B); a NaN relabelled statistic
    counts as +inf in the maximum (conservative).
    """
    stat = np.asarray(stat, dtype=np.float64)
    null = np.asarray(null, dtype=np.float64).reshape(-1, stat.size)
    ok = ~np.isnan(stat)
    out = np.full(stat.shape, np.nan)
    if not ok.any():
        return out
    sub = np.abs(null[:, ok])
    top = np.where(np.isnan(sub), np.inf, sub).max(axis=1)
    k = exceedances(np.abs(stat[ok]), np.repeat(top[:, None], ok.sum(), axis=1), "greater")
    out[ok] = pvalue(k, null.shape[0], exact)
    return out


def direction(effect: float, labels: tuple[str, str]) -> str:
    """``"A > B"``, ``"A < B"`` or ``"no difference"`` from the sign of ``effect = metric(A) - metric(B)``."""
    if not np.isfinite(effect) or effect == 0:
        return "no difference" if effect == 0 else "undefined"
    return f"{labels[0]} > {labels[1]}" if effect > 0 else f"{labels[0]} < {labels[1]}"


def effect_interval(effect: float, variance: float, level: float) -> tuple[float, tuple[float, float]]:
    """Standard error and Wald interval of the difference (closed-form or bootstrap variance)."""
    se = float(np.sqrt(variance)) if variance >= 0 else np.nan
    z = z_quantile(level)
    return se, (effect - z * se, effect + z * se)


@dataclass(frozen=True)
class PermutationTestResult:
    """A two-group test, in the style of ``scipy.stats.permutation_test`` plus what an audit needs.

    ``statistic``/``null_distribution`` are on the test's scale (studentized unless the baseline);
    ``effect`` is the raw difference metric(A) - metric(B) with ``effect_se`` and ``effect_ci``;
    ``pvalue_se`` and ``pvalue_ci`` give the Monte-Carlo uncertainty of the p-value (zero for exact); ``level`` is
    the confidence level of both intervals (the significance level is the caller's: :meth:`significant`).
    """

    statistic: float
    pvalue: float
    null_distribution: np.ndarray
    effect: float
    effect_se: float
    effect_ci: tuple[float, float]
    direction: str
    pvalue_se: float
    pvalue_ci: tuple[float, float]
    n_resamples: int
    exact: bool
    alternative: str
    studentize: str
    method: str
    level: float
    reason: str | None = None
    details: dict = field(default_factory=dict)

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether the test rejects at the significance level ``alpha`` (never for a degenerate / NaN p-value)."""
        return rejects(self.pvalue, alpha)

    def to_dict(self, include_null: bool = False) -> dict:
        """JSON-ready summary (the null distribution only when asked)."""
        d = asdict(self)
        d["null_distribution"] = self.null_distribution.tolist() if include_null else None
        d["effect_ci"], d["pvalue_ci"] = list(self.effect_ci), list(self.pvalue_ci)
        return jsonable(d)


def rejects(pvalue: float, alpha: float) -> bool:
    """The one significance rule of every test here: reject when ``pvalue <= alpha`` (p = alpha rejects; a NaN
    p-value, a degenerate or untestable comparison, never does)."""
    return bool(pvalue <= alpha)


def _degenerate_p(t: float) -> float:
    return 1.0 if t == 0 else np.nan


def permutation_test(t: float, v: float | None, t_perm: np.ndarray, v_perm: np.ndarray | None = None, *,
                     studentize: Studentize = True, alternative: Alternative = "two-sided", exact: bool = False,
                     level: float = 0.95, labels: tuple[str, str] = ("A", "B"),
                     details: dict | None = None, df: float | None = None,
                     df_perm: np.ndarray | None = None,
                     effect: tuple[float, float] | None = None) -> PermutationTestResult:
    """One comparison: the observed difference ``t`` (variance ``v``) against its relabelled copies ``t_perm``.

    ``exact=True`` means ``t_perm`` enumerates every distinct relabelling (the observed one included), so the
    p-value is ``k / B``; otherwise it is ``(1 + k) / (1 + B)`` for ``B`` random relabellings. ``df``,
    ``df_perm``: effective degrees of freedom of the studentized statistics (:func:`standardize`). ``effect``: the
    reported difference and its variance when ``t`` is on another scale (e.g. a log ratio); default ``(t, v)``.
    """
    t_perm = np.asarray(t_perm, dtype=np.float64).reshape(-1)
    z = standardize([t], None if v is None else [v], t_perm[:, None],
                    None if v_perm is None else np.asarray(v_perm, dtype=np.float64).reshape(-1, 1), studentize,
                    None if df is None else [df], None if df_perm is None else np.asarray(df_perm).reshape(-1, 1))
    b = t_perm.size
    reason = z.reasons[0]
    if reason is None:
        k = int(exceedances(z.statistic, z.null, alternative)[0])
        p = float(pvalue(k, b, exact))
        pse, pci = monte_carlo_error(k, b, exact, level)
    else:
        p, pse, pci = _degenerate_p(t), np.nan, (np.nan, np.nan)
    eff, eff_v = (t, np.nan if v is None else v) if effect is None else effect
    se, ci = effect_interval(eff, eff_v, level)
    return PermutationTestResult(
        statistic=float(z.statistic[0]), pvalue=p, null_distribution=z.null[:, 0], effect=float(eff),
        effect_se=se, effect_ci=ci, direction=direction(eff, labels), pvalue_se=pse, pvalue_ci=pci,
        n_resamples=b, exact=exact, alternative=alternative, studentize=z.mode, method=METHOD[z.mode],
        level=level, reason=reason, details=dict(details or {}))


def comparison_table(names: Sequence[str], t: np.ndarray, v: np.ndarray | None, t_perm: np.ndarray,
                     v_perm: np.ndarray | None = None, *, studentize: Studentize = True, exact: bool = False,
                     alpha: float = 0.05, level: float = 0.95,
                     labels: Sequence[tuple[str, str]] | None = None, df: np.ndarray | None = None,
                     df_perm: np.ndarray | None = None,
                     effect: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[list[dict], Standardized]:
    """Many comparisons on the same relabellings: raw (two-sided), Holm and max-T p-values (family-wise error) and
    Benjamini-Hochberg q-values (false discovery rate), with flags at the significance level ``alpha``; the effect and
    p-value intervals at the confidence ``level``.

    Returns one dict per comparison and the standardized statistics (for plots). ``effect``: the reported
    differences and their variances when ``t`` is on another scale (default ``(t, v)``).
    """
    z = standardize(t, v, t_perm, v_perm, studentize, df, df_perm)
    b = z.null.shape[0]
    t = np.asarray(t, dtype=np.float64)
    v = np.full_like(t, np.nan) if v is None else np.asarray(v, dtype=np.float64)
    k = exceedances(z.statistic, z.null, "two-sided")
    ok = np.array([r is None for r in z.reasons])
    degenerate = np.array([_degenerate_p(x) for x in t])
    raw = np.where(ok, pvalue(k, b, exact), degenerate)
    if effect is not None:
        t, v = (np.asarray(a, dtype=np.float64) for a in effect)
    p_holm = np.where(ok, holm(np.where(ok, raw, np.nan)), degenerate)
    p_maxt = np.where(ok, maxt(z.statistic, z.null, exact), degenerate)
    q_bh = np.where(ok, benjamini_hochberg(np.where(ok, raw, np.nan)), degenerate)
    rows = []
    for j, name in enumerate(names):
        se, ci = effect_interval(float(t[j]), float(v[j]), level)
        pse, pci = (monte_carlo_error(int(k[j]), b, exact, level) if z.reasons[j] is None
                    else (np.nan, (np.nan, np.nan)))
        lab = labels[j] if labels is not None else ("A", "B")
        rows.append({
            "comparison": name, "effect": float(t[j]), "effect_se": se, "effect_ci_low": ci[0],
            "effect_ci_high": ci[1], "direction": direction(float(t[j]), lab), "statistic": float(z.statistic[j]),
            "pvalue": float(raw[j]), "pvalue_se": pse, "pvalue_ci_low": pci[0], "pvalue_ci_high": pci[1],
            "pvalue_holm": float(p_holm[j]), "pvalue_maxt": float(p_maxt[j]), "qvalue_bh": float(q_bh[j]),
            "significant": rejects(raw[j], alpha), "significant_holm": rejects(p_holm[j], alpha),
            "significant_maxt": rejects(p_maxt[j], alpha), "significant_bh": rejects(q_bh[j], alpha),
            "reason": z.reasons[j],
        })
    return rows, z
