"""The calibration and cost plug-ins (:mod:`matchaudit.metrics.calibration`) against brute force and hand-worked
values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matchaudit.metrics import calibration as cal


def brute_min_dcf(tar, non, p, cm=1.0, cf=1.0, tw=None, nw=None) -> float:
    """Every threshold (each distinct score and +inf), accept iff s >= t, weighted counts."""
    tw = np.ones(len(tar)) if tw is None else np.asarray(tw, float)
    nw = np.ones(len(non)) if nw is None else np.asarray(nw, float)
    best = math.inf
    for t in np.concatenate([np.unique(np.concatenate([tar, non])), [np.inf]]):
        miss = tw[np.asarray(tar) < t].sum() / tw.sum()
        fa = nw[np.asarray(non) >= t].sum() / nw.sum()
        best = min(best, (cm * p * miss + cf * (1 - p) * fa) / min(cm * p, cf * (1 - p)))
    return best


def brute_min_cllr(tar, non, tw=None, nw=None) -> float:
    """Isotonic regression (sklearn, or a plain pooling loop) of the labels on the pooled scores, ties pooled;
    comparisons of weight 0 are not in the list."""
    tw = np.ones(len(tar)) if tw is None else np.asarray(tw, float)
    nw = np.ones(len(non)) if nw is None else np.asarray(nw, float)
    tar, tw, non, nw = np.asarray(tar)[tw > 0], tw[tw > 0], np.asarray(non)[nw > 0], nw[nw > 0]
    s = np.concatenate([tar, non])
    y = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    w = np.concatenate([tw, nw])
    try:
        from sklearn.isotonic import IsotonicRegression
        post = IsotonicRegression(y_min=0, y_max=1).fit(s, y, sample_weight=w).predict(s)
    except ImportError:  # pragma: no cover - sklearn is in the venv
        post = _pav(s, y, w)
    with np.errstate(divide="ignore"):
        llr = np.log(post) - np.log1p(-post) - math.log(tw.sum() / nw.sum())
    t = (tw * np.logaddexp(0, -llr[: len(tar)])).sum() / tw.sum()
    n = (nw * np.logaddexp(0, llr[len(tar):])).sum() / nw.sum()
    return 0.5 * (t + n) / math.log(2)


def _pav(s, y, w):
    """Weighted PAV, ties pooled first (a direct, quadratic implementation)."""
    u, inv = np.unique(s, return_inverse=True)
    blocks = [[np.bincount(inv, w * y)[i], np.bincount(inv, w)[i], [i]] for i in range(u.size)]
    merged = True
    while merged:
        merged = False
        for k in range(len(blocks) - 1):
            if blocks[k][0] / blocks[k][1] >= blocks[k + 1][0] / blocks[k + 1][1]:
                a, b = blocks[k], blocks.pop(k + 1)
                blocks[k] = [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
                merged = True
                break
    fit = np.empty(u.size)
    for sy, sw, idx in blocks:
        fit[idx] = sy / sw
    return fit[inv]


def test_hand_worked_example():
    # sorted: -1 (non), 0 (tar), 1 (non), 2 (tar): PAV blocks {-1}, {0, 1}, {2} with posteriors 0, 1/2, 1
    tar, non = [2.0, 0.0], [1.0, -1.0]
    assert cal.min_cllr(tar, non) == 0.5
    assert cal.min_dcf(tar, non, 0.5) == 0.5
    # Bayes threshold 0, accept iff s >= 0: the target at 0 is accepted, the non-target at 1 too
    assert cal.act_dcf(tar, non, 0.5) == 0.5
    assert cal.bayes_threshold(0.5) == 0.0
    assert math.isclose(cal.bayes_threshold(0.01, 1, 1), math.log(99))
    assert cal.cllr([0.0], [0.0]) == 1.0
    assert math.isclose(cal.cllr([math.log(3)], [-math.log(3)]), math.log2(4 / 3), rel_tol=1e-15)
    # p = 0.2, c_miss 1, c_fa 1: normaliser min(0.2, 0.8) = 0.2
    assert math.isclose(cal.normalized_dcf(0.5, 0.25, 0.2), (0.1 + 0.2) / 0.2)


def test_extremes():
    sep_t, sep_n = np.array([3.0, 4.0, 5.0]), np.array([-1.0, 0.0, 2.9])
    assert cal.min_cllr(sep_t, sep_n) == 0.0
    assert cal.min_dcf(sep_t, sep_n, 0.01) == 0.0
    same_t, same_n = np.zeros(5), np.zeros(9)
    assert math.isclose(cal.min_cllr(same_t, same_n), 1.0, rel_tol=1e-14)
    assert cal.min_dcf(same_t, same_n, 0.3) == 1.0
    assert math.isnan(cal.min_cllr([], [1.0])) and math.isnan(cal.cllr([1.0], []))


@pytest.mark.parametrize("seed", range(6))
def test_against_brute_force(seed):
    g = np.random.default_rng(seed)
    nt, nn = g.integers(1, 40), g.integers(1, 60)
    # rounded scores: many ties, within and across classes
    tar, non = np.round(g.normal(1, 1.5, nt), 1), np.round(g.normal(-1, 1.5, nn), 1)
    tw, nw = g.integers(0, 4, nt).astype(float), g.integers(0, 4, nn).astype(float)
    tw[0] = nw[0] = 1.0
    for p, cm, cf in ((0.5, 1, 1), (0.01, 1, 1), (0.2, 10, 1), (0.9, 1, 3)):
        assert math.isclose(cal.min_dcf(tar, non, p, cm, cf, tw, nw), brute_min_dcf(tar, non, p, cm, cf, tw, nw),
                            rel_tol=1e-12, abs_tol=1e-14)
        t = cal.bayes_threshold(p, cm, cf)
        miss, fa = tw[tar < t].sum() / tw.sum(), nw[non >= t].sum() / nw.sum()
        assert math.isclose(cal.act_dcf(tar, non, p, cm, cf, tw, nw), cal.normalized_dcf(miss, fa, p, cm, cf),
                            rel_tol=1e-12, abs_tol=1e-14)
    assert math.isclose(cal.min_cllr(tar, non, tw, nw), brute_min_cllr(tar, non, tw, nw), rel_tol=1e-10,
                        abs_tol=1e-12)
    assert math.isclose(cal.min_cllr(tar, non, tw, nw), _pav_cllr(tar, non, tw, nw), rel_tol=1e-10, abs_tol=1e-12)
    want = 0.5 * ((tw * np.logaddexp(0, -tar)).sum() / tw.sum() + (nw * np.logaddexp(0, non)).sum() / nw.sum())
    assert math.isclose(cal.cllr(tar, non, tw, nw), want / math.log(2), rel_tol=1e-12)
    # integer weights = the list with each score repeated
    rt, rn = np.repeat(tar, tw.astype(int)), np.repeat(non, nw.astype(int))
    assert math.isclose(cal.min_cllr(tar, non, tw, nw), cal.min_cllr(rt, rn), rel_tol=1e-12, abs_tol=1e-14)
    assert math.isclose(cal.min_dcf(tar, non, 0.1, 1, 1, tw, nw), cal.min_dcf(rt, rn, 0.1), rel_tol=1e-12)


def _pav_cllr(tar, non, tw, nw):
    tar, tw, non, nw = tar[tw > 0], tw[tw > 0], non[nw > 0], nw[nw > 0]
    s = np.concatenate([tar, non])
    y = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    post = _pav(s, y, np.concatenate([tw, nw]))
    with np.errstate(divide="ignore"):
        llr = np.log(post) - np.log1p(-post) - math.log(tw.sum() / nw.sum())
    t = (tw * np.logaddexp(0, -llr[: len(tar)])).sum() / tw.sum()
    n = (nw * np.logaddexp(0, llr[len(tar):])).sum() / nw.sum()
    return 0.5 * (t + n) / math.log(2)


def test_calibrated_gaussian_llrs():
    # LLRs of N(+-mu, 2 mu) classes are calibrated: PAV can barely improve them
    g = np.random.default_rng(7)
    mu = 2.0
    tar, non = g.normal(mu, math.sqrt(2 * mu), 20000), g.normal(-mu, math.sqrt(2 * mu), 20000)
    c, m = cal.cllr(tar, non), cal.min_cllr(tar, non)
    assert m <= c and c - m < 0.01
    for p in (0.1, 0.5):
        assert cal.min_dcf(tar, non, p) <= cal.act_dcf(tar, non, p) < cal.min_dcf(tar, non, p) + 0.02
    # a shifted (miscalibrated) copy keeps minCllr and minDCF, and loses in Cllr
    assert math.isclose(cal.min_cllr(tar + 3, non + 3), m, rel_tol=1e-12)
    assert cal.cllr(tar + 3, non + 3) > c + 0.1


def test_ape_curve():
    g = np.random.default_rng(3)
    tar, non = np.round(g.normal(1, 1, 50), 2), np.round(g.normal(-1, 1, 300), 2)
    eta = np.array([-3.0, -0.5, 0.0, 2.0])
    a = cal.ape_curve(tar, non, eta)
    for k, e in enumerate(eta):
        p = 1 / (1 + math.exp(-e))
        assert math.isclose(a.minimum[k], brute_min_dcf(tar, non, p), rel_tol=1e-12)
        assert math.isclose(a.actual[k], cal.act_dcf(tar, non, p), rel_tol=1e-12)
    # DR30 at eta = 0: min(0.5 min(1, 30/50), 0.5 * 30/300) / 0.5 = 0.1
    assert math.isclose(a.dr30[2], 0.1)


def test_rates_min_dcf_uses_the_one_definition():
    from matchaudit.metrics import rates
    assert rates.normalized_dcf is cal.normalized_dcf
