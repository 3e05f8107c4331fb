"""Fairness intervals that reach parity (#19 item 3, #43 item 1): each measure's interval is its range over a box
of the groups' rate intervals that hold simultaneously (estimators/fairness_projection.py). Percentile intervals
of the measures' replicates could not contain parity (every replicate re-picks its extremes): 0-4 of 60 with
identical groups. Checked here: the box's extremes against brute force, the box's simultaneous level, and the
audit's intervals on groups from one law."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.estimators import fairness_projection as fp
from matchaudit.metrics import fairness
from matchaudit.simulation import GroupSpec, simulate_vmf


def _brute(low: np.ndarray, high: np.ndarray, rng: np.random.Generator, n: int = 20000) -> dict[str, np.ndarray]:
    """Every measure on the box's corners, a dense random sample inside it and the clip path on a fine grid."""
    corners = np.array([np.where(c, high, low) for c in itertools.product((False, True), repeat=low.size)])
    inside = low + (high - low) * rng.random((n, low.size))
    c = np.geomspace(low.min(), high.max(), 200_001)
    path = np.clip(c[:, None], low, high)
    return fairness.summary_measures(np.concatenate([corners, inside, path]))


@pytest.mark.parametrize("m", [2, 3, 5])
def test_measure_bounds_are_the_boxes_exact_extremes(m):
    """The minimum over the box is on the clip path at an interval end; the maximum at a corner: no point of a
    dense sample lies outside, and the bounds are attained (to the grid's resolution)."""
    rng = np.random.default_rng(m)
    for _ in range(30):
        low = rng.uniform(0.001, 0.2, m)
        high = low + rng.uniform(0.0, 0.15, m)
        bounds = fp.measure_bounds(low, high)
        vals = _brute(low, high, rng)
        for name, (lo, hi) in bounds.items():
            v = vals[name]
            assert v.min() >= lo - 1e-12 and v.max() <= hi + 1e-12, name
            assert v.max() == pytest.approx(hi, rel=1e-9), name  # the corners are in the sample
            assert v.min() == pytest.approx(lo, rel=1e-3, abs=1e-9), name


def test_overlapping_intervals_reach_parity_and_apart_ones_do_not():
    low, high = np.array([0.01, 0.02, 0.03]), np.array([0.05, 0.04, 0.06])
    for name, (lo, _) in fp.measure_bounds(low, high).items():
        assert lo == pytest.approx(fairness.PARITY[name], abs=1e-12), name
    apart = fp.measure_bounds(np.array([0.01, 0.05]), np.array([0.02, 0.06]))
    assert apart["max_min_difference"][0] == pytest.approx(0.03)
    assert apart["max_min_ratio"][0] == pytest.approx(2.5)


def test_zero_lower_ends_make_ratios_unbounded_above():
    bounds = fp.measure_bounds(np.array([0.0, 0.01]), np.array([0.02, 0.03]))
    for name in ("max_min_ratio", "max_geomean_ratio", "log_geomean_sum"):
        assert bounds[name] == (fairness.PARITY[name], math.inf) or bounds[name][1] == math.inf, name
    assert bounds["max_min_difference"] == pytest.approx((0.0, 0.03))


def test_more_than_exhaustive_groups_search_corners_well():
    """Beyond EXHAUSTIVE_GROUPS the corner search is local; on 16 groups it finds the exhaustive maximum."""
    rng = np.random.default_rng(7)
    m = fp.EXHAUSTIVE_GROUPS + 2
    low = rng.uniform(0.01, 0.1, m)
    high = low + rng.uniform(0.0, 0.05, m)
    corners = np.array([np.where(c, high, low) for c in itertools.product((False, True), repeat=m)])
    for name, fn in (("gini", fairness.gini), ("log_geomean_sum", fairness.log_geomean_sum)):
        assert fp.measure_bounds(low, high)[name][1] == pytest.approx(fn(corners).max(), rel=1e-3), name


def test_combined_bounds_contain_the_combined_measures_of_every_point():
    rng = np.random.default_rng(3)
    lows = rng.uniform(0.01, 0.1, (2, 4))
    highs = lows + rng.uniform(0, 0.05, (2, 4))
    parts = [fp.measure_bounds(lows[k], highs[k]) for k in (0, 1)]
    bounds = fp.combined_bounds(*parts)
    pts = lows[:, None, :] + (highs - lows)[:, None, :] * rng.random((2, 5000, 4))
    vals = fairness.combined_measures(pts[0], pts[1])
    for name, (lo, hi) in bounds.items():
        assert vals[name].min() >= lo - 1e-12 and vals[name].max() <= hi + 1e-12, name


def test_the_box_holds_the_replicates_together_at_its_level():
    """Independent groups: every group's percentile level is near Sidak's 0.95^(1/m), between the single group's
    and Bonferroni's, and the share of replicates inside the whole box is the level."""
    rng = np.random.default_rng(0)
    m, level = 5, 0.95
    reps = rng.normal(size=(4000, 1, m))
    box = fp.simultaneous_box(reps, level)
    inside = ((reps[:, 0] >= box.low[0]) & (reps[:, 0] <= box.high[0])).all(axis=1).mean()
    assert level <= inside <= level + 0.005
    assert box.group_level[0] == pytest.approx(level ** (1 / m), abs=0.0015)  # Sidak's, for independent groups
    assert level < box.group_level[0] <= 1 - 0.05 / m
    same = fp.simultaneous_box(np.repeat(reps[:, :, :1], m, axis=2), level)  # one group copied: no multiplicity
    assert same.group_level[0] == pytest.approx(level, abs=1e-6)


def test_a_group_without_errors_takes_its_floor_as_upper_end():
    reps = np.zeros((200, 1, 2))
    reps[:, 0, 1] = np.random.default_rng(1).uniform(0.01, 0.02, 200)
    box = fp.simultaneous_box(reps, 0.95, floors=np.array([[0.03, 0.0]]))
    assert box.high[0, 0] == 0.03 and box.low[0, 0] == 0.0


def test_log_geomean_sum_is_infinite_with_a_zero_rate():
    assert fairness.log_geomean_sum(np.array([0.0, 0.1])) == math.inf
    assert math.isnan(fairness.log_geomean_sum(np.array([0.0, 0.0])))


def _audit(groups: int, identities: int, samples: int, data_seed: int, fmr=(1e-2,), **interval_options) -> ma.Audit:
    sim = simulate_vmf({chr(65 + g): GroupSpec(identities, (20, 40)) for g in range(groups)}, dim=24,
                       samples_per_identity=samples, seed=data_seed)
    data = ma.from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples, group_by="group")
    return ma.audit(data, fmr=fmr, measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                    intervals=ma.IntervalOptions(**interval_options))


def test_two_groups_from_one_population_get_intervals_that_reach_parity():
    for method in ("recentered", "double-or-nothing"):
        res = _audit(2, 60, 4, 11, n_resamples=400, method=method)
        f = res.intervals.set_index("metric")
        for rate in ("FMR", "FNMR"):
            assert f.loc[f"{rate}:max_min_ratio", "low"] == 1.0 and f.loc[f"{rate}:max_min_difference", "low"] == 0
            assert f.loc[f"{rate}:gini", "low"] == 0 and f.loc[f"{rate}:max_geomean_ratio", "low"] == 1.0
            assert "simultaneous projection" in f.loc[f"{rate}:gini", "note"]
        est, lo, hi = f.loc["FNMR:max_min_difference", ["estimate", "low", "high"]]
        assert lo <= est <= hi


@pytest.mark.slow
def test_groups_from_one_law_get_parity_in_their_intervals():
    """12 data sets of 4 identical groups: every measure's default interval contains its parity value in at least
    11 (the percentile intervals of the measures' replicates did in 0-4 of 60, #43)."""
    covered: dict[str, int] = {}
    for d in range(12):
        f = _audit(4, 40, 3, 100 + d, fmr=(1e-2,), n_resamples=500, seed=d).intervals
        f = f[f.metric.str.contains(":")]
        for r in f.itertuples():
            parity = fairness.PARITY[r.metric.split(":")[1]]
            covered[r.metric] = covered.get(r.metric, 0) + int(r.low <= parity <= r.high)
            assert r.excludes_parity == (not r.low <= parity <= r.high)
    assert len(covered) == 13 and min(covered.values()) >= 11, covered


def test_every_group_without_errors_is_no_certainty():
    """All groups at 0 FNMR errors: the difference was '0 [0, 0]' and the NaN ratio '[1, 1]' (#43): now the
    difference's interval reaches the groups' zero-error bounds, and an undefined ratio has no interval."""
    rng = np.random.default_rng(3)
    rows, emb = [], []
    for k in range(60):
        c = rng.normal(size=16)
        c /= np.linalg.norm(c)
        for _ in range(3):
            e = c + rng.normal(scale=0.01, size=16)
            emb.append(e)
            rows.append((k, "AB"[k % 2]))
    ids, groups = zip(*rows)
    data = ma.from_embeddings(np.array(emb), np.array(ids), attributes={"group": np.array(groups)}, group_by="group")
    f = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False, weightings=("pooled",)),
                 intervals=ma.IntervalOptions(n_resamples=300)).intervals
    f = f.set_index("metric")
    lo, hi = f.loc["FNMR:max_min_difference", ["low", "high"]]
    assert lo == 0 and hi > 0.02
    assert math.isnan(f.loc["FNMR:max_min_ratio", "estimate"]) and math.isnan(f.loc["FNMR:max_min_ratio", "low"])
    assert "undefined estimate" in f.loc["FNMR:max_min_ratio", "note"]
