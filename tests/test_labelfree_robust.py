"""The family-robust label-free estimate (#44): families on Fisher's z, non-matches with a shoulder, the union of
the bands of the families that fit, the alarm where they disagree and the labels that would decide."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from matchaudit.errors import InputError
from matchaudit.labelfree import estimate, robust
from matchaudit.labelfree.curves import empirical_at_fmr
from matchaudit.labelfree.model import GroupModel, Priors, constrain, distribution, match_probability
from matchaudit.labelfree.twopiece import FAMILIES, family, parse

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
import reallike  # noqa: E402

PAR = (0.4, 0.3, 0.2, 1.2)  # on the z scale: mode, left and right scales, shape


@pytest.mark.parametrize("name", ["sas-atanh", "t-atanh", "normal-atanh"])
def test_a_family_on_fisher_z_is_a_density_on_the_scores(name):
    """Integrates to 1 over (-1, 1), its CDF is its integral, its inverses invert, its draws follow its CDF."""
    f = family(name)
    par = (*PAR[:3], 5.0 if name == "t-atanh" else PAR[3])  # t: 5 d.o.f.
    pdf = lambda x: f.pdf(x, *par)  # noqa: E731
    assert integrate.quad(pdf, -1, 1, limit=200)[0] == pytest.approx(1, abs=1e-6)  # t: 4e-7 beyond z = 8.4
    for x in (-0.5, 0.1, 0.38, 0.9):
        assert f.cdf(x, *par) == pytest.approx(integrate.quad(pdf, -1, x, limit=200)[0], abs=1e-6)
    q = np.array([1e-6, 1e-4, 0.3, 0.9])  # far below 1e-6 a t tail reaches past the edge z = 8.4
    np.testing.assert_allclose(f.sf(f.isf(q, *par), *par), q, rtol=1e-8)
    np.testing.assert_allclose(f.cdf(f.ppf(q, *par), *par), q, rtol=1e-8)
    x = f.rvs(np.random.default_rng(0), 20_000, *par)
    assert np.abs(x).max() < 1 and stats.kstest(x, lambda v: f.cdf(v, *par)).pvalue > 0.01


def test_fisher_z_refuses_scores_outside_minus_one_one_and_takes_float32_rounding():
    f = family("sas-atanh")
    assert np.isfinite(f.logpdf(np.array([1.0, -1.0, 1.0 + 1e-7]), *PAR)).all()
    with pytest.raises(InputError, match="outside \\[-1, 1\\]"):
        f.logpdf(np.array([0.2, 1.5]), *PAR)
    with pytest.raises(InputError, match="outside \\[-1, 1\\]") as e:
        estimate(np.r_[np.linspace(-0.9, 0.9, 300), 3.0], np.zeros(301), family="sas-atanh")
    assert e.value.param == "family"
    assert robust.candidates(np.array([0.1, 1.0 + 1e-6])) == robust.RAW + robust.BOUNDED
    assert robust.candidates(np.array([0.1, 2.0])) == robust.RAW  # LLR-like: the raw families only


def test_every_family_name_parses_and_unknown_ones_are_refused():
    for name in FAMILIES:
        fam, shoulder = parse(name)
        assert shoulder == name.endswith("-mix")
    with pytest.raises(InputError, match="auto"):
        estimate(np.linspace(0, 1, 200), np.zeros(200), family="beta")


def _draws(shoulder: bool) -> dict:
    rng = np.random.default_rng(1)
    theta = rng.normal(0, 0.3, (5, 12 if shoulder else 9)) + np.r_[0.0, 0.3, -1, -1, -1.5, -1.5, -1.0, 0, 0,
                                                                     *((0.0, -1.5, -2.0) if shoulder else ())]
    return constrain(theta)


def test_non_matches_with_a_shoulder_are_the_weighted_sum_of_two_components():
    """Density, CDF, survival and their inverses of the bulk-and-shoulder mixture against its definition."""
    fam = family("sas")
    p = _draws(True)
    d = distribution(fam, {k: v[:, None] for k, v in p.items()}, 0)
    x = np.linspace(-2, 3, 11)[None]
    bulk = [p[k][:, None] for k in ("mu0", "s0L", "s0R", "delta0")]
    sh = [p[k][:, None] for k in ("mub", "sbL", "sbR", "delta0")]
    w = p["w"][:, None]
    np.testing.assert_allclose(np.exp(d.logpdf(x)), (1 - w) * fam.pdf(x, *bulk) + w * fam.pdf(x, *sh), rtol=1e-12)
    np.testing.assert_allclose(d.sf(x), (1 - w) * fam.sf(x, *bulk) + w * fam.sf(x, *sh), rtol=1e-12)
    q = np.array([[1e-6, 1e-3, 0.1, 0.7]])
    np.testing.assert_allclose(d.sf(d.isf(q)), np.broadcast_to(q, (5, 4)), rtol=1e-9)
    np.testing.assert_allclose(d.cdf(d.ppf(q)), np.broadcast_to(q, (5, 4)), rtol=1e-9)
    one = distribution(fam, {k: v[0] for k, v in p.items()}, 0)
    sim = one.rvs(np.random.default_rng(2), 20_000)
    assert stats.kstest(sim, lambda v: one.cdf(v)).pvalue > 0.01
    assert np.all(p["mu0"] <= p["mub"]) and np.all(p["mub"] <= p["mu1"])  # the shoulder lies between the modes


@pytest.mark.parametrize("shoulder", [False, True])
def test_the_models_log_likelihood_is_its_definition(shoulder):
    """Unlabelled scores by the marginal mixture, labelled ones by their own class, in loops."""
    fam = family("sas")
    rng = np.random.default_rng(3)
    su, sl = rng.normal(size=40), rng.normal(size=6)
    yl = np.array([0, 1, 0, 1, 1, 0.0])
    m = GroupModel(fam, Priors((0.0, 1.0), (1.0, 1.0), (1.0, 1.0)), su, sl, yl, shoulder=shoulder)
    p = _draws(shoulder)
    theta = np.random.default_rng(1).normal(0, 0.3, (5, m.dim)) + np.r_[
        0.0, 0.3, -1, -1, -1.5, -1.5, -1.0, 0, 0, *((0.0, -1.5, -2.0) if shoulder else ())]
    p = constrain(theta)
    for r in range(5):
        c = {k: v[r] for k, v in p.items()}
        f1 = lambda x: fam.pdf(x, c["mu1"], c["s1L"], c["s1R"], c["delta1"])  # noqa: E731
        f0 = lambda x: (1 - c.get("w", 0.0)) * fam.pdf(x, c["mu0"], c["s0L"], c["s0R"], c["delta0"]) + (  # noqa: E731
            c["w"] * fam.pdf(x, c["mub"], c["sbL"], c["sbR"], c["delta0"]) if shoulder else 0.0)
        ll = sum(math.log((1 - c["pi"]) * f0(x) + c["pi"] * f1(x)) for x in su)
        ll += sum(math.log(f1(x) if y else f0(x)) + math.log(c["pi"] if y else 1 - c["pi"]) for x, y in zip(sl, yl))
        assert m.log_likelihood(theta[r:r + 1])[0] == pytest.approx(ll, rel=1e-12)


def test_the_union_joins_the_bands_of_the_families_used():
    def res(shift):
        e = lambda g, t: {"target": t, "group": g, "median": 0.1 + shift, "lower": 0.05 + shift,  # noqa: E731
                          "upper": 0.15 + shift, "extrapolated": False}
        out = {q: [e(g, t) for t in (0.01,) for g in ("A", "B")] for q in robust.QUANTITIES}
        out["global_threshold"] = [e("all", 0.01)]
        out["curve"] = {"fmr": np.array([0.1]), "A": {"median": np.array([shift]), "lower": np.array([shift - 1]),
                                                      "upper": np.array([shift + 1])}}
        out["curve"]["B"] = out["curve"]["A"]
        out["p_worse"] = {"k": {"groups": ["A", "B"], "p_row_worse_than_column": np.array([[0, shift], [1, 0]])}}
        out["fairness"] = {"k": {"m": {"median": shift, "lower": shift - 1, "upper": shift + 1}}}
        return out
    results = {"a": res(0.0), "b": res(0.2), "c": res(0.4), "d": res(0.05)}
    got = robust.combine(results, {"A": ["a", "b"], "B": ["c"]}, ["a", "c"])
    a = next(e for e in got["fnmr_at_fmr"] if e["group"] == "A")
    assert (a["lower"], a["upper"], a["median"], a["families"]) == (0.05, 0.35, pytest.approx(0.2), ["a", "b"])
    b = next(e for e in got["fnmr_at_fmr"] if e["group"] == "B")
    assert (b["lower"], b["upper"]) == (pytest.approx(0.45), pytest.approx(0.55))
    glob = next(e for e in got["fmr_at_global"] if e["group"] == "A")  # a group's rates at the global threshold: its own
    assert (glob["lower"], glob["upper"]) == (0.05, pytest.approx(0.35))
    thr = got["global_threshold"][0]  # the threshold itself: every family used for some group
    assert (thr["lower"], thr["upper"], thr["families"]) == (0.05, pytest.approx(0.55), ["a", "b", "c"])
    assert got["curve"]["A"]["lower"][0] == -1 and got["curve"]["A"]["upper"][0] == pytest.approx(1.2)
    assert got["p_worse"]["k"]["p_row_worse_than_column"][0, 1] == pytest.approx(0.2)
    found = robust.disagreements({f: {"population": r} for f, r in results.items()}, {"A": ["a", "c"]}, "A")
    assert found and found[0]["families"] == ("a", "c")
    assert robust.disagreements({f: {"population": r} for f, r in results.items()}, {"A": ["a", "d"]}, "A") == []


def test_labels_needed_is_the_two_sample_formula_where_the_families_differ():
    """Two models whose posterior match probabilities differ: n = (z + z')^2 r (1 - r) / d^2 over the scores where
    |P_a - P_b| is at least half its maximum, by brute force on the same draws."""
    fam = family("normal")
    rng = np.random.default_rng(4)
    s = rng.normal(size=3000)
    base = {"mu0": np.full(300, -1.0), "mu1": np.full(300, 1.5), "s0L": np.ones(300), "s0R": np.ones(300),
            "s1L": np.ones(300), "s1R": np.ones(300), "delta0": np.ones(300), "delta1": np.ones(300),
            "pi": np.full(300, 0.3)}
    other = {**base, "s0R": np.full(300, 1.6)}  # a heavier non-match upper tail: the same scores, other splits
    got = robust.labels_needed(s, [fam, fam], [base, other])
    from matchaudit.labelfree.binned import compress
    c = compress(s, robust.ADVICE_CELLS)
    pick = np.unique(np.linspace(0, 299, robust.ADVICE_DRAWS).astype(int))
    pa = match_probability(fam, {k: v[pick, None] for k, v in base.items()}, c.values).mean(0)
    pb = match_probability(fam, {k: v[pick, None] for k, v in other.items()}, c.values).mean(0)
    d = np.abs(pa - pb)
    keep = d >= d.max() / 2
    dbar = np.average(d[keep], weights=c.counts[keep])
    r = np.average((pa + pb)[keep] / 2, weights=c.counts[keep])
    assert got["n"] == math.ceil((1.959964 + 0.841621) ** 2 * r * (1 - r) / dbar**2)
    assert got["low"] == c.values[keep].min() and got["pairs_in_range"] == c.counts[keep].sum()


FAST = dict(sampler="numpy", chains=4, warmup=1000, draws=1000, finite_draws=200, ppc_replicates=20)


def test_on_deep_model_like_scores_one_family_misses_and_the_robust_band_covers_or_alarms():
    """Cosine scores with a non-match shoulder of look-alikes (bench/reallike.py, 'cosine'): the default two-piece
    SAS misses the true FNMR at FMR 1e-2 and its checks pass; the family-robust estimate covers it, alarms the
    group and says how many labels would decide; each family inside equals its own estimate (same seed)."""
    s, y = reallike.draw("cosine", 8000, 0.05, 1.0, np.random.default_rng(1))
    truth = empirical_at_fmr(s, y[None], np.array([1e-2]))[2][0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = estimate(s, np.zeros(s.size), fmr=(1e-2,), family="sas-atanh", seed=5, **FAST)
        rob = estimate(s, np.zeros(s.size), fmr=(1e-2,), seed=5, **FAST)
    miss = one.results["finite-sample"]["fnmr_at_fmr"][0]
    assert not miss["lower"] <= truth <= miss["upper"]
    assert one.ppc["0.0"]["ks_pvalue"] > 0.05 and one.ppc["0.0"]["tail"]["pvalue"] > 0.05  # the checks cannot see it
    band = rob.results["finite-sample"]["fnmr_at_fmr"][0]
    sel = rob.selection["0.0"]
    assert band["lower"] <= truth <= band["upper"] and sel["alarm"]
    assert sel["labels_needed"] and sel["labels_needed"]["n"] > 0 and any("label about" in w for w in rob.warnings)
    assert rob.by_family["sas-atanh"].to_dict() == one.to_dict()
    assert set(rob.to_frame()["family"]) == {"robust", *rob.by_family}
    doc = rob.to_dict()
    assert doc["family"] == "auto" and set(doc["families"]) == set(robust.candidates(s)) and doc["selection"]["0.0"]["alarm"]
