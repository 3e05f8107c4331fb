"""Initialisation: KDE, critical-bandwidth modes, the appendix-D normal fit and Storey estimate, the GMM."""

import numpy as np
import pytest
from scipy import special, stats

from matchaudit.labelfree.starting_values import critical_modes, gmm2, initialise, kde_grid, match_mode, match_normal_fit, storey
from matchaudit.labelfree.model import Priors
from matchaudit.labelfree.twopiece import family


def _mixture(rng, n, pi, nonmatch=(0.10, 0.07, 0.085, 0.9), match=(0.62, 0.06, 0.06, 1.0)):
    y = rng.random(n) < pi
    s = np.where(y, family("normal").rvs(rng, n, *match), family("sas").rvs(rng, n, *nonmatch))
    return s, y


def test_binned_kde_matches_direct_sum():
    x = np.random.default_rng(0).normal(size=500)
    grid, dens = kde_grid(x, 0.3, -5, 5, 2**12)
    direct = stats.norm.pdf((grid[::64, None] - x[None]) / 0.3).sum(axis=1) / (x.size * 0.3)
    np.testing.assert_allclose(dens[::64], direct, atol=2e-4)
    assert dens.sum() * (grid[1] - grid[0]) == pytest.approx(1.0, abs=1e-6)


def test_critical_bandwidth_is_the_smallest_with_two_modes():
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(0, 1, 3000), rng.normal(5, 0.7, 1500)]
    m = critical_modes(x, 2)
    assert m.locations.size == 2
    assert m.locations[0] == pytest.approx(0, abs=0.25) and m.locations[1] == pytest.approx(5, abs=0.25)
    assert critical_modes(x, 2, tol=1e-5).bandwidth == pytest.approx(m.bandwidth)
    below = kde_grid(x, 0.98 * m.bandwidth, x.min() - 4 * x.std(), x.max() + 4 * x.std())[1]
    assert np.count_nonzero((np.diff(below)[:-1] > 0) & (np.diff(below)[1:] <= 0)) > 2
    inside = critical_modes(x, 1, support=(3.0, 8.0))  # Hall-York: only modes inside the support count
    assert inside.locations.size == 1 and inside.locations[0] == pytest.approx(5, abs=0.3)


def test_normal_fit_and_storey_follow_appendix_d_literally():
    x = np.array([0.1, 0.2, 0.5, 0.55, 0.6, 0.7, 0.9])
    mu = 0.55
    assert match_normal_fit(x, mu) ** 2 == pytest.approx(2 / 3 * (0 + 0.05**2 + 0.15**2 + 0.35**2))
    sigma = 0.2
    p = 2 * (1 - special.ndtr(np.abs((x - mu) / sigma)))
    assert storey(x, mu, sigma, 0.05) == pytest.approx(np.sum(p > 0.05) / (7 * 0.95))


def test_sigma_doubles_the_variance_for_a_normal_match_mode():
    """The printed formula gives sigma^2 = 2 var: Storey(lambda) is then about pi (1 - lambda') / (1 - lambda) with
    lambda' = 2 Phi(-sqrt(2) z_(1-lambda/2)): +4.7% at 0.05, +8.9% at 0.10, as in the supplement's Table 1."""
    x = np.random.default_rng(2).normal(0.6, 0.05, 200_000)
    assert match_normal_fit(x, 0.6) == pytest.approx(np.sqrt(2) * 0.05, rel=0.01)
    for lam, ratio in ((0.05, 1.047), (0.10, 1.089)):
        assert storey(x, 0.6, match_normal_fit(x, 0.6), lam) == pytest.approx(ratio, abs=0.01)


@pytest.mark.parametrize("pi", [0.5, 0.186, 0.064, 0.03])
def test_storey_reproduces_table1_behaviour(pi):
    """Table 1 on simulated data (5 data sets of 12,000 pairs, heavy-ish non-match tail): at large shares
    Storey(0.05) and (0.10) sit +5% and +9% above the truth (the factor 2 of appendix D); at low shares (3-6%
    matches) both stay within 30% on average while Storey(0.01) is worse (non-matches leak into p > 0.01)."""
    rng = np.random.default_rng(int(pi * 1000))
    rel = {lam: [] for lam in (0.01, 0.05, 0.10)}
    for _ in range(5):
        s, y = _mixture(rng, 12_000, pi, nonmatch=(0.10, 0.07, 0.09, 0.85))
        init = initialise(s)
        assert init.pi_storey == storey(s, init.match_mode, init.match_sd, 0.05)
        for lam in rel:
            rel[lam].append(storey(s, init.match_mode, init.match_sd, lam) / y.mean() - 1)
    m = {lam: float(np.mean(v)) for lam, v in rel.items()}
    if pi > 0.1:
        assert 0.02 < m[0.05] < 0.09 and 0.06 < m[0.10] < 0.12
    else:
        assert abs(m[0.05]) < 0.3 and abs(m[0.10]) < 0.3
        assert m[0.01] > m[0.05] + 0.05


def test_gmm_recovers_a_gaussian_mixture():
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(-1, 0.5, 6000), rng.normal(2, 0.8, 4000)]
    g = gmm2(x)
    assert g.weight1 == pytest.approx(0.4, abs=0.02)
    np.testing.assert_allclose(g.means, (-1, 2), atol=0.05)
    np.testing.assert_allclose(g.sds, (0.5, 0.8), atol=0.05)


def test_initialise_falls_back_to_gmm_when_unimodal():
    x = np.random.default_rng(4).normal(size=3000)
    init = initialise(x)
    assert init.warnings and "GMM" in init.warnings[0]
    assert not init.separate_match_mode
    assert init.match_centre == (init.gmm.means[1], init.gmm.sds[1])
    assert init.pi_start == init.gmm.weight1  # Storey's p-values are centred in the bulk: meaningless here


def test_match_centre_is_the_mode_fit_when_the_gmm_models_the_nonmatch_tail():
    # 5% matches, skewed heavy-tailed non-matches (the recovery bench's TP-T data): the GMM's upper
    # component (weight ~0.2, mean ~0.25, SD ~0.19) fits the non-match tail, not the matches (0.50, 0.06-0.08)
    rng = np.random.default_rng(0)
    y = rng.random(3000) < 0.05
    t = family("t")
    s = np.where(y, t.rvs(rng, 3000, 0.50, 0.08, 0.06, 20.0), t.rvs(rng, 3000, 0.10, 0.07, 0.09, 8.0))
    init = initialise(s)
    assert init.separate_match_mode
    assert init.gmm.weight1 > 0.1 and init.gmm.means[1] < 0.35 and init.gmm.sds[1] > 0.15
    mean, sd = init.match_centre
    assert mean == init.match_mode and sd == pytest.approx(init.match_sd / np.sqrt(2.0))
    assert abs(mean - 0.50) < 0.05 and 0.04 < sd < 0.1
    assert init.pi_start == pytest.approx(init.pi_storey)
    pr = Priors.from_init(init)  # match priors centred there, non-match priors on the GMM's lower component
    assert pr.mu_mean == (init.gmm.means[0], mean) and pr.mu_sd == pr.scale_mean == (init.gmm.sds[0], sd)


def test_match_mode_skips_modes_on_a_few_outlying_scores():
    rng = np.random.default_rng(5)
    bulk, match = rng.normal(0.0, 1.0, 2850), rng.normal(3.5, 0.5, 150)
    x = np.r_[bulk, match, -9.0, -9.1, -9.2]  # three far non-match outliers: the 2-mode KDE puts a mode there
    assert critical_modes(x, 2).locations[0] < -8 and critical_modes(x, 2).locations[-1] < 1
    modes, mu = match_mode(x, gmm2(x))
    assert mu == pytest.approx(3.5, abs=0.3) and mu == modes.locations.max()
    init = initialise(x)
    assert init.separate_match_mode and init.match_mode == mu
    # a few outliers above a unimodal bulk are not a match mode: no separate mode, GMM fallback
    y = np.r_[rng.normal(size=3000), 6.0, 6.1, 6.2]
    assert critical_modes(y, 3).locations.max() > 5
    assert match_mode(y, gmm2(y))[1] is None and not initialise(y).separate_match_mode


def test_labelled_matches_identify_the_match_component():
    """M7: 300 labelled matches identify the match component; the 'weakly identified' warning counted only the
    mixture's expected share of the scores."""
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(0.0, 1.0, 2000), rng.normal(4.0, 1.0, 20)]
    assert any("weakly identified" in w for w in initialise(x).warnings)
    assert not any("weakly identified" in w for w in initialise(x, labelled_matches=300).warnings)
    assert not any("weakly identified" in w for w in initialise(x, labelled_matches=None).warnings)  # all labelled
