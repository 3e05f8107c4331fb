"""One definition of the threshold at an FMR target (matchaudit.definitions), and every implementation held to it:
the exact metrics, the engine's Numba kernels, the paired model comparison, the bootstrap's grid readers and the
label-free counted rates. Targets sit exactly at k/N and one ulp either side, with ties, both rules, empty
reference sets and NaN, where a `<` for `<=`, a fudge factor or a NaN that passes gives another threshold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import matchaudit as ma
from matchaudit.definitions import accepting_thresholds, accepts, fmr_passes, lowest_passing, max_accepted
from matchaudit.engine.identity import _level
from matchaudit.engine.target_kernels import fmr_ok as _fmr_ok
from matchaudit.estimators.bootstrap import fnmr_at_fmr_grid
from matchaudit.estimators.compare import fnmr_at_fmr_scores
from matchaudit.labelfree.curves import empirical_at_fmr
from matchaudit.metrics.evaluate import AuditConfig, evaluate


def _near(k: int, n: int) -> list[float]:
    a = k / n
    return [a, float(np.nextafter(a, -np.inf)), float(np.nextafter(a, np.inf))]


def _brute_threshold(scores: np.ndarray, impostor: np.ndarray, alpha: float, rule: str) -> float:
    """The definition, literally: the lowest candidate (any observed score, or +inf) whose FMR over the
    impostors, one division compared with <=, is at most alpha; +inf if none (or no impostors)."""
    imp = scores[impostor]
    for t in np.append(np.unique(scores), np.inf):
        accepted = np.count_nonzero(imp >= t if rule == ">=" else imp > t)
        if imp.size and accepted / imp.size <= alpha:
            return float(t)
    return np.inf


def test_the_boundary_that_the_old_fudge_got_wrong():
    """0.003 (1 - 1e-13) at N = 1000: 3/1000 is above the target, so at most 2 impostors may be accepted (a
    floor(target N (1 + 1e-12)) gave 3 in the model comparison while the engine gave 2)."""
    target = 0.003 * (1 - 1e-13)
    assert max_accepted(1000, target) == 2 and not _fmr_ok(3, 1000, target) and _fmr_ok(2, 1000, target)
    imp = np.arange(1000, dtype=float)  # impostor scores 0..999; genuine scores sit between
    gen = np.array([996.5, 997.5, 998.5])
    score = np.concatenate([imp, gen])[None]
    genuine = np.r_[np.zeros(1000, bool), np.ones(3, bool)]
    # k = 2: q = 997 (the 3rd largest impostor); genuine 996.5 rejected, 997.5 and 998.5 accepted
    assert fnmr_at_fmr_scores(score, genuine, ~genuine, target)[0] == pytest.approx(1 / 3)
    assert fnmr_at_fmr_scores(score, genuine, ~genuine, 0.003)[0] == pytest.approx(0.0)  # k = 3: q = 996


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 5000), k=st.integers(0, 5000), side=st.sampled_from([0, 1, 2]))
def test_max_accepted_and_the_numba_kernel_agree_with_the_division(n, k, side):
    k = min(k, n)
    alpha = _near(k, n)[side]
    want = max((j for j in range(max(0, k - 2), min(n, k + 2) + 1) if j / n <= alpha), default=-1)
    assert max_accepted(n, alpha) == want
    assert _fmr_ok(want, n, alpha) and (want == n or not _fmr_ok(want + 1, n, alpha))
    assert bool(fmr_passes(want / n, alpha)) and (want == n or not fmr_passes((want + 1) / n, alpha))


def test_an_undefined_fmr_never_passes():
    assert max_accepted(0, 0.5) == -1 and not _fmr_ok(0, 0, 0.5) and not fmr_passes(np.nan, 1.0)
    fmr = np.array([[0.5, 0.1, 0.0], [np.nan, np.nan, np.nan]])
    np.testing.assert_array_equal(lowest_passing(fmr, np.array([0.1, 0.0])), [[1, 2], [3, 3]])
    fnmr = np.array([[0.0, 0.2, 0.6], [np.nan, np.nan, np.nan]])
    got = fnmr_at_fmr_grid(fmr, fnmr, np.array([0.1]))
    # a curve without impostors has no FNMR at any FMR: NaN, dropped by intervals and bands (a threshold search
    # over a fixed score set without impostors still gives +inf and FNMR 1, as fnmr_at_fmr_scores below)
    np.testing.assert_array_equal(got, [[0.2], [np.nan]])
    # no edge passes (every FMR above the target): the threshold is +inf, FNMR 1
    got = fnmr_at_fmr_grid(np.array([[0.5, 0.3, 0.2]]), fnmr[:1], np.array([0.1, 0.25, 0.5]))
    np.testing.assert_array_equal(got, [[1.0, 0.6, 0.0]])
    score = np.array([[0.1, 0.9]])
    genuine = np.array([True, True])
    assert fnmr_at_fmr_scores(score, genuine, ~genuine, 0.1)[0] == 1.0


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("seed", range(6))
def test_every_implementation_gives_the_defined_threshold(rule, seed):
    """Small comparison tables with heavy ties (scores on a coarse lattice): the audit's threshold, the paired
    comparison's FNMR and the label-free counted rates equal the brute-force definition at k/N and k/N +- 1 ulp."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 8, size=(60, 2))
    genuine = ids[:, 0] == ids[:, 1]
    score = np.round(rng.normal(genuine * 1.0, 1.0), 1)
    n_imp = int((~genuine).sum())
    targets = sorted({a for k in (0, 1, 2, 3, n_imp // 2) for a in _near(k, n_imp) if 0 <= a < 1})
    data = ma.from_scores(score, ids[:, 0], ids[:, 1])
    res = evaluate(data, AuditConfig(fmr_targets=tuple(targets), rule=rule, weightings=("pooled",)))
    got = {p["target"]: p for p in res.operating_points if p["group"] == "all" and p["kind"] == "fmr_target"}
    for a in targets:
        t = _brute_threshold(score, ~genuine, a, rule)
        assert got[a]["threshold"] == t, (a, rule)
        want_fnmr = np.mean(~(score[genuine] >= t if rule == ">=" else score[genuine] > t))
        assert got[a]["fnmr"] == pytest.approx(want_fnmr, abs=1e-15)
        assert fnmr_at_fmr_scores(score[None], genuine, ~genuine, a)[0] == pytest.approx(want_fnmr, abs=1e-15)
        thr, fmr, fnmr = empirical_at_fmr(score, genuine.astype(float), np.array([a]), rule)
        assert thr[0, 0] == t and fnmr[0, 0] == pytest.approx(want_fnmr, abs=1e-15)


def test_label_free_counted_rates_without_non_matches_give_plus_infinity():
    thr, fmr, fnmr = empirical_at_fmr(np.array([0.2, 0.5, 0.9]), np.ones(3), np.array([0.1]))
    assert thr[0, 0] == np.inf and fnmr[0, 0] == 1.0


@pytest.mark.parametrize("rule", [">=", ">"])
def test_the_accept_rule_and_the_identity_counts_level_agree(rule):
    """Ties between scores and thresholds, both rules, infinities: the count of accepting thresholds from the
    definition, from the rule itself, and from the Numba copy the identity counts use."""
    rng = np.random.default_rng(0)
    ts = np.unique(np.r_[np.round(rng.normal(size=20), 1), -np.inf, np.inf])
    scores = np.r_[np.round(rng.normal(size=500), 1), ts[1:-1]]
    brute = accepts(scores[:, None], ts[None, :], rule).sum(axis=1)
    np.testing.assert_array_equal(accepting_thresholds(scores, ts, rule), brute)
    np.testing.assert_array_equal([_level(s, ts, rule == ">=") for s in scores], brute)


def test_lowest_passing_equals_the_count_of_failing_candidates():
    """The search over non-increasing rows (read backwards, sorted) gives the count of candidates that fail (the definition for
    a non-increasing row), with ties, undefined (NaN) rows, a NaN inside a row, rows that are not monotone, a
    NaN target and scalar targets."""
    g = np.random.default_rng(0)
    for trial in range(600):
        c, r = int(g.integers(1, 40)), int(g.integers(1, 6))
        fmr = -np.sort(-g.choice([0, 0.1, 0.2, 0.25, 0.5, 1.0, g.random()], size=(r, 3, c)), axis=-1)
        if trial % 3 == 0:
            fmr[0, 1] = np.nan
        if trial % 5 == 0:
            fmr[-1, 0, 0] = np.nan
        if trial % 7 == 0:
            fmr[0, 0] = g.random(c)
        alpha = g.choice([0, 0.1, 0.2, 0.25, 0.5, 1.0, np.nan, g.random()], size=int(g.integers(1, 5)))
        if trial % 4 == 0:
            alpha = alpha[:1].reshape(())
        want = np.count_nonzero(~fmr_passes(fmr.reshape(fmr.shape[:-1] + (1,) * alpha.ndim + (c,)),
                                            alpha[..., None]), axis=-1)
        np.testing.assert_array_equal(lowest_passing(fmr, alpha), want)
