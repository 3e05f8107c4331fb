"""Fairness summary measures against their textbook definitions, the zero-rate policy, vectorisation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from matchaudit.metrics import fairness as F


def reference(x: list[float]) -> dict[str, float]:
    m = len(x)
    geo = math.prod(x) ** (1 / m)
    mean = sum(x) / m
    return {
        "max_min_ratio": max(x) / min(x),
        "max_geomean_ratio": max(x) / geo,
        "log_geomean_sum": sum(abs(math.log10(v / geo)) for v in x),
        "gini": m / (m - 1) * sum(abs(a - b) for a, b in itertools.product(x, x)) / (2 * m * m * mean),
        "max_min_difference": max(x) - min(x),
    }


@pytest.mark.parametrize("x", [[0.01, 0.02], [1e-4, 3e-4, 2e-3, 5e-4], [0.3, 0.3, 0.3]])
def test_measures_match_definitions(x):
    got = F.summary_measures(np.array(x))
    for k, v in reference(x).items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k


def test_measures_are_vectorised_over_leading_axes():
    rng = np.random.default_rng(0)
    x = rng.uniform(1e-4, 1e-2, (5, 7, 3))
    got = F.summary_measures(x)
    for k, v in got.items():
        assert v.shape == (5, 7)
        assert v[2, 3] == pytest.approx(reference(list(x[2, 3]))[k], rel=1e-12)


def test_combined_measures_follow_their_formulas():
    fmr, fnmr = np.array([1e-4, 4e-4, 2e-4]), np.array([0.02, 0.01, 0.05])
    c = F.combined_measures(fmr, fnmr, fdr_weight=0.3, ir_exponents=(0.5, 2.0), garbe_weight=0.25)
    assert c["fdr"] == pytest.approx(1 - (0.3 * 3e-4 + 0.7 * 0.04))
    assert c["inequity_rate"] == pytest.approx(4.0**0.5 * 5.0**2)
    assert c["garbe"] == pytest.approx(0.25 * reference(list(fmr))["gini"] + 0.75 * reference(list(fnmr))["gini"])


def test_zero_rates_give_inf_or_nan_with_a_reason_never_a_crash():
    x = np.array([0.0, 0.01, 0.02])
    got = F.summary_measures(x)
    assert got["max_min_ratio"] == np.inf and got["max_geomean_ratio"] == np.inf
    assert got["log_geomean_sum"] == np.inf  # its limit as a rate goes to 0 (#43: it was NaN and replicates were dropped)
    assert got["gini"] == pytest.approx(3 / 2 * 0.08 / (2 * 9 * 0.01))  # sum |a-b| = 0.08, mean 0.01
    assert "g0" in F.zero_rate_reason(x, ["g0", "g1", "g2"])
    allzero = F.summary_measures(np.zeros(3))
    assert np.isnan(allzero["max_min_ratio"]) and np.isnan(allzero["gini"])
    assert F.zero_rate_reason(np.array([0.1, 0.2]), ["a", "b"]) is None


def test_upper_bound_policy_substitutes_one_sided_bounds_and_reports_groups():
    rates, n = np.array([0.0, 0.01, 0.0]), np.array([300, 1000, 3000])
    adj, mask = F.apply_zero_policy(rates, n, "upper-bound", level=0.95)
    assert mask.tolist() == [True, False, True]
    assert adj[1] == 0.01
    assert adj[0] == pytest.approx(1 - 0.05 ** (1 / 300)) and adj[0] == pytest.approx(3 / 300, rel=0.01)  # rule of 3
    same, none = F.apply_zero_policy(rates, n, "report")
    assert (same == rates).all() and not none.any()


def test_audit_applies_the_zero_policy():
    from matchaudit.metrics.evaluate import AuditConfig, evaluate
    from tests.test_metrics_exact import listed_data

    data = listed_data(np.random.default_rng(7))
    res = evaluate(data, AuditConfig(fmr_targets=(1e-3,), zero_policy="upper-bound", weightings=("pooled",)))
    rows = [f for f in res.fairness if f["rate"] == "FMR"]
    assert rows and all(r["adjusted_groups"] for r in rows)  # every group has FMR 0 at 1e-3 on tiny data
    assert all(np.isfinite(r["value"]) for r in rows)
