"""The label-free fit's tail check (#19 item 6): counts between the fitted thresholds near the operating points
against the model's, by brute force; calibrated when the model is right; fires on a heavy tail that the KS check
passes; reported and warned about by ``estimate``."""

import json

import numpy as np
import pytest

from matchaudit.labelfree import estimate, family, ppc
from matchaudit.labelfree.binned import compress

T = family("t")
NORMAL = family("normal")
MATCH = (3.2, 1.0, 1.0)


def _draws(m: int, pi: float, nonmatch: tuple, match: tuple = MATCH, d0: float = 1.0, d1: float = 1.0) -> dict:
    """A 'posterior' of ``m`` identical draws (the truth, or a chosen wrong model)."""
    one = {"pi": pi, "mu0": nonmatch[0], "s0L": nonmatch[1], "s0R": nonmatch[2], "delta0": d0,
           "mu1": match[0], "s1L": match[1], "s1R": match[2], "delta1": d1}
    return {k: np.full(m, float(v)) for k, v in one.items()}


def _sample(fam, rng, n: int, p: dict) -> np.ndarray:
    y = rng.random(n) < p["pi"][0]
    return np.where(y, fam.rvs(rng, n, *(p[k][0] for k in ("mu1", "s1L", "s1R", "delta1"))),
                    fam.rvs(rng, n, *(p[k][0] for k in ("mu0", "s0L", "s0R", "delta0"))))


def test_ladder_is_one_two_five_down_to_the_smallest_target():
    assert ppc.ladder(1e-3).tolist() == pytest.approx([0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 5e-3, 2e-3, 1e-3])
    assert ppc.ladder(0.3).tolist() == [0.5]


def test_bins_counts_and_expected_counts_by_brute_force():
    """Edges at the model's thresholds (FMR ladder, match quantiles), observed counts counted score by score,
    expected counts n * (F(high) - F(low)) of the mixture, every bin expecting at least MIN_EXPECTED."""
    rng = np.random.default_rng(0)
    p = _draws(20, 0.3, (0.0, 1.0, 1.3))
    p["mu0"] = p["mu0"] + np.linspace(-0.05, 0.05, 20)  # draws that differ: edges are posterior medians
    s = _sample(NORMAL, rng, 3000, p)
    tail = ppc.tail_check(NORMAL, compress(s, None), p, (1e-2,), np.random.default_rng(1))
    bins = tail["bins"]
    assert bins[0]["low"] == -np.inf and bins[-1]["high"] == np.inf
    assert [b["high"] for b in bins[:-1]] == [b["low"] for b in bins[1:]]
    assert sum(b["observed"] for b in bins) == s.size
    for b in bins:
        assert b["observed"] == np.count_nonzero((s >= b["low"]) & (s < b["high"]))
        cdf = lambda x: np.array([(1 - p["pi"][r]) * NORMAL.cdf(x, p["mu0"][r], 1.0, 1.3, 1.0)  # noqa: E731
                                  + p["pi"][r] * NORMAL.cdf(x, 3.2, 1.0, 1.0, 1.0) for r in range(20)])
        assert b["expected"] == pytest.approx(np.median(3000 * (cdf(b["high"]) - cdf(b["low"]))), rel=1e-9)
        assert b["expected"] >= ppc.MIN_EXPECTED
    named = {b["from"] for b in bins} | {b["to"] for b in bins}
    t01 = np.median(NORMAL.isf(0.01, p["mu0"], 1.0, 1.3, 1.0))
    assert "the threshold at FMR 0.01" in named
    assert any(b["low"] == pytest.approx(t01) for b in bins)


def test_calibrated_when_the_model_is_right():
    """Data drawn from the 'posterior' itself: the p-value is uniform, so the check fires in about 5% of data sets
    (60 data sets: at most 8 alarms, P(Binomial(60, 0.05) > 8) = 0.004) and not in none of them by construction."""
    p = _draws(50, 0.1, (0.0, 0.9, 1.1), d0=5.0, d1=20.0)
    pvalues = []
    for seed in range(60):
        s = _sample(T, np.random.default_rng(seed), 4000, p)
        pvalues.append(ppc.tail_check(T, compress(s, None), p, (1e-2, 1e-3), np.random.default_rng(seed))["pvalue"])
    pvalues = np.array(pvalues)
    assert np.count_nonzero(pvalues < ppc.TAIL_ALARM) <= 8
    assert 0.35 < np.mean(pvalues) < 0.65  # uniform: mean 1/2 (SE 0.037)


def test_fires_on_a_heavy_tail_that_the_ks_check_passes():
    """Non-matches t with 4 d.o.f.; the model: the normal closest to it in KS distance (SD 1.1843: distance 0.016).
    On 2,000 scores the bulk mostly agrees (the KS check rarely fires); the upper tail does not (the t puts 2.6x the normal's mass
    above the normal's 1e-2 threshold, 11x above its 1e-3 one)."""
    truth = _draws(50, 0.05, (0.0, 1.0, 1.0), d0=4.0, d1=1e6)
    wrong = _draws(50, 0.05, (0.0, 1.1843, 1.1843))
    tail_alarms, ks_alarms = 0, 0
    for seed in range(20):
        s = _sample(T, np.random.default_rng(seed), 2000, truth)
        cells = compress(s, None)
        ks = ppc.check(NORMAL, s, wrong, np.random.default_rng(seed), n_rep=50, cells=cells)
        tail = ppc.tail_check(NORMAL, cells, wrong, (1e-2, 1e-3), np.random.default_rng(seed))
        ks_alarms += ks["ks_pvalue"] < ppc.TAIL_ALARM
        tail_alarms += tail["alarm"]
        far = [b for b in tail["bins"] if b["low"] >= NORMAL.isf(1e-2, 0.0, 1.1843, 1.1843, 1.0) - 1e-9]
        assert sum(b["observed"] for b in far) > sum(b["expected"] for b in far)  # the tail holds more than modelled
        assert not ppc.tail_check(T, cells, truth, (1e-2, 1e-3), np.random.default_rng(seed))["alarm"]
    assert tail_alarms >= 16 and ks_alarms <= 10  # measured: 18 and 8 of 20


def test_estimate_reports_and_warns_when_the_tail_check_fires():
    """A normal-family fit of heavy-tailed non-matches: the warning names the bin, its count and the model's, and
    says what to do; results carry the check; the limits say what no unlabelled check can see."""
    rng = np.random.default_rng(1)
    n = 5000
    match = rng.random(n) < 0.05
    s = np.where(match, rng.normal(3.2, 1.0, n), rng.standard_t(3, n))
    with pytest.warns(UserWarning, match=r"misses the scores near the operating points \(tail check p = 0.000"):
        e = estimate(s, np.zeros(n), fmr=(1e-2, 1e-3), family="normal", sampler="numpy", warmup=800, draws=1000,
                     finite_draws=50, ppc_replicates=10, seed=1)
    tail = e.ppc["0.0"]["tail"]
    assert tail["alarm"]
    assert any("the model expects" in w and "label some pairs" in w for w in e.warnings)
    assert "tail check p 0.00" in str(e)
    d = json.loads(json.dumps(e.to_dict()))
    assert d["ppc"]["0.0"]["tail"]["pvalue"] == tail["pvalue"] and d["ppc"]["0.0"]["tail"]["bins"]
    assert any("no check without labels can see" in x for x in e.limits)


def test_labelled_pairs_are_drawn_from_their_own_component():
    """Labels sampled per class (stratified) leave the unlabelled pool with fewer matches than the population: the
    fitted pi is the pool's, and the labelled pairs come from their components. Scores made that way (3,800 from the
    mixture, 100 labelled of each class): with the labelled counts given, the check is calibrated (at most 8 alarms
    in 60 data sets); read as a mixture of all 4,000 it fires in most (the study's false alarms at pi = 0.05)."""
    p = _draws(50, 0.05, (0.0, 1.0, 1.0))
    right, wrong = 0, 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        s = np.r_[_sample(NORMAL, rng, 3800, p), rng.normal(0.0, 1.0, 100), rng.normal(3.2, 1.0, 100)]
        cells = compress(s, None)
        right += ppc.tail_check(NORMAL, cells, p, (1e-2,), np.random.default_rng(seed), labelled=(100, 100))["alarm"]
        wrong += ppc.tail_check(NORMAL, cells, p, (1e-2,), np.random.default_rng(seed))["alarm"]
    assert right <= 8 and wrong >= 30  # measured: 3 and 57
    b = ppc.tail_check(NORMAL, compress(s, None), p, (1e-2,), np.random.default_rng(0), labelled=(100, 100))["bins"][-1]
    mix = lambda x: 0.95 * NORMAL.sf(x, 0.0, 1.0, 1.0, 1.0) + 0.05 * NORMAL.sf(x, 3.2, 1.0, 1.0, 1.0)  # noqa: E731
    want = 3800 * mix(b["low"]) + 100 * NORMAL.sf(b["low"], 0.0, 1.0, 1.0, 1.0) + 100 * NORMAL.sf(b["low"], 3.2, 1.0, 1.0, 1.0)
    assert b["expected"] == pytest.approx(want, rel=1e-9)


class _Replicates:
    """A stand-in for the generator's ``multinomial``: the first draw replicates ``first`` exactly (``None``: as
    every other draw), every other draw the model's expected counts rounded (nearer the model than any sample)."""

    def __init__(self, first: np.ndarray | None):
        self.first, self.calls = first, 0

    def multinomial(self, n, p):
        self.calls += 1
        return self.first.copy() if self.calls == 1 and self.first is not None else np.round(n * np.asarray(p))


def test_p_value_equal_to_the_alarm_level_does_not_fire():
    """Pins ``tail_check``'s ``alarm = pvalue < TAIL_ALARM``: with 20 draws of which exactly one replicate is at
    least as far from the model as the observed counts (it is the observed counts), p = 1/20 = TAIL_ALARM, and
    the check does not fire (``<=`` would); with none, p = 0 and it does."""
    rng = np.random.default_rng(0)
    p = _draws(20, 0.3, (0.0, 1.0, 1.3))
    cells = compress(_sample(NORMAL, rng, 3000, p), None)
    observed = np.array([b["observed"] for b in ppc.tail_check(NORMAL, cells, p, (1e-2,), rng)["bins"]])
    assert ppc.TAIL_ALARM == 0.05
    tail = ppc.tail_check(NORMAL, cells, p, (1e-2,), _Replicates(observed))
    assert tail["pvalue"] == 1 / 20 == ppc.TAIL_ALARM and not tail["alarm"]
    never = ppc.tail_check(NORMAL, cells, p, (1e-2,), _Replicates(None))
    assert never["pvalue"] == 0.0 and never["alarm"]
