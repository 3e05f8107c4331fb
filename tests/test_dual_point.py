"""The dual operating point: FMR at a fixed FNMR target, against a brute force over every observed score."""

from __future__ import annotations

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.data.comparisons import from_scores
from matchaudit.definitions import accepts


def _listed(seed: int, ties: bool):
    rng = np.random.default_rng(seed)
    k = 24
    a = np.r_[np.repeat(np.arange(k), 2), rng.integers(0, k, 400)]
    b = np.r_[np.repeat(np.arange(k), 2), rng.integers(0, k, 400)]
    keep = (np.arange(a.size) < 2 * k) | (a != b)
    a, b = a[keep], b[keep]
    s = np.where(a == b, rng.normal(1.5, 1, a.size), rng.normal(0, 1, a.size))
    if ties:
        s = np.round(s, 1)  # many ties across classes
    grp = np.where(np.arange(k) % 3 == 0, "X", "Y")
    names = np.array([f"p{i}" for i in range(k)])
    return s, names[a], names[b], grp[a], grp[b]


def _brute(s, gen, beta, rule):
    """Highest observed score whose FNMR over all genuine comparisons is <= beta (-inf if none)."""
    ok = [c for c in np.unique(s) if np.mean(~accepts(s[gen], c, rule)) <= beta]
    return max(ok) if ok else -np.inf


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fmr_at_fnmr_equals_brute_force(seed, ties, rule):
    s, ia, ib, ga, gb = _listed(seed, ties)
    data = from_scores(s, ia, ib, attributes_a={"g": ga}, attributes_b={"g": gb}, group_by="g")
    targets = (0.0, 0.02, 0.1, 0.25, 0.5)
    res = ma.audit(data, fmr=(), fnmr=targets, rule=rule, measures=ma.MeasureOptions(weightings=["pooled"]),
                   intervals=False)
    gen = ia == ib
    for beta in targets:
        t = _brute(s, gen, beta, rule)
        point = res.at_fnmr(beta)
        assert point.loc["all", "threshold"] == t
        for g in ("all", "X", "Y"):
            sel_g = gen & ((ga == g) | (g == "all"))
            sel_i = ~gen & (((ga == g) & (gb == g)) | (g == "all"))
            assert point.loc[g, "fnmr_errors"] == np.sum(~accepts(s[sel_g], t, rule))
            assert point.loc[g, "fmr_errors"] == np.sum(accepts(s[sel_i], t, rule))
        assert point.loc["all", "fnmr"] <= beta


def test_all_pairs_and_fairness_rows():
    data = ma.simulate(samples_per_identity=4, dim=16, seed=4).as_data()
    res = ma.audit(data, fmr=1e-2, fnmr=(0.05,), intervals=False)
    for w in ("pooled", "balanced"):
        p = res.at_fnmr(0.05, w)
        assert p.loc["all", "fnmr"] <= 0.05
    assert {"fmr_target", "fnmr_target"} <= set(res.fairness["kind"])
    with pytest.raises(ma.InputError, match="FNMR target 0.2"):
        res.at_fnmr(0.2)
