"""The compressed likelihood of `estimate` (issue #17): distinct values with counts are exact, bins are within a
stated tolerance of the full likelihood, and a binned fit gives the full fit's curves (docs/labelfree.md,
"Likelihood")."""

import math
import warnings

import numpy as np
import pytest

from matchaudit.labelfree import estimate, family, samplers
from matchaudit.labelfree.binned import COUNT_BINS, compress, likelihood_cells
from matchaudit.labelfree.curves import empirical_at_fmr, rates_at
from matchaudit.labelfree.diagnostics import ess
from matchaudit.labelfree.model import GroupModel, Priors
from matchaudit.labelfree.starting_values import initialise
from matchaudit.labelfree import ppc

SAS = family("sas")
NONMATCH = (0.10, 0.07, 0.09, 0.85)


def _scores(rng, n, pi=0.3, mode=0.5):
    y = rng.random(n) < pi
    s = np.where(y, SAS.rvs(rng, n, mode, 0.08, 0.06, 1.1), SAS.rvs(rng, n, *NONMATCH))
    return s, y.astype(float)


def _thetas(model, init, k, rng):
    """``k`` parameter vectors spread like the posterior (its Laplace approximation) and the mode's covariance."""
    mode, cov = samplers.laplace(model.log_density, model.start(init))
    return mode + rng.standard_normal((k, mode.size)) @ np.linalg.cholesky(cov).T, cov


@pytest.mark.parametrize("fam", ["sas", "t", "normal"])
def test_distinct_values_with_counts_are_exactly_the_full_likelihood(fam):
    """Ties (scores on a 0.01 grid: ~120 distinct values for 20,000 scores, some labelled): every per-value term is
    the very same floating-point number as the per-score terms, so the sums agree up to the order of summation."""
    rng = np.random.default_rng(1)
    s, y = _scores(rng, 20_000)
    s = np.round(s, 2)
    lab = np.zeros(s.size, bool)
    lab[:300] = True
    init = initialise(s)
    f, pr = family(fam), Priors.from_init(init)
    full = GroupModel(f, pr, s[~lab], s[lab], y[lab])
    comp, cells = GroupModel.compressed(f, pr, s[~lab], s[lab], y[lab])
    assert cells.exact and cells.size < 200 and cells.counts.sum() == (~lab).sum()
    assert cells.describe()["method"] == "exact: distinct values with counts"
    th, _ = _thetas(comp, init, 6, rng)
    per_value = comp.log_mixture(th)
    per_score = full.log_mixture(th)
    order = np.argsort(s[~lab], kind="stable")
    np.testing.assert_array_equal(np.repeat(per_value, cells.counts.astype(int), axis=1), per_score[:, order])
    for i in range(th.shape[0]):  # exactly rounded sums: equal but for the rounding of count * term
        a = math.fsum(per_score[i])
        b = math.fsum(cells.counts * per_value[i])
        assert abs(a - b) <= 1e-15 * np.abs(per_score[i]).sum()
    np.testing.assert_allclose(comp.log_likelihood(th), full.log_likelihood(th), rtol=1e-13, atol=0)
    np.testing.assert_allclose(comp.log_density(th), full.log_density(th), rtol=1e-13, atol=0)


def test_compression_cells_and_quadrature():
    rng = np.random.default_rng(2)
    s, _ = _scores(rng, 50_000)
    s[:5] = [-40.0, -39.0, 30.0, 31.0, 31.0]  # far outliers do not coarsen the bulk (asinh-scale edges)
    c = compress(s, 1000)
    assert not c.exact and c.size <= 1000 and c.counts.sum() == s.size
    assert np.all(np.diff(c.values) > 0) and np.all(c.values[1:] >= c.cuts) and np.all(c.values[:-1] < c.cuts)
    cell = np.searchsorted(c.cuts, s, side="right")  # every score lies in its cell
    np.testing.assert_array_equal(np.bincount(cell, minlength=c.size), c.counts)
    np.testing.assert_allclose(np.bincount(cell, s, minlength=c.size) / c.counts, c.values, rtol=1e-12, atol=1e-13)
    bulk = (c.values > np.quantile(s, 0.01)) & (c.values < np.quantile(s, 0.99))
    assert np.diff(c.values[bulk]).max() < 0.02 * s.std()
    assert c.counts.max() <= 2.5 * s.size / 1000
    p, w = c.quadrature()  # two points per bin: count, mean, variance, third moment of every bin
    for k in range(4):
        assert math.fsum(w * (p - 0.1) ** k) == pytest.approx(math.fsum((s - 0.1) ** k), rel=1e-9)
    tail = c.counts <= 2  # bins of one or two scores are reproduced exactly
    assert tail.any()
    # the same numbers every time, and distinct values below the cap
    again = compress(s, 1000)
    np.testing.assert_array_equal(again.values, c.values)
    small = compress(np.round(s, 2), COUNT_BINS)
    assert small.exact and small.m2.max() == 0
    assert likelihood_cells(s[:2000]).exact and not likelihood_cells(s).exact


def test_binned_log_likelihood_and_gradient_match_the_full_one():
    """300,000 scores in 1,024 bins (2,048 points). Tolerances, from what the posterior can see: the error of the
    log-likelihood varies by less than 0.01 nats (SD) over draws spread like the posterior, so the binned and
    full posteriors' density ratio is constant to about 1%; and the gradient error, which shifts the posterior
    mean by about cov @ error, shifts it by less than 0.01 posterior SD (Mahalanobis), a fifth of the Monte-Carlo
    error of a posterior mean from 400 effective draws (0.05 SD). Measured: about 1e-4 nats and 1e-3 SD."""
    rng = np.random.default_rng(3)
    s, _ = _scores(rng, 300_000)
    z = (s - np.median(s)) / s.std()
    init = initialise(z)
    pr = Priors.from_init(init)
    full = GroupModel(SAS, pr, z, z[:0], z[:0])
    binned, cells = GroupModel.compressed(SAS, pr, z, z[:0], z[:0])
    assert not cells.exact and binned.scores_u.size <= 2048 and cells.describe()["within_bin_rms"] < 0.01
    th, cov = _thetas(binned, init, 30, rng)
    d = binned.log_likelihood(th) - np.concatenate([full.log_likelihood(t[None]) for t in th])
    assert np.std(d) < 0.01 and np.abs(d - d.mean()).max() < 0.03
    assert abs(d.mean()) < 0.01  # the two-point rule has no second-order bias
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    gb = jax.jit(jax.grad(lambda t: binned.log_likelihood(t, jnp)))
    gf = jax.jit(jax.grad(lambda t: full.log_likelihood(t, jnp)))
    for t in th[:8]:
        e = np.asarray(gb(jnp.asarray(t))) - np.asarray(gf(jnp.asarray(t)))
        assert np.sqrt(e @ cov @ e) < 0.01
    # the NUTS sampler evaluates the same binned density
    np.testing.assert_allclose(np.asarray(binned.log_density(jnp.asarray(th), jnp)), binned.log_density(th), rtol=1e-10)


def test_counts_per_entry_equal_the_pairs_they_stand_for():
    """Counted rates on distinct scores with (pairs, matches) per entry equal the per-pair rates exactly."""
    rng = np.random.default_rng(4)
    s = np.round(rng.normal(size=3000), 1)
    y = (rng.random(3000) < 0.4 + 0.1 * (s > 0)).astype(float)
    u, inv = np.unique(s, return_inverse=True)
    cnt = np.bincount(inv).astype(float)
    m = np.bincount(inv, y)[None]
    a = np.array([1e-3, 1e-2, 0.1, 0.5])
    for rule in (">=", ">"):
        for x, x2 in zip(empirical_at_fmr(s, y[None], a, rule), empirical_at_fmr(u, m, a, rule, counts=cnt)):
            np.testing.assert_allclose(x2, x, rtol=1e-12)
        t = np.array([0.3])
        np.testing.assert_allclose(rates_at(u, m, t, rule, counts=cnt), rates_at(s, y[None], t, rule), rtol=1e-12)


def _fit(s, points, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimate(s, np.zeros(s.size), fmr=(1e-1, 1e-2), family="sas", sampler="numpy", seed=2, likelihood_points=points,
                        warmup=1000, draws=1500, finite_draws=200, ppc_replicates=10, **kw)


def _fnmr_draws(est, alpha):
    p = est.groups[0].params
    t = SAS.isf(alpha, p["mu0"], p["s0L"], p["s0R"], p["delta0"])
    return SAS.cdf(t, p["mu1"], p["s1L"], p["s1R"], p["delta1"]).reshape(est.chains, -1)


def test_binned_fit_gives_the_full_fits_curves():
    """10,000 scores: the full likelihood (every distinct score) and the default (1,024 bins, 2,048 points) give the same
    FNMR@FMR and curve within Monte-Carlo error: medians within 3 SE of their difference (SE from each fit's
    ESS of the FNMR draws), band ends likewise, and the result says how its likelihood was computed."""
    rng = np.random.default_rng(5)
    s, _ = _scores(rng, 10_000)
    full, binned = _fit(s, None), _fit(s, 2048)
    assert full.groups[0].likelihood["method"].startswith("exact") and full.groups[0].likelihood["cells"] == 10_000
    lik = binned.to_dict()["groups"][0]["likelihood"]
    assert lik["method"].startswith("binned") and lik["cells"] <= 1024 and lik["scores"] == 10_000
    assert "likelihood binned" in str(binned) and "likelihood exact" in str(full)
    for ea, eb in zip(full.results["population"]["fnmr_at_fmr"], binned.results["population"]["fnmr_at_fmr"]):
        a = ea["target"]
        assert eb["target"] == a
        se = np.hypot(*[x.std() / np.sqrt(ess(x)) for x in (_fnmr_draws(full, a), _fnmr_draws(binned, a))])
        for k in ("median", "lower", "upper"):
            assert abs(ea[k] - eb[k]) < 3 * 1.6 * se, (a, k, ea[k], eb[k], se)  # band ends: ~1.6 x the median's SE
    ca, cb = full.results["population"]["curve"]["0.0"], binned.results["population"]["curve"]["0.0"]
    width = np.asarray(ca["upper"]) - np.asarray(ca["lower"])
    assert np.max(np.abs(np.asarray(ca["median"]) - np.asarray(cb["median"])) / width) < 0.1


def test_large_group_is_fast_and_deterministic():
    """120,000 distinct scores: binned likelihood, finite-sample counts and PPC on at most COUNT_BINS cells
    (replicates drawn as counts per cell), the same numbers twice."""
    rng = np.random.default_rng(6)
    s, y = _scores(rng, 120_000)
    kw = {"warmup": 800, "draws": 600, "finite_draws": 50, "ppc_replicates": 5, "fmr": (1e-2,), "family": "sas"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = estimate(s, np.zeros(s.size), sampler="numpy", seed=1, **kw)
        b = estimate(s, np.zeros(s.size), sampler="numpy", seed=1, **kw)
    assert a.to_dict() == b.to_dict()
    g = a.groups[0]
    assert g.likelihood["cells"] <= 1024 and g.counted_on["cells"] <= COUNT_BINS and not g.counted_on["method"].startswith("exact")
    fin = a.results["finite-sample"]["fnmr_at_fmr"][0]
    _, _, emp = empirical_at_fmr(s, y[None], np.array([1e-2]))
    assert fin["lower"] - 0.005 <= emp[0, 0] <= fin["upper"] + 0.005
    assert 0.0 <= a.ppc["0.0"]["ks"] < 0.02


def test_ppc_replicates_by_cell_counts_match_simulated_pairs(monkeypatch):
    """Above RAW_REPLICATES scores a replicate is drawn as counts per cell: the same distribution of the KS
    distance as simulating the pairs and counting them into the cells."""
    rng = np.random.default_rng(7)
    s, _ = _scores(rng, 20_000)
    p = {"mu0": np.full(40, 0.1), "s0L": np.full(40, 0.07), "s0R": np.full(40, 0.09), "delta0": np.full(40, 0.85),
         "mu1": np.full(40, 0.5), "s1L": np.full(40, 0.08), "s1R": np.full(40, 0.06), "delta1": np.full(40, 1.1),
         "pi": np.full(40, 0.3)}
    raw = ppc.check(SAS, s, p, np.random.default_rng(0), n_rep=40)
    monkeypatch.setattr(ppc, "RAW_REPLICATES", 0)
    cells = ppc.check(SAS, s, p, np.random.default_rng(0), n_rep=40)
    assert raw["ks"] == cells["ks"]
    assert 0.2 < raw["ks_pvalue"] < 1.0 and 0.2 < cells["ks_pvalue"] < 1.0  # data from the model fit it
    np.testing.assert_allclose(cells["kde_replicates"]["median"], raw["kde_replicates"]["median"],
                               atol=0.05 * raw["kde_replicates"]["median"].max())
