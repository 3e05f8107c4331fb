"""One test per bad-input case of matchaudit.data: each raises InputError naming the rows/identities and the fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from matchaudit.data import from_embeddings, from_scores, load_comparisons, load_samples
from matchaudit.errors import InputError


def _samples(n_ids: int = 4, per: int = 3, dim: int = 5, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    ident = np.repeat([f"id{k}" for k in range(n_ids)], per)
    df = pd.DataFrame({
        "sample_id": [f"s{i:02d}" for i in range(n_ids * per)],
        "identity": ident,
        "gender": np.repeat(["F", "M"] * (n_ids // 2), per),
    })
    return df, rng.normal(size=(n_ids * per, dim))


def _write_samples(tmp_path, df, x):
    df.to_csv(tmp_path / "samples.csv", index=False)
    np.save(tmp_path / "emb.npy", x)
    return tmp_path / "samples.csv", tmp_path / "emb.npy"


def _comparisons() -> pd.DataFrame:
    return pd.DataFrame({
        "sample_a": ["a1", "a1", "b1", "c1", "a2", "c2"],
        "sample_b": ["a2", "b1", "b2", "c2", "c1", "d1"],
        "identity_a": ["A", "A", "B", "C", "A", "C"],
        "identity_b": ["A", "B", "B", "C", "C", "D"],
        "score": [0.9, 0.1, 0.8, 0.7, 0.2, 0.3],
    })


def _csv(tmp_path, df, name="cmp.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


# --- columns ---------------------------------------------------------------------------------------------


def test_missing_column_lists_columns_and_suggests_close_match(tmp_path):
    path = _csv(tmp_path, _comparisons().rename(columns={"score": "scores"}))
    with pytest.raises(InputError, match=r"no column 'score'.*Columns present: .*scores.*Did you mean 'scores'"):
        load_comparisons(path)


def test_misnamed_sample_table_column_suggests(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df.rename(columns={"identity": "Identity"}), x)
    with pytest.raises(InputError, match=r"no column 'identity'.*Did you mean 'Identity'"):
        load_samples(s, e)


def test_group_by_attribute_missing_names_both_sources(tmp_path):
    path = _csv(tmp_path, _comparisons())
    with pytest.raises(InputError, match=r"gender_a.*metadata table"):
        load_comparisons(path, group_by="gender")


def test_one_sided_id_columns_are_an_error(tmp_path):
    path = _csv(tmp_path, _comparisons().drop(columns=["identity_b"]).assign(label=[1, 0, 1, 1, 0, 0]))
    with pytest.raises(InputError, match=r"no column 'identity_b'"):
        load_comparisons(path)


# --- embeddings ------------------------------------------------------------------------------------------


def test_embeddings_row_count_differs_from_table(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x[:-1])
    with pytest.raises(InputError, match=r"'emb.npy' has 11 rows but samples table 'samples.csv' has 12"):
        load_samples(s, e)


def test_nan_embeddings_name_file_rows(tmp_path):
    df, x = _samples()
    x[3, 1] = np.nan
    x[7, 0] = np.inf
    s, e = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"NaN or infinite values at rows 4, 8 \(first data row = 1\)"):
        load_samples(s, e)


def test_zero_norm_embedding_with_cosine(tmp_path):
    df, x = _samples()
    x[5] = 0.0
    s, e = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"all-zero embeddings at rows 6 .*euclidean"):
        load_samples(s, e)
    assert load_samples(s, e, metric="euclidean").score_kind == "negated euclidean"


def test_npy_not_two_dimensional(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x[:, 0])
    with pytest.raises(InputError, match=r"shape \(12,\); embeddings must be 2-D"):
        load_samples(s, e)


def test_npy_not_numeric(tmp_path):
    df, _ = _samples()
    s, e = _write_samples(tmp_path, df, np.array([["a", "b"]] * 12))
    with pytest.raises(InputError, match=r"not numeric"):
        load_samples(s, e)


def test_npy_file_that_is_not_npy(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x)
    e.write_bytes(b"1,2,3\n4,5,6\n")
    with pytest.raises(InputError, match=r"not a NumPy .npy file"):
        load_samples(s, e)


def test_embeddings_with_wrong_extension(tmp_path):
    df, x = _samples()
    s, _ = _write_samples(tmp_path, df, x)
    np.savetxt(tmp_path / "emb.csv", x, delimiter=",")
    with pytest.raises(InputError, match=r"unsupported file type '.csv'.*\.npy"):
        load_samples(s, tmp_path / "emb.csv")


def test_parquet_list_column_ragged(tmp_path):
    df, x = _samples()
    df["embedding"] = [list(r) for r in x]
    df.loc[2, "embedding"] = list(x[2][:-1])
    df.to_parquet(tmp_path / "s.parquet")
    with pytest.raises(InputError, match=r"length 4 at rows 3 .*most rows have length 5"):
        load_samples(tmp_path / "s.parquet", embedding_col="embedding")


def test_no_embeddings_given(tmp_path):
    df, x = _samples()
    s, _ = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"no embeddings: give embeddings_path"):
        load_samples(s)


# --- scores ----------------------------------------------------------------------------------------------


def test_nan_scores_name_file_rows(tmp_path):
    df = _comparisons()
    df.loc[[1, 4], "score"] = np.nan
    with pytest.raises(InputError, match=r"NaN, empty or infinite score at rows 2, 5 \(first data row = 1\)"):
        load_comparisons(_csv(tmp_path, df))


def test_infinite_scores_in_arrays_name_positions():
    with pytest.raises(InputError, match=r"infinite score at positions 1 \(0-based\)"):
        from_scores([0.5, np.inf, 0.1, 0.2], ["a", "a", "b", "b"], ["a", "b", "b", "a"])


def test_non_numeric_score(tmp_path):
    df = _comparisons().astype({"score": object})
    df.loc[2, "score"] = "high"
    with pytest.raises(InputError, match=r"score is not a number at rows 3 .*high"):
        load_comparisons(_csv(tmp_path, df))


# --- ids and comparisons ---------------------------------------------------------------------------------


def test_duplicate_sample_ids(tmp_path):
    df, x = _samples()
    df.loc[4, "sample_id"] = "s01"
    s, e = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"duplicate sample ids s01 at rows 2, 5"):
        load_samples(s, e)


def test_same_comparison_twice(tmp_path):
    df = pd.concat([_comparisons(), _comparisons().iloc[[2]]], ignore_index=True)
    with pytest.raises(InputError, match=r"listed more than once.*b1 vs b2 at rows 3, 7"):
        load_comparisons(_csv(tmp_path, df), duplicates="refuse")


def test_same_comparison_reversed(tmp_path):
    df = _comparisons()
    extra = df.iloc[[1]].rename(columns={"sample_a": "sample_b", "sample_b": "sample_a",
                                         "identity_a": "identity_b", "identity_b": "identity_a"})
    df = pd.concat([df, extra], ignore_index=True)
    with pytest.raises(InputError, match=r"\(a, b\) and \(b, a\).*a1 vs b1 at rows 2, 7"):
        load_comparisons(_csv(tmp_path, df), duplicates="refuse")


def test_self_comparison_in_table(tmp_path):
    df = _comparisons()
    df.loc[3, "sample_b"] = "c1"
    with pytest.raises(InputError, match=r"compared with itself at rows 4 .*c1"):
        load_comparisons(_csv(tmp_path, df))


def test_self_comparison_in_pair_list(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x)
    pairs = _csv(tmp_path, pd.DataFrame({"sample_a": ["s00", "s03"], "sample_b": ["s01", "s03"]}), "pairs.csv")
    with pytest.raises(InputError, match=r"'pairs.csv': a sample is compared with itself at rows 2"):
        load_samples(s, e, pairs_path=pairs)


def test_pair_list_names_unknown_samples(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x)
    pairs = _csv(tmp_path, pd.DataFrame({"sample_a": ["s00", "s03", "zz"], "sample_b": ["s01", "s99", "s02"]}),
                 "pairs.csv")
    with pytest.raises(InputError, match=r"rows 2, 3 .*not in samples table 'samples.csv': s99, zz"):
        load_samples(s, e, pairs_path=pairs)


def test_comparisons_name_samples_missing_from_metadata(tmp_path):
    df = _comparisons().drop(columns=["identity_a", "identity_b"])
    meta = pd.DataFrame({"sample_id": ["a1", "a2", "b1", "b2", "c1", "c2"], "identity": list("AABBCC")})
    with pytest.raises(InputError, match=r"rows 6 .*samples missing from metadata table 'meta.csv'.*d1"):
        load_comparisons(_csv(tmp_path, df), metadata_path=_csv(tmp_path, meta, "meta.csv"))


def test_sample_with_two_identities():
    with pytest.raises(InputError, match=r"more than one identity: x1 \(A, B\)"):
        from_scores([0.1, 0.2, 0.9], ["A", "B", "A"], ["C", "C", "A"],
                    sample_a=["x1", "x1", "x2"], sample_b=["c1", "c2", "x3"])


# --- labels ----------------------------------------------------------------------------------------------


def test_labels_disagree_with_identities(tmp_path):
    df = _comparisons().assign(label=["genuine", "impostor", "impostor", "genuine", "genuine", "impostor"])
    with pytest.raises(InputError, match=r"label disagrees with the identities at rows 3, 5"):
        load_comparisons(_csv(tmp_path, df))


def test_unrecognised_label(tmp_path):
    df = _comparisons().drop(columns=["identity_a", "identity_b"]).assign(label=[1, 0, "maybe", 1, 0, 0])
    with pytest.raises(InputError, match=r"unrecognised label at rows 3 .*maybe"):
        load_comparisons(_csv(tmp_path, df))


def test_neither_identities_nor_labels(tmp_path):
    df = _comparisons().drop(columns=["identity_a", "identity_b"])
    with pytest.raises(InputError, match=r"neither identities nor labels"):
        load_comparisons(_csv(tmp_path, df))


def test_label_only_genuine_pair_with_different_attributes():
    with pytest.raises(InputError, match=r"genuine comparisons \(by label\).*positions 0"):
        from_scores([0.9, 0.1, 0.2], label=[1, 0, 0], group_by="g",
                    attributes_a={"g": ["F", "F", "M"]}, attributes_b={"g": ["M", "F", "M"]})


# --- groups ----------------------------------------------------------------------------------------------


def test_attribute_varies_within_identity(tmp_path):
    df, x = _samples()
    df.loc[[1, 7], "gender"] = ["M", "M"]
    s, e = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"'gender' varies within 2 identities: id0 \(F, M\), id2 \(F, M\)"):
        load_samples(s, e, group_by="gender")


def test_attribute_varies_within_identity_across_comparison_sides():
    with pytest.raises(InputError, match=r"'g' varies within identity: A \(F, M\)"):
        from_scores([0.9, 0.1], ["A", "A"], ["A", "B"], group_by="g",
                    attributes_a={"g": ["F", "M"]}, attributes_b={"g": ["F", "M"]})


def test_group_without_genuine_comparisons():
    x = np.random.default_rng(1).normal(size=(6, 3))
    attrs = pd.DataFrame({"g": ["F", "F", "F", "F", "M", "M"]})
    with pytest.raises(InputError, match=r"No genuine comparisons in group\(s\) M"):
        from_embeddings(x, ["a", "a", "b", "b", "c", "d"], attributes=attrs, group_by="g")


def test_group_without_impostor_comparisons():
    x = np.random.default_rng(1).normal(size=(6, 3))
    attrs = pd.DataFrame({"g": ["F", "F", "F", "F", "M", "M"]})
    with pytest.raises(InputError, match=r"No impostor comparisons with both sides in group\(s\) M"):
        from_embeddings(x, ["a", "a", "b", "b", "c", "c"], attributes=attrs, group_by="g")


def test_missing_attribute_values(tmp_path):
    df, x = _samples()
    df.loc[4, "gender"] = ""
    s, e = _write_samples(tmp_path, df, x)
    with pytest.raises(InputError, match=r"missing 'gender' at rows 5"):
        load_samples(s, e, group_by="gender")


# --- files -----------------------------------------------------------------------------------------------


def test_empty_file(tmp_path):
    (tmp_path / "cmp.csv").write_bytes(b"")
    with pytest.raises(InputError, match=r"'cmp.csv' is empty \(0 bytes\)"):
        load_comparisons(tmp_path / "cmp.csv")


def test_header_only_file(tmp_path):
    (tmp_path / "cmp.csv").write_text("sample_a,sample_b,score\n")
    with pytest.raises(InputError, match=r"has no data rows \(columns: sample_a, sample_b, score\)"):
        load_comparisons(tmp_path / "cmp.csv")


def test_wrong_file_type_txt(tmp_path):
    (tmp_path / "cmp.txt").write_text("a b 0.5\n")
    with pytest.raises(InputError, match=r"unsupported file type '.txt'"):
        load_comparisons(tmp_path / "cmp.txt")


def test_csv_that_is_binary(tmp_path):
    (tmp_path / "cmp.csv").write_bytes(np.arange(100, dtype=np.float64).tobytes())
    with pytest.raises(InputError, match=r"binary, not a text table"):
        load_comparisons(tmp_path / "cmp.csv")


def test_parquet_file_named_csv(tmp_path):
    _comparisons().to_parquet(tmp_path / "cmp.csv")
    with pytest.raises(InputError, match=r"is a Parquet file.*rename it to .parquet"):
        load_comparisons(tmp_path / "cmp.csv")


def test_csv_file_named_parquet(tmp_path):
    _comparisons().to_csv(tmp_path / "cmp.parquet", index=False)
    with pytest.raises(InputError, match=r"not a Parquet file"):
        load_comparisons(tmp_path / "cmp.parquet")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"file not found"):
        load_comparisons(tmp_path / "nope.csv")


# --- warnings and immutability ---------------------------------------------------------------------------


def test_single_sample_identity_warns_not_errors():
    x = np.random.default_rng(2).normal(size=(5, 3))
    with pytest.warns(UserWarning, match=r"1 of 3 identities have a single sample \(c\)"):
        md = from_embeddings(x, ["a", "a", "b", "b", "c"])
    assert md.warnings and "single sample (c)" in md.warnings[0]


def test_inputs_are_not_modified():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 4))
    ids = np.array(["a", "a", "b", "b", "c", "c"])
    attrs = pd.DataFrame({"g": ["F", "F", "F", "F", "F", "F"]})
    x0, ids0, attrs0 = x.copy(), ids.copy(), attrs.copy()
    md = from_embeddings(x, ids, attributes=attrs, group_by="g")
    assert np.array_equal(x, x0) and np.array_equal(ids, ids0) and attrs.equals(attrs0)
    assert not np.shares_memory(md.samples.embeddings, x)
    score = np.array([5.0, 1.0, 2.0])
    md = from_scores(score, ["a", "a", "b"], ["a", "b", "b"], distance=True)
    assert np.array_equal(score, [5.0, 1.0, 2.0]) and not np.shares_memory(md.pairs.score, score)


def test_files_are_not_modified(tmp_path):
    df, x = _samples()
    s, e = _write_samples(tmp_path, df, x)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (s, e)}
    load_samples(s, e, group_by="gender")
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (s, e)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.npy", "samples.csv"]


def test_unknown_metric():
    with pytest.raises(InputError, match=r"unknown metric 'dot'"):
        from_embeddings(np.eye(4), ["a", "a", "b", "b"], metric="dot")


def test_ids_and_embeddings_lengths_differ():
    with pytest.raises(InputError, match=r"embeddings has 4 rows but samples has 3"):
        from_embeddings(np.eye(4), ["a", "a", "b"])
