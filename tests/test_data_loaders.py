"""Round trips through matchaudit.data: the same data in any supported form gives the same MatchData."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from matchaudit.data import from_embeddings, from_scores, load_comparisons, load_samples
from matchaudit.model import DenseBlock
from tests.matchdata_assert import assert_same_matchdata

_same = assert_same_matchdata


@pytest.fixture
def population():
    """8 identities x 3 samples, gender x ethnicity constant per identity (two identities per group)."""
    rng = np.random.default_rng(7)
    n_ids, per = 8, 3
    ident = np.repeat([f"p{k}" for k in range(n_ids)], per)
    df = pd.DataFrame({
        "sample_id": [f"img{i:03d}" for i in range(n_ids * per)],
        "identity": ident,
        "gender": np.repeat(["F", "M"] * 4, per),
        "ethnicity": np.repeat(["asian", "asian", "black", "black"] * 2, per),
    })
    return df, rng.normal(size=(n_ids * per, 8)).astype(np.float32)


def test_csv_and_parquet_samples_tables_agree(tmp_path, population):
    df, x = population
    df.to_csv(tmp_path / "s.csv", index=False)
    df.to_parquet(tmp_path / "s.parquet")
    df.to_csv(tmp_path / "s.tsv", index=False, sep="\t")
    np.save(tmp_path / "e.npy", x)
    kw = dict(group_by=("gender", "ethnicity"))
    a = load_samples(tmp_path / "s.csv", tmp_path / "e.npy", **kw)
    _same(a, load_samples(tmp_path / "s.parquet", tmp_path / "e.npy", **kw))
    _same(a, load_samples(tmp_path / "s.tsv", tmp_path / "e.npy", **kw))
    _same(a, from_embeddings(x, df["identity"], ids=df["sample_id"], attributes=df, **kw))
    assert a.protocol == "all-pairs" and a.n_comparisons() == 24 * 23 // 2
    assert a.group_names == ("F|asian", "F|black", "M|asian", "M|black")
    assert a.group_by == ("gender", "ethnicity")
    assert [a.group_names[g] for g in a.identity_group] == ["F|asian", "M|asian", "F|black", "M|black"] * 2
    assert np.allclose(np.linalg.norm(a.samples.embeddings, axis=1), 1, atol=1e-6)


def test_npy_and_parquet_list_column_agree(tmp_path, population):
    df, x = population
    np.save(tmp_path / "e.npy", x)
    df.to_csv(tmp_path / "s.csv", index=False)
    df.assign(embedding=[list(r) for r in x]).to_parquet(tmp_path / "s.parquet")
    a = load_samples(tmp_path / "s.csv", tmp_path / "e.npy", metric="euclidean")
    b = load_samples(tmp_path / "s.parquet", metric="euclidean")  # auto-detected column "embedding"
    _same(a, b)
    c = load_samples(tmp_path / "s.parquet", embedding_col="embedding", metric="euclidean")
    _same(a, c)
    assert a.score_kind == "negated euclidean"


def test_no_group_by_is_one_group_all(tmp_path, population):
    df, x = population
    md = from_embeddings(x, df["identity"])
    assert md.group_names == ("all",) and md.group_by == () and set(md.identity_group) == {0}


def test_listed_pairs_score_like_all_pairs(tmp_path, population):
    df, x = population
    df.to_csv(tmp_path / "s.csv", index=False)
    np.save(tmp_path / "e.npy", x)
    pairs = pd.DataFrame({"sample_a": ["img000", "img004", "img003", "img010"],
                          "sample_b": ["img001", "img000", "img005", "img023"]})
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    listed = load_samples(tmp_path / "s.csv", tmp_path / "e.npy", pairs_path=tmp_path / "pairs.csv")
    full = load_samples(tmp_path / "s.csv", tmp_path / "e.npy")
    dense = np.full((24, 24), np.nan)
    for blk in full.blocks():
        assert isinstance(blk, DenseBlock)
        r, c = blk.scores.shape
        dense[blk.row0:blk.row0 + r, blk.col0:blk.col0 + c] = blk.scores
    p = listed.pairs
    lo, hi = np.minimum(p.sample_a, p.sample_b), np.maximum(p.sample_a, p.sample_b)
    assert np.array_equal(p.score, dense[lo, hi])  # the same bits
    assert listed.protocol == "listed" and p.genuine.tolist() == [True, False, True, False]
    assert np.array_equal(p.sample_a, [0, 4, 3, 10]) and np.array_equal(p.identity_b, [0, 0, 1, 7])
    # exactly two columns with other names are taken as (sample_a, sample_b)
    pairs.set_axis(["enrol", "test"], axis=1).to_parquet(tmp_path / "pairs.parquet")
    _same(listed, load_samples(tmp_path / "s.csv", tmp_path / "e.npy", pairs_path=tmp_path / "pairs.parquet"))


@pytest.fixture
def comparisons():
    cmp = pd.DataFrame({
        "sample_a": ["a1", "a1", "b1", "c1", "a2", "c2", "d1", "b2"],
        "sample_b": ["a2", "b1", "b2", "c2", "c1", "d2", "d2", "d1"],
        "identity_a": ["A", "A", "B", "C", "A", "C", "D", "B"],
        "identity_b": ["A", "B", "B", "C", "C", "D", "D", "D"],
        "score": [0.9, 0.1, 0.8, 0.7, 0.2, 0.3, 0.6, 0.25],
    })
    subjects = pd.DataFrame({"identity": ["A", "B", "C", "D"], "gender": ["F", "M", "F", "M"]})
    return cmp, subjects


def test_per_side_attributes_and_metadata_tables_agree(tmp_path, comparisons):
    cmp, subjects = comparisons
    gender = dict(zip(subjects["identity"], subjects["gender"]))
    per_side = cmp.assign(gender_a=cmp["identity_a"].map(gender), gender_b=cmp["identity_b"].map(gender))
    per_side.to_csv(tmp_path / "per_side.csv", index=False)
    cmp.to_parquet(tmp_path / "cmp.parquet")
    subjects.to_csv(tmp_path / "subjects.csv", index=False)
    sample_meta = pd.DataFrame({"sample_id": ["a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"]})
    sample_meta["identity"] = sample_meta["sample_id"].str[0].str.upper()
    sample_meta["gender"] = sample_meta["identity"].map(gender)
    sample_meta.to_parquet(tmp_path / "samples.parquet")

    a = load_comparisons(tmp_path / "per_side.csv", group_by="gender")
    b = load_comparisons(tmp_path / "cmp.parquet", group_by="gender", metadata_path=tmp_path / "subjects.csv")
    c = load_comparisons(tmp_path / "cmp.parquet", group_by="gender", metadata_path=tmp_path / "samples.parquet")
    # identities from the sample metadata table
    d = load_comparisons(tmp_path / "cmp.parquet", identity_cols=None, group_by="gender",
                         metadata_path=tmp_path / "samples.parquet", metadata_key="sample_id")
    e = from_scores(cmp["score"], cmp["identity_a"], cmp["identity_b"], sample_a=cmp["sample_a"],
                    sample_b=cmp["sample_b"], group_by="gender",
                    attributes_a={"gender": per_side["gender_a"]}, attributes_b={"gender": per_side["gender_b"]})
    for other in (b, c, d, e):
        _same(a, other)
    assert a.group_names == ("F", "M") and a.identity_group.tolist() == [0, 1, 0, 1]
    assert a.pairs.genuine.tolist() == [True, False, True, True, False, False, True, False]
    assert a.samples is not None and a.identity_sizes.tolist() == [2, 2, 2, 2]
    assert a.score_kind == "similarity" and a.has_identities


def test_distance_scores_are_negated(tmp_path, comparisons):
    cmp, _ = comparisons
    cmp.assign(score=1 - cmp["score"]).to_csv(tmp_path / "dist.csv", index=False)
    md = load_comparisons(tmp_path / "dist.csv", distance=True)
    assert md.score_kind == "negated distance"
    assert np.allclose(md.pairs.score, cmp["score"] - 1)


def test_label_only_table(tmp_path):
    df = pd.DataFrame({
        "score": [0.9, 0.2, 0.8, 0.1, 0.3, 0.7],
        "label": ["Target", "nontarget", "1", "false", "non-match", "MATCH"],
        "gender_a": ["F", "F", "M", "M", "F", "F"],
        "gender_b": ["F", "F", "M", "M", "M", "F"],
    })
    df.to_csv(tmp_path / "trials.csv", index=False)
    md = load_comparisons(tmp_path / "trials.csv", group_by="gender")
    assert not md.has_identities and md.samples is None and md.n_identities == 0
    assert md.pairs.genuine.tolist() == [True, False, True, False, False, True]
    assert md.pairs.identity_a.tolist() == [-1] * 6 and md.pairs.sample_a.tolist() == [-1] * 6
    assert md.group_names == ("F", "M") and md.pairs.group_b.tolist() == [0, 0, 1, 1, 1, 0]


@pytest.mark.parametrize("genuine,impostor", [(1, 0), (True, False), ("genuine", "impostor"),
                                              ("TARGET", "NonTarget"), ("match", "non-match"), (1.0, 0.0),
                                              (1, -1), ("+1", "-1"), (1.0, -1.0), ("non_match", "non match")][:-1]
                         + [("same", "non match")])
def test_label_spellings(genuine, impostor):
    md = from_scores([0.9, 0.1], label=[genuine, impostor])
    assert md.pairs.genuine.tolist() == [True, False]


@pytest.mark.parametrize("bad", ["--1", "1-", "2", "- 1"])
def test_signs_are_not_stripped(bad):
    """A -1 used to be read as genuine (every '-' was stripped), turning a 1/-1 table all genuine."""
    from matchaudit.errors import InputError

    with pytest.raises(InputError, match="unrecognised label at positions 1 "):
        from_scores([0.9, 0.1], label=[1, bad])


def test_labels_agreeing_with_identities_are_accepted(tmp_path, comparisons):
    cmp, _ = comparisons
    lab = np.where(cmp["identity_a"] == cmp["identity_b"], "genuine", "impostor")
    cmp.assign(is_same=lab).to_csv(tmp_path / "cmp.csv", index=False)
    md = load_comparisons(tmp_path / "cmp.csv", label_col="is_same")
    assert md.pairs.genuine.tolist() == (lab == "genuine").tolist()


def test_identity_only_table(tmp_path, comparisons):
    cmp, _ = comparisons
    cmp.drop(columns=["sample_a", "sample_b"]).to_csv(tmp_path / "cmp.csv", index=False)
    md = load_comparisons(tmp_path / "cmp.csv")
    assert md.samples is None and md.pairs.sample_a.tolist() == [-1] * 8 and md.has_identities
    assert md.identity_names.tolist() == ["A", "B", "C", "D"]


def test_ids_keep_leading_zeros(tmp_path):
    df = pd.DataFrame({"identity_a": ["007", "007", "010"], "identity_b": ["007", "010", "010"],
                       "score": [0.9, 0.1, 0.8]})
    df.to_csv(tmp_path / "cmp.csv", index=False)
    assert load_comparisons(tmp_path / "cmp.csv").identity_names.tolist() == ["007", "010"]
