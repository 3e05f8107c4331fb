"""Curves and diagnostics against brute-force references."""

import numpy as np
import pytest
from scipy import optimize

from matchaudit.labelfree.model import Distribution
from matchaudit.labelfree.curves import empirical_at_fmr, population_at_fmr, population_global, rates_at
from matchaudit.labelfree.diagnostics import ess, rhat
from matchaudit.labelfree.twopiece import family


def _brute(s, y, alpha, rule):
    for t in sorted(np.r_[np.unique(s), np.inf]):  # lowest threshold whose FMR is at most alpha
        acc = s >= t if rule == ">=" else s > t
        if acc[y == 0].mean() <= alpha:
            return t, acc[y == 0].mean(), (~acc[y == 1]).mean()


@pytest.mark.parametrize("rule", [">=", ">"])
def test_empirical_at_fmr_equals_brute_force_with_ties(rule):
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(4, 40))
        s, y = np.round(rng.normal(size=n), 1), rng.integers(0, 2, n)
        if y.min() == y.max():
            continue
        alphas = np.array([0.0, 0.05, 0.2, 0.5, 1.0])
        t, fmr, fnmr = empirical_at_fmr(s, y[None], alphas, rule)
        for i, a in enumerate(alphas):
            assert (t[0, i], fmr[0, i], fnmr[0, i]) == pytest.approx(_brute(s, y, a, rule))
        f2, n2 = rates_at(s, y[None].astype(float), t[:, 2], rule)
        assert (f2[0], n2[0]) == pytest.approx((fmr[0, 2], fnmr[0, 2]))


def test_fractional_weights_equal_replicated_pairs():
    """Weight 1/2 on a pair counts like a match copy and a non-match copy when every other pair is doubled."""
    s = np.array([0.1, 0.4, 0.5, 0.9])
    w = np.array([0.0, 0.5, 1.0, 1.0])
    rep_s, rep_y = np.r_[s, s], np.r_[[0, 1, 1, 1], [0, 0, 1, 1]]
    a = np.array([0.0, 0.4, 0.6])
    for x, yx in zip(empirical_at_fmr(s, w[None] * 1.0, a), empirical_at_fmr(rep_s, rep_y[None], a)):
        np.testing.assert_allclose(x, yx)


def test_population_rates_and_pooled_global_threshold():
    f = family("sas")
    c0 = (np.array([0.1, 0.15]), np.array([0.07, 0.06]), np.array([0.09, 0.1]), np.array([0.9, 1.1]))
    c1 = (np.array([0.6, 0.5]), np.array([0.08, 0.1]), np.array([0.06, 0.05]), np.array([1.0, 1.2]))
    one = lambda c: Distribution(f, ((np.ones(2), c),))  # noqa: E731
    t, fnmr = population_at_fmr(one(c0), one(c1), np.array([1e-2, 1e-6]))
    np.testing.assert_allclose(f.sf(t, *(v[:, None] for v in c0)), [[1e-2, 1e-6]] * 2, rtol=1e-10)
    np.testing.assert_allclose(fnmr, f.cdf(t, *(v[:, None] for v in c1)))
    comps0 = [tuple(np.array([v[g]] * 2) for v in c0) for g in range(2)]
    comps1 = [tuple(np.array([v[g]] * 2) for v in c1) for g in range(2)]
    w = np.array([[0.3, 0.7], [0.5, 0.5]])
    tg, fmr_g, _ = population_global([one(c) for c in comps0], [one(c) for c in comps1], w, 1e-3)
    for m in range(2):
        ref = optimize.brentq(lambda x: sum(w[m, g] * f.sf(x, *(v[g] for v in c0)) for g in range(2)) - 1e-3, 0, 2, xtol=1e-14)
        assert tg[m] == pytest.approx(ref, abs=1e-10)
        assert (w[m] * fmr_g[m]).sum() == pytest.approx(1e-3, rel=1e-8)


def test_rhat_and_ess():
    rng = np.random.default_rng(1)
    iid = rng.normal(size=(4, 2000))
    assert rhat(iid) < 1.01 and ess(iid) == pytest.approx(8000, rel=0.1)
    assert rhat(iid + np.array([0, 0, 0, 3.0])[:, None]) > 1.2
    rho = 0.8  # AR(1): ESS = N (1 - rho) / (1 + rho)
    x = np.zeros((4, 5000))
    e = rng.normal(size=x.shape)
    for t in range(1, 5000):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    assert ess(x) == pytest.approx(20000 * 0.2 / 1.8, rel=0.15)


def test_lowest_passing_is_the_shared_threshold_rule():
    """The position of the lowest candidate (ascending) with FMR <= alpha, ties and exact hits included;
    len(fmr) when none qualifies; the same rule the exact metrics use for their thresholds."""
    from matchaudit.definitions import lowest_passing as lowest_at_most

    fmr = np.array([0.5, 0.2, 0.2, 0.05])
    got = lowest_at_most(fmr, np.array([1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01]))
    np.testing.assert_array_equal(got, [0, 0, 1, 1, 3, 3, 4])
    brute = [next((i for i, f in enumerate(fmr) if f <= a), fmr.size) for a in (1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01)]
    np.testing.assert_array_equal(got, brute)
