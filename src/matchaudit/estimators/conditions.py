"""Trial conditions as groups (docs/conditions.md): per condition and per condition x group FNMR and FMR at the
deployed threshold, the equalised rate (the unweighted mean over conditions, as NIST SRE's partitions), each
condition's difference from the reference condition and the condition x group interactions (differences in
differences), with their intervals, p-values and Wald tests, all from ONE set of joint identity-bootstrap replicates.

Joint: every array below comes from engine runs with the same scheme, seed and identity codes, so identity ``k``
has the same weight in every condition of a replicate (:mod:`matchaudit.resampling`: the weight is a function of
(seed, replicate, identity)); a contrast's replicates are the contrast of the rates' replicates, which keeps the
dependence between conditions that share identities. The passes are :mod:`matchaudit.auditing.conditions`'."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

import numpy as np
import pandas as pd
from scipy import stats

from matchaudit.encoding import jsonable
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.regime import FEW_ERRORS, MIN_ERRORS, few_errors

METRICS = ("fnmr", "fmr")


@dataclass(frozen=True)
class Rates:
    """One view set's replicates at the FMR targets: rate (R, T, V) per metric (row 0 the plug-in), the plug-in's
    errors and comparisons (T, V), and each view's zero-error bound (T, V) per metric, at the level and at the
    Bonferroni level over the conditions (for an equalised rate whose conditions all show zero errors)."""

    rate: dict[str, np.ndarray]
    errors: dict[str, np.ndarray]
    comparisons: dict[str, np.ndarray]
    zero_bound: dict[str, np.ndarray]
    zero_bound_joint: dict[str, np.ndarray]


@dataclass(frozen=True)
class Layout:
    """The views: condition names (the reference first), group names (empty: ungrouped), and for each
    (condition, group) cell its column in the cell replicates (-1: no comparisons)."""

    conditions: tuple[str, ...]
    groups: tuple[str, ...]
    cell: np.ndarray  # (C, G) int


def _interval(estimate: float, reps: np.ndarray, method: str, level: float, seed: int, bounds=None) -> dict:
    r = bs.interval_from_replicates(method, estimate, reps, level=level, seed=seed, bounds=bounds)
    return {"low": r.confidence_interval.low, "high": r.confidence_interval.high, "standard_error": r.standard_error,
            "note": r.note}


def wald(contrasts: np.ndarray) -> tuple[float, int, float, int, str | None]:
    """Wald test that every contrast is 0: ``d' S^+ d`` with ``S`` the replicates' covariance (pseudo-inverse, df its
    rank), against chi-square. ``contrasts`` (R, m), row 0 the plug-in; replicates with an undefined contrast are
    dropped (returned: statistic, df, p-value, replicates dropped, and why there is no test when there is none)."""
    d, reps = contrasts[0], contrasts[1:]
    ok = np.isfinite(reps).all(axis=1)
    nan = float("nan")
    if not np.isfinite(d).all():
        return nan, 0, nan, int((~ok).sum()), ("a contrast is undefined: a condition (or condition x group cell) has "
                                               "no comparisons of a kind; does a condition repeat a group attribute?")
    if ok.sum() < 2:
        return nan, 0, nan, int((~ok).sum()), "fewer than 2 replicates with every contrast defined"
    S = np.atleast_2d(np.cov(reps[ok], rowvar=False))
    df = int(np.linalg.matrix_rank(S))
    if df == 0:
        return nan, 0, nan, int((~ok).sum()), "no contrast varies across the replicates (no errors to compare?)"
    stat = float(d @ np.linalg.pinv(S) @ d)
    return stat, df, float(stats.chi2.sf(stat, df)), int((~ok).sum()), None


def condition_records(targets: np.ndarray, thresholds: np.ndarray, layout: Layout, by_condition: Rates,
                      by_cell: Rates | None, *, method: str, level: float, seed: int
                      ) -> tuple[list[dict], list[dict]]:
    """Interval records and Wald tests (see module doc). ``by_condition`` views: all, then each condition (the
    condition's impostors: every impostor comparison under it); ``by_cell`` views: all, then the cells (same-group
    impostors), None when ungrouped. A contrast's interval is the percentile interval of its replicates, its p-value
    two-sided from its bootstrap standard error (normal)."""
    records: list[dict] = []
    tests: list[dict] = []
    C, G = len(layout.conditions), len(layout.groups)
    ref = layout.conditions[0]

    def rate_record(metric: str, ti: int, cond: str, group: str, src: Rates, col: int) -> None:
        x = src.rate[metric][:, ti, col]
        k, n = int(src.errors[metric][ti, col]), int(src.comparisons[metric][ti, col])
        r = _interval(float(x[0]), x[1:], method, level, seed, bounds=(0.0, 1.0))
        if k == 0 and n > 0:  # zero errors: [0, U], U the identity-clustered one-sided bound (docs/intervals.md)
            r.update(low=0.0, high=max(r["high"], float(src.zero_bound[metric][ti, col])),
                     note="zero errors: the upper bound is the identity-clustered zero-error bound")
        elif few_errors(k):  # the audit's rule (estimators/regime.py)
            r.update(note="; ".join(filter(None, (r.get("note"), f"rests on {k} errors (fewer than {MIN_ERRORS}): "
                                                  f"{FEW_ERRORS}; read it as indicative"))))
        records.append(dict(kind="rate", metric=metric, condition=cond, group=group, estimate=float(x[0]),
                            errors=k, comparisons=n, **base(ti), **r))

    def base(ti: int) -> dict:
        return {"fmr_target": float(targets[ti]), "threshold": float(thresholds[ti]), "method": method,
                "level": level, "seed": seed}

    def contrast(kind: str, metric: str, ti: int, cond: str, cref: str, group: str, gref: str,
                 x: np.ndarray) -> None:
        r = _interval(float(x[0]), x[1:], method, level, seed)
        se = r["standard_error"]
        p = float(2 * stats.norm.sf(abs(x[0]) / se)) if np.isfinite(x[0]) and se and se > 0 else float("nan")
        records.append(dict(kind=kind, metric=metric, condition=cond, condition_ref=cref, group=group,
                            group_ref=gref, estimate=float(x[0]), p_value=p, **base(ti), **r))

    for metric, ti in product(METRICS, range(targets.size)):
        cr = by_condition.rate[metric][:, ti, :]  # (R, 1 + C)
        rate_record(metric, ti, "all", "all", by_condition, 0)
        for c, cond in enumerate(layout.conditions):
            rate_record(metric, ti, cond, "all", by_condition, 1 + c)
        cells = None
        if by_cell is not None:
            cells = np.full((cr.shape[0], C, G), np.nan)
            for c, g in product(range(C), range(G)):
                if layout.cell[c, g] >= 0:
                    cells[:, c, g] = by_cell.rate[metric][:, ti, 1 + layout.cell[c, g]]
                    rate_record(metric, ti, layout.conditions[c], layout.groups[g], by_cell, 1 + layout.cell[c, g])
        def equalised(group: str, x: np.ndarray, src: Rates, cols: list[int]) -> None:
            r = _interval(float(x[0]), x[1:], method, level, seed, bounds=(0.0, 1.0))
            if cols and all(src.errors[metric][ti, c] == 0 and src.comparisons[metric][ti, c] > 0 for c in cols):
                # zero errors in every condition: the mean of the conditions' zero-error bounds, each at the
                # Bonferroni level 1 - (1 - level) / C, holds at the level
                r.update(low=0.0, high=float(np.mean([src.zero_bound_joint[metric][ti, c] for c in cols])),
                         note="zero errors in every condition: the mean of their zero-error bounds (Bonferroni)")
            records.append(dict(kind="equalised", metric=metric, condition="equalised", group=group,
                                estimate=float(x[0]), **base(ti), **r))

        with np.errstate(invalid="ignore"):
            equalised("all", cr[:, 1:].mean(axis=1), by_condition, list(range(1, C + 1)))
            for g, group in enumerate(layout.groups):
                equalised(group, cells[:, :, g].mean(axis=1), by_cell,
                          [1 + layout.cell[c, g] for c in range(C)] if (layout.cell[:, g] >= 0).all() else [])
            diffs = cr[:, 2:] - cr[:, 1:2]  # each condition minus the reference (R, C - 1)
        for c in range(1, C):
            contrast("difference", metric, ti, layout.conditions[c], ref, "all", "", diffs[:, c - 1])
        stat, df, p, dropped, why = wald(diffs)
        tests.append(dict(test="conditions", metric=metric, **base(ti), statistic=stat, df=df, p_value=p,
                          dropped_replicates=dropped, note=why,
                          hypothesis=f"every condition's {metric.upper()} equals the reference condition's ({ref})"))
        if cells is None or G < 2:
            continue
        with np.errstate(invalid="ignore"):  # (B,c - A,c) - (B,ref - A,ref), A the reference group
            gap = cells[:, :, 1:] - cells[:, :, :1]
            did = (gap[:, 1:, :] - gap[:, :1, :]).reshape(cr.shape[0], -1)
        for j, (c, g) in enumerate(product(range(1, C), range(1, G))):
            contrast("interaction", metric, ti, layout.conditions[c], ref, layout.groups[g], layout.groups[0],
                     did[:, j])
        stat, df, p, dropped, why = wald(did)
        tests.append(dict(test="interaction", metric=metric, **base(ti), statistic=stat, df=df, p_value=p,
                          dropped_replicates=dropped, note=why,
                          hypothesis=f"the groups' {metric.upper()} gaps are the same under every condition "
                                     "(no condition x group interaction)"))
    return records, tests


def zero_bounds(genuine_sizes: list[np.ndarray], impostor_identities: list[int], level: float) -> dict[str, np.ndarray]:
    """Each view's zero-error bounds (V,) per metric: FNMR over its identities' genuine comparisons
    (:func:`~matchaudit.estimators.intervals.zero_error_bound`), FMR over its impostors' identities
    (:func:`~matchaudit.estimators.intervals.zero_false_match_bound`)."""
    return {"fnmr": np.array([iv.zero_error_bound(s, level) for s in genuine_sizes]),
            "fmr": np.array([iv.zero_false_match_bound(k, level) for k in impostor_identities])}


@dataclass
class ConditionAudit:
    """Rates per trial condition (and condition x group) at the deployed thresholds, the equalised rates, the
    differences between conditions and the condition x group interactions, with joint identity-bootstrap intervals
    (:func:`matchaudit.audit_conditions`; docs/conditions.md)."""

    records: list[dict]
    tests: list[dict]
    conditions: tuple[str, ...]
    groups: tuple[str, ...]
    condition_cols: tuple[str, ...]
    fmr_targets: np.ndarray
    method: str
    n_resamples: int
    seed: int
    level: float
    details: dict = field(default_factory=dict)
    replicates: dict = field(default_factory=dict)  # {"conditions"|"cells": {metric: (R, T, 1 + V)}}, row 0 plug-in

    def to_frame(self) -> pd.DataFrame:
        """One row per record: kind (rate, equalised, difference, interaction), metric, FMR target, threshold,
        condition (and condition_ref), group (and group_ref), estimate, errors/comparisons (rates), low, high,
        standard error, p-value (contrasts), method, level, seed, note."""
        return pd.DataFrame(self.records)

    def to_dict(self) -> dict:
        """What conditions.json holds (JSON-ready): the records, the Wald tests, the settings."""
        return jsonable({"condition_cols": self.condition_cols, "conditions": self.conditions, "groups": self.groups,
                         "fmr_targets": self.fmr_targets, "method": self.method, "n_resamples": self.n_resamples,
                         "seed": self.seed, "level": self.level, "records": self.records, "tests": self.tests,
                         "details": self.details})


__all__ = ["ConditionAudit", "Layout", "Rates", "condition_records", "wald", "zero_bounds"]
