"""End-to-end `estimate` (reduced simulation studies; the full ones are in bench/, tables in docs/labelfree.md)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from matchaudit.errors import InputError
from matchaudit.labelfree import NotConverged, estimate, family
from matchaudit.labelfree import diagnostics, samplers
from matchaudit.labelfree.calibration import bayesian_calibration
from matchaudit.labelfree.curves import empirical_at_fmr

SAS = family("sas")
NONMATCH = (0.10, 0.07, 0.09, 0.85)
FAST = {"sampler": "numpy", "warmup": 800, "draws": 1000, "finite_draws": 200, "ppc_replicates": 10, "family": "sas"}


def _group(rng, n, pi, match_mode):
    y = (rng.random(n) < pi).astype(float)
    s = np.where(y == 1, SAS.rvs(rng, n, match_mode, 0.08, 0.06, 1.1), SAS.rvs(rng, n, *NONMATCH))
    return s, y


def _truth(match_mode, alpha):
    return float(SAS.cdf(SAS.isf(alpha, *NONMATCH), match_mode, 0.08, 0.06, 1.1))


@pytest.fixture(scope="module")
def two_groups():
    rng = np.random.default_rng(11)
    (sa, ya), (sb, yb) = _group(rng, 1500, 0.5, 0.55), _group(rng, 1500, 0.5, 0.42)
    s, y, g = np.r_[sa, sb], np.r_[ya, yb], np.array(["a"] * 1500 + ["b"] * 1500)
    with pytest.warns(UserWarning):
        est = estimate(s, g, fmr=(1e-2, 1e-1), seed=3, **FAST)
    return s, y, g, est


def test_bands_cover_truth_and_rank_groups(two_groups):
    s, y, g, est = two_groups
    by = {(e["group"], e["target"]): e for e in est.results["population"]["fnmr_at_fmr"]}
    for grp, mode in (("a", 0.55), ("b", 0.42)):
        e = by[(grp, 1e-2)]
        assert e["lower"] <= _truth(mode, 1e-2) <= e["upper"]
    fin = {(e["group"], e["target"]): e for e in est.results["finite-sample"]["fnmr_at_fmr"]}
    for grp in "ab":
        _, _, emp = empirical_at_fmr(s[g == grp], y[g == grp][None], np.array([1e-1]))
        assert fin[(grp, 1e-1)]["lower"] <= emp[0, 0] <= fin[(grp, 1e-1)]["upper"]
    p = est.results["population"]["p_worse"]["fnmr_at_fmr@0.01"]["p_row_worse_than_column"]
    assert p[1, 0] > 0.95  # group b (lower match mode) is worse
    assert all(f.diagnostics["max"]["rhat"] < 1.2 for f in est.groups)


def test_result_is_reported_honestly(two_groups):
    *_, est = two_groups
    d = json.loads(json.dumps(est.to_dict()))
    assert d["decision_rule"] == "accept iff score >= threshold" and d["level"] == 0.89
    assert set(d["results"]) == {"population", "finite-sample"}
    text = str(est)
    assert "sinh-arcsinh" in text and "optimistic" in text and "finite-sample" in text
    assert any("tail extrapolation" in x for x in est.limits)  # FMR 1e-2 with ~750 non-matches per group
    assert {"kind", "quantity", "target", "group", "median", "lower", "upper"} <= set(est.to_frame().columns)
    with pytest.warns(FutureWarning, match="to_frame"):  # the old verb, until 1.0
        pd.testing.assert_frame_equal(est.table(), est.to_frame())
    if "fnmr_at_fmr@0.01" in d["results"]["population"]["fairness"]:
        assert "max_geomean_ratio" in d["results"]["population"]["fairness"]["fnmr_at_fmr@0.01"]


def test_labels_shrink_the_bands():
    """N_L = 0, 50, 200 labelled pairs (random sample) on the same 1,500 pairs: the bands of FNMR@FMR (on the
    log scale: upper/lower) and of the share of matches narrow."""
    rng = np.random.default_rng(5)
    s, y = _group(rng, 1500, 0.3, 0.45)
    width = []
    for n_l in (0, 50, 200):
        lab = np.full(s.size, np.nan)
        idx = rng.choice(s.size, n_l, replace=False)
        lab[idx] = y[idx]
        with pytest.warns(UserWarning):
            e = estimate(s, np.zeros(s.size), lab, fmr=(1e-2, 1e-1), seed=1, **FAST)
        pi = e.to_dict()["groups"][0]["posterior"]["pi"]
        width.append([np.log(r["upper"] / r["lower"]) for r in e.results["population"]["fnmr_at_fmr"]]
                     + [pi["upper"] - pi["lower"]])
    w = np.array(width)
    assert np.all(w[1] < w[0]) and np.all(w[2] < w[1])


def test_refuses_to_report_unconverged_chains(monkeypatch):
    rng = np.random.default_rng(2)
    s, _ = _group(rng, 400, 0.5, 0.5)
    monkeypatch.setattr(diagnostics, "summarise", lambda d, names: {n: {"rhat": 1.5, "ess": 10.0} for n in names})
    with pytest.raises(NotConverged, match="R-hat must be below 1.2"):
        estimate(s, np.zeros(s.size), sampler="numpy", warmup=50, draws=50, family="sas")
    with pytest.warns(UserWarning, match="settle in different places"):  # the robust default pools and alarms
        est = estimate(s, np.zeros(s.size), sampler="numpy", warmup=50, draws=50, finite_draws=50, ppc_replicates=5)
    assert est.selection["0.0"]["alarm"] and est.selection["0.0"]["chains_disagree"]


@pytest.mark.parametrize("bad,match", [
    ({"scores": [np.nan] + [0.1] * 199}, "not finite"),
    ({"labels": [2.0] * 200}, "unrecognised label at positions 0, 1"),
    ({"groups": ["a"] * 150 + ["b"] * 50}, "fewer than 100 pairs"),
    ({"fmr": (0.0,)}, r"fmr 0.0: give a number in \(0, 1\)"),
    ({"chains": 1}, "chains 1: at least 2 are needed"),
    ({"shape_prior": "flat"}, "unknown shape prior"),
])
def test_bad_input(bad, match):
    args = {"scores": np.linspace(0, 1, 200), "groups": ["a"] * 200, "labels": None, **bad}
    kw = {k: args.pop(k) for k in list(args) if k not in ("scores", "groups", "labels")}
    with pytest.raises(InputError, match=match):
        estimate(args["scores"], args["groups"], args["labels"], sampler="numpy", **kw)


@pytest.mark.slow
def test_numpyro_sampler_agrees_with_numpy():
    pytest.importorskip("numpyro")
    rng = np.random.default_rng(9)
    s, _ = _group(rng, 400, 0.5, 0.5)
    with pytest.warns(UserWarning):
        e = estimate(s, np.zeros(s.size), fmr=(1e-1,), sampler="numpyro", chains=2, warmup=100, draws=100,
                     finite_draws=50, ppc_replicates=5)
    assert e.sampler == "numpyro"
    with pytest.warns(UserWarning):
        ref = estimate(s, np.zeros(s.size), fmr=(1e-1,), chains=2, **{**FAST, "draws": 1500})
    a, b = e.results["population"]["fnmr_at_fmr"][0], ref.results["population"]["fnmr_at_fmr"][0]
    assert a["lower"] < b["median"] < a["upper"] and b["lower"] < a["median"] < b["upper"]


def test_sampler_resolution_without_numpyro(monkeypatch):
    monkeypatch.setattr(samplers, "numpyro_available", lambda: False)
    assert samplers.resolve("auto") == "numpy"
    with pytest.raises(InputError, match="optional extra"):
        samplers.resolve("numpyro")


def test_bayesian_calibration_baseline():
    rng = np.random.default_rng(4)
    s, y = _group(rng, 1500, 0.5, 0.55)
    lab = np.full(s.size, np.nan)
    lab[:300] = y[:300]
    with warnings.catch_warnings():  # the random-walk sampler mixes slowly on this model (docs/labelfree.md)
        warnings.simplefilter("ignore")
        bc = bayesian_calibration(s, np.zeros(s.size), lab, fmr=(1e-1,), warmup=1500, draws=1500)
    e = bc.results["fnmr_at_fmr"][0]
    assert 0 <= e["lower"] <= e["median"] <= e["upper"] <= 1
    assert json.dumps(bc.to_dict())
    with pytest.raises(InputError, match="needs labelled pairs"):
        bayesian_calibration(s, np.zeros(s.size), np.full(s.size, np.nan))


def test_same_seed_same_numbers():
    rng = np.random.default_rng(8)
    s, _ = _group(rng, 300, 0.5, 0.5)
    kw = {"sampler": "numpy", "warmup": 800, "draws": 800, "finite_draws": 20, "ppc_replicates": 2, "seed": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = estimate(s, np.zeros(s.size), **kw).to_dict()
        b = estimate(s, np.zeros(s.size), **kw).to_dict()
    assert a == b



def _jeffreys_t(nu):
    """Fonseca et al. (2008), eq. of the independence Jeffreys prior, written out independently (unnormalised)."""
    from scipy.special import polygamma

    b = polygamma(1, nu / 2) - polygamma(1, (nu + 1) / 2) - 2 * (nu + 3) / (nu * (nu + 1) ** 2)
    return np.sqrt(nu / (nu + 3) * b)


@pytest.mark.parametrize("fam", ["t", "sas"])
def test_shape_priors_are_the_documented_densities(fam):
    """Only the shape-prior term differs between the options, and it is the documented density of log delta:
    supplement Gamma(5, rate 0.25) / Gamma(50, 50), weak Gamma(2, rate 0.1) / LogNormal(0, 0.5), jeffreys the
    t's independence Jeffreys prior / LogNormal(0, 0.5)."""
    from scipy import stats

    from matchaudit.labelfree.starting_values import initialise
    from matchaudit.labelfree.model import GroupModel, Priors

    rng = np.random.default_rng(0)
    s, _ = _group(rng, 300, 0.5, 0.5)
    init = initialise(s)
    names = ("supplement", "weak", "jeffreys")
    model = {k: GroupModel(family(fam), Priors.from_init(init), s, s[:0], s[:0], shape_prior=k) for k in names}
    logpdf = {"t": {"supplement": stats.gamma(5.0, scale=4.0).logpdf, "weak": stats.gamma(2.0, scale=10.0).logpdf,
                    "jeffreys": lambda d: np.log(_jeffreys_t(d))},
              "sas": {"supplement": stats.gamma(50.0, scale=1.0 / 50.0).logpdf, "weak": stats.lognorm(0.5).logpdf,
                      "jeffreys": stats.lognorm(0.5).logpdf}}[fam]
    th = np.tile(model["weak"].start(init), (4, 1))
    th[:, 7:] = np.log([[0.8, 1.1], [0.6, 1.4], [1.0, 1.0], [0.3, 2.0]] if fam == "sas" else
                       [[7.0, 25.0], [4.0, 60.0], [15.0, 15.0], [1.5, 3000.0]])
    rest = []  # the posterior without the shape prior (density of log delta): the same under every option
    for k in names:
        prior = np.array([np.sum(logpdf[k](np.exp(t[7:])) + t[7:]) for t in th])
        rest.append(model[k].log_density(th) - prior)
    for r in rest[1:]:
        np.testing.assert_allclose(np.diff(r), np.diff(rest[0]), atol=1e-7)
    with pytest.warns(UserWarning):
        e = estimate(s, np.zeros(s.size), fmr=(1e-1,), seed=1, **{**FAST, "family": fam})
    assert "shape prior 'jeffreys'" in e.limits[0]
    assert ("Jeffreys" if fam == "t" else "log delta ~ N(0, 0.5^2)") in e.limits[0]


def test_jeffreys_t_prior_is_the_fisher_information_of_scale_and_dof():
    """Brute force: sqrt(det) of the Fisher information of (scale, d.o.f.) of the Student-t, by quadrature of the
    scores, is proportional to the implemented prior; the large-nu expansion continues the exact formula."""
    from scipy import integrate, special, stats

    from matchaudit.labelfree.model import log_jeffreys_t

    def info(nu):
        def scores(x):
            d_scale = -1.0 + (nu + 1) * x * x / (nu + x * x)
            d_nu = 0.5 * (special.digamma((nu + 1) / 2) - special.digamma(nu / 2) - 1 / nu - np.log1p(x * x / nu)
                          + (nu + 1) * x * x / (nu * (nu + x * x)))
            return d_scale, d_nu

        def moment(i, j):
            return integrate.quad(lambda x: np.prod([scores(x)[k] for k in (i, j)]) * stats.t.pdf(x, nu),
                                  -np.inf, np.inf, epsabs=0, epsrel=1e-11, limit=400)[0]

        return moment(0, 0) * moment(1, 1) - moment(0, 1) ** 2

    nus = np.array([0.7, 2.0, 5.0, 12.0, 40.0])
    ratio = 0.5 * np.log([info(v) for v in nus]) - log_jeffreys_t(nus)
    np.testing.assert_allclose(ratio - ratio[0], 0.0, atol=1e-5)
    edge = log_jeffreys_t(np.array([200.0 - 1e-9, 200.0]))  # the switch to the expansion
    assert edge[0] == pytest.approx(edge[1], abs=1e-8)
    big = np.array([1e4, 1e6, 1e9])  # tail sqrt(6) / nu^2
    np.testing.assert_allclose(log_jeffreys_t(big) + 2 * np.log(big), 0.5 * np.log(6.0), atol=1e-3)
    assert np.isfinite(log_jeffreys_t(np.array([1e-3, 1e15]))).all()


@pytest.mark.parametrize("prior", ["jeffreys", "weak", "supplement"])
@pytest.mark.slow
def test_jax_log_density_equals_numpy(prior):
    """The NUTS sampler evaluates the very same posterior (TP-T, every shape prior, both sides of the Jeffreys
    expansion switch), with finite gradients even at huge d.o.f."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from matchaudit.labelfree.starting_values import initialise
    from matchaudit.labelfree.model import GroupModel, Priors

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(3)
    s, y = _group(rng, 300, 0.5, 0.5)
    init = initialise(s)
    model = GroupModel(family("t"), Priors.from_init(init), s[:250], s[250:], y[250:], shape_prior=prior)
    th = np.tile(model.start(init), (4, 1))
    th[:, 7:] = np.log([[0.5, 3.0], [8.0, 150.0], [250.0, 20.0], [1e6, 1e9]])
    # rtol: at 1e9 d.o.f. the t kernel's gammaln((nu+1)/2) - gammaln(nu/2) cancels to ~1e-9 relative
    np.testing.assert_allclose(np.asarray(model.log_density(jnp.asarray(th), jnp)), model.log_density(th), rtol=1e-8)
    grad = np.asarray(jax.vmap(jax.grad(lambda t: model.log_density(t, jnp)))(jnp.asarray(th)))
    assert np.isfinite(grad).all()
