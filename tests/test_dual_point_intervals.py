"""Rates at FNMR targets on every replicate (estimators.dual_point): brute force on the weighted comparisons
under both decision rules, the plug-in equal to the exact audit, and the audit's intervals and group tests there."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import matchaudit as ma
from matchaudit.auditing.matching_passes import matching_all_groups_test
from matchaudit.estimators.dual_point import FMR, FNMR, dual_rates
from matchaudit.estimators.score_views import Runner, materialise
from matchaudit.metrics import calibration as cal


def _data(listed: bool = False, seed: int = 5) -> ma.MatchData:
    rng = np.random.default_rng(seed)
    n_id = 30
    sizes = rng.integers(2, 5, n_id)
    ident = np.repeat(np.arange(n_id), sizes)
    centre = rng.normal(size=(n_id, 5))
    emb = centre[ident] + 0.9 * rng.normal(size=(ident.size, 5))
    emb = np.round(emb, 1)  # ties among scores
    attrs = pd.DataFrame({"g": np.where(ident % 3 == 0, "A", "B")})
    pairs = None
    if listed:
        i, j = np.triu_indices(ident.size, 1)
        keep = (ident[i] == ident[j]) | (rng.random(i.size) < 0.4)
        pairs = np.stack([i[keep], j[keep]], axis=1).astype(str)
    return ma.from_embeddings(emb, ident, attributes=attrs, group_by="g", pairs=pairs)


def _weights(views, U):
    """Per-comparison weights of one replicate (U: unit weights), as the score views define them."""
    w = np.where(views.kind == cal.SINGLE, U[views.u], U[views.u] * U[views.v])
    return np.where(views.kind == cal.SELF, U[views.u] * (U[views.u] - 1) / 2, w)


def _brute(views, w, beta, rule):
    """The audit's FNMR-target rule written out: the highest positive-weight score (or -inf) whose weighted FNMR
    over all genuine comparisons is at most beta; then each view's rates there."""
    s, gen = views.score, views.genuine
    G = w[gen].sum()
    cand = np.concatenate([[-np.inf], np.unique(s[w > 0])])
    fnmr = np.array([w[gen & ((s < t) if rule == ">=" else (s <= t))].sum() / G for t in cand])
    t = cand[np.flatnonzero(fnmr <= beta).max()]
    acc = s >= t if rule == ">=" else s > t
    out = []
    for k in range(len(views.names)):
        inv = np.ones(views.n, bool) if k == 0 else views.view == k
        imp = views.reference if k == 0 else inv & ~gen
        out.append((w[imp & acc].sum() / w[imp].sum(), w[inv & gen & ~acc].sum() / w[inv & gen].sum()))
    return np.array(out)


@pytest.mark.parametrize("listed", [False, True])
@pytest.mark.parametrize("method", ["double-or-nothing", "vertex", "recentered"])
def test_replicates_against_brute_force(listed, method):
    data = _data(listed)
    views = materialise(data, method, threshold_impostors="same-group" if listed else "all")
    betas = np.array([0.0, 0.05, 0.2, 0.5])
    run = Runner(views, fnmr_targets=betas)
    U = run.weights(method, np.arange(1, 12), seed=3)
    got = dual_rates(views, betas, U)
    for r in range(U.shape[0]):
        w = _weights(views, U[r].astype(float))
        for t, beta in enumerate(betas):
            for rule in (">=", ">"):
                np.testing.assert_allclose(got[r, :, t], _brute(views, w, beta, rule), rtol=1e-13, atol=0)


@pytest.mark.parametrize("listed", [False, True])
@pytest.mark.parametrize("method", ["double-or-nothing", "vertex", "recentered"])
def test_the_pass_down_from_the_top_gives_the_same_bits(listed, method):
    """With the calibration sweep's totals (integer weights, every impostor a threshold impostor) the pass stops at
    the cut-offs and forms the weight below each as total - above: the full pass's numbers to the bit, NaN included
    (beta 0.99 and the empty replicates of a group), and the totals are really used."""
    data = _data(listed)
    views = materialise(data, method)
    assert np.array_equal(views.reference, ~views.genuine)
    betas = np.array([0.0, 0.05, 0.2, 0.5, 0.99])
    run = Runner(views, fnmr_targets=betas)
    U = run.weights(method, np.arange(1, 41), seed=4)
    full = dual_rates(views, betas, U)
    summaries = run.run(U)
    np.testing.assert_array_equal(dual_rates(views, betas, U, summaries=summaries), full)
    off = summaries.copy()
    off[..., cal.W_NON] += 1
    assert not np.array_equal(dual_rates(views, betas, U, summaries=off), full, equal_nan=True)
    part = U + 0.25  # not whole weights: the full pass, whatever the totals say
    np.testing.assert_array_equal(dual_rates(views, betas, part, summaries=off), dual_rates(views, betas, part))


@pytest.mark.parametrize("method", ["double-or-nothing", "recentered"])
def test_the_lane_width_changes_no_bit(method, monkeypatch):
    """Replicates are swept in blocks of lanes whose width sets only the speed (calibration.lane_width): blocks of
    1, 3, 8 and 64 lanes give the same summaries (Cllr, minCllr, DCFs, moments), rates at FNMR targets, plug-in
    and V-statistic version (per-comparison weights), NaN included, padding lanes dropped."""
    views = materialise(_data(), method)
    betas = np.array([0.05, 0.5, 0.99])
    run = Runner(views, ops=[(0.01, 1, 1), (0.5, 1, 1)], llr=True, fnmr_targets=betas)
    U = run.weights(method, np.arange(1, 71), seed=6)  # 70 rows: a full block of 64 and a padded one
    got = {}
    for width in (1, 3, 8, 64):
        monkeypatch.setattr(cal, "lane_width", lambda rows, stack, w=width: w)
        got[width] = (run.run(U), dual_rates(views, betas, U), run.plug_in(), run.v_statistic())
    assert got[1][0].shape == (70, 3, cal.N_FIXED + 4)
    assert np.isnan(got[1][1]).any() == (method == "double-or-nothing")  # groups left without weight: NaN rates
    for width in (3, 8, 64):
        for a, b in zip(got[1], got[width]):
            np.testing.assert_array_equal(a, b)


def test_lane_width_gives_every_thread_a_block_up_to_64_lanes_and_narrows_for_large_stacks():
    fits = cal.PAV_BYTES // (16 * cal.MAX_LANES)  # PAV stack entries per lane that 64 lanes may hold
    width = lambda rows, stack=100, threads=2: cal.lane_width(rows, stack, threads)  # noqa: E731
    assert width(1) == width(1, threads=1) == width(1, 10 * fits) == 1  # a plug-in: one lane, not 8 (7 of zeros)
    assert width(7) == 7 and width(8) == width(16) == cal.LANES == 8  # a block of 7; one, then two blocks of 8
    assert width(17) == width(32) == 16 and width(100) == 56 and width(128) == 64 == cal.MAX_LANES
    assert width(128, threads=16) == 8 and width(128, threads=4) == 32 and width(10_000, threads=16) == 64
    assert width(1000, fits) == 64 and width(1000, fits + 1) == 56 and width(1000, 10 * fits) == 8


def test_threshold_impostors_of_one_kind_keep_the_full_pass():
    """View 0's impostor total is then not the sweep's (all impostors): the totals are not used."""
    data = _data()
    views = materialise(data, "vertex", threshold_impostors="same-group")
    assert not np.array_equal(views.reference, ~views.genuine)
    betas = np.array([0.05, 0.2])
    run = Runner(views, fnmr_targets=betas)
    U = run.weights("vertex", np.arange(1, 17), seed=2)
    off = run.run(U)
    off[..., cal.W_NON] += 1
    np.testing.assert_array_equal(dual_rates(views, betas, U, summaries=off), dual_rates(views, betas, U))


@pytest.mark.parametrize("rule", [">=", ">"])
def test_plug_in_is_the_audit(rule):
    data = _data()
    betas = (0.02, 0.1, 0.3)
    a = ma.audit(data, fmr=(), fnmr=betas, rule=rule, measures=ma.MeasureOptions(weightings=("pooled",)),
                 intervals=False)
    views = materialise(data, "double-or-nothing")
    est = Runner(views, fnmr_targets=betas).plug_in(dual=True)
    for t, beta in enumerate(betas):
        op = a.at_fnmr(beta)
        for k, g in enumerate(views.names):
            assert est[k, t, FMR] == op.loc[g, "fmr"]
            assert est[k, t, FNMR] == op.loc[g, "fnmr"]


def test_audit_intervals_and_tests_at_fnmr_targets():
    data = _data()
    a = ma.audit(data, fmr=0.1, fnmr=(0.0, 0.05, 0.2), measures=ma.MeasureOptions(weightings=("pooled",)),
                 intervals=ma.IntervalOptions(method="double-or-nothing", n_resamples=200, seed=0),
                 tests=ma.TestOptions(n_resamples=99, seed=0))
    iv = a.intervals
    at = iv[iv.kind == "fnmr_target"]
    assert set(at.metric) == {"FMR", "FNMR"}
    assert set(at.target) == {0.0, 0.05, 0.2}
    fmr_all = at[(at.metric == "FMR") & (at.group == "all")]
    assert len(fmr_all) == 3 and (fmr_all.low <= fmr_all.estimate).all() and (fmr_all.estimate <= fmr_all.high).all()
    assert (at.high > at.low).all()  # a rate without errors gets its zero-error bound, not [0, 0]
    zero = at[at.errors == 0]
    assert len(zero) and (zero.low == 0).all() and zero.note.str.contains("zero").all()
    op = a.at_fnmr(0.05)
    assert np.isfinite(op[["fmr_low", "fmr_high"]].to_numpy()).all()
    assert (op.loc["A", "fmr_low"], op.loc["A", "fmr_high"]) == tuple(
        at[(at.metric == "FMR") & (at.group == "A") & (at.target == 0.05)][["low", "high"]].iloc[0])
    tests = a.tests
    dual = tests[tests.kind == "fnmr_target"]
    assert set(dual.metric) == {"fmr", "fnmr"} and set(dual.target) == {0.0, 0.05, 0.2}
    # the threshold is label-invariant: the tests are the fixed-threshold tests at the audit's threshold there
    t = float(a.at_fnmr(0.05).loc["all", "threshold"])
    fixed = matching_all_groups_test(data, "fmr", threshold=t, n_resamples=99, seed=0, studentize="permutation-sd")
    row = dual[(dual.metric == "fmr") & (dual.target == 0.05)].iloc[0]
    assert row.pvalue == fixed.rows[0]["pvalue"]
