"""Fairness intervals that can reach parity (#19 item 3): the max/min of each replicate's own extremes is biased
away from parity, so two groups drawn from one population got intervals excluding 1 (FNMR max-min difference
0.072 [0.024, 0.140] with identical groups). Replicates now hold the estimate's two extreme groups fixed; and no
interval may exclude its own estimate."""

from __future__ import annotations

import math

import numpy as np

import matchaudit as ma
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.audit_intervals import _keep_estimate
from matchaudit.metrics.fairness import summary_measures


def test_pair_measures_on_the_plug_in_are_the_measures_and_flip_below_parity():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.01, 0.2, size=(50, 3, 5))  # replicates x targets x groups, row 0 the plug-in
    pair = bs.extreme_pairs(x[0])
    got = bs.pair_measures(x, pair)
    ref = summary_measures(x[0])
    for name in bs.PAIR_MEASURES:
        np.testing.assert_array_equal(got[name][0], ref[name])
    t = np.arange(3)
    np.testing.assert_array_equal(got["max_min_ratio"][1:], x[1:, t, pair[0]] / x[1:, t, pair[1]])
    assert (got["max_min_ratio"][1:] < 1).any() and (got["max_min_difference"][1:] < 0).any()


def test_two_groups_from_one_population_get_intervals_that_reach_parity():
    from matchaudit.simulation import GroupSpec, simulate_vmf

    sim = simulate_vmf({"A": GroupSpec(60, (20, 40)), "B": GroupSpec(60, (20, 40))}, dim=24,
                       samples_per_identity=4, seed=11)
    data = ma.from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples, group_by="group")
    for method in ("recentered", "double-or-nothing"):
        res = ma.audit(data, fmr=1e-2, n_resamples=400, ci_method=method, calibration=False, weightings=("pooled",))
        f = res.intervals.set_index("metric")
        for rate in ("FMR", "FNMR"):
            assert f.loc[f"{rate}:max_min_ratio", "low"] == 1.0 and f.loc[f"{rate}:max_min_difference", "low"] == 0
            assert "held fixed" in f.loc[f"{rate}:max_min_ratio", "note"]
        est, lo, hi = f.loc["FNMR:max_min_difference", ["estimate", "low", "high"]]
        assert lo <= est <= hi


def test_an_interval_that_excludes_its_estimate_is_made_undefined():
    r = iv.IntervalResult(1.022, iv.ConfidenceInterval(1.030, 7.60), "double-or-nothing", 0.95, 0.1, None, None)
    _keep_estimate(r)
    assert math.isnan(r.confidence_interval.low) and "excludes the estimate" in r.note
    ok = iv.IntervalResult(1.0, iv.ConfidenceInterval(1.0, 2.0), "recentered", 0.95, 0.1, None, None)
    _keep_estimate(ok)
    assert ok.confidence_interval == (1.0, 2.0) and ok.note is None
