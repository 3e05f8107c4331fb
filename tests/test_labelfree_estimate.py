"""End-to-end `estimate` (reduced simulation studies; the full ones are in bench/, tables in docs/labelfree.md)."""

import json
import warnings

import numpy as np
import pytest

from matchaudit.errors import InputError
from matchaudit.labelfree import NotConverged, estimate, family
from matchaudit.labelfree import diagnostics, samplers
from matchaudit.labelfree.calibration import bayesian_calibration
from matchaudit.labelfree.curves import empirical_at_fmr

SAS = family("sas")
NONMATCH = (0.10, 0.07, 0.09, 0.85)
FAST = {"sampler": "numpy", "warmup": 800, "draws": 1000, "finite_draws": 200, "ppc_replicates": 10}


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
    assert {"kind", "quantity", "target", "group", "median", "lower", "upper"} <= set(est.table().columns)
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
        estimate(s, np.zeros(s.size), sampler="numpy", warmup=50, draws=50)


@pytest.mark.parametrize("bad,match", [
    ({"scores": [np.nan] + [0.1] * 199}, "not finite"),
    ({"labels": [2.0] * 200}, "labels must be 0, 1 or missing"),
    ({"groups": ["a"] * 150 + ["b"] * 50}, "fewer than 100 pairs"),
    ({"fmr": (0.0,)}, "strictly between 0 and 1"),
    ({"chains": 1}, "at least 2 chains"),
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



@pytest.mark.parametrize("fam", ["t", "sas"])
def test_shape_priors_are_the_documented_densities(fam):
    """Only the shape-prior term differs between the two options, and it is the documented density of log delta:
    supplement Gamma(5, rate 0.25) / Gamma(50, 50), weak Gamma(2, rate 0.1) / LogNormal(0, 0.5)."""
    from scipy import stats

    from matchaudit.labelfree.init import initialise
    from matchaudit.labelfree.model import GroupModel, Priors

    rng = np.random.default_rng(0)
    s, _ = _group(rng, 300, 0.5, 0.5)
    init = initialise(s)
    model = {k: GroupModel(family(fam), Priors.from_init(init), s, s[:0], s[:0], shape_prior=k) for k in ("supplement", "weak")}
    dens = {"t": {"supplement": stats.gamma(5.0, scale=4.0), "weak": stats.gamma(2.0, scale=10.0)},
            "sas": {"supplement": stats.gamma(50.0, scale=1.0 / 50.0), "weak": stats.lognorm(0.5)}}[fam]
    log_prior = {k: (lambda d, k=k: float(np.sum(dens[k].logpdf(d) + np.log(d)))) for k in dens}  # density of log delta
    th = np.tile(model["weak"].start(init), (3, 1))
    th[:, 7:] = np.log([[0.8, 1.1], [0.6, 1.4], [1.0, 1.0]] if fam == "sas" else [[7.0, 25.0], [4.0, 60.0], [15.0, 15.0]])
    for k in model:
        got = model[k].log_density(th)
        want = np.array([log_prior[k](np.exp(t[7:])) for t in th])
        other = model["weak" if k == "supplement" else "supplement"].log_density(th)
        lik = got - want  # the rest of the posterior, the same under both priors
        lik_other = other - np.array([log_prior["weak" if k == "supplement" else "supplement"](np.exp(t[7:])) for t in th])
        np.testing.assert_allclose(np.diff(lik), np.diff(lik_other), atol=1e-8)
    with pytest.warns(UserWarning):
        e = estimate(s, np.zeros(s.size), fmr=(1e-1,), family=fam, shape_prior="weak", seed=1, **FAST)
    assert "shape prior 'weak'" in e.limits[0]
