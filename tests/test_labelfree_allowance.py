"""The misspecification allowance of the family-robust label-free estimate (#44): beyond ``effective_scores``
unlabelled scores a group's robust bands stop narrowing (every family's draws spread by ``sqrt(n / effective)``
about their median), while each family's own bands and the alarm stay as they were."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from matchaudit.errors import InputError
from matchaudit.labelfree import estimate, robust
from matchaudit.labelfree.result import RateDraws


def test_the_factor_is_sqrt_n_over_effective_beyond_it_and_one_otherwise():
    f = robust.allowance([100, 7000, 28000, 70000, 28000, 28000], [0, 0, 0, 0, 499, 500], 7000)
    assert f.tolist() == [1.0, 1.0, 2.0, np.sqrt(10.0), 2.0, 1.0]  # 500 labelled pairs anchor the split, 499 do not
    assert robust.allowance([10**6, 5], [0, 0], None).tolist() == [1.0, 1.0]
    assert robust.allowance_reasons([100, 28000, 28000], [0, 0, 500], 7000) == ["few scores", "spread", "labelled pairs"]
    assert robust.allowance_reasons([10**6], [0], None) == ["off"]


def _draws(rng: np.random.Generator) -> RateDraws:
    m, g, a, k = 201, 3, 2, 4
    rate = rng.beta(2.0, 30.0, (m, g, a))
    rate[:7, 1, 0] = 0.0  # rates of exactly 0 and 1 (finite-sample counts)
    rate[:3, 2, 1] = 1.0
    curve = np.sort(rng.beta(2.0, 10.0, (m, g, k)), axis=2)[:, :, ::-1]  # FNMR falls as the FMR grid rises
    return RateDraws(rate, rng.normal(0.3, 0.2, (m, g, a)), rng.normal(0.31, 0.2, (m, a)), rng.beta(1.0, 500.0, (m, g, a)),
                     rng.beta(3.0, 20.0, (m, g, a)), np.logspace(-4, -1, k), curve, np.zeros((g, a), bool))


def _angle(x: np.ndarray) -> np.ndarray:
    return np.arcsin(np.sqrt(x))


def test_the_draws_are_spread_about_their_median_on_the_angle_scale_and_thresholds_as_scores():
    d = _draws(np.random.default_rng(0))
    f = np.array([1.0, 4.0, 2.25])
    w = robust.widened(d, f, (-1.0, 1.0))
    for name in ("fnmr", "gfmr", "gfnmr"):
        x, y = getattr(d, name), getattr(w, name)
        assert np.array_equal(y[:, 0], x[:, 0])  # a group at factor 1 is untouched, bit for bit
        assert ((y >= 0) & (y <= 1)).all()
        for gi in (1, 2):
            m = np.median(_angle(x[:, gi]), axis=0)
            want = np.clip(m + f[gi] * (_angle(x[:, gi]) - m), 0, np.pi / 2)
            np.testing.assert_allclose(_angle(y[:, gi]), want, rtol=0, atol=1e-12)
            assert (np.quantile(y[:, gi], 0.95, axis=0) >= np.quantile(x[:, gi], 0.95, axis=0)).all()
            assert (y[:, gi][x[:, gi] == 0] == 0).all() and (y[:, gi][x[:, gi] == 1] == 1).all()
    mt = np.median(d.thr, axis=0)
    np.testing.assert_allclose(w.thr[:, 1:], np.clip(mt + f[None, :, None] * (d.thr - mt), -1, 1)[:, 1:], rtol=0, atol=1e-15)
    assert w.thr.max() == 1.0 and w.thr.min() == -1.0  # spread past the scores' support: kept inside it
    mg = np.median(d.gt, axis=0)
    np.testing.assert_allclose(w.gt, np.clip(mg + 4.0 * (d.gt - mg), -1, 1), rtol=0, atol=1e-15)  # the largest factor
    assert (np.diff(w.curve, axis=2) <= 0).all() and np.array_equal(w.curve[:, 0], d.curve[:, 0])  # each curve falls
    assert np.array_equal(w.grid, d.grid) and np.array_equal(w.extrapolated, d.extrapolated)
    assert robust.widened(d, np.ones(3)) is d  # nothing to spread: the same draws


def test_tail_rates_stay_small_mostly_zero_columns_spread_and_a_nan_draw_is_ignored():
    """The faults of spreading on the logit scale: a rate of 1e-27 with tail draws near 1e-3 was flung to 0.995, and
    a column with half its draws at 0 (an infinite median) was not spread at all."""
    rng = np.random.default_rng(1)
    tiny = np.exp(rng.normal(-62.0, 12.0, (400, 1, 1)))  # medians near 1e-27, a few draws near 1e-3
    assert robust.spread(tiny, np.array([2.45]), True).max() < 0.05
    zeros = np.where(rng.random((400, 1, 1)) < 0.55, 0.0, rng.beta(2.0, 30.0, (400, 1, 1)))
    assert np.quantile(robust.spread(zeros, np.array([2.0]), True), 0.945) > 1.5 * np.quantile(zeros, 0.945)
    nan = rng.beta(2.0, 30.0, (401, 1, 1))
    nan[0] = np.nan
    out = robust.spread(nan, np.array([2.0]), True)
    assert np.isnan(out[0]).all() and np.isfinite(out[1:]).all() and np.nanquantile(out, 0.95) > np.nanquantile(nan, 0.95)


FAST = dict(sampler="numpy", chains=4, warmup=300, draws=300, finite_draws=100, ppc_replicates=10, fmr=(1e-2,))


@pytest.fixture(scope="module")
def fits() -> tuple:
    """Two groups of 1,500 cosine-like scores; B has 500 labelled pairs (enough not to be spread). The same fit
    without and with an allowance of 300 scores (A spread by sqrt(1500 / 300))."""
    rng = np.random.default_rng(3)

    def group(n: int, pi: float) -> tuple[np.ndarray, np.ndarray]:
        y = (rng.random(n) < pi).astype(float)
        return np.where(y == 1, np.tanh(rng.normal(0.8, 0.3, n)), np.tanh(rng.normal(0.0, 0.1, n))), y

    (sa, _), (sb, yb) = group(1500, 0.1), group(1500, 0.2)
    labels = np.r_[np.full(1500, np.nan), np.where(np.arange(1500) < 500, yb, np.nan)]
    s, g = np.r_[sa, sb], np.repeat(["A", "B"], 1500)
    seen = []  # the results the alarm reads (robust.disagreements), per call
    real = robust.disagreements
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        sharp = estimate(s, g, labels, effective_scores=None, **FAST)
        mp.setattr(robust, "disagreements", lambda results, *a, **k: seen.append(results) or real(results, *a, **k))
        wide = estimate(s, g, labels, effective_scores=300, **FAST)
    return sharp, wide, seen


def test_only_the_robust_bands_of_an_unlabelled_group_beyond_the_allowance_widen(fits):
    sharp, wide, seen = fits
    for f in sharp.by_family:  # each family's own estimate is the same
        assert wide.by_family[f].to_dict() == sharp.by_family[f].to_dict()
    assert {n: wide.selection[n]["alarm"] for n in "AB"} == {n: sharp.selection[n]["alarm"] for n in "AB"}
    assert len(seen) == 2 and all(r[f] is wide.by_family[f].results for r in seen for f in r)  # the alarm: own bands
    assert wide.selection["A"]["allowance"] == {"unlabelled_scores": 1500, "labelled_pairs": 0,
                                                "effective_scores": 300, "spread": pytest.approx(np.sqrt(5.0)),
                                                "reason": "spread"}
    assert wide.selection["B"]["allowance"]["spread"] == 1.0 and wide.selection["B"]["allowance"]["reason"] == "labelled pairs"
    wider = 0
    for kind in ("population", "finite-sample"):
        for q in ("fnmr_at_fmr", "fmr_at_global", "fnmr_at_global", "threshold_at_fmr"):
            for a, b in zip(sharp.results[kind][q], wide.results[kind][q]):
                if a["group"] == "B":
                    assert (a["lower"], a["upper"]) == (b["lower"], b["upper"])  # labelled: not spread
                else:
                    assert b["lower"] <= a["lower"] + 1e-12 and b["upper"] >= a["upper"] - 1e-12
                    if q.startswith("fnmr"):
                        wider += (b["upper"] - b["lower"]) > 1.5 * (a["upper"] - a["lower"])
    assert wider == 4  # A's FNMR bands (a union of family bands that lie apart, FMR's here, widens less)
    frame = wide.to_frame()
    robust_rows = frame[frame["family"] == "robust"]
    want = robust_rows["group"].map({"A": np.sqrt(5.0), "B": 1.0, "all": np.sqrt(5.0)})
    np.testing.assert_allclose(robust_rows["spread"], want)  # the global threshold: the largest factor
    assert (frame.loc[frame["family"] != "robust", "spread"] == 1.0).all()
    assert any(x.startswith("misspecification allowance: the robust bands of A (1,500 scores") for x in wide.limits)
    assert not any(x.startswith("misspecification allowance") for x in sharp.limits)


def test_the_union_is_over_the_spread_bands_of_the_families_used(fits):
    _, wide, _ = fits
    used = wide.selection["A"]["used"]
    f = robust.allowance([1500, 1000], [0, 500], 300)
    from matchaudit.labelfree.api import _outputs
    for kind in ("population", "finite-sample"):
        bands = [next(e for e in _outputs(robust.widened(wide.by_family[m].rate_draws[kind], f, (-1.0, 1.0)), wide.level,
                                          wide.fmr_targets, ["A", "B"])["fnmr_at_fmr"] if e["group"] == "A")
                 for m in used]
        got = next(e for e in wide.results[kind]["fnmr_at_fmr"] if e["group"] == "A")
        assert got["lower"] == min(b["lower"] for b in bands) and got["upper"] == max(b["upper"] for b in bands)


def test_effective_scores_is_checked():
    with pytest.raises(InputError) as e:
        estimate(np.linspace(-0.5, 0.9, 300), np.zeros(300), effective_scores=50)
    assert e.value.param == "effective_scores"


def test_the_command_takes_effective_scores_or_none_and_refuses_it_with_one_family(tmp_path):
    path = tmp_path / "s.csv"
    pd.DataFrame({"score": np.linspace(-0.5, 0.9, 300), "group": "A"}).to_csv(path, index=False)
    runner = CliRunner()
    for args, flag in ((["--effective-scores", "50"], "--effective-scores"), (["--effective-scores", "x"], "--effective-scores"),
                       (["--effective-scores", "1000", "--family", "sas"], "--effective-scores")):
        res = runner.invoke(app, ["estimate", str(path), "--out", str(tmp_path / "o"), *args])
        assert res.exit_code == 2 and flag in res.output and "Traceback" not in res.output, res.output
        assert not (tmp_path / "o").exists()


def test_a_group_is_alarmed_unless_two_families_fit_and_their_chains_settle():
    why = {"sas": "", "t": "KS check p 0.000", "sas-mix": "tail check p 0.000"}
    assert robust.alarm_notes("A", ["sas", "t"], {**why, "t": ""}, {}) == []  # two fit, chains settle: no alarm
    one = robust.alarm_notes("A", ["sas"], why, {})
    assert len(one) == 1 and one[0].startswith("group A: only sas fits its scores")
    assert "t: KS check p 0.000; sas-mix: tail check p 0.000" in one[0] and "sas:" not in one[0].split("others:")[1]
    none = robust.alarm_notes("A", [], {k: v or "KS check p 0.0005" for k, v in why.items()}, {})
    assert len(none) == 1 and none[0].startswith("group A: no family fits its scores (sas: KS check p 0.0005; t:")
    split = robust.alarm_notes("B", ["sas", "t"], {**why, "t": ""}, {"t": 1.31})
    assert len(split) == 1 and "t (R-hat 1.31) settle in different places" in split[0]
    assert len(robust.alarm_notes("B", ["sas"], why, {"sas": 1.5})) == 2


def test_the_command_help_states_the_library_default():
    import inspect

    from matchaudit.cli import estimate as cli_estimate

    option = inspect.signature(cli_estimate.estimate).parameters["effective_scores"].default
    assert f"(default {robust.EFFECTIVE_SCORES};" in option.help
