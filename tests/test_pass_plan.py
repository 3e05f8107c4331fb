"""The passes an audit shares (``auditing.pass_plan``): fewer passes over the score matrix, the same numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

import matchaudit as ma
from matchaudit import scores
from matchaudit.auditing import core, intervals
from matchaudit.engine import identity
from matchaudit.simulation import GroupSpec, simulate_vmf

from tests.engine_reference import make_data


def _audit(data: ma.MatchData, monkeypatch) -> tuple[int, int, str]:
    """(tiles scored, identity-count passes of their own, results as JSON) of an audit with intervals and group tests
    at three FMR targets and an FNMR target."""
    tiles, passes = [], []
    real_tile, real_hits = scores._tile, identity._all_pairs_hits
    monkeypatch.setattr(scores, "_tile", lambda *a, **k: (tiles.append(1), real_tile(*a, **k))[1])
    monkeypatch.setattr(identity, "_all_pairs_hits", lambda *a: (passes.append(1), real_hits(*a))[1])
    a = ma.audit(data, fmr=(1e-1, 1e-2, 3e-2), fnmr=(5e-2,), intervals=ma.IntervalOptions(n_resamples=40),
                 tests=ma.TestOptions(n_resamples=19))
    monkeypatch.setattr(scores, "_tile", real_tile)
    monkeypatch.setattr(identity, "_all_pairs_hits", real_hits)
    return len(tiles), len(passes), json.dumps(a.to_dict(), sort_keys=True, default=str)


def test_the_audit_scores_the_matrix_twice_and_sharing_changes_no_number(monkeypatch):
    """Scores streamed (the tile cache holds nothing; one tile a pass on data this small): besides the exact tally
    (which finds the tests' plug-in thresholds too), one pass counts the pooled and the balanced replicates, the
    identities that the cross-group cells and the 8 test families share, and keeps every comparison for the score
    views (calibration, distributions, the FNMR target). Without one pass for the bootstrap (each weighting its own,
    the identity counts and the comparisons their own first): 2 passes more. Without any plan: 3 identity passes more
    (the cross-group cells, and each FMR target's threshold error at twice and half the target; the families at the
    audit's thresholds are derived from the cross-group pass either way), 6 threshold passes (each target, then
    twice and half of it), each also scoring a tile for its grid's sample of scores, and the score views' own. The
    same results, to the byte, every way. (On data this small the tally's refinement and the grid's sample score a
    tile each too; at 12,000 samples the audit scored the matrix 17 times before the plan, 5 with the shared identity
    and threshold passes, 2 now: ``bench/score_passes.py``.)"""
    data = simulate_vmf({"A": GroupSpec(30, (20.0, 60.0)), "B": GroupSpec(20, (15.0, 40.0))}, dim=16,
                        samples_per_identity=5, seed=3).as_data()
    monkeypatch.setattr(scores, "CACHE_BYTES", 0)
    tiles, passes, shared = _audit(data, monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(intervals, "one_pass", lambda *args: False)
        tiles_apart, passes_apart, apart = _audit(data, monkeypatch)
        m.setattr(core, "share_passes", lambda *args: [])
        m.setattr(core, "tested_targets", lambda *args: ())  # the tally finds no thresholds for the tests
        tiles_alone, passes_alone, alone = _audit(data, monkeypatch)
    assert (tiles, passes, passes_apart, passes_alone) == (4, 0, 0, 4)  # shared: fed by another pass
    assert tiles_apart - tiles == 2
    assert tiles_alone - tiles_apart == 3 + 2 * 6 + 1
    assert shared == apart == alone


def test_no_shared_pass_when_its_result_would_not_be_kept(monkeypatch):
    """The plan shares the identity counts only when their result fits what the cache keeps (estimated from the
    audit's loosest FMR): a pass whose result is dropped would be one pass more, not fewer. With intervals they ride
    the bootstrap's pass (an accumulator to feed), else they get a pass of their own."""
    from matchaudit.auditing import pass_plan

    data = simulate_vmf({"A": GroupSpec(12, (20.0, 60.0)), "B": GroupSpec(10, (15.0, 40.0))}, dim=16,
                        samples_per_identity=4, seed=5).as_data()
    exact = ma.audit(data, fmr=(1e-1, 1e-2), intervals=False).exact
    options = ma.IntervalOptions(n_resamples=40)
    made = []
    real = identity._all_pairs_hits
    monkeypatch.setattr(identity, "_all_pairs_hits", lambda *a: (made.append(1), real(*a))[1])
    with scores.tile_cache():
        assert len(pass_plan.share_passes(data, exact, options, ma.TestOptions())) == 1
        assert pass_plan.share_passes(data, exact, None, ma.TestOptions()) == []
    assert made == [1]
    # the loosest threshold accepts 2 x 10% of the impostors (the tests' twice-the-target): 10 bytes each
    monkeypatch.setattr(scores, "RESULT_BYTES", int(10 * 0.2 * data.n_comparisons()) - 1)
    with scores.tile_cache():
        assert pass_plan.share_passes(data, exact, options, ma.TestOptions()) == []
        pass_plan.share_passes(data, exact, None, ma.TestOptions())
    assert made == [1]


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("impostors", ["all", "same-group"])
@pytest.mark.parametrize("predicted", [False, True])
def test_the_tally_answers_the_tests_thresholds_as_the_engine_would(monkeypatch, rule, impostors, predicted):
    """The thresholds the exact tally holds for :func:`target_thresholds` (``evaluate(also_fmr=...)``) are the
    engine's own, bit for bit (tied scores, three groups, targets between and at the data's FMR steps, 0 and the
    targets' twice and half), whether the tally collected the cells on its pass (``predicted``) or refined them
    after; and the engine makes no pass for them."""
    from matchaudit.engine import driver, target_thresholds
    from matchaudit.metrics import windows
    from matchaudit.metrics.evaluate import AuditConfig, evaluate

    if predicted:
        monkeypatch.setattr(windows, "MIN_SAMPLES", 0)
    data = make_data(seed=4, sizes=(3, 4, 5, 2, 6, 1, 4, 5, 3, 4, 2, 7), groups=(0, 1, 2) * 4, dim=3)
    also = np.unique([t for a in (0.2, 0.05, 0.01, 0.0) for t in (a, 2 * a, a / 2)])
    config = AuditConfig(fmr_targets=(0.2, 0.05), rule=rule, threshold_impostors=impostors)
    alone = target_thresholds(data, also, rule, impostors)
    with scores.tile_cache():
        evaluate(data, config, also_fmr=also)
        monkeypatch.setattr(driver, "run", None)  # a pass would fail
        held = target_thresholds(data, also, rule, impostors)
        some = target_thresholds(data, also[::2], rule, impostors)
    np.testing.assert_array_equal(held, alone)
    np.testing.assert_array_equal(some, alone[::2])
    assert np.isfinite(alone).sum() > 4 and np.unique(alone).size > 4


def test_one_pass_only_when_every_weighting_fits_the_budget_at_once():
    """The pooled and balanced replicates share a scoring pass only when both tables fit the memory budget together
    (beside the statistics kept), not merely each alone: the budget is what bounds the tables held at once."""
    from matchaudit.auditing import intervals as ai
    from matchaudit.engine import chunks

    data = simulate_vmf({"A": GroupSpec(12, (20.0, 60.0)), "B": GroupSpec(10, (15.0, 40.0))}, dim=16,
                        samples_per_identity=4, seed=5).as_data()
    both = ("pooled", "balanced")
    per = [p.per_replicate for p in ai.plan_chunks(data, ma.IntervalOptions(n_resamples=100, memory_gb=100.0), both)]
    kept = 101 * (1 + data.n_groups) * 8 * (60 + 16) * 2
    for total, fits in ((kept + 101 * sum(per), True), (kept + 101 * max(per) + 102, False)):
        options = ma.IntervalOptions(n_resamples=100, memory_gb=total / 1e9)
        plans = ai.plan_chunks(data, options, both)
        assert [p.runs for p in plans] == [1, 1] and chunks.budget_bytes(options.memory_gb) == total
        assert ai.one_pass(data, options, plans) is fits


@pytest.mark.parametrize("method", ["double-or-nothing", "recentered"])
def test_the_score_views_from_the_kept_triangle_equal_their_own_pass(monkeypatch, method):
    """The comparisons a scoring pass keeps (:class:`scores.Triangle`, fed tiles of another height than the views'
    own stream) give the score views that their own pass gives, array for array (the recentered ones with the
    self-pairs appended), and the views then score no tile; they are handed over (held no longer). The plan keeps
    them only where it pays and fits: score views wanted, intervals, all pairs, not cached, within the budgets."""
    from matchaudit.auditing import pass_plan
    from matchaudit.engine.passes import feed
    from matchaudit.estimators import score_views as sv

    data = simulate_vmf({"A": GroupSpec(12, (20.0, 60.0)), "B": GroupSpec(9, (15.0, 40.0))}, dim=8,
                        samples_per_identity=4, seed=6).as_data()
    monkeypatch.setattr(scores, "CACHE_BYTES", 0)
    own = sv.materialise(data, method)
    options = ma.IntervalOptions(n_resamples=40)
    with scores.tile_cache():
        (kept,) = pass_plan.triangle(data, options, True)
        feed(data, 7, [kept])  # 7-row tiles: the views stream 2,048-row ones
        kept.done()
        tiles = []
        real = scores._tile
        monkeypatch.setattr(scores, "_tile", lambda *a, **k: (tiles.append(1), real(*a, **k))[1])
        views = sv.materialise(data, method)
        assert tiles == [] and scores.hand_over(*kept.key) is None
    for f in ("score", "genuine", "view", "kind", "u", "v", "reference"):
        np.testing.assert_array_equal(getattr(views, f), getattr(own, f), err_msg=f)
    assert pass_plan.triangle(data, options, False) == [] and pass_plan.triangle(data, None, True) == []
    assert pass_plan.triangle(data, ma.IntervalOptions(n_resamples=40, memory_gb=1e-6), True) == []
    monkeypatch.setattr(scores, "CACHE_BYTES", 1 << 30)
    assert pass_plan.triangle(data, options, True) == []  # the tile cache holds the matrix: read from it anyway
