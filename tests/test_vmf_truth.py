"""The coverage studies' ground truth by quadrature (:mod:`matchaudit.studies.vmf_truth`) against its
definition: exact identities where the maths is exact, Monte Carlo of the generating model elsewhere (tolerance
4 binomial SEs: a correct formula fails about once in 16,000 runs; the seeds are fixed)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from matchaudit.studies import vmf_truth as vt
from matchaudit.simulation import GroupSpec, VmfPopulation, vmf_rvs

D = 64


def _within(rate: float, exact: float, n: int) -> bool:
    return abs(rate - exact) <= 4 * np.sqrt(exact * (1 - exact) / n) + 1e-12


def test_a_flat_law_accepts_like_a_uniform_direction():
    """kappa -> 0: Y is uniform, so P(<x, Y> >= t) is the uniform impostor law whatever x (exact to 1e-9)."""
    h = (D - 1) / 2
    for t in (0.1, 0.3, 0.45):
        got = vt.accept(np.linspace(-0.9, 0.9, 7), t, 1e-9, D)
        assert np.allclose(got, beta.sf((1 + t) / 2, h, h), rtol=1e-7, atol=0)


@pytest.mark.parametrize("kappa", [50.0, 200.0])
def test_genuine_fnmr_matches_simulated_pairs(kappa):
    rng = np.random.default_rng(0)
    mu = np.eye(D)[0]
    n = 200_000
    s = np.einsum("ij,ij->i", vmf_rvs(mu, kappa, n, rng), vmf_rvs(mu, kappa, n, rng))
    t = np.quantile(s, [0.005, 0.05, 0.5])
    exact = vt.fnmr(t, kappa, D)
    for x, e in zip(t, exact):
        assert _within(float((s < x).mean()), float(e), n), (kappa, x, e)


def test_conditional_acceptance_matches_draws_of_the_other_identity():
    """accept(c; t) for one fixed x against 200,000 draws of Y: exact in Y, so within the binomial SE."""
    rng = np.random.default_rng(1)
    mu = np.eye(D)[0]
    x = vmf_rvs(np.eye(D)[1], 80.0, 1, rng)[0]
    y = vmf_rvs(mu, 120.0, 200_000, rng)
    s = y @ x
    for t in np.quantile(s, [0.9, 0.99, 0.999]):
        exact = float(vt.accept(np.array([x @ mu]), float(t), 120.0, D)[0])
        assert _within(float((s >= t).mean()), exact, s.size), (t, exact)


@pytest.fixture(scope="module")
def small():
    pop = VmfPopulation.draw({"all": GroupSpec(6, (50.0, 200.0))}, dim=D, seed=3)
    return pop, vt.ImpostorCosines.draw(pop, 40, seed=5)


def test_binned_impostor_rate_equals_the_pairwise_sum(small):
    """The binned pass equals the direct sum of accept() over every (draw, other identity) of the same draws,
    up to the linear binning's error (relative 1e-3 at these rates)."""
    pop, imp = small
    x = pop.sample(40, seed=5).embeddings.astype(float)
    owner = np.repeat(np.arange(6), 40)
    for t in (0.2, 0.3):
        direct = [sum(vt.accept(x[owner != j] @ pop.centroids[j], t, float(pop.kappas[j]), D).sum() for j in range(6))
                  / (x.shape[0] * 5)]
        assert imp.fmr(t).mean() == pytest.approx(direct[0], rel=1e-3)
    assert imp.draws.sum() == 240 * 5


def test_shared_thresholds_hit_their_targets(small):
    pop, imp = small
    st = vt.shared_thresholds(imp, np.array([1e-2, 1e-3]))
    for t, a in zip(st.thresholds, (1e-2, 1e-3)):
        assert float(imp.fmr(t) @ imp.draws / imp.draws.sum()) == pytest.approx(a, rel=1e-4)
    assert np.all(st.fmr_se > 0) and np.all(st.threshold_se > 0)


def test_fixed_identity_rate_matches_all_pairs_of_fresh_draws(small):
    """The truth's estimand: FMR over all impostor pairs of independent draws of the same identities."""
    pop, imp = small
    x = pop.sample(1500, seed=11).embeddings.astype(float)
    owner = np.repeat(np.arange(6), 1500)
    s = x @ x.T
    off = owner[:, None] != owner[None, :]
    for t in (0.2, 0.3):
        per = imp.fmr(t)
        brute = float((s[off] >= t).mean())
        # the brute force's own error dominates (draws shared across pairs): 4 x its rough SE plus the truth's
        assert abs(per.mean() - brute) <= 4 * np.sqrt(brute / 1500 / 6) + 4 * per.std(ddof=1) / np.sqrt(8), t
