"""Sparse counts are not tested (#43 item 3, part): a pair of groups whose sparser group would show fewer than
MIN_EXPECTED_ERRORS errors at their pooled rate gets no p-value (it was p = 0.004 for 0/3,410 against 6/33,638 false
matches, where an exact binomial test gives 1), is never significant, and leaves the family's BH and Holm counts."""

from __future__ import annotations

import math

import numpy as np

import matchaudit as ma
from matchaudit.auditing import MIN_EXPECTED_ERRORS
from matchaudit.estimators.permutation import benjamini_hochberg, holm


def test_sparse_pairs_are_not_testable_and_leave_bh_and_holm():
    data = ma.simulate(samples_per_identity=4, dim=32).as_data()
    res = ma.audit(data, fmr=(1e-2, 1e-3), tests=True, test_resamples=199, intervals=False, test_comparisons="both")
    ops = res.operating_points.set_index(["kind", "target", "group", "weighting"])
    seen = 0
    for (metric, target), fam in res.tests.groupby(["metric", "target"]):
        testable = fam[fam.reason.isna()]
        for r in fam.itertuples():
            def count(g, other):
                names = [x for x in data.group_names if x != other] if g == "rest" else [g]
                e = sum(ops.loc[("fmr_target", target, x, "pooled"), f"{metric}_errors"] for x in names)
                n = sum(ops.loc[("fmr_target", target, x, "pooled"), f"{metric}_comparisons"] for x in names)
                return e, n
            (ea, na), (eb, nb) = count(r.group_a, r.group_b), count(r.group_b, r.group_a)
            sparse = min(na, nb) * (ea + eb) / (na + nb) < MIN_EXPECTED_ERRORS
            assert sparse == (isinstance(r.reason, str) and "not testable" in r.reason)
            if sparse:
                seen += 1
                assert math.isnan(r.pvalue) and math.isnan(r.qvalue_bh) and not r.significant
        if len(testable) and len(testable) < len(fam):
            raw = testable.pvalue.to_numpy(float)
            np.testing.assert_allclose(testable.qvalue_bh.to_numpy(float), benjamini_hochberg(raw))
            np.testing.assert_allclose(testable.pvalue_holm.to_numpy(float), holm(raw))
    assert seen >= 3  # the demo's FNMR at FMR 1e-2 (no errors in A and C) and FMR at 1e-3 (a handful per group)


def test_small_group_gaps_carry_the_caveat_no_test_can_remove(tmp_path):
    """A group of fewer than SMALL_GROUP identities may lack the few identities that carry its errors (10% hard of
    25: absent with probability 0.9^25 = 7%, level 0.084 at 0.05 in bench/test_level.py): every row testing such a
    group says so, with the probability for its size; rows between large groups say nothing; the report's Reading
    repeats it where it calls the gap distinguishable."""
    from matchaudit.estimators.matching_tests import SMALL_GROUP, matching_all_groups_test, small_group_caveat
    from matchaudit.report.html import render
    from matchaudit.report.results import load_results

    rng = np.random.default_rng(3)
    sizes = {"A": 150, "B": 25, "C": 60}
    rate = {"A": 0.02, "B": 0.2, "C": 0.02}
    ids, grp, score = [], [], []
    for g, k in sizes.items():
        for i in range(k):
            ids += [f"{g}{i}"] * 4
            grp += [g] * 4
            score += list(np.where(rng.random(4) < rate[g], 0.05, 0.8))  # failures below every impostor
    imp_a = [f"{g}{i}" for g, k in sizes.items() for i in range(k)]
    imp_b = imp_a[1:] + imp_a[:1]
    gmap = {n: n[0] for n in imp_a}
    data = ma.from_scores(np.r_[score, np.full(len(imp_a), 0.1)], ids + imp_a, ids + imp_b,
                          label=np.r_[np.ones(len(ids), bool), np.zeros(len(imp_a), bool)],
                          attributes_a={"g": grp + [gmap[x] for x in imp_a]},
                          attributes_b={"g": grp + [gmap[x] for x in imp_b]}, group_by="g")
    res = matching_all_groups_test(data, "fnmr", threshold=0.5, n_resamples=199, seed=1, comparisons="both")
    for r in res.rows:
        small = "B" in (r["group_a"], r["group_b"])  # "rest" has 210 or 235 identities
        assert (r["caveat"] is not None) == small, r
        if small:
            assert "group B has 25 identities" in r["caveat"] and f"{0.9 ** 25:.0%}" in r["caveat"]
    assert small_group_caveat({"X": SMALL_GROUP, "Y": 10 * SMALL_GROUP}) is None
    assert "X has 49" in small_group_caveat({"X": SMALL_GROUP - 1, "Y": 200})
    assert "Y has 20" in small_group_caveat({"X": SMALL_GROUP - 1, "Y": 20})  # the smaller group is named
    audit = ma.audit(data, thresholds=[0.5], fmr=(1e-2,), tests=True, test_resamples=199, intervals=False)
    flagged = audit.tests[audit.tests.significant & audit.tests.caveat.notna()]
    assert len(flagged) and flagged.caveat.str.contains("group B has 25").all()
    audit.save(tmp_path, figures=False)
    html = render(load_results(tmp_path / "results.json"), tmp_path)
    assert "Caveat: group B has 25 identities" in html


class _Points:
    """The operating points ``untestable`` reads: per group, FNMR errors and comparisons (any kind and target)."""

    def __init__(self, counts: dict[str, tuple[int, int]]):
        self.counts = counts

    def op(self, weighting, kind, target, group):
        e, n = self.counts[group]
        return {"fnmr_errors": e, "fnmr_comparisons": n}


def test_not_testable_cutoff_at_exactly_min_expected_errors_and_nan():
    """Pins ``auditing.untestable``'s boundary ``not expected >= MIN_EXPECTED_ERRORS``: a pair whose sparser group
    would show exactly MIN_EXPECTED_ERRORS errors at the pooled rate is tested (``>`` would drop it); one just below
    is not; a pair without comparisons (pooled rate 0/0, expected NaN) is not testable (``expected < MIN`` would
    test it)."""
    from matchaudit.auditing import untestable

    assert MIN_EXPECTED_ERRORS == 5
    points = _Points({"A": (5, 10), "B": (5, 10), "C": (4, 10), "D": (0, 0), "E": (0, 0)})
    pairs = [("A", "B"), ("B", "C"), ("D", "E")]  # expected 10 * 10/20 = 5 exactly; 10 * 9/20 = 4.5; NaN
    rows = [{"group_a": a, "group_b": b, "pvalue": p, "pvalue_holm": p, "pvalue_maxt": p, "qvalue_bh": p,
             "pvalue_adjusted": p, "significant": True} for (a, b), p in zip(pairs, (0.01, 0.02, 0.03))]
    untestable(rows, points, list("ABCDE"), "fnmr", "fmr_target", 1e-3)
    at_cutoff, below, empty = rows
    assert "reason" not in at_cutoff and at_cutoff["pvalue"] == 0.01 and at_cutoff["significant"]
    assert at_cutoff["pvalue_holm"] == 0.01 and at_cutoff["qvalue_bh"] == 0.01  # the only testable row
    for r in (below, empty):
        assert r["reason"].startswith("not testable") and math.isnan(r["pvalue"]) and not r["significant"]
