"""Closed-form, identity-clustered intervals of every cell of the cross-group FMR matrix: each cell's interval is
``fmr_interval`` of the cell's identity-pair matrices built by brute force, and the audit carries them."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.estimators import intervals as iv
from matchaudit.auditing.intervals import (CROSS_GROUP_FIELDS, IntervalOptions, add_cross_group_intervals,
                                           cross_group_intervals, cross_group_method)
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.model import MatchData, PairBlock
from tests.engine_reference import listed, make_data, score_matrix

SIZES = (1, 2, 3, 4, 1, 5, 2, 3, 2)
GROUPS = (0, 1, 0, 2, 1, 2, 0, 1, 0)
THRESHOLDS = (0.5, 0.9, -np.inf, np.inf, 0.0)


def _data(protocol: str, groups=GROUPS, sizes=SIZES) -> MatchData:
    data = make_data(seed=4, sizes=sizes, groups=groups)
    return listed(data, seed=4) if protocol == "listed" else data


def _matrices(data: MatchData, t: float, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Dense K x K impostor comparisons and accepted impostors, counted one comparison at a time."""
    ident = data.samples.identity
    if data.protocol == "listed":
        p = data.pairs
        trials = zip(p.sample_a.tolist(), p.sample_b.tolist(), p.score.tolist())
    else:
        S = score_matrix(data)
        trials = ((i, j, S[i, j]) for i in range(S.shape[0]) for j in range(i + 1, S.shape[0]))
    K = data.n_identities
    m, e = np.zeros((K, K)), np.zeros((K, K))
    for i, j, s in trials:
        k, l = ident[i], ident[j]
        if k != l:
            m[k, l] += 1
            m[l, k] += 1
            hit = s >= t if rule == ">=" else s > t
            e[k, l] += hit
            e[l, k] += hit
    return m, e


def _expected(m: np.ndarray, e: np.ndarray, group: np.ndarray, a: int, b: int, level: float = 0.95
              ) -> tuple[iv.IntervalResult, int]:
    """``fmr_interval('wilson')`` of cell (a, b) from the matrices restricted to it, and the cell's
    min(K_a, K_b) identities with comparisons (the disjoint pairs of a bipartite cell)."""
    ga, gb = group[:, None], group[None, :]
    cell = ((ga == a) & (gb == b)) | ((ga == b) & (gb == a))
    r = iv.fmr_interval("wilson", iv.ImpostorTotals.from_matrices(m * cell, e * cell), level)
    rows = (m * cell).sum(axis=1) > 0
    return r, min(int((rows & (group == a)).sum()), int((rows & (group == b)).sum()))


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
def test_every_cell_is_fmr_interval_of_its_brute_force_matrices(protocol, rule):
    """Every cell (3 groups: 6 cells) at every threshold: counts exact, bounds and standard error to 1e-12 (sums
    in another order); zero-error bipartite cells have the bound with min(K_a, K_b) disjoint pairs."""
    data = _data(protocol)
    group = data.identity_group
    got = cross_group_intervals(data, THRESHOLDS, rule)
    assert set(got) == {(ti, a, b) for ti in range(len(THRESHOLDS)) for a in range(3) for b in range(a, 3)}
    kinds = set()
    for ti, t in enumerate(THRESHOLDS):
        m, e = _matrices(data, t, rule)
        for a in range(3):
            for b in range(a, 3):
                r = got[ti, a, b]
                want, pairs = _expected(m, e, group, a, b)
                assert (r.errors, r.comparisons) == (want.errors, want.comparisons) and r.comparisons > 0
                if a != b and r.errors == 0:
                    kinds.add("bipartite zero")
                    assert r.confidence_interval == (0.0, min(1.0, -math.log(1 - 0.95) / pairs)), (ti, a, b)
                    assert "min(K_a, K_b) = " in r.note
                    continue
                kinds.add("zero" if r.errors == 0 else "all" if r.errors == r.comparisons else "errors")
                np.testing.assert_allclose([r.estimate, *r.confidence_interval, r.standard_error],
                                           [want.estimate, *want.confidence_interval, want.standard_error],
                                           rtol=1e-12, atol=1e-15)
                assert r.method == want.method == "wilson" and r.note == want.note
    assert kinds == {"bipartite zero", "zero", "all", "errors"}  # every branch of fmr_interval was compared


def test_unequal_bipartite_zero_cell_bound_counts_disjoint_pairs():
    """A zero-error cell between a group of 4 identities and one of 12: at most 4 disjoint identity pairs, so the
    bound is -ln(0.05)/4, not the within-group bound's floor(16/2) = 8 pairs (half of it: too low); diagonal
    cells keep the documented bound (floor(K/2) pairs)."""
    data = _data("all-pairs", groups=(0,) * 4 + (1,) * 12, sizes=(2,) * 16)
    got = cross_group_intervals(data, [np.inf])
    alpha = 1 - 0.95
    assert got[0, 0, 1].confidence_interval == (0.0, -math.log(alpha) / 4)
    assert iv.zero_false_match_bound(16) == pytest.approx(-math.log(alpha) / 8)
    assert got[0, 0, 0].confidence_interval == (0.0, iv.zero_false_match_bound(4)) == (0.0, 1.0)  # 2 pairs: capped
    assert got[0, 1, 1].confidence_interval == (0.0, -math.log(alpha) / 6)


def test_a_cell_without_comparisons_gets_nan_and_one_group_works():
    # group 2 holds one identity: its diagonal cell has no impostor comparisons
    data = _data("all-pairs", groups=(0, 1, 0, 2, 1, 1, 0, 1, 0))
    got = cross_group_intervals(data, [0.5])
    r = got[0, 2, 2]
    assert r.comparisons == 0 and r.note == "no comparisons" and all(math.isnan(x) for x in r.confidence_interval)
    assert got[0, 0, 2].comparisons > 0 and math.isfinite(got[0, 0, 2].confidence_interval.high)
    one = _data("listed", groups=(0,) * len(SIZES))
    got = cross_group_intervals(one, [0.5, 0.9])
    m, e = _matrices(one, 0.9, ">=")
    assert set(got) == {(0, 0, 0), (1, 0, 0)}
    want = iv.fmr_interval("wilson", iv.ImpostorTotals.from_matrices(m, e))
    np.testing.assert_allclose(got[1, 0, 0].confidence_interval, want.confidence_interval, rtol=1e-12)


def test_labels_only_data_is_refused_by_the_function_and_skipped_by_the_audit():
    """(Through ``add_cross_group_intervals``, the audit's step: an audit with intervals of labels-only data stops
    earlier, in the bootstrap.)"""
    d = _data("listed")
    p = d.pairs
    none = np.full(len(p), -1, np.int64)
    pb = PairBlock(score=p.score, identity_a=none, identity_b=none, group_a=p.group_a, group_b=p.group_b,
                   genuine=p.genuine, sample_a=none, sample_b=none)
    labels = MatchData(identity_names=np.zeros(0, str), identity_group=np.zeros(0, np.int64),
                       group_names=d.group_names, group_by=d.group_by, protocol="listed", score_kind="cosine",
                       pairs=pb)
    assert not labels.has_identities
    with pytest.raises(ma.InputError, match="identity"):
        cross_group_intervals(labels, [0.5])
    exact = evaluate(labels, AuditConfig(fmr_targets=(0.1,), thresholds=(0.5,), weightings=("pooled",)))
    warnings = add_cross_group_intervals(labels, exact, IntervalOptions())
    assert exact.cross_group_fmr and all(r[f] is None for r in exact.cross_group_fmr for f in CROSS_GROUP_FIELDS)
    assert len(warnings) == 1 and "cross-group FMR intervals skipped" in warnings[0]


@pytest.fixture(scope="module")
def audited():
    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    return data, ma.audit(data, fmr=(1e-2,), thresholds=0.3, fnmr=(0.1,), measures=ma.MeasureOptions(calibration=False),
                          intervals=ma.IntervalOptions(n_resamples=40))


def test_the_audit_puts_the_cells_intervals_on_pooled_records_only(audited, tmp_path):
    data, res = audited
    recs = res.exact.cross_group_fmr
    pooled = [r for r in recs if r["weighting"] == "pooled"]
    balanced = [r for r in recs if r["weighting"] == "balanced"]
    G = data.n_groups
    assert G >= 2 and len(pooled) == len(balanced) == 3 * G * (G + 1) // 2  # three operating points
    thresholds = sorted({r["threshold"] for r in pooled})
    cells = cross_group_intervals(data, thresholds, ">=")
    code = {g: i for i, g in enumerate(data.group_names)}
    for r in pooled:
        c = cells[thresholds.index(r["threshold"]), code[r["group_a"]], code[r["group_b"]]]
        assert (c.errors, c.comparisons) == (r["errors"], r["comparisons"])  # the audit's own counts
        assert (r["fmr_lower"], r["fmr_upper"]) == tuple(c.confidence_interval)
        assert r["fmr_lower"] <= r["fmr"] <= r["fmr_upper"]
        assert r["interval_method"] == "wilson" and r["level"] == 0.95
    assert all(r[f] is None for r in balanced for f in CROSS_GROUP_FIELDS)
    paths = res.save(tmp_path, figures=False)  # results.json is schema-checked on the way
    with open(paths["cross_group_fmr"]) as f:
        rows = list(csv.DictReader(f))
    assert set(CROSS_GROUP_FIELDS) <= set(rows[0]) and len(rows) == len(recs)
    assert sum(bool(row["fmr_upper"]) for row in rows) == len(pooled)


def test_without_intervals_the_fields_are_there_and_none(audited):
    data, _ = audited
    res = ma.audit(data, fmr=1e-2, intervals=False)
    assert res.exact.cross_group_fmr
    assert all(r[f] is None for r in res.exact.cross_group_fmr for f in CROSS_GROUP_FIELDS)
    assert set(CROSS_GROUP_FIELDS) <= set(res.cross_group_fmr.columns)


def test_the_cells_method_follows_the_audit_s_closed_form():
    assert cross_group_method(IntervalOptions()) == "wilson"
    assert cross_group_method(IntervalOptions(method="double-or-nothing")) == "wilson"
    assert cross_group_method(IntervalOptions(method=("recentered", "wald"))) == "wald"
    assert cross_group_method(IntervalOptions(method="jackknife")) == "wilson"
