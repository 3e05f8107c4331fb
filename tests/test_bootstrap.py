"""Bootstrap intervals against explicit recomputation; the recentering does what the paper shows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit.data import from_embeddings
from matchaudit.engine import build_grid, run
from matchaudit.estimators import bootstrap as bs
from matchaudit.auditing.class_passes import v_statistic
from matchaudit.auditing.intervals import compute_intervals
from matchaudit.auditing.options import IntervalOptions
from matchaudit.choices import INTERVAL_METHODS as METHODS
from matchaudit.metrics.evaluate import AuditConfig
from matchaudit.auditing.results_json import intervals_table
from matchaudit.simulation import GroupSpec, VmfPopulation
from tests.engine_reference import make_data, materialise, score_matrix


def test_interval_formulas():
    g = np.random.default_rng(0)
    reps, theta, tv = g.normal(0.3, 0.05, 400), 0.33, 0.31
    r = bs.interval_from_replicates("recentered", theta, reps, tv, 0.9, seed=5)
    assert r.confidence_interval == pytest.approx((theta + np.quantile(reps - tv, 0.05),
                                                   theta + np.quantile(reps - tv, 0.95)))
    assert (r.n_resamples, r.seed, r.level) == (400, 5, 0.9)
    n = bs.interval_from_replicates("naive", theta, reps, None, 0.9)
    assert n.confidence_interval == pytest.approx(tuple(np.quantile(reps, [0.05, 0.95])))
    ga = bs.interval_from_replicates("gaussian", theta, reps, tv, 0.9)
    sd = np.std(reps - tv, ddof=1)
    mid = theta + np.mean(reps - tv)
    assert ga.confidence_interval == pytest.approx((mid - 1.6448536 * sd, mid + 1.6448536 * sd))
    up = bs.interval_from_replicates("vertex", theta, reps, None, 0.95, "less")
    assert up.confidence_interval == pytest.approx((0.0, np.quantile(reps, 0.95)))
    assert bs.normalized_uncertainty(theta, reps, tv) == pytest.approx(sd / theta)


@pytest.mark.parametrize("scheme", [rs.Vertex(3), rs.DoubleOrNothing(4), rs.WithinIdentity(5)], ids=lambda s: s.name)
def test_percentile_interval_equals_explicitly_resampled_data_sets(scheme):
    data = make_data(seed=1)
    B = 6
    c = run(data, scheme, B, grid=build_grid(data, n_cells=16, thresholds=[0.4]), thresholds=[0.4])
    fnmr, fmr, _, _ = bs.rates_at_threshold(c, 0.4)
    ref_fnmr, ref_fmr = [], []
    for b in range(B + 1):
        rows = materialise(data, scheme, b)
        gen = [s for s, genuine, *_ in rows if genuine]
        imp = [s for s, genuine, *_ in rows if not genuine]
        ref_fnmr.append(np.mean(np.array(gen) < 0.4) if gen else np.nan)
        ref_fmr.append(np.mean(np.array(imp) >= 0.4) if imp else np.nan)
    np.testing.assert_allclose(fnmr[:, 0], ref_fnmr)
    np.testing.assert_allclose(fmr[:, 0], ref_fmr)
    method = {"vertex": "vertex", "double-or-nothing": "double-or-nothing", "within-identity": "naive"}[scheme.name]
    r = bs.interval_from_replicates(method, fmr[0, 0], fmr[1:, 0], level=0.8)
    assert r.confidence_interval == pytest.approx(tuple(np.nanquantile(ref_fmr[1:], [0.1, 0.9])))


def test_v_statistic_equals_the_diagonal_keeping_average():
    data = make_data(seed=3)
    c = run(data, rs.WithinIdentity(1), 2, grid=build_grid(data, n_cells=16, thresholds=[0.3]), fmr_targets=[0.2, 0.05],
            thresholds=[0.3])
    v = v_statistic(data, c, [0.3])
    S = score_matrix(data)
    np.fill_diagonal(S, 1.0)  # self-score of cosine
    ident, grp = data.samples.identity, data.identity_group
    for t, got in [(0.3, v.threshold_genuine_accepted[0])] + list(zip(c.target_threshold[0], v.target_genuine_accepted)):
        exp = np.zeros(data.n_groups)
        for k in range(data.n_identities):
            idx = np.flatnonzero(ident == k)
            nk = idx.size
            if nk < 2:
                continue
            rej_v = (S[np.ix_(idx, idx)] < t).sum() / nk**2  # FNMR~_k over all (i, j) incl. i = j
            exp[grp[k]] += (nk * (nk - 1) / 2) * (1 - rej_v)
        np.testing.assert_allclose(got, exp, atol=1e-9)


def test_recentering_on_all_pairs_vmf_data():
    """Naive replicates are centred on the V-statistic, not on the empirical FNMR; the recentered interval is
    centred on the empirical value (paper section 3.2)."""
    pop = VmfPopulation.draw({"all": GroupSpec(60, (20.0, 60.0))}, dim=16, seed=4)
    sim = pop.sample(8, seed=5)
    data = from_embeddings(sim.embeddings, sim.samples.identity.to_numpy())
    t = 0.55
    c = run(data, rs.WithinIdentity(9), 400, grid=build_grid(data, n_cells=256, thresholds=[t]), thresholds=[t])
    fnmr, _, _, _ = bs.rates_at_threshold(c, t)
    theta, reps = fnmr[0, 0], fnmr[1:, 0]
    v = v_statistic(data, c, [t])
    tv = 1 - v.threshold_genuine_accepted[0].sum() / c.genuine_total[0].sum()
    se = reps.std(ddof=1) / np.sqrt(reps.size)
    assert tv == pytest.approx(7 / 8 * theta)  # equal sizes: FNMR~ = (n-1)/n FNMR (no self-pair rejected)
    assert abs(reps.mean() - tv) < 4 * se  # naive replicates centred on the V-statistic ...
    assert theta - reps.mean() > 6 * se  # ... far below the empirical value
    rec = bs.interval_from_replicates("recentered", theta, reps, tv, 0.9)
    naive = bs.interval_from_replicates("naive", theta, reps, None, 0.9)
    mid = np.mean(rec.confidence_interval)
    assert abs(mid - theta) < abs(np.mean(naive.confidence_interval) - theta) / 3
    assert naive.confidence_interval.high < theta or abs(mid - theta) < 0.3 * (rec.confidence_interval.high - mid)


def _walks(g: np.random.Generator, n: int) -> np.ndarray:
    """Curves of 30 points: a Gaussian random walk around 0.2 (neighbouring points strongly correlated)."""
    return g.normal(0, 1, (n, 30)).cumsum(axis=1) * 0.01 + 0.2


def test_sup_t_band_covers_fresh_curves_at_its_level_and_pointwise_does_not():
    """The band is set from 2,000 replicates; its simultaneous coverage is checked on 4,000 fresh curves from the
    same distribution (never the replicates that set it). Tolerance 0.03: Monte-Carlo SD of the coverage is
    sqrt(0.9 x 0.1 / 4000) = 0.005, and the critical value from 2,000 replicates moves it by about 0.01. A pointwise
    band covers every point of a fresh curve far less often (~0.6 here), so a band that is not simultaneous fails."""
    g = np.random.default_rng(2)
    reps, fresh = _walks(g, 2000), _walks(g, 4000)
    est = np.full(30, 0.2)
    lo, hi, c = bs.sup_t_band(est, reps, None, 0.9)
    covered = ((fresh >= lo) & (fresh <= hi)).all(axis=1).mean()
    assert abs(covered - 0.9) < 0.03
    pw = bs.interval_from_replicates("vertex", est, reps, None, 0.9).confidence_interval
    assert ((fresh >= pw.low) & (fresh <= pw.high)).all(axis=1).mean() < 0.8
    assert (hi - lo >= pw.high - pw.low - 1e-12).all()


@pytest.mark.parametrize("method,one_sided", [(m, False) for m in METHODS] + [("recentered", True), ("wilson", True)])
def test_audit_intervals_edge_cases_without_warnings(method, one_sided):
    """A group with a single identity (no same-group impostors, empty in resamples): every method runs without
    NumPy warnings; undefined intervals are NaN with a note; rate bounds lie in [0, 1]; the counts behind
    each fixed-threshold estimate are the exact k/n; intervals.csv keeps them integers."""
    data = make_data(seed=1, groups=(0, 1, 0, 2, 1, 0, 0, 1))  # group "c" = identity 3 only
    S, ident = score_matrix(data), data.samples.identity
    config = AuditConfig(fmr_targets=(1e-1, 1e-2), thresholds=(0.3,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records, bands = compute_intervals(data, config, IntervalOptions(method=method, n_resamples=40, n_cells=64,
                                                                         one_sided=one_sided))
    for r in records:
        low, high = np.asarray(r["low"], float), np.asarray(r["high"], float)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            assert r["note"], r
        if r["metric"] in ("FMR", "FNMR", "AUC", "EER"):
            assert (low[np.isfinite(low)] >= 0).all() and (high[np.isfinite(high)] <= 1).all(), r
    iu = np.triu_indices(S.shape[0], 1)
    same = ident[iu[0]] == ident[iu[1]]
    for r in records:
        if r["kind"] != "threshold" or r["group"] != "all":
            continue
        gen = r["metric"] == "FNMR"
        k = ((S[iu] < 0.3) if gen else (S[iu] >= 0.3))[same == gen].sum()
        assert (r["errors"], r["comparisons"]) == (k, (same == gen).sum())
    fmr_c = [r for r in records if r["kind"] == "threshold" and r["metric"] == "FMR" and r["group"] == "c"]
    assert np.isnan(fmr_c[0]["estimate"]) and fmr_c[0]["note"]
    table = intervals_table(records)
    assert str(table["errors"].dtype) == "Int64" and str(table["comparisons"].dtype) == "Int64"
    for b in bands:
        if b["group"] == "c":  # no same-group impostors: the curve and its band are undefined, and say so
            assert np.isnan(b["estimate"]).all() and np.isnan(b["lower"]).all() and b["note"]
            continue
        assert (b["lower"] >= 0).all() and (b["upper"] <= 1).all() and (b["lower"] <= b["upper"]).all(), b["group"]


def test_normalized_uncertainty_is_infinite_with_an_infinite_replicate():
    """A ratio's replicate over a zero rate is +inf: the intervals keep it, so its spread is unbounded too (it
    used to be dropped, giving a finite spread)."""
    reps = np.array([[1.0, 1.0], [1.2, 1.1], [np.inf, 0.9], [0.8, 1.0]])
    nu = bs.normalized_uncertainty(np.array([1.0, 1.0]), reps)
    assert np.isinf(nu[0]) and nu[1] == pytest.approx(np.std([1.0, 1.1, 0.9, 1.0], ddof=1))
