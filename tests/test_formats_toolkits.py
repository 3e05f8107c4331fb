"""The toolkit formats beside matchaudit.data.formats (bob.bio.base CSV, NIST FRTE match logs and SRE keys,
wespeaker and VoxSRC score files, BFW pair tables, score matrices): each fixture gives the same MatchData and the
same audit as the same comparisons written as a tidy table; each bad file gives an error naming file and lines."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from matchaudit.cli.formats import load_by_format
from matchaudit.data import from_scores, load_comparisons
from matchaudit.data.bob_csv import load_bob_csv
from matchaudit.data.formats import load_bob, load_kaldi, load_voxceleb
from matchaudit.data.nist import load_frvt, load_nist_sre
from matchaudit.data.pair_table import load_pair_table
from matchaudit.data.score_matrix import load_score_matrix
from matchaudit.data.wespeaker import load_voxsrc, load_wespeaker
from matchaudit.errors import InputError
from tests.test_formats import FIX, _copy, _counts, _edit, _lines, _same, _same_audit

runner = CliRunner()


def _tidy(tmp_path: Path, **cols: object) -> Path:
    pd.DataFrame(cols).to_csv(tmp_path / "tidy.csv", index=False)
    return tmp_path / "tidy.csv"


# --- bob.bio.base CSV --------------------------------------------------------------------------------------

def test_bob_csv_round_trip(tmp_path):
    df = pd.read_csv(FIX / "bob_scores.csv", dtype=str)
    tidy = _tidy(tmp_path, identity_a=df.bio_ref_subject_id, identity_b=df.probe_subject_id,
                 sample_a=df.bio_ref_template_id, sample_b=df.probe_template_id, score=df.score,
                 gender_a=df.bio_ref_gender, gender_b=df.probe_gender)
    got = load_bob_csv(FIX / "bob_scores.csv", group_by="gender")
    assert _counts(got) == (12, 36) and got.group_names == ("F", "M")
    _same_audit(got, load_comparisons(tidy, group_by="gender"))
    five = load_bob(FIX / "bob5.txt", metadata=FIX / "clients.csv", group_by="gender")
    _same(got, five)  # the same scores as bob's 5-column file; gender from the file or from a metadata table
    _same(load_bob_csv(FIX / "bob_scores.csv", metadata=FIX / "clients.csv", group_by="gender"), five)
    gz = tmp_path / "scores-dev.csv.gz"
    gz.write_bytes(gzip.compress((FIX / "bob_scores.csv").read_bytes()))
    _same(load_bob_csv(gz, group_by="gender"), got)


def test_bob_csv_written_from_arrays_reads_back(tmp_path):
    """Write the format from known arrays (older bob: *_reference_id), read it back: same comparisons."""
    rng = np.random.default_rng(1)
    ref, probe = np.repeat(["s1", "s2", "s3"], 3), np.tile(["s1", "s2", "s3"], 3)
    score = np.round(rng.normal(size=9) + (ref == probe), 6)
    pd.DataFrame({"probe_reference_id": [f"{p}/x.png" for p in probe], "probe_subject_id": probe,
                  "bio_ref_reference_id": ref, "bio_ref_subject_id": ref, "score": score}).to_csv(
        tmp_path / "s.csv", index=False)
    _same(load_bob_csv(tmp_path / "s.csv"),
          from_scores(score, ref, probe, sample_a=ref, sample_b=[f"{p}/x.png" for p in probe]))


def test_bob_csv_bad_files(tmp_path):
    text = (FIX / "bob_scores.csv").read_text().replace("bio_ref_subject_id", "bio_ref_subject")
    with pytest.raises(InputError, match=r"bob CSV score file 'b.csv' has no column 'bio_ref_subject_id'.*Did you mean 'bio_ref_subject'"):
        load_bob_csv(_copy(tmp_path, "b.csv", text))
    p = _copy(tmp_path, "b.csv", _edit("bob_scores.csv", 5, "c01/probe4.png,c01,F,c01/enrol.png,c01,F,high"))
    with pytest.raises(InputError, match=r"'b.csv': score is not a number at line 5 .*high"):
        load_bob_csv(p)
    p = _copy(tmp_path, "b.csv", _edit("bob_scores.csv", 3, "c01/probe2.png,,F,c01/enrol.png,c01,F,0.8"))
    with pytest.raises(InputError, match=r"'b.csv': missing probe_subject_id at line 3\b"):
        load_bob_csv(p)


# --- NIST FRTE (FRVT) 1:1 match log ------------------------------------------------------------------------

def _frvt_tidy(tmp_path: Path) -> Path:
    rows = _lines("frvt_match.log")[1:]
    subject = dict(_lines("frvt_subjects.txt"))
    return _tidy(tmp_path, sample_a=[r[0] for r in rows], sample_b=[r[1] for r in rows],
                 identity_a=[subject[r[0]] for r in rows], identity_b=[subject[r[1]] for r in rows],
                 score=[r[2] for r in rows], code=[r[3] for r in rows])


@pytest.mark.parametrize("policy", ["exclude", "count"])
def test_frvt_round_trip_with_failures(tmp_path, policy):
    got = load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt", fta_policy=policy,
                    metadata=FIX / "clients.csv", group_by="gender")
    assert got.failures is not None and list(got.failures.rows) == [5, 30]
    want = load_comparisons(_frvt_tidy(tmp_path), return_code_col="code", fta_policy=policy,
                            metadata_path=FIX / "clients.csv", group_by="gender")
    _same_audit(got, want)
    assert got.failures.policy == want.failures.policy == policy


def test_frvt_refuses_failures_by_default_naming_the_lines(tmp_path):
    with pytest.raises(InputError, match=r"FRTE match log 'frvt_match.log': failures to acquire or compare .* at "
                                         r"lines 7, 32\. Choose fta_policy='exclude'") as e:
        load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt")
    assert e.value.param == "fta_policy"
    clean = _copy(tmp_path, "m.log", "\n".join(ln.replace(" -1 2", " 5 0") for ln in
                                              (FIX / "frvt_match.log").read_text().splitlines()) + "\n")
    got = load_frvt(clean, FIX / "frvt_subjects.txt")
    assert got.failures is None and _counts(got) == (12, 36)
    header = clean.read_text().splitlines()[0] + "\n"
    concatenated = _copy(tmp_path, "cat.log", clean.read_text() + header)  # two logs joined by cat: two headers
    _same(load_frvt(concatenated, FIX / "frvt_subjects.txt"), got)


def test_frvt_bad_files(tmp_path):
    p = _copy(tmp_path, "m.log", (FIX / "frvt_match.log").read_text().replace("simScore", "score"))
    with pytest.raises(InputError, match=r"no column 'simScore' in its header line \(line 1: enrollTempl verifTempl "
                                         r"score returnCode\)"):
        load_frvt(p, FIX / "frvt_subjects.txt")
    p = _copy(tmp_path, "m.log", _edit("frvt_match.log", 4, "1.template 5.template 300 x"))
    with pytest.raises(InputError, match=r"return code is missing or not an integer at line 4\b"):
        load_frvt(p, FIX / "frvt_subjects.txt", fta_policy="exclude")
    p = _copy(tmp_path, "m.log", _edit("frvt_match.log", 4, "1.template 5.template 300"))
    with pytest.raises(InputError, match=r"wrong number of columns at line 4 \(found 3; expected 4"):
        load_frvt(p, FIX / "frvt_subjects.txt")
    m = _copy(tmp_path, "map.txt", _edit("frvt_subjects.txt", 1, None))
    with pytest.raises(InputError, match=r"enrollTempl ids at lines 2, 3, .* have no subject in subject mapping "
                                         r"'map.txt': 1.template. Add them.$"):  # templates have subjects
        load_frvt(FIX / "frvt_match.log", m, fta_policy="exclude")


# --- wespeaker and VoxSRC ----------------------------------------------------------------------------------

def _vox_tidy(tmp_path: Path) -> Path:
    trials = _lines("vox_trials.txt")
    tidy = _tidy(tmp_path, label=[r[0] for r in trials], sample_a=[r[1] for r in trials],
                 sample_b=[r[2] for r in trials], score=[r[0] for r in _lines("vox_scores_aligned.txt")],
                 identity_a=[r[1].split("/")[0] for r in trials], identity_b=[r[2].split("/")[0] for r in trials])
    pd.read_csv(FIX / "vox1_meta.csv", sep="\t").to_csv(tmp_path / "meta.csv", index=False)
    return tidy


def test_wespeaker_and_voxsrc_round_trip(tmp_path):
    want = load_comparisons(_vox_tidy(tmp_path), metadata_path=tmp_path / "meta.csv", metadata_key="VoxCeleb1 ID",
                            group_by="Gender")
    we = load_wespeaker(FIX / "wespeaker.score", speaker_of="path", metadata=FIX / "vox1_meta.csv", group_by="Gender")
    assert _counts(we) == (12, 54) and we.group_names == ("f", "m")
    _same_audit(we, want)
    _same_audit(load_voxsrc(FIX / "vox_trials.txt", FIX / "voxsrc_scores.txt", FIX / "vox1_meta.csv",
                            group_by="Gender"), want)
    labels_only = load_wespeaker(FIX / "wespeaker.score")
    assert not labels_only.has_identities and _counts(labels_only) == (12, 54)


def test_wespeaker_three_columns_need_the_trials(tmp_path):
    rows = _lines("kaldi_scores")
    three = _copy(tmp_path, "k.score", "".join(f"{a} {b} {s}\n" for a, b, s in rows))
    with pytest.raises(InputError, match=r"wespeaker score file 'k.score' has no labels.*trials="):
        load_wespeaker(three)
    _same(load_wespeaker(three, FIX / "kaldi_trials", speaker_of="prefix"),
          load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores", speaker_of="prefix"))
    with pytest.raises(InputError, match=r"carries its labels .* drop the trial list"):
        load_wespeaker(FIX / "wespeaker.score", FIX / "vox_trials.txt")


def test_wespeaker_and_voxsrc_bad_files(tmp_path):
    p = _copy(tmp_path, "w.score", _edit("wespeaker.score", 3, "id10001/a/1.wav id10002/b/1.wav 0.2 maybe"))
    with pytest.raises(InputError, match=r"wespeaker score file 'w.score': unrecognised label at line 3 "):
        load_wespeaker(p)
    third = (FIX / "wespeaker.score").read_text().splitlines()[2]
    p = _copy(tmp_path, "w.score", _edit("wespeaker.score", 3, third.replace("nontarget", "target")))
    with pytest.raises(InputError, match=r"label disagrees with the identities at line 3\b"):
        load_wespeaker(p, speaker_of="path")
    s = _copy(tmp_path, "s.txt", _edit("voxsrc_scores.txt", 2, None))
    with pytest.raises(InputError, match=r"VoxSRC trial list 'vox_trials.txt': trials without a score in VoxSRC "
                                         r"score file 's.txt' at line 65 "):
        load_voxsrc(FIX / "vox_trials.txt", s)
    s = _copy(tmp_path, "s.txt", "id10001/a.wav id10002/b.wav 0.3\n")
    with pytest.raises(InputError, match=r"VoxSRC score file 's.txt': score is not a number at line 1"):
        load_voxsrc(FIX / "vox_trials.txt", s)


# --- NIST SRE ----------------------------------------------------------------------------------------------

def _sre_tidy(tmp_path: Path) -> Path:
    scores = {(e, t): s for e, t, s in _lines("kaldi_scores")}
    trials = _lines("kaldi_trials")
    return _tidy(tmp_path, sample_a=[r[0] for r in trials], sample_b=[r[1] + ".sph" for r in trials],
                 label=[r[2] for r in trials], score=[scores[r[0], r[1]] for r in trials],
                 identity_a=[r[0].split("-")[0] for r in trials], identity_b=[r[1].split("-")[0] for r in trials])


def test_nist_sre_round_trip(tmp_path):
    got = load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv", speaker_of="prefix",
                        metadata=FIX / "kaldi_speakers.csv", group_by="gender")
    assert _counts(got) == (12, 36) and got.group_names == ("f", "m")
    _same_audit(got, load_comparisons(_sre_tidy(tmp_path), metadata_path=FIX / "kaldi_speakers.csv",
                                      metadata_key="speaker", group_by="gender"))
    _same(load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv", trials=FIX / "sre_trials.tsv",
                        speaker_of="prefix", metadata=FIX / "kaldi_speakers.csv", group_by="gender"), got)
    labels_only = load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv")
    assert not labels_only.has_identities and _counts(labels_only) == (12, 36)
    # a trial list covering part of the key: the scores must cover exactly that part
    sub = _copy(tmp_path, "t.tsv", "".join(ln + "\n" for ln in (FIX / "sre_trials.tsv").read_text().splitlines()[:21]))
    out = _copy(tmp_path, "o.tsv", (FIX / "sre_output.tsv").read_text())
    with pytest.raises(InputError, match=r"SRE system output 'o.tsv': scores for trials that are not in SRE trial "
                                         r"list 't.tsv' at lines"):
        load_nist_sre(out, FIX / "sre_key.tsv", trials=sub)


def test_nist_sre_bad_files(tmp_path):
    out = _copy(tmp_path, "o.tsv", _edit("sre_output.tsv", 3, None))
    with pytest.raises(InputError, match=r"SRE trial key 'sre_key.tsv': trials without a score in SRE system output "
                                         r"'o.tsv' at line \d+ \(e.g. spkA-enr spkA-utt2.sph a\)"):
        load_nist_sre(out, FIX / "sre_key.tsv")
    key = _copy(tmp_path, "k.tsv", _edit("sre_key.tsv", 4, "spkA-enr\tspkA-utt3.sph\ta\tmaybe"))
    with pytest.raises(InputError, match=r"SRE trial key 'k.tsv': unrecognised label at line 4 "):
        load_nist_sre(FIX / "sre_output.tsv", key)
    key = _copy(tmp_path, "k.tsv", (FIX / "sre_key.tsv").read_text().replace("targettype", "target_type"))
    with pytest.raises(InputError, match=r"no column 'targettype' in its header line"):
        load_nist_sre(FIX / "sre_output.tsv", key)
    t = _copy(tmp_path, "t.tsv", (FIX / "sre_trials.tsv").read_text() + "spkZ-enr\tspkA-utt1.sph\ta\n")
    with pytest.raises(InputError, match=r"SRE trial list 't.tsv': trials without a key entry in SRE trial key "
                                         r"'sre_key.tsv' at line 50 .* Add them to the key"):
        load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv", trials=t)


# --- BFW pair table, one score column per model ------------------------------------------------------------

def test_pair_table_round_trip(tmp_path):
    df = pd.read_csv(FIX / "bfw_pairs.csv", dtype=str)
    for model in ("vgg16", "senet50"):
        got = load_pair_table(FIX / "bfw_pairs.csv", score_col=model, group_by="e")
        assert _counts(got) == (24, 40) and got.group_names == ("A", "B")
        tidy = _tidy(tmp_path, sample_a=df.p1, sample_b=df.p2, identity_a=df.id1, identity_b=df.id2, label=df.label,
                     score=df[model], e_a=df.e1, e_b=df.e2)
        _same_audit(got, load_comparisons(tidy, group_by="e"))
    two = load_pair_table(FIX / "bfw_pairs.csv", score_col="resnet50", group_by=["e", "g"])
    assert len(two.group_names) == 4
    labels_only = load_pair_table(FIX / "bfw_pairs.csv", score_col="vgg16", identity_cols=None)
    assert not labels_only.has_identities and _counts(labels_only) == (24, 40)


def test_pair_table_bad_files(tmp_path):
    with pytest.raises(InputError, match=r"pair table 'bfw_pairs.csv'.*no column 'arcface'.*vgg16") as e:
        load_pair_table(FIX / "bfw_pairs.csv", score_col="arcface")
    assert e.value.param == "score_col"
    df = pd.read_csv(FIX / "bfw_pairs.csv", dtype=str)
    df.loc[3, "label"] = "0"
    df.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(InputError, match=r"label disagrees with the identities at rows 4 \(first data row = 1\)"):
        load_pair_table(tmp_path / "p.csv", score_col="vgg16")
    df.drop(columns=["id1", "id2", "label"]).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(InputError, match=r"neither identity columns \(id1, id2\) nor a label column"):
        load_pair_table(tmp_path / "p.csv", score_col="vgg16")


def test_compare_one_table_two_score_columns(tmp_path):
    res = runner.invoke(app, ["compare", "--format", "pair-table", "--comparisons", str(FIX / "bfw_pairs.csv"),
                              "--score-cols", "vgg16,senet50", "--fmr", "0.1", "--n-resamples", "40",
                              "--n-permutations", "19", "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    doc = pd.read_csv(tmp_path / "o" / "differences.csv")
    a = load_pair_table(FIX / "bfw_pairs.csv", score_col="vgg16")
    b = load_pair_table(FIX / "bfw_pairs.csv", score_col="senet50")
    from matchaudit.api import compare
    want = compare(a, b, fmr=(0.1,), n_resamples=40, test_resamples=19, progress=False)
    assert np.allclose(doc["difference"], [r["difference"] for r in want.records], equal_nan=True)
    df = pd.read_csv(FIX / "bfw_pairs.csv").rename(columns={"id1": "identity_a", "id2": "identity_b"})
    df.to_csv(tmp_path / "tidy.csv", index=False)
    res = runner.invoke(app, ["compare", "--comparisons", str(tmp_path / "tidy.csv"), "--score-cols",
                              "vgg16,senet50", "--fmr", "0.1", "--n-resamples", "40", "--n-permutations", "19",
                              "--out", str(tmp_path / "t"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert np.allclose(pd.read_csv(tmp_path / "t" / "differences.csv")["difference"], doc["difference"],
                       equal_nan=True)


# --- score matrix ------------------------------------------------------------------------------------------

def _matrix_tidy(tmp_path: Path, rows: list[str], cols: list[str], scores: np.ndarray, cells: np.ndarray) -> Path:
    s = pd.read_csv(FIX / "identity_embeddings.csv").set_index("sample_id")
    r, c = np.nonzero(cells)
    a, b = np.asarray(rows)[r], np.asarray(cols)[c]
    return _tidy(tmp_path, sample_a=a, sample_b=b, identity_a=s.identity[a].to_numpy(),
                 identity_b=s.identity[b].to_numpy(), gender_a=s.gender[a].to_numpy(),
                 gender_b=s.gender[b].to_numpy(), score=scores[r, c])


def test_score_matrix_one_set_round_trip(tmp_path):
    m = np.load(FIX / "matrix.npy")
    ids = (FIX / "matrix_ids.txt").read_text().split()
    got = load_score_matrix(FIX / "matrix.npy", FIX / "matrix_ids.txt", FIX / "identity_embeddings.csv",
                            group_by="gender")
    assert got.protocol == "listed" and _counts(got) == (12, 54) and got.group_names == ("F", "M")
    _same_audit(got, load_comparisons(_matrix_tidy(tmp_path, ids, ids, m, np.triu(np.ones_like(m, bool), 1)),
                                      group_by="gender"))
    _same(load_score_matrix(FIX / "matrix.npy", ids, FIX / "identity_embeddings.csv", group_by="gender"), got)


def test_score_matrix_probes_by_references_with_mask(tmp_path):
    z = np.load(FIX / "matrix_probes_refs.npz")["scores"]
    probes, refs = (FIX / "matrix_probes.txt").read_text().split(), (FIX / "matrix_refs.txt").read_text().split()
    got = load_score_matrix(FIX / "matrix_probes_refs.npz", FIX / "matrix_probes.txt", FIX / "identity_embeddings.csv",
                            column_ids=FIX / "matrix_refs.txt", group_by="gender")
    assert _counts(got) == (8, 24)
    _same_audit(got, load_comparisons(_matrix_tidy(tmp_path, probes, refs, z, np.ones_like(z, bool)),
                                      group_by="gender"))
    mask = np.ones_like(z, bool)
    mask[0, 1] = mask[5, 2] = False
    z2 = z.copy()
    z2[~mask] = np.nan  # cells that are not trials may hold anything
    np.save(tmp_path / "m.npy", z2)
    np.save(tmp_path / "mask.npy", mask)
    masked = load_score_matrix(tmp_path / "m.npy", probes, FIX / "identity_embeddings.csv", column_ids=refs,
                               mask=tmp_path / "mask.npy", group_by="gender")
    assert masked.n_comparisons() == 30
    _same_audit(masked, load_comparisons(_matrix_tidy(tmp_path, probes, refs, z, mask), group_by="gender"))


def test_score_matrix_bad_inputs(tmp_path):
    s = FIX / "identity_embeddings.csv"
    with pytest.raises(InputError, match=r"row id list 'ids.txt' has 11 ids but score matrix 'matrix.npy' has 12 "
                                         r"rows"):
        load_score_matrix(FIX / "matrix.npy", _copy(tmp_path, "ids.txt", _edit("matrix_ids.txt", 3, None)), s)
    with pytest.raises(InputError, match=r"shape \(8, 4\) is not square; give column_ids"):
        load_score_matrix(FIX / "matrix_probes_refs.npz", FIX / "matrix_probes.txt", s)
    m = np.load(FIX / "matrix.npy")
    m[2, 7] = np.nan
    np.save(tmp_path / "nan.npy", m)
    with pytest.raises(InputError, match=r"score matrix 'nan.npy': NaN, empty or infinite score at cell \(2, 7\) "
                                         r"\(row, column; 0-based\)"):
        load_score_matrix(tmp_path / "nan.npy", FIX / "matrix_ids.txt", s)
    np.save(tmp_path / "mask.npy", np.ones((3, 3), bool))
    with pytest.raises(InputError, match=r"mask 'mask.npy': bool array of shape \(3, 3\); give a boolean array of "
                                         r"the matrix's shape \(12, 12\)"):
        load_score_matrix(FIX / "matrix.npy", FIX / "matrix_ids.txt", s, mask=tmp_path / "mask.npy")
    pd.read_csv(s).iloc[:-1].to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(InputError, match=r"samples table 's.csv' \(key 'sample_id'\) lacks sample ids of the matrix: "
                                         r"p4_2"):
        load_score_matrix(FIX / "matrix.npy", FIX / "matrix_ids.txt", tmp_path / "s.csv")
    (tmp_path / "x.npy").write_text("not numpy")
    with pytest.raises(InputError, match=r"'x.npy' is not a NumPy .npy or .npz file"):
        load_score_matrix(tmp_path / "x.npy", FIX / "matrix_ids.txt", s)


# --- dispatch and inputs -----------------------------------------------------------------------------------

def test_load_by_format_reads_every_new_format():
    _same(load_by_format("bob-csv", scores=FIX / "bob_scores.csv"), load_bob_csv(FIX / "bob_scores.csv"))
    _same(load_by_format("frvt", scores=FIX / "frvt_match.log", speaker_of=str(FIX / "frvt_subjects.txt"),
                         fta_policy="exclude"),
          load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt", fta_policy="exclude"))
    _same(load_by_format("wespeaker", scores=FIX / "wespeaker.score", speaker_of="path"),
          load_wespeaker(FIX / "wespeaker.score", speaker_of="path"))
    _same(load_by_format("voxsrc", trials=FIX / "vox_trials.txt", scores=FIX / "voxsrc_scores.txt"),
          load_voxceleb(FIX / "vox_trials.txt", FIX / "vox_scores_aligned.txt"))
    _same(load_by_format("nist-sre", scores=FIX / "sre_output.tsv", key=FIX / "sre_key.tsv",
                         trials=FIX / "sre_trials.tsv"),
          load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv"))
    _same(load_by_format("pair-table", comparisons=FIX / "bfw_pairs.csv", tidy={"score_col": "senet50"}),
          load_pair_table(FIX / "bfw_pairs.csv", score_col="senet50"))
    _same(load_by_format("score-matrix", scores=FIX / "matrix.npy", ids=FIX / "matrix_ids.txt",
                         metadata=FIX / "identity_embeddings.csv"),
          load_score_matrix(FIX / "matrix.npy", FIX / "matrix_ids.txt", FIX / "identity_embeddings.csv"))
    with pytest.raises(InputError, match=r"--format nist-sre reads --scores and --key \[--trials\]; missing --key"):
        load_by_format("nist-sre", scores=FIX / "sre_output.tsv")
    with pytest.raises(InputError, match=r"--format frvt needs the subject of each template: --subject-of"):
        load_by_format("frvt", scores=FIX / "frvt_match.log")
    with pytest.raises(InputError, match=r"--fta-policy applies to --format tidy or frvt"):
        load_by_format("bob", scores=FIX / "bob4.txt", fta_policy="count")
    with pytest.raises(InputError, match=r"missing --metadata"):
        load_by_format("score-matrix", scores=FIX / "matrix.npy", ids=FIX / "matrix_ids.txt")


def test_cli_reads_a_frvt_log_excluding_failures(tmp_path):
    res = runner.invoke(app, ["audit", "--format", "frvt", "--scores", str(FIX / "frvt_match.log"), "--subject-of",
                              str(FIX / "frvt_subjects.txt"), "--fta-policy", "exclude", "--fmr", "0.1",
                              "--no-intervals", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["audit", "--format", "frvt", "--scores", str(FIX / "frvt_match.log"), "--subject-of",
                              str(FIX / "frvt_subjects.txt"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "lines 7, 32" in res.output and "--fta-policy" in res.output, res.output


def test_inputs_are_never_modified():
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in FIX.iterdir()}
    load_bob_csv(FIX / "bob_scores.csv", group_by="gender")
    load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt", fta_policy="count")
    load_wespeaker(FIX / "wespeaker.score")
    load_voxsrc(FIX / "vox_trials.txt", FIX / "voxsrc_scores.txt")
    load_nist_sre(FIX / "sre_output.tsv", FIX / "sre_key.tsv", trials=FIX / "sre_trials.tsv")
    load_pair_table(FIX / "bfw_pairs.csv", score_col="vgg16", group_by="e")
    load_score_matrix(FIX / "matrix.npy", FIX / "matrix_ids.txt", FIX / "identity_embeddings.csv")
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in FIX.iterdir()}


def test_label_only_trials_are_audited_without_intervals_and_say_why(tmp_path):
    """A trial list without speakers (labels only) ended the default audit in a traceback: every interval method
    crashed deep in the engine (no identity to resample or cluster). The exact metrics stand, with a warning; asking
    for a method is refused by name; the CLI writes its results and the report renders."""
    import matchaudit as ma

    labels_only = load_wespeaker(FIX / "wespeaker.score")
    r = ma.audit(labels_only, fmr=1e-1)
    assert r.interval_records is None and r.at_fmr(1e-1).loc["all", "fmr_comparisons"] > 0
    assert any(w.startswith("intervals skipped: comparisons that share an identity") for w in r.warnings)
    with pytest.raises(InputError, match="ci_method double-or-nothing: comparisons that share an identity") as e:
        ma.audit(labels_only, fmr=1e-1, intervals=ma.IntervalOptions(method="double-or-nothing"))
    assert e.value.param == "ci_method"
    res = CliRunner().invoke(app, ["audit", "--format", "wespeaker", "--scores", str(FIX / "wespeaker.score"),
                                   "--fmr", "0.1", "--quiet", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "intervals skipped" in (tmp_path / "o" / "results.json").read_text()
    rep = CliRunner().invoke(app, ["report", str(tmp_path / "o"), "--out", str(tmp_path / "r.html")])
    page = (tmp_path / "r.html").read_text()
    assert rep.exit_code == 0 and "intervals skipped" in page
    assert "<h3>pooled weighting</h3>" in page and "balanced weighting</h3>" not in page  # skipped: no empty table


def test_comparing_models_on_label_only_trials_is_refused_by_reason():
    """``ma.compare`` of two label-only trial lists ended in the engine's broadcast error: it resamples identities."""
    import matchaudit as ma

    labels_only = load_wespeaker(FIX / "wespeaker.score")
    with pytest.raises(InputError, match="model comparison resamples identities"):
        ma.compare(labels_only, labels_only, fmr=1e-1, n_resamples=40)


# --- native files as the tools write them (#42 item 3) -------------------------------------------------------

def test_wespeaker_normalised_scores_as_score_norm_writes_them(tmp_path):
    """wespeaker/bin/score_norm.py writes '{} {} {:.5f} {} {:.4f} {:.4f} {:.4f} {:.4f}': enrol, test, the normed
    score, the label, then the two embeddings' magnitudes and cohort means. It was refused ("found 8")."""
    rows = _lines("wespeaker.score")
    rng = np.random.default_rng(3)
    normed = tmp_path / "vox1_O.asnorm.score"
    normed.write_text("".join("{} {} {:.5f} {} {:.4f} {:.4f} {:.4f} {:.4f}\n".format(
        e, t, float(s), lab, *rng.uniform(0.1, 30, 4)) for e, t, s, lab in rows))
    got = load_wespeaker(normed, speaker_of="path", metadata=FIX / "vox1_meta.csv", group_by="Gender")
    _same_audit(got, load_wespeaker(FIX / "wespeaker.score", speaker_of="path", metadata=FIX / "vox1_meta.csv",
                                    group_by="Gender"))


def test_speechbrain_scores_as_its_recipes_write_them(tmp_path):
    """speechbrain's VoxCeleb recipes write '%s %s %i %f' (enrol, test, the 0/1 label, then the score), ids
    without '.wav'. No reader before: wespeaker said 'unrecognised label', kaldi the column count."""
    trials, scores = _lines("vox_trials.txt"), _lines("vox_scores_aligned.txt")
    sb = tmp_path / "scores.txt"
    sb.write_text("".join("%s %s %i %f\n" % (e.removesuffix(".wav"), t.removesuffix(".wav"), int(lab), float(s[0]))
                          for (lab, e, t), s in zip(trials, scores)))
    from matchaudit.data.wespeaker import load_speechbrain

    got = load_speechbrain(sb, metadata=FIX / "vox1_meta.csv", group_by="Gender")
    tidy = pd.read_csv(_vox_tidy(tmp_path))
    for c in ("sample_a", "sample_b"):
        tidy[c] = tidy[c].str.removesuffix(".wav")
    tidy.to_csv(tmp_path / "sb_tidy.csv", index=False)
    want = load_comparisons(tmp_path / "sb_tidy.csv", metadata_path=tmp_path / "meta.csv",
                            metadata_key="VoxCeleb1 ID", group_by="Gender")
    assert _counts(got) == (12, 54)
    _same_audit(got, want)
    res = runner.invoke(app, ["audit", "--format", "speechbrain", "--scores", str(sb), "--metadata",
                              str(FIX / "vox1_meta.csv"), "--group-by", "Gender", "--fmr", "0.1", "--no-intervals",
                              "--no-figures", "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output


def test_pair_table_takes_the_column_flags(tmp_path):
    """`--format pair-table --sample-cols img1,img2 --identity-cols subj1,subj2` ignored both flags, then asked
    for them (M5); compare reads score-file formats too."""
    df = pd.read_csv(FIX / "bfw_pairs.csv")
    renamed = tmp_path / "rfw.csv"
    df.rename(columns={"p1": "img1", "p2": "img2", "id1": "subj1", "id2": "subj2"}).to_csv(renamed, index=False)
    score = next(c for c in df.columns if c not in ("fold", "p1", "p2", "label", "id1", "id2") and
                 pd.api.types.is_float_dtype(df[c]))
    common = ["--fmr", "0.1", "--no-intervals", "--no-figures", "--quiet", "--score-col", score]
    res = runner.invoke(app, ["audit", "--format", "pair-table", "--comparisons", str(renamed), "--sample-cols",
                              "img1,img2", "--identity-cols", "subj1,subj2", "--out", str(tmp_path / "a"), *common])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["audit", "--format", "pair-table", "--comparisons", str(FIX / "bfw_pairs.csv"),
                              "--out", str(tmp_path / "b"), *common])
    assert res.exit_code == 0, res.output
    a = pd.read_csv(tmp_path / "a" / "operating_points.csv")
    b = pd.read_csv(tmp_path / "b" / "operating_points.csv")
    assert a[["fmr_errors", "fnmr_errors", "threshold"]].equals(b[["fmr_errors", "fnmr_errors", "threshold"]])
    res = runner.invoke(app, ["compare", "--format", "wespeaker", "--scores-a", str(FIX / "wespeaker.score"),
                              "--scores-b", str(FIX / "wespeaker.score"), "--speaker-of", "path", "--fmr", "0.1",
                              "--n-resamples", "40", "--n-permutations", "9", "--out", str(tmp_path / "c"), "--quiet"])
    assert res.exit_code == 0, res.output


def test_bob_csv_of_2021_22_with_probe_key_and_two_score_columns(tmp_path):
    """bob.bio.base 2021-22 wrote probe_key (the probe sample) and probe_reference_id (the probe's subject, as
    CSVDataset's reference_id): every genuine row was refused as "a sample compared with itself". A file may hold
    raw and normalised scores: --score-col picks one."""
    rng = np.random.default_rng(2)
    ref, probe = np.repeat(["s1", "s2", "s3"], 3), np.tile(["s1", "s2", "s3"], 3)
    keys = [f"{p}/{i}.png" for i, p in enumerate(probe)]
    raw = np.round(rng.normal(size=9) + (ref == probe), 6)
    pd.DataFrame({"probe_key": keys, "probe_reference_id": probe, "probe_subject_id": probe,
                  "bio_ref_reference_id": ref, "bio_ref_subject_id": ref, "score": raw, "znorm": raw * 2 + 1}).to_csv(
        tmp_path / "s.csv", index=False)
    want = from_scores(raw, ref, probe, sample_a=ref, sample_b=keys)
    _same(load_bob_csv(tmp_path / "s.csv"), want)
    _same(load_bob_csv(tmp_path / "s.csv", score_col="znorm"), from_scores(raw * 2 + 1, ref, probe, sample_a=ref,
                                                                           sample_b=keys))
    res = runner.invoke(app, ["audit", "--format", "bob-csv", "--scores", str(tmp_path / "s.csv"), "--score-col",
                              "znorm", "--fmr", "0.2", "--no-intervals", "--no-figures", "--out", str(tmp_path / "o"),
                              "--quiet"])
    assert res.exit_code == 0, res.output


def test_bob_vulnerability_rows_never_enter_fmr(tmp_path):
    """bob's vulnerability score files mark presentation attacks by a non-empty probe_attack_type; they were
    counted as impostors (FMR contaminated, no warning). Now they are kept apart, with a warning saying how many."""
    df = pd.read_csv(FIX / "bob_scores.csv", dtype=str)
    attacks = df[df.probe_subject_id != df.bio_ref_subject_id].head(5).assign(probe_attack_type="print", score="0.99")
    both = pd.concat([df.assign(probe_attack_type=""), attacks.assign(probe_template_id=lambda d: d.probe_template_id
                                                                       + ".attack")])
    both.to_csv(tmp_path / "vuln.csv", index=False)
    with pytest.warns(UserWarning, match="5 rows of .* are presentation attacks"):
        got = load_bob_csv(tmp_path / "vuln.csv", group_by="gender")
    _same(got, load_bob_csv(FIX / "bob_scores.csv", group_by="gender"))
    assert any("IAPMR" in w for w in got.warnings) and len(got.attacks) == 5


def _bob_vuln_rows() -> list[dict[str, str]]:
    """The fixture read independently (csv module): bob_vuln.csv is laid out as bob.bio.base's CSVScoreWriter
    writes it (probe_template_id, the probe's attributes, the reference's, score; an empty attack_type for licit
    probes, as CSVDatabase reads an empty field)."""
    import csv

    with open(FIX / "bob_vuln.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_bob_vulnerability_licit_rows_equal_the_tidy_table(tmp_path):
    rows = [r for r in _bob_vuln_rows() if not r["probe_attack_type"]]
    tidy = _tidy(tmp_path, identity_a=[r["bio_ref_subject_id"] for r in rows],
                 identity_b=[r["probe_subject_id"] for r in rows], sample_a=[r["bio_ref_template_id"] for r in rows],
                 sample_b=[r["probe_template_id"] for r in rows], score=[r["score"] for r in rows],
                 gender_a=[r["bio_ref_gender"] for r in rows], gender_b=[r["probe_gender"] for r in rows])
    with pytest.warns(UserWarning, match="12 rows of .* are presentation attacks"):
        got = load_bob_csv(FIX / "bob_vuln.csv", group_by="gender")
    assert len(got.attacks) == 12  # apart; the rest, warning aside, is the tidy table's
    _same_audit(replace(got, warnings=(), attacks=None), load_comparisons(tidy, group_by="gender"))


def test_bob_vulnerability_iapmr_equals_a_hand_count_and_the_wilson_function():
    """IAPMR (bob vuln metrics: farfrr(spoof, [0.0], threshold), the share of attack scores >= the threshold set on
    the licit scores) per group of the attacked subject, at every threshold of the audit; its interval is the Wilson
    interval with the variance clustered by attacked subject, as the library's own function gives it."""
    import matchaudit as ma
    from matchaudit.estimators import intervals as iv

    attacks = [r for r in _bob_vuln_rows() if r["probe_attack_type"]]
    with pytest.warns(UserWarning, match="presentation attacks"):
        data = load_bob_csv(FIX / "bob_vuln.csv", group_by="gender")
    res = ma.audit(data, fmr=0.1, thresholds=(0.5, 0.7), intervals=False)
    recs = res.attacks
    assert set(zip(recs["kind"], recs["target"])) == {("fmr_target", 0.1), ("threshold", 0.5), ("threshold", 0.7)}
    ops = res.operating_points.set_index(["weighting", "kind", "target", "group"])
    for r in recs.to_dict("records"):
        assert r["threshold"] == ops.loc[(r["weighting"], r["kind"], r["target"], "all"), "threshold"]
        mine = [a for a in attacks if r["group"] == "all" or a["bio_ref_gender"] == r["group"]]
        hit = [a for a in mine if float(a["score"]) >= r["threshold"]]
        assert (r["attacks"], r["accepted"]) == (len(mine), len(hit)) and r["iapmr"] == len(hit) / len(mine)
        subjects = sorted({a["bio_ref_subject_id"] for a in mine})
        n = np.array([sum(a["bio_ref_subject_id"] == s for a in mine) for s in subjects])
        e = np.array([sum(a["bio_ref_subject_id"] == s for a in hit) for s in subjects])
        want = iv.wilson(int(e.sum()), int(n.sum()), 0.95, variance=iv.fnmr_variance(n, e))
        assert (r["low"], r["high"], r["method"]) == (pytest.approx(want.confidence_interval.low),
                                                      pytest.approx(want.confidence_interval.high), "wilson")
        assert r["indicative"] and "indicative" in r["note"]  # 2-4 attacked subjects (hostile run: 3/7 over 2
        # subjects gave an interval narrower than the independent one)
    at = recs[(recs.kind == "fmr_target") & (recs.weighting == "pooled")].set_index("group")
    assert at.loc[["all", "F", "M"], "accepted"].tolist() == [7, 3, 4]  # the threshold 0.47: counted by hand
    # the attacks never enter FMR: the impostors of the audit are the licit ones only
    assert ops.loc[("pooled", "fmr_target", 0.1, "all"), "fmr_comparisons"] == 12


def test_bob_vulnerability_in_results_console_and_report(tmp_path):
    import json

    res = runner.invoke(app, ["audit", "--format", "bob-csv", "--scores", str(FIX / "bob_vuln.csv"), "--group-by",
                              "gender", "--fmr", "0.1", "--no-figures", "--no-intervals", "--out", str(tmp_path / "o"),
                              "--report", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "IAPMR" in res.output and "58.3% (7/12)" in res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [r["accepted"] for r in doc["attacks"] if r["weighting"] == "pooled"] == [7, 3, 4]
    assert len(pd.read_csv(tmp_path / "o" / "attacks.csv")) == len(doc["attacks"])
    assert "<h2>Presentation attacks</h2>" in (tmp_path / "r.html").read_text()


def test_bob_vuln_gen_files_read(tmp_path):
    """The file bob's own 'bob vuln gen' writes (bob/bio/base/script/vuln_commands.py, write_scores_to_file): a
    csv.writer with header bio_ref_subject_id,probe_subject_id,probe_key,probe_attack_type,score, probe_key '0'
    and attack_type None (an empty field) on licit rows, 'pai' on attacks. It was refused (a template id column
    for one side only); the licit rows are 'x' against 'x' or 'y'."""
    import csv

    rng = np.random.RandomState(0)
    neg, pos, spoof = rng.normal(3, 1, 20), rng.normal(7, 1, 20), rng.normal(5, 1, 20)
    with open(tmp_path / "scores-dev.csv", "wt") as f:
        w = csv.writer(f)
        w.writerow(["bio_ref_subject_id", "probe_subject_id", "probe_key", "probe_attack_type", "score"])
        for s in neg:
            w.writerow(["x", "y", "0", None, s])
        for s in pos:
            w.writerow(["x", "x", "0", None, s])
        for s in spoof:
            w.writerow(["x", "y", "0", "pai", s])
    with pytest.warns(UserWarning, match="20 rows"):
        got = load_bob_csv(tmp_path / "scores-dev.csv")
    assert _counts(got) == (20, 20) and len(got.attacks) == 20
    np.testing.assert_array_equal(np.sort(got.attacks.score), np.sort(spoof))


def test_bob_vulnerability_attack_on_an_unknown_subject(tmp_path):
    text = (FIX / "bob_vuln.csv").read_text() + "c09/attack1.png,c09,print,F,c09/enrol.png,c09,F,0.5\n"
    with pytest.raises(InputError, match=r"'b.csv': presentation attacks at line 34 claim reference subjects with "
                                         r"no licit comparison in the file \(c09\)"):
        load_bob_csv(_copy(tmp_path, "b.csv", text))
    bad = (FIX / "bob_vuln.csv").read_text().replace("c02/enrol.png,c02,F,0.58", "c02/enrol.png,c02,F,high")
    res = runner.invoke(app, ["audit", "--format", "bob-csv", "--scores", str(_copy(tmp_path, "c.csv", bad)),
                              "--fmr", "0.1", "--no-figures", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "'c.csv': score is not a number at line" in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("policy", ["exclude", "count"])
def test_frvt_template_logs_mark_failures_to_enrol(tmp_path, policy):
    """NIST's driver still matches a template whose creation failed (score -1, return code 0 in match.log); the
    failure is only in its template log ('id image templateSizeBytes returnCode ...'). With --template-log its
    comparisons are failures to enrol, as a non-zero return code would make them (#42 item 3)."""
    rows = _lines("frvt_match.log")[1:]
    log = tmp_path / "enroll.log"
    ids = sorted({r[0] for r in rows} | {r[1] for r in rows})
    log.write_text("id image templateSizeBytes returnCode isLeftEyeAssigned isRightEyeAssigned xleft yleft xright "
                   "yright\n" + "".join(f"{t} img/{t}.png {0 if t != '3.template' else 0} "
                                        f"{2 if t == '3.template' else 0} 0 0 0 0 0 0\n" for t in ids))
    got = load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt", fta_policy=policy, template_logs=[log],
                    metadata=FIX / "clients.csv", group_by="gender")
    tidy = pd.read_csv(_frvt_tidy(tmp_path))
    tidy.loc[(tidy.sample_a == "3.template") | (tidy.sample_b == "3.template"), "code"] = 2
    tidy.to_csv(tmp_path / "with_fte.csv", index=False)
    want = load_comparisons(tmp_path / "with_fte.csv", return_code_col="code", fta_policy=policy,
                            metadata_path=FIX / "clients.csv", group_by="gender")
    _same_audit(got, want)
    assert got.failures.rows.size > load_frvt(FIX / "frvt_match.log", FIX / "frvt_subjects.txt", fta_policy=policy
                                              ).failures.rows.size
    res = runner.invoke(app, ["audit", "--format", "frvt", "--scores", str(FIX / "frvt_match.log"), "--subject-of",
                              str(FIX / "frvt_subjects.txt"), "--template-log", str(log), "--fta-policy", policy,
                              "--fmr", "0.1", "--no-intervals", "--no-figures", "--out", str(tmp_path / "o"),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["audit", "--format", "bob", "--scores", str(FIX / "bob4.txt"), "--template-log",
                              str(log), "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "--template-log goes with --format frvt" in res.output


def test_kaldi_compute_eer_input(tmp_path):
    """Kaldi's compute-eer reads 'score target|nontarget' lines; the same trials as the Kaldi fixture (labels only)
    give the same audit, and its EER the same number."""
    from matchaudit.data.formats import load_kaldi_eer

    trials = {(e, t): lab for e, t, lab in _lines("kaldi_trials")}
    rows = [(float(s), trials[(e, t)]) for e, t, s in _lines("kaldi_scores")]
    (tmp_path / "eer.txt").write_text("".join(f"{s} {lab}\n" for s, lab in rows))
    got = load_kaldi_eer(tmp_path / "eer.txt")
    assert not got.has_identities and _counts(got) == _counts(load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores"))
    res = runner.invoke(app, ["audit", "--format", "kaldi-eer", "--scores", str(tmp_path / "eer.txt"), "--fmr", "0.1",
                              "--no-figures", "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    want = pd.read_csv(tmp_path / "o" / "curve_summaries.csv")
    import matchaudit as ma
    exact = ma.audit(load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores"), fmr=0.1, intervals=False)
    assert want.set_index("group").loc["all", "eer"] == pytest.approx(exact.curves.set_index("group").loc["all", "eer"])


# --- pyeer genuine / impostor score files -------------------------------------------------------------------

def test_pyeer_files_equal_the_tidy_table(tmp_path):
    """pyeer (geteerinf -g TRUE -i FALSE) reads one score per line, the last blank-separated column
    (eer_info.py: float(line.strip().split(' ')[-1])), as its example_files/non_hist/exp1_true.txt and
    exp1_false.txt. No ids: labels only, as a tidy table with a score and a label column."""
    from matchaudit.data.score_lists import load_pyeer

    gen, imp = [r[-1] for r in _lines("pyeer_true.txt")], [r[-1] for r in _lines("pyeer_false.txt")]
    tidy = _tidy(tmp_path, score=gen + imp, label=["genuine"] * len(gen) + ["impostor"] * len(imp))
    got = load_pyeer(FIX / "pyeer_true.txt", FIX / "pyeer_false.txt")
    assert _counts(got) == (12, 36) and not got.has_identities
    _same_audit(got, load_comparisons(tidy, sample_cols=None, identity_cols=None, label_col="label"))
    # any columns before the score are ignored, as pyeer does
    (tmp_path / "g.txt").write_text("".join(f"q{i} t{i} {s}\n" for i, s in enumerate(gen)))
    _same(load_pyeer(tmp_path / "g.txt", FIX / "pyeer_false.txt"), got)
    # dissimilarity scores (pyeer's -ds): --distance
    _same(load_pyeer(FIX / "pyeer_true.txt", FIX / "pyeer_false.txt", distance=True),
          load_comparisons(tidy, sample_cols=None, identity_cols=None, label_col="label", distance=True))
    res = runner.invoke(app, ["audit", "--format", "pyeer", "--scores", str(FIX / "pyeer_true.txt"),
                              "--impostor-scores", str(FIX / "pyeer_false.txt"), "--fmr", "0.1", "--no-figures",
                              "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output
    import matchaudit as ma
    want = ma.audit(load_comparisons(tidy, sample_cols=None, identity_cols=None, label_col="label"), fmr=0.1,
                    intervals=False)
    ops = pd.read_csv(tmp_path / "o" / "operating_points.csv")
    assert ops[["fmr_errors", "fnmr_errors", "threshold"]].values.tolist() == \
        want.operating_points[["fmr_errors", "fnmr_errors", "threshold"]].values.tolist()


def test_pyeer_bad_files(tmp_path):
    from matchaudit.data.score_lists import load_pyeer

    bad = _copy(tmp_path, "imp.txt", _edit("pyeer_false.txt", 4, "0.12 high"))
    with pytest.raises(InputError, match=r"pyeer impostor score file 'imp.txt': score is not a number at line 4 "):
        load_pyeer(FIX / "pyeer_true.txt", bad)
    res = runner.invoke(app, ["audit", "--format", "pyeer", "--scores", str(FIX / "pyeer_true.txt"),
                              "--impostor-scores", str(bad), "--no-figures", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "'imp.txt': score is not a number at line 4" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["audit", "--format", "pyeer", "--scores", str(FIX / "pyeer_true.txt"),
                              "--no-figures", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "missing --impostor-scores" in res.output
    res = runner.invoke(app, ["audit", "--format", "pyeer", "--scores", str(FIX / "pyeer_true.txt"),
                              "--impostor-scores", str(FIX / "pyeer_false.txt"), "--group-by", "gender",
                              "--no-figures", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no ids, so no groups" in res.output


# --- BOSARIS (SIDEKIT) text key + scores --------------------------------------------------------------------

def test_bosaris_files_equal_the_tidy_table(tmp_path):
    """bosaris_key.txt and bosaris_scores.txt are laid out as sidekit.bosaris's Key.write_txt and Scores.write_txt
    write them ('model seg target|nontarget' and 'model seg score' lines, models sorted, a model's targets before
    its non-targets): the Kaldi fixture's trials. Same comparisons as the tidy table, labels only or with
    speakers."""
    from matchaudit.data.score_lists import load_bosaris

    score = {(m, s): sc for m, s, sc in _lines("bosaris_scores.txt")}
    rows = [(m, s, score[m, s], lab) for m, s, lab in _lines("bosaris_key.txt")]  # the key's trials, in its order
    tidy = pd.DataFrame({"sample_a": [r[0] for r in rows], "sample_b": [r[1] for r in rows],
                         "score": [r[2] for r in rows], "label": [r[3] for r in rows]})
    tidy["identity_a"], tidy["identity_b"] = tidy.sample_a.str.split("-").str[0], tidy.sample_b.str.split("-").str[0]
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    got = load_bosaris(FIX / "bosaris_scores.txt", FIX / "bosaris_key.txt")
    assert _counts(got) == (12, 36)
    _same_audit(got, load_comparisons(tmp_path / "tidy.csv", identity_cols=None, label_col="label"))
    spk = load_bosaris(FIX / "bosaris_scores.txt", FIX / "bosaris_key.txt", speaker_of="prefix",
                       metadata=FIX / "kaldi_speakers.csv", group_by="gender")
    _same_audit(spk, load_comparisons(tmp_path / "tidy.csv", metadata_path=FIX / "kaldi_speakers.csv",
                                      metadata_key="speaker", group_by="gender"))
    assert _counts(spk) == _counts(load_kaldi(FIX / "kaldi_trials", FIX / "kaldi_scores"))
    # an index (ndx: 'model seg' lines) picks the scored trials; the key may hold more
    ndx = tmp_path / "ndx.txt"
    ndx.write_text("".join(f"{m} {s}\n" for m, s, _ in _lines("bosaris_scores.txt")[:20]))
    scores20 = tmp_path / "s20.txt"
    scores20.write_text("".join(" ".join(r) + "\n" for r in _lines("bosaris_scores.txt")[:20]))
    assert len(load_bosaris(scores20, FIX / "bosaris_key.txt", ndx=ndx).pairs) == 20
    res = runner.invoke(app, ["audit", "--format", "bosaris", "--scores", str(FIX / "bosaris_scores.txt"), "--key",
                              str(FIX / "bosaris_key.txt"), "--speaker-of", "prefix", "--fmr", "0.1",
                              "--no-figures", "--out", str(tmp_path / "o"), "--quiet"])
    assert res.exit_code == 0, res.output


def test_bosaris_bad_files(tmp_path):
    from matchaudit.data.score_lists import load_bosaris

    k = _copy(tmp_path, "key.txt", _edit("bosaris_key.txt", 3, "spkA-enr spkA-utt3 tgt"))
    with pytest.raises(InputError, match=r"BOSARIS key 'key.txt': the third column must be 'target' or 'nontarget'"
                                         r".* at line 3 "):
        load_bosaris(FIX / "bosaris_scores.txt", k)
    s = _copy(tmp_path, "s.txt", _edit("bosaris_scores.txt", 7, None))
    with pytest.raises(InputError, match=r"BOSARIS key 'bosaris_key.txt': trials without a score in BOSARIS score "
                                         r"file 's.txt' at line 7"):
        load_bosaris(s, FIX / "bosaris_key.txt")
    s = _copy(tmp_path, "s.txt", _edit("bosaris_scores.txt", 9, "spkA-enr spkC-utt1 0.3 extra"))
    res = runner.invoke(app, ["audit", "--format", "bosaris", "--scores", str(s), "--key",
                              str(FIX / "bosaris_key.txt"), "--no-figures", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "'s.txt': wrong number of columns at line 9" in res.output
    assert "Traceback" not in res.output


def test_compare_reads_pyeer_and_bosaris(tmp_path):
    """compare reads both formats; pyeer files carry no identities, so the paired identity bootstrap refuses
    them with a message (exit 2), BOSARIS with --speaker-of runs."""
    res = runner.invoke(app, ["compare", "--format", "pyeer", "--scores-a", str(FIX / "pyeer_true.txt"),
                              "--impostor-scores-a", str(FIX / "pyeer_false.txt"), "--scores-b",
                              str(FIX / "pyeer_true.txt"), "--impostor-scores-b", str(FIX / "pyeer_false.txt"),
                              "--out", str(tmp_path / "c1"), "--quiet"])
    assert res.exit_code == 2 and "carry no ids" in res.output and "Traceback" not in res.output
    assert "--impostor-scores." not in res.output  # audit's flag, not compare's (hostile run)
    half = runner.invoke(app, ["compare", "--format", "pyeer", "--scores-a", str(FIX / "pyeer_true.txt"),
                               "--scores-b", str(FIX / "pyeer_true.txt"), "--out", str(tmp_path / "c0"), "--quiet"])
    assert half.exit_code == 2 and "carry no ids" in half.output
    b = tmp_path / "b.txt"
    b.write_text("".join(f"{m} {s} {float(x) * 0.9 + 0.01}\n" for m, s, x in _lines("bosaris_scores.txt")))
    res = runner.invoke(app, ["compare", "--format", "bosaris", "--scores-a", str(FIX / "bosaris_scores.txt"),
                              "--scores-b", str(b), "--key", str(FIX / "bosaris_key.txt"), "--speaker-of", "prefix",
                              "--fmr", "0.1", "--n-resamples", "50", "--n-permutations", "0",
                              "--out", str(tmp_path / "c2"), "--quiet"])
    assert res.exit_code == 0, res.output


def test_iapmr_is_indicative_below_min_identities_attacked_subjects_only():
    """Pins ``iapmr_records``' ``subjects < MIN_IDENTITIES``: a view whose attacks fall on exactly MIN_IDENTITIES
    subjects is not indicative (``<=`` would flag it); one with a subject fewer is, and says so."""
    import matchaudit as ma
    from matchaudit.estimators.attacks import iapmr_records
    from matchaudit.metrics.small_groups import MIN_IDENTITIES
    from matchaudit.model import Attacks
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(MIN_IDENTITIES, (100.0, 300.0)),
                        "B": GroupSpec(MIN_IDENTITIES - 1, (100.0, 300.0))},
                       samples_per_identity=2, dim=16, seed=3).as_data()
    k = data.n_identities
    attacks = Attacks(score=np.linspace(0.0, 1.0, k), identity=np.arange(k), group=data.identity_group.copy(),
                      attack_type=np.full(k, "print"), rows=np.arange(1, k + 1))
    point = {"group": "all", "weighting": "pooled", "kind": "threshold", "target": 0.5, "threshold": 0.5}
    recs = {r["group"]: r for r in iapmr_records(replace(data, attacks=attacks), [point], ">=")}
    assert {g: (r["subjects"], r["indicative"]) for g, r in recs.items()} == {
        "all": (2 * MIN_IDENTITIES - 1, False), "A": (MIN_IDENTITIES, False), "B": (MIN_IDENTITIES - 1, True)}
    assert f"fewer than {MIN_IDENTITIES}" in recs["B"]["note"]
