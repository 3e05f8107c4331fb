"""Two-piece families: normalisation, CDF/quantile inverses, far-tail survival, sampling, tail direction."""

import numpy as np
import pytest
from scipy import integrate, stats

from matchaudit.errors import InputError
from matchaudit.labelfree.twopiece import family

CASES = [("normal", 1.0), ("t", 4.0), ("t", 30.0), ("sas", 0.7), ("sas", 1.0), ("sas", 1.4)]
PAR = (0.3, 0.05, 0.12)  # mode, left scale, right scale (skewed right)


@pytest.mark.parametrize("name,delta", CASES)
def test_density_integrates_to_one_and_cdf_is_its_integral(name, delta):
    f = family(name)
    pdf = lambda x: f.pdf(x, *PAR, delta)  # noqa: E731
    assert integrate.quad(pdf, -np.inf, PAR[0])[0] + integrate.quad(pdf, PAR[0], np.inf)[0] == pytest.approx(1, abs=1e-8)
    for x in (0.1, 0.28, 0.3, 0.45, 0.7):
        lo = integrate.quad(pdf, -np.inf, min(x, PAR[0]))[0] + (integrate.quad(pdf, PAR[0], x)[0] if x > PAR[0] else 0)
        assert f.cdf(x, *PAR, delta) == pytest.approx(lo, abs=1e-9)
    assert f.cdf(PAR[0], *PAR, delta) == pytest.approx(PAR[1] / (PAR[1] + PAR[2]), abs=1e-14)


@pytest.mark.parametrize("name,delta", CASES)
def test_quantile_and_upper_inverse_invert(name, delta):
    f = family(name)
    p = np.array([1e-12, 1e-6, 0.01, 0.2, 0.29, 0.5, 0.9, 0.999999])
    np.testing.assert_allclose(f.cdf(f.ppf(p, *PAR, delta), *PAR, delta), p, rtol=1e-9, atol=1e-15)
    q = np.array([1e-12, 1e-8, 1e-5, 1e-2, 0.5, 0.8, 0.99])
    np.testing.assert_allclose(f.sf(f.isf(q, *PAR, delta), *PAR, delta), q, rtol=1e-9)
    x = np.linspace(-0.5, 1.5, 41)
    np.testing.assert_allclose(f.cdf(x, *PAR, delta) + f.sf(x, *PAR, delta), 1.0, atol=1e-14)


@pytest.mark.parametrize("name,delta", CASES)
def test_survival_accurate_in_far_tail(name, delta):
    """sf at FMR ~1e-8..1e-12 equals the integral of the density beyond x (relative 1e-6), no 1 - cdf cancellation."""
    f = family(name)
    for q in (1e-8, 1e-12):
        x = f.isf(q, *PAR, delta)
        tail = integrate.quad(lambda v: f.pdf(v, *PAR, delta), x, np.inf, epsabs=0, epsrel=1e-10)[0]
        assert f.sf(x, *PAR, delta) == pytest.approx(tail, rel=1e-6)
        assert tail == pytest.approx(q, rel=1e-6)


@pytest.mark.parametrize("name,delta", CASES)
def test_sampling_matches_cdf(name, delta):
    """KS test of 20,000 draws against the CDF; p > 0.001 fails by chance once in 1000 (fixed seed)."""
    f = family(name)
    x = f.rvs(np.random.default_rng(7), 20_000, *PAR, delta)
    assert stats.kstest(x, lambda v: f.cdf(v, *PAR, delta)).pvalue > 1e-3


def test_normal_family_is_scipy_normal_when_symmetric():
    f = family("normal")
    x = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(f.logpdf(x, 0.2, 0.7, 0.7, 1.0), stats.norm.logpdf(x, 0.2, 0.7), rtol=1e-12)
    np.testing.assert_allclose(family("t").logpdf(x, 0.2, 0.7, 0.7, 5.0), stats.t.logpdf(x, 5.0, 0.2, 0.7), rtol=1e-12)


def test_sas_tail_direction():
    """delta < 1 is heavier than normal, delta > 1 lighter (Jones-Pewsey / Rubio convention, spec section 3.3)."""
    f = family("sas")
    tails = [2 * f.sf(4.0, 0.0, 1.0, 1.0, d) for d in (0.8, 1.0, 1.3)]
    assert tails[0] > tails[1] > tails[2]
    assert tails[1] == pytest.approx(2 * stats.norm.sf(4.0), rel=1e-12)
    assert tails[0] == pytest.approx(9.9e-3, rel=0.02) and tails[2] == pytest.approx(3.4e-14, rel=0.05)


def test_density_continuous_at_mode_and_unknown_family():
    f = family("sas")
    eps = 1e-12
    assert f.pdf(PAR[0] - eps, *PAR, 0.8) == pytest.approx(f.pdf(PAR[0] + eps, *PAR, 0.8), rel=1e-9)
    with pytest.raises(InputError, match="unknown score family"):
        family("gamma")


def test_jax_log_density_equals_numpy():
    jnp = pytest.importorskip("jax.numpy")
    import jax

    jax.config.update("jax_enable_x64", True)
    x = np.linspace(-1, 2, 50)
    for name, delta in CASES:
        f = family(name)
        np.testing.assert_allclose(np.asarray(f.logpdf(jnp.asarray(x), *PAR, delta, xp=jnp)), f.logpdf(x, *PAR, delta),
                                   rtol=1e-12)
