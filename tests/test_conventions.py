"""docs/conventions.md, one test per row that matchaudit reproduces: the number computed the tool's way (its code
transcribed from the tool's source) against matchaudit's option for it. The EER rows: tests/test_rocch_eer_rows.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import matchaudit as ma


def bob_far_threshold(negatives: np.ndarray, far_value: float) -> float:
    """bob.measure 6.1 ``far_threshold`` (src/bob/measure/_library.py), its loop transcribed."""
    scores = np.sort(negatives)[::-1]
    if far_value >= 1 - np.finfo(float).eps:
        return float(np.nextafter(scores[-1], scores[-1] - 1))
    valid, pos, n = np.nextafter(scores[0], scores[0] + 1), 0, scores.size
    while pos < n:
        current = scores[pos]
        while pos < n - 1 and scores[pos + 1] == current:
            pos += 1
        if (pos + 1) / n > far_value:
            break
        valid = current
        pos += 1
    return float(valid)


def _data(seed: int, ties: bool):
    """Scores of 10 identities x 20 samples, all pairs listed: about one genuine score per gap between impostor
    scores in the upper tail, where the two rules part."""
    rng = np.random.default_rng(seed)
    k = np.repeat(np.arange(10), 20)
    a, b = np.triu_indices(k.size, 1)
    genuine = k[a] == k[b]
    s = np.where(genuine, rng.normal(1.5, 1.0, a.size), rng.normal(0.0, 1.0, a.size))
    if ties:
        s = np.round(s, 1)
    return ma.from_scores(s, identity_a=k[a], identity_b=k[b], sample_a=a, sample_b=b), s[~genuine], s[genuine]


@pytest.mark.parametrize("seed, ties", [(0, False), (1, True), (2, False)])
def test_bob_far_threshold_and_its_fnmr(seed, ties):
    """bob's threshold is the lowest impostor score with FAR <= target (above every impostor when none is): FNMR
    as bob's ``farfrr`` counts it (positives < threshold), never below the default rule's."""
    data, neg, pos = _data(seed, ties)
    targets = [0.3, 0.05, 1e-2, 1e-3, 1e-4, 0.0]
    bob = ma.audit(data, fmr=targets, measures=ma.MeasureOptions(calibration=False, fmr_threshold="bob"),
                   intervals=False)
    ours = ma.audit(data, fmr=targets, measures=ma.MeasureOptions(calibration=False), intervals=False)
    assert bob.config.to_dict()["threshold_definition"].startswith("bob.measure far_threshold")
    lower = 0
    for far in targets:
        t = bob_far_threshold(neg, far)
        row, default = bob.at_fmr(far).loc["all"], ours.at_fmr(far).loc["all"]
        assert row.threshold == t
        assert row.fnmr_errors == int((pos < t).sum()) and row.fmr_errors == int((neg >= t).sum())
        assert default.fmr_errors == row.fmr_errors and default.fnmr_errors <= row.fnmr_errors
        lower += default.fnmr_errors < row.fnmr_errors
    assert lower > 0 or ties  # a genuine score lies between the two thresholds: the test tells the rules apart


def test_bob_threshold_is_refused_where_it_would_not_describe_the_numbers():
    data, _, _ = _data(0, False)
    with pytest.raises(ma.InputError, match="intervals=False") as e:
        ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(fmr_threshold="bob"))
    assert e.value.param == "fmr_threshold"
    with pytest.raises(ma.InputError, match="rule '>='"):
        ma.audit(data, fmr=1e-2, rule=">", measures=ma.MeasureOptions(fmr_threshold="bob"), intervals=False)


def sre16_min_dcf(scores: np.ndarray, labels: np.ndarray, p_target: float) -> float:
    """The NIST SRE'16 scorer v4.1 (wespeaker/utils/score_metrics.py): ``compute_pmiss_pfa_rbst`` then
    ``compute_c_norm``, transcribed: per trial in score order, FNR and FPR with the threshold just above it."""
    order = np.argsort(scores)
    lab = labels[order]
    fnr = np.cumsum(lab == 1) / np.sum(lab == 1)
    fpr = 1 - np.cumsum(lab == 0) / np.sum(lab == 0)
    return float(min(fnr * p_target + fpr * (1 - p_target)) / min(p_target, 1 - p_target))


@pytest.mark.parametrize("p_target", [0.01, 0.05, 0.5])
def test_min_dcf_equals_the_sre16_scorers_on_tie_free_scores(p_target):
    """docs/conventions.md, minDCF row: equal on tie-free scores when the minimum is not at the accept-all point
    (the scorer has no such point; here it never wins: FPR 1 costs more than rejecting all)."""
    data, neg, pos = _data(3, False)
    res = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False, dcf_p_target=p_target),
                   intervals=False)
    ours = res.curves.query("group == 'all' and weighting == 'pooled'").min_dcf.item()
    s = np.concatenate([pos, neg])
    theirs = sre16_min_dcf(s, np.r_[np.ones(pos.size), np.zeros(neg.size)], p_target)
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_the_recorded_definitions_follow_the_options():
    """results.json's config said "ROC convex hull" whatever --eer chose."""
    data, _, _ = _data(0, False)
    cfg = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False, eer="interpolated"),
                   intervals=False).config.to_dict()
    assert cfg["eer_definition"].startswith("NIST SRE'16") and cfg["fmr_threshold"] == "lowest-score"
    assert cfg["threshold_definition"].startswith("lowest observed score")


def speechbrain_eer(positive: np.ndarray, negative: np.ndarray) -> float:
    """speechbrain.utils.metric_stats.EER, transcribed without torch: thresholds at the distinct scores and the
    midpoints between them; FRR = positives <= t, FAR = negatives > t; the first threshold with the smallest
    |FAR - FRR|; EER their mean."""
    t = np.unique(np.concatenate([positive, negative]))
    t = np.sort(np.concatenate([t, (t[:-1] + t[1:]) / 2]))
    frr = (positive[None, :] <= t[:, None]).mean(axis=1)
    far = (negative[None, :] > t[:, None]).mean(axis=1)
    i = int(np.argmin(np.abs(far - frr)))
    return float((far[i] + frr[i]) / 2)


@pytest.mark.parametrize("seed, ties", [(0, False), (1, True), (4, False), (5, True)])
def test_closest_eer_is_speechbrains(seed, ties):
    """docs/conventions.md, the speechbrain row: ``eer="closest"`` equals speechbrain's EER computed its
    way, overall and per group, tied scores included (its operating point often lies inside a run of impostor
    scores: the audit refines that run)."""
    data, neg, pos = _data(seed, ties)
    res = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False, eer="closest"), intervals=False)
    ours = res.curves.query("group == 'all' and weighting == 'pooled'").eer.item()
    assert ours == pytest.approx(speechbrain_eer(pos, neg), rel=1e-12, abs=1e-15)
    assert res.config.to_dict()["eer_definition"].startswith("speechbrain")
    from matchaudit.report.html import _det

    assert "EER (closest, speechbrain)" in _det(res.to_dict(), Path("."))  # the report's column says which EER
    other = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False), intervals=False).curves
    assert not np.isclose(ours, other.query("group == 'all' and weighting == 'pooled'").eer.item())  # tells apart


def test_closest_eer_rows_of_the_bootstrap_grid():
    """The replicates' version on grid curves: any order of points, the accept-all point left out, first minimum."""
    from matchaudit.metrics.rates import closest_eer_rows

    x = np.array([[0.0, 1.0, 0.5, 0.3, 0.1], [1.0, 0.6, 0.4, 0.2, 0.0]])
    y = np.array([[1.0, 0.0, 0.1, 0.25, 0.6], [0.0, 0.5, 0.6, 0.8, 1.0]])
    np.testing.assert_allclose(closest_eer_rows(x, y), [(0.3 + 0.25) / 2, (0.6 + 0.5) / 2])
    assert np.isnan(closest_eer_rows(np.array([1.0, np.nan, 0.0]), np.array([0.0, 0.5, 1.0])))


def pyeer_eer(gscores: np.ndarray, iscores: np.ndarray) -> float:
    """pyeer 0.5 ``calculate_roc`` then ``get_eer_values`` (pyeer/eer_stats.py), transcribed."""
    scores = np.array(sorted([(s, 1) for s in gscores] + [(s, 0) for s in iscores], key=lambda r: r[0]))
    cumul = np.cumsum(scores[:, 1])
    _, u = np.unique(scores[:, 0], return_index=True)
    fnm = cumul[u] - scores[u][:, 1]
    fm = iscores.size - (u - fnm)
    fmr, fnmr = fm / iscores.size, fnm / gscores.size
    diff = fmr - fnmr
    t2 = np.where(diff <= 0)[0][0]
    t1 = t2 - 1 if diff[t2] != 0 and t2 != 0 else t2
    if fmr[t1] + fnmr[t1] <= fmr[t2] + fnmr[t2]:
        return float((fnmr[t1] + fmr[t1]) / 2)
    return float((fnmr[t2] + fmr[t2]) / 2)


@pytest.mark.parametrize("seed, ties", [(0, False), (1, True), (4, False), (5, True)])
def test_fvc2000_eer_is_pyeers(seed, ties):
    """docs/conventions.md, the pyeer row: ``eer="fvc2000"`` equals pyeer's EER computed its way."""
    data, neg, pos = _data(seed, ties)
    res = ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False, eer="fvc2000"), intervals=False)
    assert res.curves.query("group == 'all' and weighting == 'pooled'").eer.item() == pytest.approx(
        pyeer_eer(pos, neg), rel=1e-12, abs=1e-15)


def test_fvc2000_eer_rows_of_the_bootstrap_grid():
    from matchaudit.metrics.rates import fvc2000_eer_rows

    x = np.array([[1.0, 0.5, 0.3, 0.1, 0.0], [1.0, 0.6, 0.4, 0.2, 0.0]])
    y = np.array([[0.0, 0.1, 0.25, 0.6, 1.0], [0.0, 0.5, 0.6, 0.8, 1.0]])
    # row 1: first FMR <= FNMR at (0.1, 0.6), before it (0.3, 0.25): sums 0.7 and 0.55; row 2: (0.4, 0.6) vs (0.6, 0.5)
    np.testing.assert_allclose(fvc2000_eer_rows(x, y), [0.55 / 2, 1.0 / 2])
