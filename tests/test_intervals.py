"""Closed-form intervals against brute-force recomputation from the formulas (docs/methods.md section 4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from matchaudit.estimators import intervals as iv
from matchaudit.engine import identity_counts
from matchaudit.estimators import closed_forms as adapter

from tests.engine_reference import listed, make_data, score_matrix


def _clustered(seed=0, K=7):
    """Dense per-pair comparisons m_kl and errors E_kl, per-identity g_k, E_k (with zeros and ones)."""
    g = np.random.default_rng(seed)
    n = g.integers(1, 5, K)
    m = np.outer(n, n).astype(float)
    np.fill_diagonal(m, 0)
    e = np.triu(g.binomial(m.astype(int), 0.15), 1)
    e = (e + e.T).astype(float)
    gk = n * (n - 1) / 2
    ek = g.binomial(gk.astype(int), 0.2).astype(float)
    return m, e, gk, ek


def _var_fmr_literal(m, e):
    K = m.shape[0]
    M = sum(m[k, l] for k in range(K) for l in range(k + 1, K))
    p = sum(e[k, l] for k in range(K) for l in range(k + 1, K)) / M
    D = e - p * m
    s = sum(D[k, l] ** 2 for k in range(K) for l in range(k + 1, K))
    c = sum(D[k, l] * D[k, l2] for k in range(K) for l in range(K) for l2 in range(K)
            if len({k, l, l2}) == 3)
    return (s + max(0.0, c)) / M**2


def _wilson_literal(mu, n, level):
    z = norm.ppf(0.5 + level / 2)
    c = (mu + z**2 / (2 * n)) / (1 + z**2 / n)
    h = z * math.sqrt((mu * (1 - mu) + z**2 / (4 * n)) / n) / (1 + z**2 / n)
    return max(c - h, 0), c + h


@pytest.mark.parametrize("seed", range(4))
def test_corrected_variances_equal_the_literal_double_sums(seed):
    m, e, gk, ek = _clustered(seed)
    tot = iv.ImpostorTotals.from_matrices(m, e)
    assert iv.fmr_variance(tot) == pytest.approx(_var_fmr_literal(m, e), rel=1e-12)
    # sparse input: only the pairs with errors, plus sum m^2
    nz = tot.pair_errors > 0
    sparse = iv.ImpostorTotals(tot.row_comparisons, tot.row_errors, tot.pair_comparisons[nz], tot.pair_errors[nz],
                               tot.sum_m2)
    assert iv.fmr_variance(sparse) == pytest.approx(_var_fmr_literal(m, e), rel=1e-12)
    p = ek.sum() / gk.sum()
    assert iv.fnmr_variance(gk, ek) == pytest.approx(((ek - p * gk) ** 2).sum() / gk.sum() ** 2, rel=1e-12)
    p = tot.errors / tot.comparisons
    assert iv.fmr_variance(tot, binomial_floor=True) >= p * (1 - p) / tot.comparisons * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_corrected_wilson_from_the_formulas(seed, level):
    m, e, gk, ek = _clustered(seed)
    tot = iv.ImpostorTotals.from_matrices(m, e)
    r = iv.fmr_interval("wilson", tot, level)
    mu = tot.errors / tot.comparisons
    n_eff = mu * (1 - mu) / _var_fmr_literal(m, e)
    assert r.confidence_interval == pytest.approx(_wilson_literal(mu, n_eff, level), rel=1e-12)
    assert (r.errors, r.comparisons, r.method, r.level) == (tot.errors, tot.comparisons, "wilson", level)
    f = iv.fnmr_interval("wilson", gk, ek, level)
    mu = ek.sum() / gk.sum()
    assert f.confidence_interval == pytest.approx(_wilson_literal(mu, mu * (1 - mu) / iv.fnmr_variance(gk, ek),
                                                                  level), rel=1e-12)


def test_small_count_rules():
    a = 0.05
    g = np.array([10, 10, 10])
    one = iv.fnmr_interval("wilson", g, np.array([1, 0, 0]))
    assert one.confidence_interval.low == pytest.approx(-math.log(1 - a) / 30)
    almost = iv.fnmr_interval("wilson", g, np.array([10, 10, 9]))
    assert almost.confidence_interval.high == pytest.approx(1 + math.log(1 - a) / 30)
    zero = iv.fnmr_interval("wilson", g, np.zeros(3))  # three identities: clusters, not 30 comparisons
    assert zero.confidence_interval == (0.0, pytest.approx(1 - 0.05 ** (1 / 3))) and "3 identities" in zero.note
    full = iv.fnmr_interval("wilson", g, g)
    assert full.confidence_interval.high == 1.0


@pytest.mark.parametrize("e,m", [(2, 20), (3, 30), (7, 10)])
def test_a_plug_in_variance_that_is_zero_up_to_rounding_reads_as_zero(e, m):
    """One identity pair (every identity at the pooled rate): the clustered variance is 0, computed as a rounding
    residue (2e-18 for 2/20). The interval is the one of an exact 0 (n_eff = N), not one 1e-8 wide (n_eff 4e16)."""
    t = iv.ImpostorTotals.from_matrices(np.array([[0, m], [m, 0]]), np.array([[0, e], [e, 0]]))
    r = iv.fmr_interval("wilson", t)
    exact = iv.wilson(e, m, variance=0.0)
    assert r.extra["n_eff"] == m and r.confidence_interval == exact.confidence_interval
    assert r.confidence_interval.high - r.confidence_interval.low > 0.1
    clustered = iv.fnmr_interval("wilson", np.array([10, 10, 10]), np.array([5, 0, 1]))  # a real design effect
    assert clustered.extra["n_eff"] < 30


def test_independence_baselines_match_scipy():
    for x, n in [(0, 50), (3, 50), (17, 40), (40, 40)]:
        cp = iv.clopper_pearson(x, n, 0.9).confidence_interval
        ref = binomtest(x, n).proportion_ci(0.9, method="exact")
        assert cp == pytest.approx((ref.low, ref.high), abs=1e-10)
        w = iv.wilson(x, n, 0.9).confidence_interval
        ref = binomtest(x, n).proportion_ci(0.9, method="wilson")
        assert w == pytest.approx((ref.low, ref.high), abs=1e-10)


def test_wald_and_one_sided_bounds():
    m, e, gk, ek = _clustered(1)
    tot = iv.ImpostorTotals.from_matrices(m, e)
    v = iv.fmr_variance(tot)
    p = tot.errors / tot.comparisons
    r = iv.fmr_interval("wald", tot, 0.9)
    assert r.confidence_interval == pytest.approx((p - norm.ppf(0.95) * v**0.5, p + norm.ppf(0.95) * v**0.5))
    up = iv.fmr_interval("wilson", tot, 0.95, "less")
    assert up.confidence_interval.low == 0
    n_eff = p * (1 - p) / v
    z = norm.ppf(0.95)
    assert up.confidence_interval.high == pytest.approx(
        (p + z * z / (2 * n_eff) + z * math.sqrt((p * (1 - p) + z * z / (4 * n_eff)) / n_eff)) / (1 + z * z / n_eff))
    for method in iv.CLOSED_FORM:  # zero errors: two identities are two clusters, whatever their 1,000 comparisons
        for alt in ("less", "two-sided"):
            r = iv.fnmr_interval(method, np.array([500, 500]), np.zeros(2), 0.95, alt)
            assert r.confidence_interval == (0.0, pytest.approx(1 - 0.05 ** (1 / 2)))
    cp = iv.clopper_pearson(4, 100, 0.95, "less").confidence_interval.high
    assert cp == pytest.approx(binomtest(4, 100, alternative="less").proportion_ci(0.95).high)


def test_jackknife_is_leave_one_identity_out():
    m, e, gk, ek = _clustered(2, K=8)
    K = m.shape[0]
    p = ek.sum() / gk.sum()
    keep = gk > 0
    loo = [(ek.sum() - ek[k]) / (gk.sum() - gk[k]) for k in range(K) if keep[k]]
    n = keep.sum()
    assert iv.jackknife_variance_fnmr(gk, ek) == pytest.approx((n - 1) / n * ((np.array(loo) - p) ** 2).sum())
    iu = np.triu_indices(K, 1)
    M, E = m[iu].sum(), e[iu].sum()
    q = E / M
    loo = []
    for k in range(K):
        rest = [i for i in range(K) if i != k]
        sub_m, sub_e = m[np.ix_(rest, rest)], e[np.ix_(rest, rest)]
        j = np.triu_indices(K - 1, 1)
        loo.append(sub_e[j].sum() / sub_m[j].sum())
    s = ((e[iu] - q * m[iu]) ** 2).sum()
    ref = max((K - 2) ** 2 / K**2 * ((np.array(loo) - q) ** 2).sum() - s / M**2, 0)
    tot = iv.ImpostorTotals.from_matrices(m, e)
    assert iv.jackknife_variance_fmr(tot) == pytest.approx(ref, rel=1e-12)
    r = iv.fmr_interval("jackknife", tot)
    assert r.standard_error == pytest.approx(ref**0.5)


def _brute_counts(data, S, t, rule):
    """Per identity g_k, E_k and dense symmetric m_kl, E_kl from the protocol's comparisons, in pure Python."""
    K = data.n_identities
    acc = (S >= t) if rule == ">=" else (S > t)
    ident = data.samples.identity
    if data.protocol == "listed":
        pairs = zip(data.pairs.sample_a, data.pairs.sample_b)
    else:
        pairs = itertools.combinations(range(S.shape[0]), 2)
    gk, ek = np.zeros(K), np.zeros(K)
    m, e = np.zeros((K, K)), np.zeros((K, K))
    for i, j in pairs:
        a, b = ident[i], ident[j]
        if a == b:
            gk[a] += 1
            ek[a] += not acc[i, j]
        else:
            for x, y in ((a, b), (b, a)):
                m[x, y] += 1
                e[x, y] += acc[i, j]
    return gk, ek, m, e


@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
@pytest.mark.parametrize("rule", [">=", ">"])
def test_identity_counts_adapter_equals_brute_force(rule, protocol):
    """engine.identity_counts -> ImpostorTotals / genuine arrays, per group (same-group impostors) and for all
    (threshold impostors "all" or "same-group"), equal the dense brute-force matrices restricted likewise."""
    data = make_data(seed=2)
    if protocol == "listed":
        data = listed(data)
    S = score_matrix(data)
    ts = [0.2, 0.5, -np.inf, np.inf]
    ic = identity_counts(data, ts, rule)
    grp = data.identity_group
    same = grp[:, None] == grp[None, :]
    for ti, t in enumerate(ts):
        gk, ek, m, e = _brute_counts(data, S, t, rule)
        views = [(None, None, np.ones_like(m, bool), np.ones(len(grp), bool)),
                 (None, np.eye(data.n_groups, dtype=bool), same, np.ones(len(grp), bool))]
        views += [(a, None, same & (grp[:, None] == a), grp == a) for a in range(data.n_groups)]
        for group, ref, pair_mask, id_mask in views:
            got = adapter.impostor_totals(ic, ti, adapter.impostor_categories(ic, group, ref))
            want = iv.ImpostorTotals.from_matrices(np.where(pair_mask, m, 0), np.where(pair_mask, e, 0))
            np.testing.assert_array_equal(got.row_comparisons, want.row_comparisons)
            np.testing.assert_array_equal(got.row_errors, want.row_errors)
            assert got.sum_m2 == want.sum_m2
            assert (got.errors, got.comparisons) == (want.errors, want.comparisons)
            nz = want.pair_errors > 0
            np.testing.assert_array_equal(got.pair_errors, want.pair_errors[nz])  # both in (k, l) order
            np.testing.assert_array_equal(got.pair_comparisons, want.pair_comparisons[nz])
            g, err = adapter.genuine_totals(ic, ti, group)
            np.testing.assert_array_equal(g, gk[id_mask])
            np.testing.assert_array_equal(err, ek[id_mask])
            if want.comparisons and 0 < want.errors < want.comparisons:
                assert iv.fmr_variance(got) == pytest.approx(_var_fmr_literal(np.where(pair_mask, m, 0),
                                                                              np.where(pair_mask, e, 0)), rel=1e-12)
            for method in iv.CLOSED_FORM:
                fm, fn = adapter.closed_form(method, ic, ti, group, 0.9, "two-sided", ref)
                ref_fm = iv.fmr_interval(method, want, 0.9)
                ref_fn = iv.fnmr_interval(method, gk[id_mask], ek[id_mask], 0.9)
                for a, b in ((fm, ref_fm), (fn, ref_fn)):
                    assert (a.errors, a.comparisons) == (b.errors, b.comparisons)
                    np.testing.assert_allclose(a.confidence_interval, b.confidence_interval, rtol=1e-12)


def _worst_product(w: np.ndarray, f: float) -> float:
    """max prod(1 - p_k) over p in [0, 1]^K with sum(w p) / sum(w) = f, by SLSQP from several starts."""
    from scipy.optimize import minimize

    best = 0.0
    cons = {"type": "eq", "fun": lambda p: (w * p).sum() / w.sum() - f}
    for start in (np.full(w.size, f), w / w.max() * f * w.sum() / (w * w / w.max()).sum()):
        r = minimize(lambda p: -np.log1p(-np.minimum(p, 1 - 1e-12)).sum(), np.clip(start, 0, 0.999),
                     bounds=[(0, 0.999999)] * w.size, constraints=[cons], method="SLSQP")
        if r.success:
            best = max(best, float(np.exp(-r.fun)))
    return best


@pytest.mark.parametrize("w", [[10, 10, 10], [45, 6, 6, 3, 1], [1], [3, 3, 1, 1, 1, 1, 1, 1]])
def test_zero_error_bound_is_the_worst_case(w):
    """At the bound, the most favourable clustering (worst case over within-identity dependence) still shows
    zero errors with probability exactly 1 - level; a little below it, more (the bound is the smallest valid)."""
    w = np.asarray(w, float)
    u = iv.zero_error_bound(w, 0.95)
    assert _worst_product(w, u) == pytest.approx(0.05, abs=2e-4)
    assert _worst_product(w, 0.9 * u) > 0.05 + 1e-3


def test_zero_error_bound_covers_all_or_nothing_identities():
    """Simulation in the hostile case the comparison-level rule of three misses: every identity fails all of
    its comparisons or none (FNMR = P(identity fails)). Over 20,000 data sets of 30 identities x 45 comparisons
    with FNMR 5%: among data sets with zero errors the bound must cover; the share of data sets that both show
    zero errors and lie below the truth (non-coverage) must be <= 5% (+3 binomial SE), while the rule of three
    with N = 1,350 comparisons misses in every zero-error data set (21% of them here)."""
    rng = np.random.default_rng(4)
    K, m, f, level = 30, 45, 0.05, 0.95
    fails = rng.random((20_000, K)) < f
    zero = ~fails.any(axis=1)
    u = iv.zero_error_bound(np.full(K, m * (m - 1) // 2), level)
    miss = zero.mean() * (u < f)
    se = math.sqrt(0.05 * 0.95 / zero.size)
    assert miss <= 0.05 + 3 * se
    assert zero.mean() > 0.15 and iv.rule_of_three(K * m, level) < f  # the naive bound fails here


def test_zero_false_match_bound():
    """floor(K/2) disjoint identity pairs: -ln(1 - level) / floor(K/2), capped at 1; one identity: 1."""
    assert iv.zero_false_match_bound(101, 0.95) == pytest.approx(-math.log(0.05) / 50)
    assert iv.zero_false_match_bound(1, 0.95) == 1.0 and iv.zero_false_match_bound(4, 0.95) == 1.0
    tot = iv.ImpostorTotals.from_matrices(np.full((20, 20), 9.0), np.zeros((20, 20)))
    r = iv.fmr_interval("wilson", tot)
    assert r.confidence_interval == (0.0, pytest.approx(-math.log(0.05) / 10)) and "20 identities" in r.note


def test_zero_false_matches_come_with_a_bound_under_a_stated_assumption():
    """#43 item 6: 0/79,200 false matches among 200 identities read 'FMR up to 3%' (floor(K/2) disjoint pairs,
    valid whatever the dependence); beside it, the bound if the K(K-1)/2 identity pairs were independent,
    labelled with that assumption."""
    import math

    from matchaudit.estimators import intervals as iv

    r = iv.zero_fmr("wilson", 79_200, 200)
    assert r.confidence_interval.high == pytest.approx(-math.log(0.05) / 100)
    assert r.extra["bound_if_pairs_independent"] == pytest.approx(-math.log(0.05) / 19_900)
    assert "independent" in r.extra["bound_assumption"] and "assumption" in r.to_dict()["bound_assumption"]
    assert iv.independent_pairs_bound(1) == 1.0


def test_one_error_rule_is_for_exactly_one_error():
    """Pins ``wilson``'s ``errors == 1`` (lower bound -ln(1-a)/N): it applies to one error, not to zero errors
    (``errors <= 1`` would put the one-error note on a zero-error interval, whose lower end stays 0)."""
    zero = iv.wilson(0, 30, 0.95, variance=0.001)
    assert zero.confidence_interval.low == 0.0 and zero.note is None
    one = iv.wilson(1, 30, 0.95, variance=0.001)
    assert one.confidence_interval.low == pytest.approx(-math.log(0.95) / 30) and one.note.startswith("one error")
