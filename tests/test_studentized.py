"""Bootstrap-t for rates at a fixed threshold under identity bootstraps (#14 item 5): exact replicates, the
clustered standard error, the bounds, the fallback, and coverage in the regime where the percentile failed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from matchaudit import resampling as rs
from matchaudit.data import from_embeddings
from matchaudit.engine import build_grid, identity_counts, run
from matchaudit.estimators import bootstrap as bs
from matchaudit.studies import coverage as cv
from matchaudit.estimators import intervals as iv
from matchaudit.estimators import studentized as st
from matchaudit.engine.weights import layout_of


def _grouped_data():
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 6, size=30)
    ident = np.repeat(np.arange(sizes.size), sizes)
    emb = rng.normal(size=(ident.size, 8)) + 1.3 * rng.normal(size=(sizes.size, 8))[ident]
    groups = np.where(np.arange(sizes.size) < 12, "a", "b")[ident]
    return from_embeddings(emb.astype(np.float32), ident, attributes=pd.DataFrame({"g": groups}), group_by="g")


@pytest.mark.parametrize("method", st.STUDENTIZED)
def test_replicates_equal_the_engine(method):
    """p* recomputed from the scheme's identity weights equals the engine's replicate FNMR, per view (the same
    counts: the engine forms 1 - accepted/total, so rates agree to the last bits)."""
    data = _grouped_data()
    t = 0.45
    scheme = rs.SCHEMES[bs.SCHEME_OF[method]](11)
    c = run(data, scheme, 50, grid=build_grid(data, thresholds=[t]), thresholds=[t])
    fnmr = bs.rates_at_threshold(c, t)[0]
    ic = identity_counts(data, [t])
    for j in range(3):
        inside = np.ones(ic.g.size, bool) if j == 0 else ic.group == j - 1
        _, _, reps = st.rate_studentization(scheme, data, ic.e[0] * inside, ic.g * inside, 50, chunk=7)
        np.testing.assert_allclose(reps, fnmr[1:, j], rtol=1e-13, atol=0)


@pytest.mark.parametrize("method", st.STUDENTIZED)
@pytest.mark.parametrize("rule", [">=", ">"])
def test_target_replicates_equal_the_engine_at_each_replicates_threshold(method, rule):
    """FNMR@FMR (#43 item 4): p* at each replicate's own exact threshold, recounted per identity from the genuine
    scores in threshold order, equals the engine's replicate per view; se and se* equal the clustered formula
    brute-forced on identity k's errors at that threshold."""
    from matchaudit.metrics.tally import genuine_scores

    data = _grouped_data()
    scheme = rs.SCHEMES[bs.SCHEME_OF[method]](5)
    c = run(data, scheme, 60, grid=build_grid(data, rule=rule), fmr_targets=[0.05])
    engine = bs.fnmr_at_targets(c)[1:, 0, :]
    inside = np.stack([np.ones(data.n_identities)] + [data.identity_group == g for g in range(2)]).astype(float)
    gen = genuine_scores(data)
    t_hat = float(c.target_threshold[0, 0])
    se, t_star, reps = st.target_studentization(scheme, data, gen, t_hat, c.target_threshold[1:, 0], rule, inside,
                                                chunk=7)
    np.testing.assert_allclose(reps, engine, rtol=1e-12, atol=1e-15)
    err = (gen.score < t_hat) if rule == ">=" else (gen.score <= t_hat)
    e = np.bincount(gen.identity[err], minlength=data.n_identities).astype(float)
    g = np.bincount(gen.identity, minlength=data.n_identities).astype(float)
    assert se[0] == pytest.approx(np.sqrt(iv.fnmr_variance(g, e)), rel=1e-12)
    b = 17  # one replicate brute-forced: its weights, its threshold
    w = scheme.identity_weights(np.array([b + 1]), layout_of(data))[0][0].astype(float)
    tb = c.target_threshold[b + 1, 0]
    eb = np.bincount(gen.identity[(gen.score < tb) if rule == ">=" else (gen.score <= tb)],
                     minlength=data.n_identities).astype(float)
    pb = (w * eb).sum() / (w * g).sum()
    vb = (w * (eb - pb * g) ** 2).sum() / (w * g).sum() ** 2
    assert t_star[b, 0] == pytest.approx((pb - (e.sum() / g.sum())) / np.sqrt(vb), rel=1e-9)


def test_clustered_se_brute_force():
    """With unit weights: the corrected Wilson variance sum_k (e_k - p g_k)^2 / (sum g)^2 (identities without
    comparisons add nothing); integer weights act as copies of identities; several rates at once."""
    e, g = np.array([0, 2, 1, 0, 5.0]), np.array([3, 6, 6, 0, 10.0])
    p, v = iv.weighted_fnmr_variance(g, e, np.ones((1, 5)))
    ref = sum((ei - 8 / 25 * gi) ** 2 for ei, gi in zip(e, g)) / 25**2
    assert p[0] == pytest.approx(8 / 25) and v[0] == pytest.approx(ref, rel=1e-12)
    assert v[0] == pytest.approx(iv.fnmr_variance(g, e), rel=1e-12)
    w = np.array([[2, 0, 1, 3, 1]])
    pr, vr = iv.weighted_fnmr_variance(g, e, w)
    copies = np.repeat(np.arange(5), w[0])
    assert pr[0] == pytest.approx((0 + 1 + 5) / (6 + 6 + 10))
    assert vr[0] == pytest.approx(iv.fnmr_variance(g[copies], e[copies]), rel=1e-12)
    pm, vm = iv.weighted_fnmr_variance(np.stack([g, g]), np.stack([e, 2 * e]), w)
    assert pm.shape == (1, 2) and pm[0, 0] == pr[0] and pm[0, 1] == pytest.approx(2 * pr[0])


def test_bounds_are_the_bootstrap_t_ones():
    """theta - q(t*, 0.975) se and theta - q(t*, 0.025) se, with the estimate's own se; one-sided: theta -
    q(t*, 0.05) se."""
    rng = np.random.default_rng(0)
    theta, se = 0.1, 0.02
    reps = theta + 0.02 * rng.standard_normal(400)
    rse = 0.02 * np.exp(0.2 * rng.standard_normal(400))
    t = st.studentize(theta, reps, rse)
    r = bs.interval_from_replicates("vertex", theta, reps, level=0.95, bounds=(0.0, 1.0), studentized=(se, t))
    lo, hi = r.confidence_interval
    assert lo == pytest.approx(theta - np.quantile(t, 0.975) * se, rel=1e-12)
    assert hi == pytest.approx(theta - np.quantile(t, 0.025) * se, rel=1e-12)
    assert "bootstrap-t" in r.note
    one = bs.interval_from_replicates("vertex", theta, reps, level=0.95, alternative="less", bounds=(0.0, 1.0),
                                      studentized=(se, t))
    assert one.confidence_interval.high == pytest.approx(theta - np.quantile(t, 0.05) * se, rel=1e-12)


def test_resamples_without_errors_fall_back_to_percentile():
    """A resample with no error has se* = 0 and t* = -inf; beyond the tail share the bootstrap-t is undefined:
    the percentile interval, and the note says so."""
    theta = 0.01
    reps = np.r_[np.zeros(30), np.full(70, 0.012)]
    t = st.studentize(theta, reps, np.r_[np.zeros(30), np.full(70, 0.004)])
    assert np.isneginf(t[:30]).all()
    r = bs.interval_from_replicates("double-or-nothing", theta, reps, level=0.9, bounds=(0.0, 1.0),
                                    studentized=(0.004, t))
    assert "percentile" in r.note
    assert r.confidence_interval.low == 0.0 and r.confidence_interval.high == pytest.approx(0.012)


@pytest.mark.slow
def test_identity_bootstrap_coverage_at_a_low_error_fixed_threshold():
    """#14 item 5's regime (new population per data set; vMF d = 64, kappa ~ U[50, 200]; 100 identities x 4
    samples; FNMR 3.6% at the threshold of FMR 1e-2): percentile intervals covered 0.920 (vertex) and 0.903
    (double-or-nothing) at nominal 0.95 over 300 data sets, bootstrap-t 0.953 / 0.967. Here 200 data sets,
    B = 100; 3 binomial SEs: 0.046."""
    cfg = cv.CoverageConfig(n_datasets=200, n_identities=100, samples=4, dim=64, kappa=(50.0, 200.0),
                            n_resamples=100, fmr_targets=(1e-2,), levels=(0.95,), identities="fresh",
                            roc_methods=(), fixed_methods=st.STUDENTIZED, n_cells=512)
    res = cv.run_coverage(cfg)
    rows = {r["method"]: r["coverage"] for r in res.rows if r["metric"] == "FNMR"}
    tol = cv.coverage_tolerance(0.95, 200)
    assert min(rows.values()) >= 0.95 - tol, rows
