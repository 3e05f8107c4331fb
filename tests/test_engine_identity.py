"""identity_counts equals a pure-Python tally over the explicitly listed comparisons."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit.blocks import DenseBlock
from matchaudit.engine import build_grid, identity_counts, run
from matchaudit.errors import InputError
from matchaudit.model import MatchData, PairBlock
from matchaudit.pairings import PairCategories

from tests.engine_reference import listed, make_data, score_matrix


def _comparisons(data):
    """(k, l, score) of every comparison of the protocol."""
    ident = data.samples.identity
    if data.protocol == "listed":
        p = data.pairs
        return list(zip(p.identity_a.tolist(), p.identity_b.tolist(), p.score.tolist()))
    S = score_matrix(data)
    n = S.shape[0]
    return [(ident[i], ident[j], S[i, j]) for i in range(n) for j in range(i + 1, n)]


def _brute(data, thresholds, rule, reference):
    K = data.n_identities
    grp = data.identity_group
    cats = PairCategories.pooled_by(reference)
    acc = (lambda s, t: s >= t) if rule == ">=" else (lambda s, t: s > t)
    T = len(thresholds)
    g = np.zeros(K, np.int64)
    e = np.zeros((T, K), np.int64)
    m = {}
    pe = [dict() for _ in range(T)]
    for k, l, s in _comparisons(data):
        if k == l:
            g[k] += 1
            for t, thr in enumerate(thresholds):
                e[t, k] += not acc(s, thr)
            continue
        key = (min(k, l), max(k, l))
        m[key] = m.get(key, 0) + 1
        for t, thr in enumerate(thresholds):
            if acc(s, thr):
                pe[t][key] = pe[t].get(key, 0) + 1
    cat = {key: cats.slot[grp[key[0]], grp[key[1]]] for key in m}
    m_row_cat = np.zeros((cats.n, K), np.int64)
    e_row_cat = np.zeros((T, cats.n, K), np.int64)
    for key, v in m.items():
        for side in key:
            m_row_cat[cat[key], side] += v
            for t in range(T):
                e_row_cat[t, cat[key], side] += pe[t].get(key, 0)
    sum_m2_cat = [sum(v * v for key, v in m.items() if cat[key] == c) for c in range(cats.n)]
    return g, e, m, pe, cat, m_row_cat, e_row_cat, sum_m2_cat


@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("same_group", [False, True])
def test_identity_counts_match_brute_force(protocol, rule, same_group):
    """Per-category counts in the pooled layout of the threshold impostors (all, or same-group)."""
    for seed in range(3):
        data = make_data(seed=seed)
        if protocol == "listed":
            data = listed(data, seed=seed)
        scores = sorted({s for *_, s in _comparisons(data)})
        # thresholds on observed scores (ties), between them, unsorted, repeated, and beyond both ends
        thresholds = [scores[len(scores) // 2], 0.3, scores[-2], -np.inf, scores[len(scores) // 2], np.inf,
                      scores[3]]
        G = data.n_groups
        reference = np.eye(G, dtype=bool) if same_group else np.ones((G, G), bool)
        c = identity_counts(data, thresholds, rule, block_rows=3, reference=reference)
        g, e, m, pe, cat, m_row_cat, e_row_cat, sum_m2_cat = _brute(data, thresholds, rule, reference)
        np.testing.assert_array_equal(c.g, g)
        np.testing.assert_array_equal(c.e, e)
        np.testing.assert_array_equal(c.m_row_cat, m_row_cat)
        np.testing.assert_array_equal(c.m_row, m_row_cat.sum(axis=0))
        np.testing.assert_array_equal(c.e_row_cat, e_row_cat)
        np.testing.assert_array_equal(c.e_row, e_row_cat.sum(axis=1))
        assert c.sum_m2_cat == tuple(sum_m2_cat) and c.sum_m2 == sum(sum_m2_cat)
        np.testing.assert_array_equal(c.group, data.identity_group)
        np.testing.assert_array_equal(c.n_samples, np.bincount(data.samples.identity))
        for t in range(len(thresholds)):
            keys = sorted(pe[t])
            np.testing.assert_array_equal(c.pair_k[t], [k for k, _ in keys])
            np.testing.assert_array_equal(c.pair_l[t], [l for _, l in keys])
            np.testing.assert_array_equal(c.pair_e[t], [pe[t][k] for k in keys])
            np.testing.assert_array_equal(c.pair_m[t], [m[k] for k in keys])
            np.testing.assert_array_equal(c.pair_cat[t], [cat[k] for k in keys])
        assert c.pair_e[3].sum() == sum(m.values()) and c.pair_e[5].size == 0  # -inf accepts all, +inf none


def test_identity_counts_need_identities():
    data = listed(make_data())
    p = data.pairs
    nolabels = PairBlock(p.score, np.full(len(p), -1), np.full(len(p), -1), p.group_a, p.group_b, p.genuine,
                         p.sample_a, p.sample_b)
    bad = MatchData(**{**data.__dict__, "pairs": nolabels})
    with pytest.raises(InputError, match="identities"):
        identity_counts(bad, [0.5])


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(3), rs.DoubleOrNothing(4), None], ids=str)
@pytest.mark.parametrize("rule", [">=", ">"])
def test_tail_hits_give_the_same_identity_counts(scheme, rule):
    """identity_counts from the comparisons the counting pass kept equals the scoring pass, exactly."""
    data = make_data(seed=5, sizes=(3, 5, 2, 6, 1, 4, 3), groups=(0, 1, 1, 0, 1, 0, 2))
    grid = build_grid(data, n_cells=32, rule=rule)
    c = run(data, scheme, 3, grid=grid, fmr_targets=[0.05, 0.2], keep_tail=True)
    thr = c.target_threshold[0]
    assert c.tail is not None and c.tail.covers(thr)
    assert np.isfinite(c.tail.floor) and c.tail.impostor_score.size < c.impostor_total[0].sum()  # a real tail
    a, b = identity_counts(data, thr, rule), identity_counts(data, thr, rule, hits=c.tail)
    for f in ("g", "e", "m_row", "e_row", "m_row_cat", "e_row_cat", "sum_m2"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    for f in ("pair_k", "pair_l", "pair_e", "pair_m", "pair_cat"):
        for x, y in zip(getattr(a, f), getattr(b, f)):
            np.testing.assert_array_equal(x, y, err_msg=f)
    below = np.array([c.tail.floor - 1.0])  # not covered: the scoring pass runs, same answer
    np.testing.assert_array_equal(identity_counts(data, below, rule, hits=c.tail).e, identity_counts(data, below, rule).e)


@pytest.mark.parametrize("row0, col0, self_pairs", [(0, 0, False), (0, 0, True), (40, 0, False), (0, 64, True)])
def test_row_chunks_count_each_rows_comparisons_and_split_them_evenly(row0, col0, self_pairs):
    """``DenseBlock.row_chunks``: the offsets are the cumulated comparisons of each row (global row < column, plus
    the diagonal entry with ``self_pairs``), and the ranges cover the rows in order with about equal comparisons
    (no range more than one row's comparisons above an even share): what the identity pass and the direct
    counting pass split their rows by."""
    block = DenseBlock(row0=row0, col0=col0, scores=np.zeros((48, 96)))
    rows = np.arange(3, 45)
    c_lo, c_hi = 5, 90
    cum, chunks = block.row_chunks(rows, c_lo, c_hi, 4, self_pairs)
    brute = [sum(1 for j in range(col0 + c_lo, col0 + c_hi) if row0 + a < j or (self_pairs and row0 + a == j))
             for a in rows]
    np.testing.assert_array_equal(cum, np.concatenate([[0], np.cumsum(brute)]))
    assert chunks[0] == 0 and chunks[-1] == rows.size and (np.diff(chunks) >= 0).all()
    share = cum[-1] / 4
    assert all(cum[chunks[t + 1]] - cum[chunks[t]] <= share + max(brute) for t in range(4))


@pytest.mark.parametrize("rule", [">=", ">"])
def test_counts_at_a_subset_of_held_thresholds_equal_a_pass_and_make_none(rule, monkeypatch):
    """Inside one audit's block, identity counts at thresholds that a held pass covered (a subset, repeated, unsorted,
    +-inf, ties on observed scores) are derived from it, exactly equal to a fresh pass, without scoring again; a
    threshold the held pass lacks makes a pass."""
    from matchaudit import scores as sc
    from matchaudit.engine import identity as ident

    data = make_data(seed=7, sizes=(3, 5, 2, 6, 1, 4, 3), groups=(0, 1, 1, 0, 1, 0, 2))
    obs = sorted({s for *_, s in _comparisons(data)})
    held = [obs[2], obs[len(obs) // 2], -np.inf, obs[-3], np.inf, 0.25, obs[len(obs) // 3]]
    passes = []
    real = ident._all_pairs_hits
    monkeypatch.setattr(ident, "_all_pairs_hits", lambda *a: (passes.append(1), real(*a))[1])
    fresh = {}
    for sub in ([obs[-3], obs[2]], [obs[len(obs) // 2]] * 2, [np.inf, -np.inf, 0.25], [obs[len(obs) // 3], obs[2]]):
        fresh[tuple(sub)] = identity_counts(data, sub, rule)
    assert len(passes) == 4
    with sc.tile_cache():
        identity_counts(data, held, rule)
        for sub, want in fresh.items():
            got = identity_counts(data, list(sub), rule)
            for f in ("g", "e", "m_row", "e_row", "m_row_cat", "e_row_cat", "sum_m2"):
                np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)
            for f in ("pair_k", "pair_l", "pair_e", "pair_m", "pair_cat"):
                for x, y in zip(getattr(got, f), getattr(want, f), strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=f)
        assert len(passes) == 5  # the held pass only
        identity_counts(data, [obs[1]], rule)  # not held: scored
        assert len(passes) == 6
