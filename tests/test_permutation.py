"""Permutation tests: brute-force references (exact enumeration, DeLong, Holm), conventions and reproducibility."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from matchaudit.data.classifier_table import classifier_data, load_classifier_table
from matchaudit.errors import InputError
from matchaudit.estimators.classifier import _AUC, all_groups_test, correlation_test, group_statistics, group_test
from matchaudit.estimators.intervals import wilson_bounds
from matchaudit.estimators.permutation import benjamini_hochberg, comparison_table, holm, maxt, permutation_test

# --- exact enumeration against an independent itertools reference --------------------------------------------

Y = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 1])
PRED = np.array([0, 1, 1, 0, 1, 1, 0, 0, 1, 1])
G = np.array(["A", "A", "A", "B", "B", "A", "B", "B", "A", "B"])


def _fnr_fraction(y, pred, g, grp):
    pos = [i for i in range(len(y)) if y[i] == 1 and g[i] == grp]
    return Fraction(sum(pred[i] == 0 for i in pos), len(pos)), len(pos)


def _reference_p(y, pred, g, studentize, within):
    """Every row permutation (itertools, with repeats) within outcome strata or overall; exact arithmetic.

    |S_pi| >= |S| is decided on squares (T_pi^2 V >= T^2 V_pi) with Fractions; V_pi = 0 gives S_pi = 0 when
    T_pi = 0 and +-inf otherwise (the library's convention).
    """
    def tv(lab):
        (pa, na), (pb, nb) = _fnr_fraction(y, pred, lab, "A"), _fnr_fraction(y, pred, lab, "B")
        return pa - pb, pa * (1 - pa) / na + pb * (1 - pb) / nb

    t0, v0 = tv(g)
    strata = [np.flatnonzero(y == 1), np.flatnonzero(y == 0)] if within else [np.arange(len(y))]
    hit = total = 0
    for perms in itertools.product(*(itertools.permutations(s) for s in strata)):
        lab = g.copy()
        for s, p in zip(strata, perms):
            lab[s] = g[list(p)]
        t, v = tv(lab)
        if not studentize:
            hit += abs(t) >= abs(t0)
        elif v == 0:
            hit += t != 0
        else:
            hit += t * t * v0 >= t0 * t0 * v
        total += 1
    return Fraction(hit, total)


@pytest.mark.parametrize("studentize", [True, False])
def test_exact_within_outcome_equals_itertools_enumeration(studentize):
    data = classifier_data(Y, G, y_pred=PRED)
    r = group_test(data, "fnr", n_resamples="exact", studentize=studentize)
    ref = _reference_p(Y, PRED, G, studentize, within=True)
    assert r.exact and r.n_resamples == 20  # C(6, 3) distinct labellings of the 6 positives
    assert r.pvalue == float(ref)
    assert r.pvalue_se == 0.0


@pytest.mark.parametrize("studentize", [True, False])
def test_exact_plain_equals_itertools_enumeration(studentize):
    y, pred, g = Y[:8], PRED[:8], G[:8]
    data = classifier_data(y, g, y_pred=pred)
    r = group_test(data, "fnr", permutation="plain", n_resamples=None, studentize=studentize)
    # the plain enumeration can leave a group without positives (FNR undefined): the reference must not hit those
    ref_ok = all(sum(y[i] for i in range(8) if lab[i] == "A") and sum(y[i] for i in range(8) if lab[i] == "B")
                 for lab in set(itertools.permutations(g)))
    assert ref_ok
    assert r.pvalue == float(_reference_p(y, pred, g, studentize, within=False))


def test_exact_mode_counts_distinct_multigroup_labellings_and_maxt_is_at_least_raw():
    g = np.array(["A", "B", "C", "A", "B", "C", "A", "B", "A"])
    y = np.ones(9, dtype=int)
    pred = np.array([0, 1, 1, 0, 0, 1, 1, 1, 0])
    res = all_groups_test(classifier_data(y, g, y_pred=pred), "fnr", n_resamples="exact")
    assert res.n_resamples == 1260  # 9! / (4! 3! 2!) distinct labellings
    df = res.to_frame()
    assert (df.pvalue_maxt >= df.pvalue - 1e-15).all() and (df.pvalue_holm >= df.pvalue - 1e-15).all()


# --- metrics and closed-form variances -----------------------------------------------------------------------

def _delong_brute(y, s):
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(1), psi.mean(0)
    return psi.mean(), v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size


def test_auc_and_delong_match_brute_force_with_ties_and_weights():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    s = np.round(rng.normal(size=60) + y, 1)  # ties
    auc = _AUC(y, s)
    est, var = auc.stats(np.ones((1, 60), dtype=np.int64))
    ref_auc, ref_var = _delong_brute(y, s)
    assert est[0] == pytest.approx(roc_auc_score(y, s), abs=1e-14)
    assert var[0] == pytest.approx(ref_var, rel=1e-12)
    w = rng.integers(0, 3, (4, 60))  # frequency weights == repeated rows
    est, var = auc.stats(w)
    for k in range(4):
        rep = np.repeat(np.arange(60), w[k])
        a, v = _delong_brute(y[rep], s[rep])
        assert est[k] == pytest.approx(a, abs=1e-14) and var[k] == pytest.approx(v, rel=1e-12)


def test_rate_metrics_and_binomial_variances():
    data = classifier_data(Y, G, y_pred=PRED)
    st = group_statistics(data, "fnr", n_resamples=10, seed=0)
    pa, na = _fnr_fraction(Y, PRED, G, "A")
    pb, nb = _fnr_fraction(Y, PRED, G, "B")
    assert st.t == pytest.approx(float(pa - pb)) and st.v == pytest.approx(float(pa * (1 - pa) / na + pb * (1 - pb) / nb))
    for metric, ref in {"fpr": lambda y, p: p[y == 0].mean(), "tnr": lambda y, p: 1 - p[y == 0].mean(),
                        "tpr": lambda y, p: p[y == 1].mean(), "accuracy": lambda y, p: (p == y).mean(),
                        "positive_rate": lambda y, p: p.mean()}.items():
        est = group_statistics(data, metric, n_resamples=5, seed=0).details["estimates"]
        for grp in ("A", "B"):
            assert est[grp] == pytest.approx(ref(Y[G == grp], PRED[G == grp])), metric


# --- p-value rules, degenerate cases, results ----------------------------------------------------------------

def test_pvalue_rule_alternatives_and_monte_carlo_error():
    null = np.array([-3.0, -1.0, 0.5, 2.0, 2.0])
    r = permutation_test(2.0, 1.0, null, np.ones(5))
    assert r.pvalue == (1 + 3) / 6  # |-3|, 2, 2 tie counts
    assert permutation_test(2.0, 1.0, null, np.ones(5), alternative="greater").pvalue == 3 / 6
    assert permutation_test(2.0, 1.0, null, np.ones(5), alternative="less").pvalue == 6 / 6
    assert r.pvalue_se == pytest.approx(np.sqrt(4 / 6 * 2 / 6 / 5))
    assert r.pvalue_ci == wilson_bounds(3 / 5, 5)
    assert wilson_bounds(3 / 5, 5) == pytest.approx((0.230724, 0.882379), abs=1e-6)  # Wilson (1927) for 3/5
    assert r.direction == "A > B" and r.method.startswith("studentized")
    base = permutation_test(2.0, 1.0, null, studentize=False)
    assert base.method == "unstudentized (baseline; invalid under the weak null)"


def test_zero_variance_is_never_significant():
    # LiFT returns p = 0 here; we return NaN (a gap with zero variance) or 1 (no gap), with a reason
    r = permutation_test(0.5, 0.0, np.array([0.5, -0.5, 0.5]), np.zeros(3))
    assert np.isnan(r.pvalue) and not r.significant() and "variance" in r.reason
    r = permutation_test(0.0, 0.0, np.zeros(9), np.zeros(9))
    assert r.pvalue == 1.0 and r.reason
    r = permutation_test(0.3, 0.1, np.full(9, 0.3), studentize="permutation-sd")
    assert np.isnan(r.pvalue) and "degenerate" in r.reason
    # a perfect classifier in both groups: FNR 0 vs 0
    y = np.array([1, 1, 1, 1, 0, 0])
    r = group_test(classifier_data(y, ["A", "A", "B", "B", "A", "B"], y_pred=y), "fnr", n_resamples=99, seed=1)
    assert r.pvalue == 1.0 and r.reason and not r.significant()


def test_undefined_relabelled_statistic_counts_as_extreme():
    r = permutation_test(1.0, 1.0, np.array([np.nan, 0.0, 0.5]), np.ones(3))
    assert r.pvalue == 2 / 4


def test_same_seed_same_numbers_and_batch_invariance(monkeypatch):
    rng = np.random.default_rng(0)
    y, pred = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    g = rng.choice(["A", "B", "C"], 300)
    data = classifier_data(y, g, y_pred=pred)
    a = group_test(data, "fpr", ("A", "C"), n_resamples=500, seed=11)
    b = group_test(data, "fpr", ("A", "C"), n_resamples=500, rng=11)
    assert a.pvalue == b.pvalue and np.array_equal(a.null_distribution, b.null_distribution)
    assert a.details["seed"] == 11
    import matchaudit.estimators.classifier as clf
    monkeypatch.setattr(clf, "_BATCH_ELEMENTS", 1000)  # many small batches: the same draws
    c = group_test(data, "fpr", ("A", "C"), n_resamples=500, seed=11)
    assert np.array_equal(a.null_distribution, c.null_distribution)
    assert not np.array_equal(group_test(data, "fpr", ("A", "C"), n_resamples=500, seed=12).null_distribution,
                              a.null_distribution)


def test_within_outcome_keeps_group_outcome_counts():
    rng = np.random.default_rng(5)
    y, pred = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    g = np.where(rng.random(50) < 0.3, "A", "B")
    data = classifier_data(y, g, y_pred=pred)
    st = group_statistics(data, "positive_rate", permutation="within-outcome", n_resamples=200, seed=2)
    # y_true is balanced within the relabelling: every relabelled group keeps its positives and negatives, so
    # the positive rate of a perfect-recall predictor would be fixed; here: the number of rows per group is kept
    assert st.details["permutation"] == "within-outcome"
    assert st.details["group_counts"] == {"A": {"n": int((g == "A").sum()), "positives": int(y[g == "A"].sum()),
                                                "negatives": int((1 - y[g == "A"]).sum())},
                                          "B": {"n": int((g == "B").sum()), "positives": int(y[g == "B"].sum()),
                                                "negatives": int((1 - y[g == "B"]).sum())}}
    perfect = classifier_data(y, g, y_pred=y)
    st = group_statistics(perfect, "positive_rate", permutation="within-outcome", n_resamples=200, seed=2)
    assert np.all(st.t_perm == st.t)  # positive rate = base rate, which within-outcome relabelling preserves
    assert group_statistics(data, "fnr", n_resamples=5, seed=0).details["permutation"] == "within-outcome"
    assert group_statistics(data, "accuracy", n_resamples=5, seed=0).details["permutation"] == "plain"


def test_effect_interval_and_direction():
    rng = np.random.default_rng(8)
    n = 4000
    g = np.repeat(["A", "B"], n // 2)
    y = rng.integers(0, 2, n)
    fnr = np.where(g == "A", 0.3, 0.1)
    pred = np.where((y == 1) & (rng.random(n) < fnr), 0, y)
    r = group_test(classifier_data(y, g, y_pred=pred), "fnr", n_resamples=999, seed=0)
    assert r.significant(0.001) and r.direction == "A > B"
    assert r.effect_ci[0] < 0.2 < r.effect_ci[1]


def test_correlation_statistic_matches_formula():
    rng = np.random.default_rng(1)
    x, e = rng.normal(size=200), rng.normal(size=200)
    r = correlation_test(x, e, n_resamples=99, seed=1)
    xc, ec = x - x.mean(), e - e.mean()
    rho = np.corrcoef(x, e)[0, 1]
    var = np.sum(xc ** 2 * ec ** 2) / (np.sum(xc ** 2) * np.sum(ec ** 2))
    assert r.effect == pytest.approx(rho) and r.statistic == pytest.approx(rho / np.sqrt(var))


# --- multiplicity --------------------------------------------------------------------------------------------

def _holm_closed_testing(p):
    """Holm as closed testing of Bonferroni tests: adjusted p_i = max over sets I containing i of |I| min_I p."""
    m = len(p)
    out = []
    for i in range(m):
        best = 0.0
        for r in range(1, m + 1):
            for sub in itertools.combinations(range(m), r):
                if i in sub:
                    best = max(best, min(1.0, r * min(p[j] for j in sub)))
        out.append(best)
    return np.array(out)


def test_holm_equals_closed_testing_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(rng.integers(1, 7)) ** 2
        if rng.random() < 0.3:
            p[0] = p[-1]  # ties
        assert np.array_equal(holm(p), _holm_closed_testing(list(p)))
    adj = holm([0.01, np.nan, 0.02])  # the NaN (untested) does not count in m
    assert np.isnan(adj[1]) and adj[0] == adj[2] == 0.02


def test_benjamini_hochberg_equals_the_step_up_rule_brute_force():
    """{q <= alpha} is exactly the step-up rejection set {i : p_i <= p_(k)}, k = max{j : p_(j) <= j alpha / m},
    at every alpha (ties and NaN included); q never exceeds Holm's adjusted p-value."""
    rng = np.random.default_rng(2)
    for _ in range(200):
        m = int(rng.integers(1, 9))
        p = np.round(rng.random(m) ** 3, 2)
        p[rng.random(m) < 0.15] = np.nan
        q = benjamini_hochberg(p)
        ok = ~np.isnan(p)
        assert np.array_equal(np.isnan(q), ~ok)
        tested = np.sort(p[ok])
        for alpha in np.unique(np.concatenate([tested, tested * 1.5, [0.05]])):
            passing = [j for j in range(1, tested.size + 1) if tested[j - 1] <= j * alpha / tested.size + 1e-12]
            cut = tested[max(passing) - 1] if passing else -1.0
            assert np.array_equal(q[ok] <= alpha + 1e-12, p[ok] <= cut)
        assert np.all(q[ok] <= holm(p)[ok] + 1e-12)


def test_benjamini_hochberg_equals_scipy_to_the_bit():
    """The q-values are SciPy's (``false_discovery_control``), computed without importing scipy.stats: random
    p-values with ties, zeros, ones, one test, and NaN (untested) entries left out of m."""
    from scipy.stats import false_discovery_control

    rng = np.random.default_rng(5)
    for _ in range(300):
        m = int(rng.integers(1, 40))
        p = rng.random(m) ** rng.choice([1, 3, 8])
        p[rng.random(m) < 0.2] = rng.choice([0.0, 1.0, p[0]])  # ties, the extremes
        assert np.array_equal(benjamini_hochberg(p), false_discovery_control(p, method="bh"))
        gaps = np.where(rng.random(m) < 0.2, np.nan, p)
        tested = ~np.isnan(gaps)
        q = benjamini_hochberg(gaps)
        assert np.isnan(q[~tested]).all()
        if tested.any():
            assert np.array_equal(q[tested], false_discovery_control(gaps[tested], method="bh"))


def test_maxt_brute_force():
    """Including the NaN convention: a relabelled statistic that cannot be computed counts as +inf in its row's
    maximum (conservative); read as 0 or dropped, rows 3 and 40 below would not count and every p-value would fall."""
    rng = np.random.default_rng(1)
    stat, null = rng.normal(size=4) * 2, rng.normal(size=(99, 4))
    null[3, 1] = null[40, 2] = np.nan
    ref = [(1 + sum(np.any(np.isnan(row)) or np.max(np.abs(row)) >= abs(s) for row in null)) / 100 for s in stat]
    assert np.allclose(maxt(stat, null), ref, rtol=0, atol=0)
    assert min(ref) >= 3 / 100


def test_every_adjusted_verdict_is_significant_at_p_equal_to_level():
    """The decision boundary p = level is significant for the raw, Holm, max-T and BH verdicts alike: one
    comparison, 19 relabellings all below the observed statistic, so every p-value is exactly 1 / 20 = 0.05
    (mutating any ``<=`` to ``<`` fails here)."""
    rows, _ = comparison_table(["a vs b"], np.array([5.0]), None, np.linspace(-1, 1, 19)[:, None],
                               studentize=False, alpha=0.05)
    (r,) = rows
    assert r["pvalue"] == r["pvalue_holm"] == r["pvalue_maxt"] == r["qvalue_bh"] == 0.05
    assert r["significant"] and r["significant_holm"] and r["significant_maxt"] and r["significant_bh"]
    rows, _ = comparison_table(["a vs b"], np.array([5.0]), None, np.linspace(-1, 1, 19)[:, None],
                               studentize=False, alpha=0.0499)
    assert not any(rows[0][k] for k in ("significant", "significant_holm", "significant_maxt", "significant_bh"))


def test_all_groups_table_columns():
    rng = np.random.default_rng(2)
    n = 600
    g = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y * np.where(g == "c", 0.2, 1.5)
    res = all_groups_test(classifier_data(y, g, y_score=s), "auc", n_resamples=499, seed=0)
    df = res.to_frame()
    assert list(df.comparison) == ["a vs b", "a vs c", "b vs c", "a vs rest", "b vs rest", "c vs rest"]
    assert {"pvalue", "pvalue_holm", "pvalue_maxt", "significant_holm", "significant_maxt", "effect_ci_low",
            "estimate_a", "estimate_b", "direction", "kind"} <= set(df.columns)
    assert df.set_index("comparison").loc["a vs c", "significant_maxt"]
    assert df.set_index("comparison").loc["a vs c", "effect"] == pytest.approx(
        roc_auc_score(y[g == "a"], s[g == "a"]) - roc_auc_score(y[g == "c"], s[g == "c"]))


# --- input -----------------------------------------------------------------------------------------------------

def test_loader_reads_csv_and_parquet(tmp_path):
    df = pd.DataFrame({"label": Y, "pred": PRED, "grp": G, "score": np.linspace(0, 1, 10)})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        d = load_classifier_table(tmp_path / name, y_true="label", group="grp", y_pred="pred", y_score="score")
        assert d.group_names == ("A", "B") and np.array_equal(d.y_true, Y) and np.array_equal(d.y_pred, PRED)


@pytest.mark.parametrize("change, message", [
    (lambda df: df.drop(columns="grp"), "no column 'grp'"),
    (lambda df: df.assign(label=[2] + list(Y[1:])), "must be binary"),
    (lambda df: df.assign(label=[""] + list(Y[1:])), "missing in rows 1"),
    (lambda df: df.assign(score=["nan"] + list(df.score[1:])), "finite number"),
    (lambda df: df.assign(grp="A"), "only one group"),
])
def test_loader_errors(tmp_path, change, message):
    df = change(pd.DataFrame({"label": Y, "pred": PRED, "grp": G, "score": np.linspace(0, 1, 10)}))
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputError, match=message):
        load_classifier_table(tmp_path / "t.csv", y_true="label", group="grp", y_pred="pred", y_score="score")


def test_group_without_positives_is_an_input_error():
    y = np.array([1, 1, 0, 0, 0, 0])
    data = classifier_data(y, ["A", "A", "A", "B", "B", "B"], y_pred=y)
    with pytest.raises(InputError, match="FNR needs at least 1 positives per group; too few in B"):
        group_test(data, "fnr", n_resamples=9)
    with pytest.raises(InputError, match="decisions"):
        group_test(classifier_data(y, ["A", "B"] * 3, y_score=np.arange(6.0)), "fpr", n_resamples=9)
    with pytest.raises(InputError, match="unknown metric"):
        group_test(data, "f1", n_resamples=9)
