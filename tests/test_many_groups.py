"""Many groups in bounded memory: the pooled impostor categories give the numbers of every-pair categories."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matchaudit.metrics import tally as tally_module
from matchaudit.metrics.cross_groups import cross_group_counts
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.pairings import POOLED_OTHER, POOLED_REFERENCE, PairCategories
from tests.engine_reference import listed, make_data, score_matrix

SIZES = (3, 5, 2, 6, 1, 4, 3, 2, 4)
GROUPS = (0, 1, 2, 3, 1, 0, 2, 3, 3)


def _data(protocol):
    data = make_data(seed=4, sizes=SIZES, groups=GROUPS)
    return listed(data, seed=4) if protocol == "listed" else data


def test_pooled_categories_are_linear_in_groups():
    G = 100
    ref = np.eye(G, dtype=bool)
    full, pooled = PairCategories.full(ref), PairCategories.pooled_by(ref)
    assert full.n == G * (G + 1) // 2 and pooled.n == G + 1  # no cross pair sets the threshold: one pooled other
    assert pooled.pairs[-1] == POOLED_OTHER and not pooled.reference[-1] and pooled.reference[:G].all()
    both = PairCategories.pooled_by(np.add.outer(np.arange(G) % 2, np.arange(G) % 2) % 2 == 0)  # same parity
    assert both.n == G + 2 and both.pairs[G:] == (POOLED_REFERENCE, POOLED_OTHER)
    assert both.slot[0, 2] == G and both.slot[0, 1] == G + 1 and (both.slot == both.slot.T).all()
    np.testing.assert_array_equal(both.select(np.eye(G, dtype=bool)), np.arange(both.n) < G)
    with pytest.raises(ValueError, match="split the pooled category"):
        both.select(np.eye(G, k=2, dtype=bool) | np.eye(G, dtype=bool))


@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
@pytest.mark.parametrize("impostors", ["all", "same-group"])
def test_pooled_tally_and_cross_group_pass_equal_the_full_tally(protocol, impostors, monkeypatch):
    """Every record of the exact audit, the cross-group FMR matrix included (then from its own pass), is the same
    whether the tally counts every group pair or pools the cross-group pairs (balanced sums in another order:
    1e-12)."""
    data = _data(protocol)
    config = AuditConfig(fmr_targets=(0.2, 0.05, 0.01), fnmr_targets=(0.1,), thresholds=(0.3,),
                         threshold_impostors=impostors)
    full = evaluate(data, config)
    monkeypatch.setattr(tally_module, "FULL_BYTES", 0)
    pooled = evaluate(data, config)
    for table in ("operating_points", "cross_group_fmr", "fairness", "curve_summaries"):
        a, b = getattr(full, table), getattr(pooled, table)
        assert len(a) == len(b) > 0
        for x, y in zip(a, b):
            assert x.keys() == y.keys()
            for k in x:
                if isinstance(x[k], float) and x.get("weighting") == "balanced":
                    assert math.isclose(x[k], y[k], rel_tol=1e-12) or (math.isnan(x[k]) and math.isnan(y[k])), k
                else:
                    assert x[k] == y[k] or (x[k] != x[k] and y[k] != y[k]), (table, k, x[k], y[k])
    assert full.summary == pooled.summary


def test_cross_group_counts_match_brute_force():
    data = _data("all-pairs")
    S = score_matrix(data)
    ident, grp = data.samples.identity, data.identity_group
    thresholds = [0.4, -np.inf, 0.1, np.inf]
    cc = cross_group_counts(data, thresholds, ">", block_rows=3)
    n = S.shape[0]
    for ti, t in enumerate(thresholds):
        acc = np.zeros((4, 4), np.int64)
        tot = np.zeros((4, 4), np.int64)
        for i in range(n):
            for j in range(i + 1, n):
                if ident[i] != ident[j]:
                    a, b = sorted((grp[ident[i]], grp[ident[j]]))
                    tot[a, b] += 1
                    acc[a, b] += S[i, j] > t
        for c, (a, b) in enumerate(cc.categories.pairs):
            assert cc.accepted[ti, c] == acc[a, b] and cc.comparisons[c] == tot[a, b], (t, a, b)


@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
def test_same_group_fmr_of_every_group_per_relabelling_matches_brute_force(protocol):
    """The all-groups FMR of the group tests (one pass over identity pairs per relabelling) equals each group's
    identity-clustered FMR, variance and share sum computed from its comparisons (identity pairs with several
    comparisons and errors, so that no term's square equals the term)."""
    data = make_data(seed=7, sizes=(3, 5, 2, 6, 4, 4, 3, 2, 4, 5), groups=(0, 1, 2, 3, 1, 0, 2, 3, 3, 0), dim=2)
    if protocol == "listed":
        data = listed(data, seed=7)
        p = data.pairs
        score, ka, kb = p.score, p.identity_a, p.identity_b
    else:
        S = score_matrix(data)
        i, j = np.triu_indices(S.shape[0], 1)
        ident = data.samples.identity
        score, ka, kb = S[i, j], ident[i], ident[j]
    for q in (0.2, 0.5, 0.8):
        _check_relabelled_fmr(data, score, ka, kb, float(np.quantile(score[ka != kb], q)))


def _check_relabelled_fmr(data, score, ka, kb, t):
    from matchaudit.auditing.matching_passes import cluster_terms
    from matchaudit.estimators.matching_tests import relabellings
    from tests.test_matching_tests import _clustered

    terms = cluster_terms(data, t, ">=")
    labels, _ = relabellings(data.identity_group, np.arange(data.n_identities), 6, 1)
    labels = np.concatenate([data.identity_group[None], labels])
    eye = np.eye(4, dtype=bool)
    p_, v_, w_, _ = terms.fmr(labels, np.concatenate([eye, ~eye]))  # each group, then the rest of each
    for r, lab in enumerate(labels):
        for s, side in enumerate(np.concatenate([eye, ~eye])):
            im = (ka != kb) & (lab[ka] == lab[kb]) & side[lab[ka]]
            bp, bv, bw = _clustered((score[im] >= t).astype(float), ka[im], kb[im])
            np.testing.assert_allclose([p_[r, s], v_[r, s], w_[r, s]], [bp, bv, bw], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("regions", [1])
def test_relabelled_fmr_at_the_observed_labels_equals_the_audit_closed_form(regions, tmp_path):
    """On a trial list with repeated identity pairs (m_kl > 1, several errors per pair), the group tests' FMR
    variance at the observed labels equals the closed-form FMR variance of each group (identity counts), the
    formula the audit's intervals use."""
    import sys
    from pathlib import Path

    from matchaudit.data import load_comparisons
    from matchaudit.engine import identity_counts
    from matchaudit.estimators import intervals as iv
    from matchaudit.estimators.closed_forms import impostor_categories, impostor_totals
    from matchaudit.auditing.matching_passes import cluster_terms

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from many_groups import ATTRS, trial_list

    df, _ = trial_list(regions, n_trials=40_000)  # 4 groups: impostor trials within and across groups
    df.to_parquet(tmp_path / "t.parquet")
    data = load_comparisons(tmp_path / "t.parquet", group_by=list(ATTRS))
    imp = df.score[df.identity_a != df.identity_b]
    for t in np.quantile(imp, [0.9, 0.99]):
        p, v, _, _ = cluster_terms(data, float(t), ">=").fmr(data.identity_group[None], np.eye(data.n_groups, dtype=bool))
        ic = identity_counts(data, [t])
        for g in range(data.n_groups):
            tot = impostor_totals(ic, 0, impostor_categories(ic, g))
            np.testing.assert_allclose(v[0, g], iv.fmr_variance(tot), rtol=1e-9)
