"""Per-group minDCF picks each group's own best threshold (optimistic for a small group, #19 item 7): each curve
summary also gives the group's cost at the threshold minimising the overall cost, checked by brute force."""

from __future__ import annotations

import numpy as np
import pytest

import matchaudit as ma


@pytest.mark.parametrize("rule", [">=", ">"])
def test_cost_at_the_overall_threshold_by_brute_force(rule):
    rng = np.random.default_rng(4)
    ident = np.repeat(np.arange(40), 3)
    i, j = np.triu_indices(ident.size, 1)
    gen = ident[i] == ident[j]
    score = np.round(np.where(gen, rng.normal(1.5, 1, i.size), rng.normal(0, 1, i.size)), 1)  # ties
    group = np.where(np.arange(40) < 6, "small", "big")  # 6 identities: its own threshold flatters it
    data = ma.from_scores(score, ident[i], ident[j], attributes_a={"g": group[ident[i]]},
                          attributes_b={"g": group[ident[j]]}, group_by="g")
    res = ma.audit(data, fmr=1e-2, rule=rule,
                   measures=ma.MeasureOptions(calibration=False, weightings=("pooled",), dcf_p_target=0.05),
                   intervals=False)
    cs = res.curves.set_index("group")
    t = cs.loc["all", "min_dcf_threshold"]
    assert cs.loc["all", "dcf_at_global_threshold"] == pytest.approx(cs.loc["all", "min_dcf"], abs=1e-15)
    same = group[ident[i]] == group[ident[j]]
    for g in ("small", "big"):
        mine = group[ident[i]] == g
        fnmr = (score[gen & mine] < t).mean()
        fmr = (score[~gen & same & mine] >= t).mean()
        p = 0.05
        dcf = (p * fnmr + (1 - p) * fmr) / min(p, 1 - p)
        assert cs.loc[g, "dcf_at_global_threshold"] == pytest.approx(dcf, abs=1e-12)
        assert cs.loc[g, "dcf_at_global_threshold"] >= cs.loc[g, "min_dcf"] - 1e-15
