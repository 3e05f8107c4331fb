"""Importers of matchaudit.data.formats: each fixture gives the same MatchData (and the same audit) as the same
comparisons written as a tidy table, with known genuine/impostor counts; each bad file gives a clear error."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from matchaudit.cli.formats import load_by_format
from matchaudit.data import load_comparisons, load_samples
from matchaudit.data.formats import (
    load_bob,
    load_identity_embeddings,
    load_kaldi,
    load_voxceleb,
)
from matchaudit.errors import InputError
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.model import MatchData
from tests.matchdata_assert import assert_same_matchdata

FIX = Path(__file__).parent / "fixtures" / "formats"
CONFIG = AuditConfig(fmr_targets=(0.1, 0.05), thresholds=(0.5,))


_same = assert_same_matchdata


def _same_audit(x: MatchData, y: MatchData) -> None:
    _same(x, y)
    assert json.dumps(evaluate(x, CONFIG).to_dict()) == json.dumps(evaluate(y, CONFIG).to_dict())


def _lines(name: str) -> list[list[str]]:
    """The data lines of a fixture, split on blanks (an independent reading of the format)."""
    text = (FIX / name).read_text()
    return [ln.split() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def _counts(d: MatchData) -> tuple[int, int]:
    g = d.pairs.genuine if d.pairs is not None else None
    return int(g.sum()), int((~g).sum())


def _copy(tmp_path: Path, name: str, text: str | None = None) -> Path:
    p = tmp_path / name
    if text is None:
        shutil.copy(FIX / name, p)
    else:
        p.write_text(text)
    return p


# --- round trips -------------------------------------------------------------------------------------------

def test_bob_four_column_round_trip(tmp_path):
    rows = _lines("bob4.txt")
    tidy = pd.DataFrame({"identity_a": [r[0] for r in rows], "identity_b": [r[1] for r in rows],
                         "sample_a": [r[0] for r in rows], "sample_b": [r[2] for r in rows],
                         "score": [r[3] for r in rows]})
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    got = load_bob(FIX / "bob4.txt", metadata=FIX / "clients.csv", group_by="gender")
    assert _counts(got) == (12, 36) and got.group_names == ("F", "M") and list(got.identity_names) == [
        "c01", "c02", "c03", "c04"]
    _same_audit(got, load_comparisons(tmp_path / "tidy.csv", metadata_path=FIX / "clients.csv", group_by="gender"))


def test_bob_five_column_round_trip_and_same_scores_as_four(tmp_path):
    rows = _lines("bob5.txt")
    tidy = pd.DataFrame({"identity_a": [r[0] for r in rows], "identity_b": [r[2] for r in rows],
                         "sample_a": [r[1] for r in rows], "sample_b": [r[3] for r in rows],
                         "score": [r[4] for r in rows]})
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    got = load_bob(FIX / "bob5.txt")
    assert _counts(got) == (12, 36) and got.group_names == ("all",)
    _same_audit(got, load_comparisons(tmp_path / "tidy.csv"))
    four = load_bob(FIX / "bob4.txt")
    assert np.array_equal(got.pairs.score, four.pairs.score)
    assert np.array_equal(got.pairs.genuine, four.pairs.genuine)


def test_bob_gzip_and_distance(tmp_path):
    gz = tmp_path / "scores.gz"
    gz.write_bytes(gzip.compress((FIX / "bob4.txt").read_bytes()))
    _same(load_bob(gz), load_bob(FIX / "bob4.txt"))
    neg = load_bob(FIX / "bob4.txt", distance=True)
    assert neg.score_kind == "negated distance"
    assert np.array_equal(neg.pairs.score, -load_bob(FIX / "bob4.txt").pairs.score)


def _kaldi_tidy(tmp_path: Path, identities: bool) -> Path:
    scores = {(e, t): s for e, t, s in _lines("kaldi_scores")}
    trials = _lines("kaldi_trials")
    tidy = pd.DataFrame({"sample_a": [r[0] for r in trials], "sample_b": [r[1] for r in trials],
                         "label": [r[2] for r in trials], "score": [scores[r[0], r[1]] for r in trials]})
    if identities:
        tidy["identity_a"] = tidy["sample_a"].str.split("-").str[0]
        tidy["identity_b"] = tidy["sample_b"].str.split("-").str[0]
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    return tmp_path / "tidy.csv"


def test_kaldi_labels_only_round_trip(tmp_path):
    got = load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores")
    assert _counts(got) == (12, 36) and not got.has_identities
    _same_audit(got, load_comparisons(_kaldi_tidy(tmp_path, identities=False), identity_cols=None))


def test_kaldi_speakers_and_groups_round_trip(tmp_path):
    got = load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of="prefix",
                     metadata=FIX / "kaldi_speakers.csv", group_by="gender")
    assert _counts(got) == (12, 36) and got.group_names == ("f", "m")
    assert list(got.identity_names) == ["spkA", "spkB", "spkC", "spkD"]
    _same_audit(got, load_comparisons(_kaldi_tidy(tmp_path, identities=True), metadata_path=FIX / "kaldi_speakers.csv",
                                      metadata_key="speaker", group_by="gender"))
    by_file = load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of=FIX / "kaldi_utt2spk",
                         metadata=FIX / "kaldi_speakers.csv", group_by="gender")
    _same(got, by_file)
    mapping = dict(r for r in _lines("kaldi_utt2spk"))
    _same(got, load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of=mapping,
                          metadata=FIX / "kaldi_speakers.csv", group_by="gender"))


def test_voxceleb_round_trip_aligned_and_keyed(tmp_path):
    trials = _lines("vox_trials.txt")
    scores = [r[0] for r in _lines("vox_scores_aligned.txt")]
    tidy = pd.DataFrame({"label": [r[0] for r in trials], "sample_a": [r[1] for r in trials],
                         "sample_b": [r[2] for r in trials], "score": scores})
    tidy["identity_a"] = tidy["sample_a"].str.split("/").str[0]
    tidy["identity_b"] = tidy["sample_b"].str.split("/").str[0]
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    pd.read_csv(FIX / "vox1_meta.csv", sep="\t").to_csv(tmp_path / "meta.csv", index=False)
    got = load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_aligned.txt", FIX / "vox1_meta.csv",
                        group_by="Gender")
    assert _counts(got) == (12, 54) and got.group_names == ("f", "m")
    assert list(got.identity_names) == ["id10001", "id10002", "id10003", "id10004"]
    _same_audit(got, load_comparisons(tmp_path / "tidy.csv", metadata_path=tmp_path / "meta.csv",
                                      metadata_key="VoxCeleb1 ID", group_by="Gender"))
    _same(got, load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_keyed.txt", FIX / "vox1_meta.csv",
                             group_by="Gender"))
    nat = load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_keyed.txt", FIX / "vox1_meta.csv",
                        group_by="Nationality")
    assert nat.group_names == ("UK", "USA")


def test_identity_embeddings_round_trip(tmp_path):
    df = pd.read_csv(FIX / "identity_embeddings.csv")
    df[["sample_id", "identity", "gender"]].to_csv(tmp_path / "samples.csv", index=False)
    np.save(tmp_path / "emb.npy", df[["e0", "e1", "e2", "e3"]].to_numpy(np.float64))
    want = load_samples(tmp_path / "samples.csv", tmp_path / "emb.npy", group_by="gender")
    got = load_identity_embeddings(FIX / "identity_embeddings.csv", group_by="gender")
    assert got.protocol == "all-pairs" and got.n_comparisons() == 66 and got.group_names == ("F", "M")
    _same_audit(got, want)
    _same(got, load_identity_embeddings(FIX / "identity_embeddings.npz", metadata=FIX / "subjects.csv",
                                        group_by="gender"))
    _same(got, load_identity_embeddings(FIX / "identity_embeddings.csv", embedding_cols="e", group_by="gender"))
    _same(got, load_identity_embeddings(FIX / "identity_embeddings.csv", embedding_cols=["e0", "e1", "e2", "e3"],
                                        metadata=FIX / "subjects.csv", group_by="gender"))
    listcol = df[["sample_id", "identity", "gender"]].assign(embedding=list(df[["e0", "e1", "e2", "e3"]].to_numpy()))
    listcol.to_parquet(tmp_path / "emb.parquet")
    _same(got, load_identity_embeddings(tmp_path / "emb.parquet", group_by="gender"))


def test_load_by_format_dispatches_and_checks_options(tmp_path):
    _same(load_by_format("bob", scores=FIX / "bob4.txt", metadata=FIX / "clients.csv", group_by=("gender",)),
          load_bob(FIX / "bob4.txt", metadata=FIX / "clients.csv", group_by="gender"))
    _same(load_by_format("kaldi", trials=FIX / "kaldi_trials", scores=FIX / "kaldi_scores",
                         speaker_of=str(FIX / "kaldi_utt2spk")),
          load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of="prefix"))
    _same(load_by_format("voxceleb", trials=FIX / "vox_trials.txt", scores=FIX / "vox_scores_aligned.txt"),
          load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_aligned.txt"))
    _same(load_by_format("identity-embeddings", embeddings=FIX / "identity_embeddings.npz"),
          load_identity_embeddings(FIX / "identity_embeddings.npz"))
    tidy = _kaldi_tidy(tmp_path, identities=True)
    _same(load_by_format("tidy", comparisons=tidy, tidy={"label_col": "label"}),
          load_comparisons(tidy, label_col="label"))
    with pytest.raises(InputError, match=r"--format kaldi reads --trials and --scores; missing --scores"):
        load_by_format("kaldi", trials=FIX / "kaldi_trials")
    with pytest.raises(InputError, match=r"--trials not used by this format"):
        load_by_format("bob", scores=FIX / "bob4.txt", trials=FIX / "kaldi_trials")
    with pytest.raises(InputError, match=r"--format 'sidekit'"):
        load_by_format("sidekit", scores=FIX / "bob4.txt")
    with pytest.raises(InputError, match=r"--speaker-of applies"):
        load_by_format("bob", scores=FIX / "bob4.txt", speaker_of="prefix")


def test_inputs_are_never_modified():
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in FIX.iterdir()}
    load_bob(FIX / "bob4.txt", metadata=FIX / "clients.csv", group_by="gender")
    load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of=FIX / "kaldi_utt2spk")
    load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_keyed.txt", FIX / "vox1_meta.csv", group_by="Gender")
    load_identity_embeddings(FIX / "identity_embeddings.npz", metadata=FIX / "subjects.csv", group_by="gender")
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in FIX.iterdir()}


# --- bad files ---------------------------------------------------------------------------------------------

def _edit(name: str, line: int, new: str | None) -> str:
    """The fixture's text with 1-based ``line`` replaced (or removed when ``new`` is None)."""
    lines = (FIX / name).read_text().splitlines()
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines) + "\n"


def test_bob_wrong_column_count_names_file_and_line(tmp_path):
    p = _copy(tmp_path, "bob4.txt", _edit("bob4.txt", 7, "c01 c02 0.31"))
    with pytest.raises(InputError, match=r"bob score file 'bob4.txt': wrong number of columns at line 7 \(found 3; "
                                         r"expected 4 \(claimed_id real_id test_label score\)"):
        load_bob(p)


def test_bob_mixed_four_and_five_columns(tmp_path):
    text = (FIX / "bob4.txt").read_text() + "c01 c01/enrol.png c01 c01/probe9.png 0.9\n"
    with pytest.raises(InputError, match=r"wrong number of columns at line 51 \(found 5; .* as on its first data"):
        load_bob(_copy(tmp_path, "bob4.txt", text))


def test_bob_non_numeric_score(tmp_path):
    p = _copy(tmp_path, "bob4.txt", _edit("bob4.txt", 10, "c01 c03 c03/probe3.png high"))
    with pytest.raises(InputError, match=r"bob score file 'bob4.txt': score is not a number at line 10 .*high"):
        load_bob(p)


def test_bob_nan_score_is_not_dropped(tmp_path):
    p = _copy(tmp_path, "bob4.txt", _edit("bob4.txt", 4, "c01 c01 c01/probe2.png nan"))
    with pytest.raises(InputError, match=r"NaN, empty or infinite score at line 4\b"):
        load_bob(p)


def test_bob_duplicate_comparison_names_lines(tmp_path):
    text = (FIX / "bob4.txt").read_text() + "c01 c01 c01/probe1.png 0.5\n"
    with pytest.raises(InputError, match=r"listed more than once.*c01 vs c01/probe1.png at lines 3, 51"):
        load_bob(_copy(tmp_path, "bob4.txt", text), duplicates="refuse")


def test_bob_empty_and_binary_files(tmp_path):
    with pytest.raises(InputError, match=r"bob score file 'e.txt' has no data lines"):
        load_bob(_copy(tmp_path, "e.txt", "# only a comment\n\n"))
    (tmp_path / "b.txt").write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError, match=r"'b.txt' is binary"):
        load_bob(tmp_path / "b.txt")
    with pytest.raises(InputError, match=r"file not found"):
        load_bob(tmp_path / "missing.txt")


def test_group_by_needs_metadata_covering_identities(tmp_path):
    with pytest.raises(InputError, match=r"group_by=\['gender'\] needs a metadata table"):
        load_bob(FIX / "bob4.txt", group_by="gender")
    meta = _copy(tmp_path, "clients.csv", "identity,gender\nc01,F\nc02,F\nc03,M\n")
    with pytest.raises(InputError, match=r"identities missing from metadata table 'clients.csv' \(key 'identity'\): "
                                         r"c04 \(at lines 12, 13, 14"):
        load_bob(FIX / "bob4.txt", metadata=meta, group_by="gender")
    with pytest.raises(InputError, match=r"no column 'Gender'.*Did you mean 'gender'"):
        load_bob(FIX / "bob4.txt", metadata=FIX / "clients.csv", group_by="Gender")
    with pytest.raises(InputError, match=r"needs identities to look up.*speaker_of"):
        load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", metadata=FIX / "kaldi_speakers.csv", group_by="gender")


def test_kaldi_unknown_label_token(tmp_path):
    t = _copy(tmp_path, "kaldi_trials", _edit("kaldi_trials", 5, "spkA-enr spkB-utt2 non-target-ish"))
    with pytest.raises(InputError, match=r"Kaldi trials file 'kaldi_trials': unrecognised label at line 5 "
                                         r"\(values: non-target-ish\)"):
        load_kaldi(t, FIX / "kaldi_scores")


def test_kaldi_trials_without_scores_and_scores_without_trials(tmp_path):
    t = _copy(tmp_path, "kaldi_trials", (FIX / "kaldi_trials").read_text() + "spkA-enr spkE-utt1 nontarget\n")
    with pytest.raises(InputError, match=r"Kaldi trials file 'kaldi_trials': trials without a score in Kaldi scores "
                                         r"file 'kaldi_scores' at line 49 \(e.g. spkA-enr spkE-utt1\)"):
        load_kaldi(t, FIX / "kaldi_scores")
    s = _copy(tmp_path, "kaldi_scores", (FIX / "kaldi_scores").read_text() + "spkB-utt1 spkA-enr 0.1\n")
    with pytest.raises(InputError, match=r"Kaldi scores file 'kaldi_scores': scores for pairs that are not in Kaldi "
                                         r"trials file 'kaldi_trials' at line 49 \(e.g. spkB-utt1 spkA-enr\)"):
        load_kaldi(FIX / "kaldi_trials", s)


def test_kaldi_duplicate_and_non_numeric_scores(tmp_path):
    first = _lines("kaldi_scores")[0]
    s = _copy(tmp_path, "kaldi_scores", (FIX / "kaldi_scores").read_text() + f"{first[0]} {first[1]} 0.5\n")
    with pytest.raises(InputError, match=r"more than one score for the same \(enrol, test\) pair at lines 1, 49"):
        load_kaldi(FIX / "kaldi_trials", s)
    s = _copy(tmp_path, "kaldi_scores", _edit("kaldi_scores", 3, f"{_lines('kaldi_scores')[2][0]} x 0,25"))
    with pytest.raises(InputError, match=r"'kaldi_scores': score is not a number at line 3 \(values: 0,25\)"):
        load_kaldi(FIX / "kaldi_trials", s)


def test_kaldi_labels_disagree_with_speakers_names_line(tmp_path):
    t = _copy(tmp_path, "kaldi_trials", _edit("kaldi_trials", 2, "spkA-enr spkA-utt2 nontarget"))
    load_kaldi(t, FIX / "kaldi_scores")  # labels only: nothing to disagree with
    with pytest.raises(InputError, match=r"label disagrees with the identities at line 2\b"):
        load_kaldi(t, FIX / "kaldi_scores", speaker_of="prefix")


def test_kaldi_speaker_mapping_must_cover_ids(tmp_path):
    m = _copy(tmp_path, "utt2spk", _edit("kaldi_utt2spk", 1, None))
    with pytest.raises(InputError, match=r"enrol ids at lines 1, 2, 3, .* have no speaker in speaker mapping "
                                         r"'utt2spk': spkA-enr"):
        load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of=m)
    m = _copy(tmp_path, "utt2spk", (FIX / "kaldi_utt2spk").read_text() + "spkA-enr spkB\n")
    with pytest.raises(InputError, match=r"ids listed more than once at lines 1, 17"):
        load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of=m)


def test_voxceleb_aligned_scores_count_and_paths(tmp_path):
    s = _copy(tmp_path, "scores.txt", _edit("vox_scores_aligned.txt", 66, None))
    with pytest.raises(InputError, match=r"scores file 'scores.txt' has 65 scores but VoxCeleb trial list "
                                         r"'vox_trials.txt' has 66 trials"):
        load_voxceleb(FIX / "vox_trials.txt", s)
    t = _copy(tmp_path, "vox_trials.txt", _edit("vox_trials.txt", 4, "0 id10001-a-1 id10002/b/00002.wav"))
    with pytest.raises(InputError, match=r"enrol ids at line 4 are not paths like"):
        load_voxceleb(t, FIX / "vox_scores_aligned.txt")
    t = _copy(tmp_path, "vox_trials.txt", _edit("vox_trials.txt", 1, "2 id10001/1zcIwhmdeo4/00001.wav "
                                                "id10001/1zcIwhmdeo4/00002.wav"))
    with pytest.raises(InputError, match=r"VoxCeleb trial list 'vox_trials.txt': unrecognised label at line 1 "):
        load_voxceleb(t, FIX / "vox_scores_aligned.txt")
    s = _copy(tmp_path, "scores.txt", "0.1 0.2\n")
    with pytest.raises(InputError, match=r"expected 1 \(score, aligned with the trial lines\) or 3 "
                                         r"\(enrol test score\)"):
        load_voxceleb(FIX / "vox_trials.txt", s)


def test_identity_embeddings_bad_files(tmp_path):
    np.savez(tmp_path / "e.npz", X=np.zeros((3, 2)))
    with pytest.raises(InputError, match=r"'e.npz' has no array 'embeddings' or 'identities' \(arrays present: X\)") \
            as e:
        load_identity_embeddings(tmp_path / "e.npz")
    assert "cannot read" not in str(e.value)  # it was wrapped in "cannot read (...). Save ids as strings" too
    for extra, what in (({"identities": np.array(["a", "b"])}, "'identities' has shape \\(2,\\) and 'embeddings' 3 rows"),
                        ({"identities": np.array(["a", "b", "b"]), "ids": np.array(["x"])},
                         "'ids' has shape \\(1,\\) and 'embeddings' 3 rows; give one sample id per row")):
        np.savez(tmp_path / "r.npz", embeddings=np.eye(3), **extra)  # the rows compared the file with itself
        with pytest.raises(InputError, match=what):
            load_identity_embeddings(tmp_path / "r.npz")
    np.savez(tmp_path / "o.npz", embeddings=np.zeros((2, 2)), identities=np.array(["a", None], dtype=object))
    with pytest.raises(InputError, match=r"Save ids as strings"):
        load_identity_embeddings(tmp_path / "o.npz")
    df = pd.read_csv(FIX / "identity_embeddings.csv", dtype=str)
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputError, match=r"columns gender are not part of the embedding columns.*embedding_cols"):
        load_identity_embeddings(tmp_path / "t.csv")
    df.loc[4, "e2"] = "abc"
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputError, match=r"embedding columns e2 hold non-numeric, missing or infinite values at "
                                         r"rows 5 "):
        load_identity_embeddings(tmp_path / "t.csv", embedding_cols="e")
    with pytest.raises(InputError, match=r"no column starts with 'emb_'"):
        load_identity_embeddings(FIX / "identity_embeddings.csv", embedding_cols="emb_")
