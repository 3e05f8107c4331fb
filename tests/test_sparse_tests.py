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
