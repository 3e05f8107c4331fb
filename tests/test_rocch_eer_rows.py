"""The bootstrap's ROCCH-EER of every replicate and view in one compiled pass (#17: the per-row Python loop took
half of a 100-group audit) equals the hull-by-definition EER of each row, bit for bit."""

import numpy as np
import pytest

from matchaudit.metrics.rates import roc_hull, rocch_eer, rocch_eer_rows


def _by_definition(fmr: np.ndarray, fnmr: np.ndarray) -> float:
    """The lower hull's crossing of FMR = FNMR, the hull from :func:`roc_hull` (any order of points)."""
    hull = roc_hull(fmr, fnmr)
    hx, hy = fmr[hull], fnmr[hull]
    d = hy - hx
    k = int(np.flatnonzero(d <= 0)[0])
    if d[k] == 0 or k == 0:
        return float(hx[k])
    lam = (hy[k - 1] - hx[k - 1]) / ((hy[k - 1] - hx[k - 1]) - (hy[k] - hx[k]))
    return float(hx[k - 1] + lam * (hx[k] - hx[k - 1]))


def _curves(rng, rows: int, cells: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """Grid curves as the bootstrap makes them: (1, 0), FMR/FNMR at every edge from histograms, (0, 1)."""
    g = rng.poisson(0.3 if ties else 3.0, (rows, cells))
    i = rng.poisson(0.3 if ties else 3.0, (rows, cells))[:, ::-1]
    tail = lambda h: np.cumsum(h[:, ::-1], axis=1)[:, ::-1][:, 1:]  # noqa: E731
    fmr = tail(i) / np.maximum(i.sum(1, keepdims=True), 1)
    fnmr = 1 - tail(g) / np.maximum(g.sum(1, keepdims=True), 1)
    ones, zeros = np.ones((rows, 1)), np.zeros((rows, 1))
    return np.hstack([ones, fmr, zeros]), np.hstack([zeros, fnmr, ones])


@pytest.mark.parametrize("ties", [False, True])
def test_rows_equal_the_hull_by_definition(ties):
    rng = np.random.default_rng(7)
    x, y = _curves(rng, 300, 40, ties)
    got = rocch_eer_rows(x.reshape(3, 100, -1), y.reshape(3, 100, -1)).ravel()
    want = np.array([_by_definition(a, b) for a, b in zip(x, y)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, [rocch_eer(a, b) for a, b in zip(x, y)])


def test_unordered_rows_and_undefined_rows():
    rng = np.random.default_rng(8)
    x, y = _curves(rng, 50, 30, True)
    perm = rng.permutation(x.shape[1])
    xs, ys = x[:, perm], y[:, perm]  # not a curve's order: sorted as rocch_eer sorts
    x[3, 5] = np.nan
    got = rocch_eer_rows(np.vstack([xs, x[3:4]]), np.vstack([ys, y[3:4]]))
    np.testing.assert_array_equal(got[:-1], [_by_definition(a, b) for a, b in zip(xs, ys)])
    assert np.isnan(got[-1])


def _sre16_eer(scores: np.ndarray, labels: np.ndarray) -> float:
    """The NIST SRE'16 scorer v4.1's EER (compute_pmiss_pfa_rbst + compute_eer, as wespeaker vendors it),
    written out from its formulas: per sorted trial, FNR and FPR; the first point with FNR - FPR >= 0 and the last
    below, linearly interpolated."""
    lab = labels[np.argsort(scores, kind="stable")]
    fnr = np.cumsum(lab == 1) / (lab == 1).sum()
    fpr = 1 - np.cumsum(lab == 0) / (lab == 0).sum()
    d = fnr - fpr
    x1, x2 = np.flatnonzero(d >= 0)[0], np.flatnonzero(d < 0)[-1]
    a = (fnr[x1] - fpr[x1]) / (fpr[x2] - fpr[x1] - (fnr[x2] - fnr[x1]))
    return float(fnr[x1] + a * (fnr[x2] - fnr[x1]))


@pytest.mark.parametrize("seed", range(6))
def test_interpolated_eer_is_the_sre16_scorers(seed):
    """#42 item 4: `--eer interpolated` reproduces the SRE'16 scorer (wespeaker's published numbers) on tie-free
    scores; ROCCH-EER is the hull's, never above it."""
    import matchaudit as ma

    rng = np.random.default_rng(seed)
    n_t, n_i = int(rng.integers(50, 400)), int(rng.integers(500, 3000))
    scores = np.r_[rng.normal(2, 1, n_t), rng.normal(0, 1.2, n_i)]
    labels = np.r_[np.ones(n_t), np.zeros(n_i)]
    data = ma.from_scores(scores, label=labels)
    interp = ma.audit(data, fmr=0.01, measures=ma.MeasureOptions(calibration=False, eer="interpolated"),
                      intervals=False)
    hull = ma.audit(data, fmr=0.01, measures=ma.MeasureOptions(calibration=False), intervals=False)
    got = interp.curves.set_index("group").loc["all"]
    assert got["eer"] == pytest.approx(_sre16_eer(scores, labels), abs=1e-12)
    assert got["eer_method"] == "interpolated"
    assert hull.curves.set_index("group").loc["all", "eer"] <= got["eer"] + 1e-12
