"""The hostile table: several hundred cases of bad or odd input to every command and library entry point, each
with the exit status (CLI: 0 success, 2 bad input with a message) or outcome (library: success or ma.InputError)
it must have and the words its message must contain (the flag, column, file or rows at fault).

Sources: the independent hostile run of 2026-11-27 (shared/reports/hostile-2026-11-27.md: its defect codes
D, S, P, M, T, N, L and C are cited in the ids and reasons) and cases of the same kinds (bad flags, bad files, wrong
types, NaN/inf/empty, huge values, zero errors, one group, ties, an output aimed at an input, an unwritable --out, a
directory given as a file, a file of the wrong format for --format).

Invariants checked for EVERY case: no traceback (CLI: exit status never 1, "Traceback" not in the output, no
exception but SystemExit; library: no exception but ma.InputError), and no input file modified (every input file is
hashed before and after; library calls also leave the caller's arrays and DataFrames as they were).

A case on which the code is wrong today is marked xfail(strict=True) with what is wrong: the module passes, the
defect stays visible, and the mark must go when it is fixed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.cli import app

runner = CliRunner()
FORMATS = Path(__file__).parent / "fixtures" / "formats"


# ---------------------------------------------------------------------------------------------------------------
# Inputs: small valid files and broken variants, built once per module (per xdist worker)
# ---------------------------------------------------------------------------------------------------------------

def _comparisons(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """A tidy comparison table: 40 identities, groups F (even) / M (odd), genuine scores about 2 above impostors."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 40, size=(n, 2))
    t = pd.DataFrame({"sample_a": [f"a{i}" for i in range(n)], "sample_b": [f"b{i}" for i in range(n)],
                      "identity_a": ids[:, 0], "identity_b": np.where(np.arange(n) % 4 == 0, ids[:, 0], ids[:, 1]),
                      "score": rng.normal(size=n)})
    t["group_a"] = np.where(t.identity_a % 2 == 0, "F", "M")
    t["group_b"] = np.where(t.identity_b % 2 == 0, "F", "M")
    t.loc[t.identity_a != t.identity_b, "score"] -= 2
    return t


def _build(d: Path) -> None:
    run = runner.invoke(app, ["simulate", "--identities", "30", "--samples-per-identity", "3", "--dim", "16",
                              "--format", "csv", "--out", str(d), "--quiet"])
    assert run.exit_code == 0, run.output
    s = pd.read_csv(d / "samples.csv")
    e = np.load(d / "embeddings.npy")
    s.to_parquet(d / "samples.parquet")
    s.assign(embedding=list(e.astype(np.float64))).to_parquet(d / "s_list.parquet")
    s.to_csv(d / "samples.tsv", sep="\t", index=False)
    (d / "samples.txt").write_text(s.to_csv(index=False))
    # samples variants (same 90 rows as embeddings.npy)
    s.assign(sample_id=s.sample_id.where(s.index != 5, s.sample_id[4])).to_csv(d / "s_dupid.csv", index=False)
    s.assign(identity=s.identity.astype(object).where(s.index != 6, None)).to_csv(d / "s_noident.csv", index=False)
    s.assign(group=s.group.where(s.index != 1, "B" if s.group[1] != "B" else "A")).to_csv(d / "s_groupvaries.csv",
                                                                                             index=False)
    s.assign(identity="X").to_csv(d / "s_oneident.csv", index=False)
    s.assign(identity=s.sample_id).to_csv(d / "s_singletons.csv", index=False)
    s.assign(group="A").to_csv(d / "s_onegroup.csv", index=False)
    s.assign(group=s.group.replace({"C": "NA"})).to_csv(d / "s_groupNA.csv", index=False)
    s.assign(group=s.group.replace({"C": "None"})).to_csv(d / "s_groupNone.csv", index=False)
    first = s.identity.iloc[0]
    s.assign(identity=s.identity.astype(str).where(s.identity != first, "NA")).to_csv(d / "s_identNA.csv",
                                                                                    index=False)
    s.assign(g1=s.group.map({"A": "x|y", "B": "x", "C": "w"}),
             g2=s.group.map({"A": "z", "B": "y|z", "C": "w"})).to_csv(d / "s_pipe.csv", index=False)
    s.assign(group=s.group.replace({"A": "all"})).to_csv(d / "s_groupall.csv", index=False)
    s.assign(group=s.group.replace({"A": "Ærø/東京 ñ", "B": "x y"})).to_csv(d / "s_unicode.csv", index=False)
    s.assign(group=s.group.replace({"A": "L" * 5000})).to_csv(d / "s_longgroup.csv", index=False)
    s.assign(group=s.group.where(s.index % 7 != 0, None)).to_csv(d / "s_groupmissing.csv", index=False)
    s.drop(columns=["identity"]).to_csv(d / "s_noidcol.csv", index=False)
    s.iloc[:0].to_csv(d / "s_empty.csv", index=False)
    s.assign(sample_id=np.arange(len(s))).to_csv(d / "s_intids.csv", index=False)
    # the C group reduced to one identity
    c_ids = s.identity[s.group == "C"].unique()
    s.assign(group=s.group.where(~s.identity.isin(c_ids[1:]), "B")).to_csv(d / "s_oneidgroup.csv", index=False)
    # embeddings variants
    def save(name, arr):
        np.save(d / name, arr)
    bad = e.copy(); bad[3, 2] = np.nan; save("e_nan.npy", bad)
    bad = e.copy(); bad[4, 0] = np.inf; save("e_inf.npy", bad)
    bad = e.copy(); bad[7] = 0; save("e_zerorow.npy", bad)
    save("e_1d.npy", e[:, 0]); save("e_3d.npy", e.reshape(90, 4, 4)); save("e_short.npy", e[:5])
    save("e_long.npy", np.vstack([e, e[:10]]))
    save("e_huge.npy", e.astype(np.float64) * 1e300)
    save("e_tiny.npy", e.astype(np.float64) * 1e-200)
    save("e_f16.npy", e.astype(np.float16)); save("e_int.npy", np.round(e * 1000).astype(np.int64))
    save("e_fortran.npy", np.asfortranarray(e)); save("e_bigend.npy", e.astype(">f8"))
    save("e_dim1.npy", e[:, :1]); save("e_bool.npy", e > 0)
    save("e_complex.npy", e.astype(np.complex64))
    np.save(d / "e_obj.npy", np.array([list(r) for r in e] + [], dtype=object), allow_pickle=True)
    np.save(d / "e_str.npy", e.astype(str))
    (d / "e_text.npy").write_text("not an npy file\n")
    np.savez(d / "e.npz", embeddings=e)
    (d / "e_empty.npy").write_bytes(b"")
    # pairs
    ids = s.sample_id.tolist()
    pd.DataFrame({"sample_a": ids[:40], "sample_b": ids[1:41]}).to_csv(d / "pairs.csv", index=False)
    pd.DataFrame({"sample_a": ids[:5] + ["ghost"], "sample_b": ids[1:6] + [ids[0]]}).to_csv(d / "pairs_unknown.csv",
                                                                                          index=False)
    pd.DataFrame({"sample_a": ids[:5], "sample_b": ids[:5]}).to_csv(d / "pairs_self.csv", index=False)
    pd.DataFrame({"sample_a": [], "sample_b": []}).to_csv(d / "pairs_empty.csv", index=False)
    pd.DataFrame({"x": ids[:5], "y": ids[1:6]}).to_csv(d / "pairs_nocols.csv", index=False)
    pd.DataFrame({"x": ids[:5], "y": ids[1:6], "z": ids[2:7]}).to_csv(d / "pairs_3cols.csv", index=False)
    # comparison tables
    t = _comparisons()
    t.to_csv(d / "t.csv", index=False)
    t.to_parquet(d / "t.parquet")
    t.to_csv(d / "t.tsv", sep="\t", index=False)
    t.to_csv(d / "t_bom.csv", index=False, encoding="utf-8-sig")
    (d / "t_crlf.csv").write_bytes(t.to_csv(index=False).replace("\n", "\r\n").encode())
    with gzip.open(d / "t.csv.gz", "wt") as f:
        f.write(t.to_csv(index=False))
    t.to_csv(d / "t_semicolon.csv", index=False, sep=";")
    (d / "t_utf16.csv").write_bytes(t.to_csv(index=False).encode("utf-16"))
    (d / "t_binary.csv").write_bytes(bytes(range(256)) * 8)
    (d / "t_nul.csv").write_bytes(t.to_csv(index=False).encode().replace(b"a1,", b"a\x001,", 1))
    (d / "t_empty.csv").write_text("sample_a,sample_b,identity_a,identity_b,score\n")
    (d / "t_zero.csv").write_bytes(b"")
    (d / "t.json").write_text(t.to_json())
    (d / "t.xlsx").write_bytes(b"PK\x03\x04 not really a spreadsheet")
    def obj(col, i, value):
        return t[col].astype(object).where(t.index != i, value)
    t.assign(score=obj("score", 5, np.nan)).to_csv(d / "t_nan.csv", index=False)
    t.assign(score=obj("score", 5, np.inf)).to_csv(d / "t_inf.csv", index=False)
    t.assign(score=obj("score", 5, -np.inf)).to_csv(d / "t_neginf.csv", index=False)
    t.assign(score=obj("score", 5, "1e400")).to_csv(d / "t_1e400.csv", index=False)
    t.assign(score=obj("score", 7, "x")).to_csv(d / "t_badscore.csv", index=False)
    t.assign(score=obj("score", 9, "")).to_csv(d / "t_blankscore.csv", index=False)
    t.assign(score=t.score.round(0)).to_csv(d / "t_ties.csv", index=False)
    t.assign(score=0.5).to_csv(d / "t_same.csv", index=False)
    t.assign(score=(t.identity_a == t.identity_b).astype(float)).to_csv(d / "t_binscores.csv", index=False)
    t.assign(score=t.score * 1e300).to_csv(d / "t_huge.csv", index=False)
    pd.read_csv(FORMATS / "bfw_pairs.csv").rename(columns={"p1": "img1", "p2": "img2", "id1": "subj1", "id2": "subj2",
                                                           "label": "issame"}).to_csv(d / "pt_rfw.csv", index=False)
    t.assign(score=t.score * 1e-300).to_csv(d / "t_tiny.csv", index=False)
    t.assign(score=np.where(t.identity_a == t.identity_b, 5.0, 0.0) + 0.01 * t.index / len(t)).to_csv(
        d / "t_perfect.csv", index=False)
    t.assign(group_a="F", group_b="F").to_csv(d / "t_onegroup.csv", index=False)
    gen = t.identity_a == t.identity_b
    t[~(gen & (t.identity_a % 2 == 1))].to_csv(d / "t_nogenM.csv", index=False)
    t[gen].to_csv(d / "t_genonly.csv", index=False)
    t[~gen].to_csv(d / "t_impostoronly.csv", index=False)
    t.iloc[[0]].to_csv(d / "t_onerow.csv", index=False)
    swapped = t.iloc[[1, 2]].rename(columns={"sample_a": "sample_b", "sample_b": "sample_a", "identity_a": "identity_b",
                                           "identity_b": "identity_a", "group_a": "group_b", "group_b": "group_a"})
    pd.concat([t, swapped], ignore_index=True).to_csv(d / "t_dup.csv", index=False)
    t.assign(sample_b=t.sample_b.where(t.index != 3, t.sample_a)).to_csv(d / "t_self.csv", index=False)
    t.assign(identity_a=obj("identity_a", 4, None)).to_csv(d / "t_noident.csv", index=False)
    t.assign(group_a=t.group_a.where(t.index != 10, "X")).to_csv(d / "t_groupvaries.csv", index=False)
    t.assign(group_a=t.group_a.replace({"F": "all"}), group_b=t.group_b.replace({"F": "all"})).to_csv(
        d / "t_groupall.csv", index=False)
    t.assign(group_a=t.group_a.replace({"M": "NA"}), group_b=t.group_b.replace({"M": "NA"})).to_csv(
        d / "t_groupNA.csv", index=False)
    t.drop(columns=["group_a", "group_b"]).to_csv(d / "t_nogroups.csv", index=False)
    t.drop(columns=["score"]).to_csv(d / "t_noscore.csv", index=False)
    t.assign(sex_a="x", sex_b="x").to_csv(d / "t_sex.csv", index=False)
    t.assign(g1_a=t.group_a.map({"F": "x|y", "M": "x"}), g1_b=t.group_b.map({"F": "x|y", "M": "x"}),
             g2_a=t.group_a.map({"F": "z", "M": "y|z"}), g2_b=t.group_b.map({"F": "z", "M": "y|z"})).to_csv(
        d / "t_pipe.csv", index=False)
    lab = gen.astype(int)
    t.assign(label=lab).to_csv(d / "t_label.csv", index=False)
    t.assign(label=np.where(gen, "yes", "no")).to_csv(d / "t_label_yesno.csv", index=False)
    t.assign(label=np.where(gen, 1, -1)).to_csv(d / "t_label_pm1.csv", index=False)
    t.assign(label=np.where(gen, "genuine", "impostor")).to_csv(d / "t_label_words.csv", index=False)
    t.assign(label=lab.where(t.index != 0, 2)).to_csv(d / "t_label_two.csv", index=False)
    t.assign(label=lab.where(t.index != 0, 1 - lab[0])).to_csv(d / "t_label_clash.csv", index=False)
    t.assign(label=lab.astype(object).where(t.index != 11, None)).to_csv(d / "t_label_missing.csv", index=False)
    t.drop(columns=["identity_a", "identity_b"]).assign(label=lab).to_csv(d / "t_labelonly.csv", index=False)
    rc = np.where(t.index % 50 == 7, 3, 0)
    t.assign(rc=rc, score=t.score.where(rc == 0, -1.0)).to_csv(d / "t_rc.csv", index=False)
    t.assign(rc="x").to_csv(d / "t_rc_text.csv", index=False)
    t.assign(distance=-t.score).to_csv(d / "t_distance.csv", index=False)
    t.assign(score_a=t.score, score_b=t.score + np.random.default_rng(1).normal(scale=0.3, size=len(t))).to_csv(
        d / "t2.csv", index=False)
    t.assign(score=t.score + np.random.default_rng(1).normal(scale=0.3, size=len(t))).to_csv(d / "t_b.csv",
                                                                                            index=False)
    t.iloc[:-5].to_csv(d / "t_b_short.csv", index=False)
    t.iloc[::-1].to_csv(d / "t_b_reversed.csv", index=False)
    t.assign(score=obj("score", 12, np.nan)).to_csv(d / "t_b_nan.csv", index=False)
    t.assign(identity_b=t.identity_b.where(t.index != 1, 39 - t.identity_b[1])).to_csv(d / "t_b_otherident.csv",
                                                                                       index=False)
    t.assign(sample_b=t.sample_b.where(t.index != 5, "zzz")).to_csv(d / "t_b_sample.csv", index=False)
    meta = pd.DataFrame({"identity": np.arange(40), "group": np.where(np.arange(40) % 2 == 0, "F", "M")})
    meta.to_csv(d / "meta.csv", index=False)
    meta.iloc[1:].to_csv(d / "meta_missing.csv", index=False)
    pd.concat([meta, meta.iloc[[0]].assign(group="M")]).to_csv(d / "meta_dupkey.csv", index=False)
    meta.rename(columns={"identity": "person"}).to_csv(d / "meta_person.csv", index=False)
    meta.assign(group=meta.group.where(meta.identity != 3, "F")).to_csv(d / "meta_clash.csv", index=False)
    # label-free estimate tables
    rng = np.random.default_rng(0)
    n = 300
    y = rng.random(2 * n) < 0.5
    sc = np.where(y, rng.normal(0.55, 0.08, 2 * n), rng.normal(0.1, 0.08, 2 * n))
    grp = np.repeat(["x", "y"], n)
    lab = np.where(rng.random(2 * n) < 0.1, y.astype(int).astype(str), "")
    est = pd.DataFrame({"score": sc, "group": grp, "label": lab})
    est.to_csv(d / "est.csv", index=False)
    est.assign(score=est.score.where(est.index != 3, np.nan)).to_csv(d / "est_nan.csv", index=False)
    est.assign(score=est.score.astype(object).where(est.index != 3, "abc")).to_csv(d / "est_text.csv", index=False)
    est.assign(score=0.4).to_csv(d / "est_same.csv", index=False)
    est.assign(group="x").to_csv(d / "est_onegroup.csv", index=False)
    est.iloc[:3].to_csv(d / "est_tiny.csv", index=False)
    est.iloc[:0].to_csv(d / "est_empty.csv", index=False)
    est.assign(label=np.where(est.label == "", "", np.where(est.label == "1", "yes", "no"))).to_csv(
        d / "est_label_yesno.csv", index=False)
    est.assign(label=np.where(est.label == "", "", "7")).to_csv(d / "est_label_bad.csv", index=False)
    est.assign(label=np.where((est.group == "y") & (est.index == n), "0", "1")).to_csv(d / "est_alllabelled.csv",
                                                                                       index=False)
    est.assign(group=est.group.where(est.index != 8, None)).to_csv(d / "est_groupmissing.csv", index=False)
    # a classifier table for `test --table`
    m = 200
    yt = rng.integers(0, 2, m)
    ys = yt + rng.normal(scale=0.8, size=m)
    cls = pd.DataFrame({"y_true": yt, "y_score": ys, "y_pred": (ys > 0.5).astype(int),
                        "group": np.where(np.arange(m) % 2 == 0, "A", "B")})
    cls.to_csv(d / "cls.csv", index=False)
    cls.assign(group=np.where(np.arange(m) % 3 == 0, "A", np.where(np.arange(m) % 3 == 1, "B", "C"))).to_csv(
        d / "cls3.csv", index=False)
    cls.assign(y_true=cls.y_true.where(cls.index != 4, 2)).to_csv(d / "cls_ytrue2.csv", index=False)
    cls.assign(y_pred=cls.y_pred.astype(object).where(cls.index != 5, None)).to_csv(d / "cls_ypredna.csv",
                                                                                   index=False)
    cls.assign(group="A").to_csv(d / "cls_onegroup.csv", index=False)
    cls.assign(y_true=np.where(cls.y_true == 1, "yes", "no")).to_csv(d / "cls_yesno.csv", index=False)
    cls.assign(y_true=np.where(cls.y_true == 1, 1, -1)).to_csv(d / "cls_pm1.csv", index=False)
    cls.assign(y_true=1).to_csv(d / "cls_allpos.csv", index=False)
    cls.assign(y_score=cls.y_score.where(cls.index != 6, np.inf)).to_csv(d / "cls_inf.csv", index=False)
    # toolkit formats, broken
    (d / "bob_nan.txt").write_text("c01 c01 c01/p1.png 0.7\nc01 c02 c02/p1.png nan\nc02 c02 c02/p2.png 0.8\n")
    (d / "bob_3col.txt").write_text("c01 c01 0.7\nc01 c02 0.1\n")
    (d / "bob_mixed.txt").write_text("c01 c01 c01/p1.png 0.7\nc01 m1 c02 c02/p1.png 0.1\n")
    bob4 = [ln for ln in (FORMATS / "bob4.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    (d / "bob4_other.txt").write_text("\n".join(bob4[1:]) + "\n")
    (d / "bob_text.txt").write_text("c01 c01 c01/p1.png high\nc01 c02 c02/p1.png 0.1\n")
    (d / "bob_csv_bad.csv").write_text("probe_template_id,probe_subject_id,bio_ref_template_id,bio_ref_subject_id,"
                                       "score\np1,s1,r1,s1,0.9\np2,s2,r1,s1,x\n")
    (d / "bob_csv_nocol.csv").write_text("probe,ref,score\np1,r1,0.9\n")
    kaldi = (FORMATS / "kaldi_scores").read_text().splitlines()
    (d / "kaldi_scores_missing").write_text("\n".join(kaldi[1:]) + "\n")
    (d / "kaldi_scores_dup").write_text("\n".join(kaldi + kaldi[:1]) + "\n")
    (d / "kaldi_trials_badlabel").write_text((FORMATS / "kaldi_trials").read_text().replace("target", "maybe", 1))
    wes = (FORMATS / "wespeaker.score").read_text().splitlines()
    (d / "w_mixed.score").write_text("\n".join([" ".join(wes[0].split()[:3])] + wes[1:]) + "\n")
    (d / "w_badlabel.score").write_text("\n".join([wes[0].replace("target", "sometimes")] + wes[1:]) + "\n")
    vox = (FORMATS / "vox_trials.txt").read_text().splitlines()
    (d / "vox_trials_badlabel.txt").write_text("\n".join(["7" + vox[0][1:]] + vox[1:]) + "\n")
    aligned = (FORMATS / "vox_scores_aligned.txt").read_text().splitlines()
    (d / "vox_scores_short.txt").write_text("\n".join(aligned[:-1]) + "\n")
    sre = (FORMATS / "sre_output.tsv").read_text().splitlines()
    (d / "sre_output_nan.tsv").write_text("\n".join(sre[:2] + [sre[2].rsplit("\t", 1)[0] + "\tnan"] + sre[3:]) + "\n")
    frvt = (FORMATS / "frvt_match.log").read_text().splitlines()
    (d / "frvt_noheader.log").write_text("\n".join(frvt[1:]) + "\n")
    (d / "frvt_badrc.log").write_text("\n".join(frvt[:2] + [frvt[2].rsplit(" ", 1)[0] + " x"] + frvt[3:]) + "\n")
    mat = np.load(FORMATS / "matrix.npy")
    asym = mat.copy(); asym[np.tril_indices_from(asym, -1)] = 5.0; np.save(d / "m_asym.npy", asym)
    nan = mat.copy(); nan[0, 1] = np.nan; np.save(d / "m_nan.npy", nan)
    np.save(d / "m_rect.npy", mat[:, :5]); np.save(d / "m_mask_shape.npy", np.ones((3, 3), bool))
    np.save(d / "m_1d.npy", mat[0])
    (d / "m_ids_short.txt").write_text("\n".join((FORMATS / "matrix_ids.txt").read_text().split()[:-1]) + "\n")
    ie = pd.read_csv(FORMATS / "identity_embeddings.csv")
    ie.assign(age=np.arange(len(ie)) % 50 + 20.0).to_csv(d / "ie_age.csv", index=False)
    ie.assign(e1=ie.e1.where(ie.index != 2, np.nan)).to_csv(d / "ie_nan.csv", index=False)
    np.savez(d / "ie_noident.npz", embeddings=np.ones((3, 2)))
    # an audit's results and the JSON documents the report reads
    res = runner.invoke(app, ["audit", "--comparisons", str(d / "t.csv"), "--group-by", "group", "--fmr", "0.1",
                              "--n-resamples", "40", "--no-figures", "--out", str(d / "audit"), "--quiet"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["compare", "--comparisons-a", str(d / "t.csv"), "--comparisons-b", str(d / "t_b.csv"),
                              "--group-by", "group", "--fmr", "0.1", "--n-resamples", "40", "--test-resamples", "19",
                              "--out", str(d / "cmp"), "--quiet"])
    assert res.exit_code == 0, res.output
    text = (d / "audit" / "results.json").read_text()
    (d / "truncated.json").write_text(text[: len(text) // 2])
    (d / "notjson.json").write_text("hello\n")
    (d / "incomplete.json").write_text("{}")
    (d / "list.json").write_text("[1, 2, 3]")
    (d / "nulls.json").write_text("null")
    doc = json.loads(text)
    (d / "wrongtype.json").write_text(json.dumps({**doc, "operating_points": 3}))
    (d / "nan.json").write_text(text.replace('"rule"', '"rule_x"', 1))
    (d / "afile").write_text("x")
    (d / "emptydir").mkdir()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile_table")
    _build(d)
    return d


def _digest(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _unchanged(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Input files changed or removed (new files, e.g. outputs written beside a copy of the inputs, are allowed)."""
    return [k for k, v in before.items() if after.get(k) != v]


# ---------------------------------------------------------------------------------------------------------------
# The CLI table
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cli:
    args: str          # shell words; {d} inputs, {f} format fixtures, {c} a per-case copy of the inputs, {o} the out
    code: int          # 0 success, 2 bad input
    says: str | None   # a substring the output must contain (the flag, column, file or rows it names)
    check: Callable[[Path, str], None] | None = None  # check(out folder, output), after the status and message
    out: bool = True   # add --out {o} when the case gives none
    make_out: bool = False  # create the folder {o} first


def cli(id: str, args: str, code: int = 2, says: str | None = None, *, check=None, out=True, make_out=False,
        xfail: str = ""):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(Cli(args, code, says, check, out, make_out), id=id, marks=marks)


MACROS = {
    "S": "--samples {d}/samples.csv --embeddings {d}/embeddings.npy",
    "A": "audit --samples {d}/samples.csv --embeddings {d}/embeddings.npy --group-by group --fmr 0.1 "
         "--no-intervals --no-figures",
    "AI": "audit --samples {d}/samples.csv --embeddings {d}/embeddings.npy --group-by group --fmr 0.1 "
          "--n-resamples 40 --no-figures",
    "AT": "audit --comparisons {d}/t.csv --group-by group --fmr 0.1 --no-intervals --no-figures",
    "Q": "--fmr 0.1 --no-intervals --no-figures",
    "CMP": "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b.csv --group-by group --fmr 0.1 "
           "--n-resamples 40 --n-permutations 19",
    "CMPS": "compare --samples {d}/samples.csv --embeddings-a {d}/embeddings.npy --embeddings-b {d}/e_f16.npy "
            "--group-by group --fmr 0.1 --n-resamples 40 --n-permutations 19",
    "TEST": "test --comparisons {d}/t.csv --group-by group --fmr 0.1 --n-resamples 39",
    "TESTS": "test --samples {d}/samples.csv --embeddings {d}/embeddings.npy --group-by group --fmr 0.1 "
             "--n-resamples 39",
    "TT": "test --table {d}/cls.csv --y-pred y_pred --n-resamples 99",
    "EST": "estimate {d}/est.csv --sampler numpy --chains 2 --draws 1000 --fmr 0.1",
    "PROT": "protocol --samples {d}/samples.csv --genuine 20 --impostor 200",
    "COV": "coverage --datasets 2 --identities 20 --samples 3 --dim 8 --n-resamples 40 --fmr 0.1 --levels 0.9 "
           "--roc-methods recentered --fixed-methods wilson",
    "SIM": "simulate --identities 6 --samples-per-identity 2 --dim 8 --format csv",
}


def _groups(out: Path) -> set[str]:
    return set(pd.read_csv(out / "operating_points.csv", keep_default_na=False).group) - {"all"}


def groups_are(*names):
    def check(out: Path, output: str) -> None:
        assert _groups(out) == set(names), _groups(out)
    return check


def warns(text):
    def check(out: Path, output: str) -> None:
        assert text in output, output[-2000:]
    return check


def not_says(text):
    def check(out: Path, output: str) -> None:
        assert text not in output, output[-2000:]
    return check


def has_files(*names):
    def check(out: Path, output: str) -> None:
        missing = [n for n in names if not (out / n).exists()]
        assert not missing, (missing, sorted(p.name for p in out.iterdir()))
    return check


def threshold_equal_to_base(out: Path, output: str) -> None:
    """A cosine audit does not depend on the embeddings' scale: the threshold is the unscaled data's."""
    op = pd.read_csv(out / "operating_points.csv")
    t = op[(op.group == "all") & (op.weighting == "pooled") & (op.kind == "fmr_target")].threshold.iloc[0]
    assert np.isfinite(t) and abs(t - 0.38906) < 1e-4, t


def all_of(*checks):
    def check(out: Path, output: str) -> None:
        for c in checks:
            c(out, output)
    return check


def zero_errors_not_certain_parity(out: Path, output: str) -> None:
    """S3: every group without FNMR errors: the FNMR difference's interval is not [0, 0] (certified parity) and the
    undefined ratio has no interval."""
    iv = pd.read_csv(out / "intervals.csv")
    pooled = iv[(iv.weighting == "pooled") & (iv.group == "all")].set_index("metric")
    diff = pooled.loc["FNMR:max_min_difference"]
    assert diff.estimate == 0 and diff.high > 0, diff.to_dict()
    ratio = pooled.loc["FNMR:max_min_ratio"]
    assert np.isnan(ratio.low) and np.isnan(ratio.high), ratio.to_dict()


def rows_named(*rows):
    """An error naming exactly these data rows (first data row = 1)."""
    def check(out: Path, output: str) -> None:
        m = re.search(r"rows? ([0-9][0-9, ]*)", output)
        assert m, output
        named = {int(v) for v in m.group(1).replace(" ", "").split(",") if v}
        assert named == set(rows), (named, output)
    return check


def md_has_se(out: Path, output: str) -> None:
    """coverage.md, the human summary, gives each coverage's Monte Carlo standard error (or n)."""
    md = (out / "coverage.md").read_text()
    assert "SE" in md or "± " in md or "| n |" in md, md


def identities_written(n):
    def check(out: Path, output: str) -> None:
        s = pd.read_csv(out / "samples.csv")
        assert s.identity.nunique() == n, s.identity.nunique()
    return check


CLI_CASES = [
    # ----- audit: samples + embeddings, values of the flags
    cli("audit-ok", "{A}", 0, check=has_files("results.json", "operating_points.csv")),
    cli("audit-ok-parquet", "audit --samples {d}/samples.parquet --embeddings {d}/embeddings.npy --group-by group {Q}",
        0),
    cli("audit-ok-tsv", "audit --samples {d}/samples.tsv --embeddings {d}/embeddings.npy --group-by group {Q}", 0),
    cli("audit-ok-listcol", "audit --samples {d}/s_list.parquet --embedding-col embedding --group-by group {Q}", 0),
    cli("audit-ok-intervals-figures", "audit {S} --group-by group --fmr 0.1 --n-resamples 40", 0,
        check=all_of(has_files("intervals.csv", "det_pooled.png"), not_says("new population"))),  # M2
    cli("audit-fmr-2", "{A} --fmr 2", 2, "--fmr"),
    cli("audit-fmr-1", "{A} --fmr 1", 2, "--fmr"),
    cli("audit-fmr-neg", "{A} --fmr -0.1", 2, "--fmr"),
    cli("audit-fmr-nan", "{A} --fmr nan", 2, "--fmr"),
    cli("audit-fmr-inf", "{A} --fmr inf", 2, "--fmr"),
    cli("audit-fmr-empty", "{A} --fmr ''", 2, "--fmr"),
    cli("audit-fmr-text", "{A} --fmr abc", 2, "--fmr"),
    cli("audit-fmr-semicolon", "{A} --fmr '1e-2;1e-3'", 2, "--fmr"),
    cli("audit-fmr-repeated", "{A} --fmr 1e-2,1e-2", 2, "--fmr"),
    cli("audit-fmr-trailing-comma-ok", "{A} --fmr 0.1,", 0),
    cli("audit-fmr-zero-ok", "{A} --fmr 0", 0),
    cli("audit-fmr-below-resolution-ok", "{A} --fmr 1e-9", 0),
    cli("audit-far-alias-ok", "audit {S} --group-by group --far 0.1 --no-intervals --no-figures", 0),
    cli("audit-fmr-no-value", "audit {S} --group-by group --out {o} --fmr", 2, "--fmr", out=False),
    cli("audit-threshold-nan", "{A} --threshold nan", 2, "--threshold"),
    cli("audit-threshold-text", "{A} --threshold high", 2, "--threshold"),
    cli("audit-threshold-repeated", "{A} --threshold 0.3,0.3", 2, "--threshold"),
    cli("audit-threshold-inf-ok", "{A} --threshold inf", 0),
    cli("audit-threshold-huge-ok", "{A} --threshold 1e308", 0),
    cli("audit-fnmr-1", "{A} --fnmr 1", 2, "--fnmr"),
    cli("audit-fnmr-neg", "{A} --fnmr -0.5", 2, "--fnmr"),
    cli("audit-fnmr-ok", "{A} --fnmr 0.1", 0),
    cli("audit-rule-eq", "{A} --rule =", 2, "--rule"),
    cli("audit-rule-gt-ok", "{A} --rule '>'", 0),
    cli("audit-weighting-foo", "{A} --weighting foo", 2, "--weighting"),
    cli("audit-weighting-empty", "{A} --weighting ''", 2, "--weighting"),
    cli("audit-weighting-pooled-ok", "{A} --weighting pooled", 0),
    cli("audit-threshold-impostors-foo", "{A} --threshold-impostors foo", 2, "--threshold-impostors"),
    cli("audit-threshold-impostors-same-unknown", "{A} --threshold-impostors same:sex", 2, "sex"),
    cli("audit-threshold-impostors-same-group-ok", "{A} --threshold-impostors same-group", 0),
    cli("audit-dcf-p-target-1.5", "{A} --dcf-p-target 1.5", 2, "--dcf-p-target"),
    cli("audit-dcf-p-target-0", "{A} --dcf-p-target 0", 2, "--dcf-p-target"),
    cli("audit-dcf-c-miss-neg", "{A} --dcf-c-miss -1", 2, "--dcf-c-miss"),
    cli("audit-dcf-c-fa-0", "{A} --dcf-c-fa 0", 2, "--dcf-c-fa"),
    cli("audit-dcf-c-fa-nan", "{A} --dcf-c-fa nan", 2, "--dcf-c-fa"),
    cli("audit-dcf-text", "{A} --dcf a,b,c", 2, "--dcf"),
    cli("audit-dcf-two-values", "{A} --dcf 0.01,1", 2, "--dcf"),
    cli("audit-dcf-ok", "{A} --dcf '0.01,1,1;0.05,1,1'", 0),
    cli("audit-eer-foo", "{A} --eer foo", 2, "--eer"),
    cli("audit-eer-interpolated-ok", "{A} --eer interpolated", 0),
    cli("audit-zero-policy-foo", "{A} --zero-policy foo", 2, "--zero-policy"),
    cli("audit-zero-policy-upper-bound-ok", "{A} --zero-policy upper-bound", 0),
    cli("audit-small-group-identities-neg", "{A} --small-group-identities -1", 2, "--small-group-identities"),
    cli("audit-exclude-small-groups-ok", "{A} --exclude-small-groups", 0),
    cli("audit-metric-manhattan", "{A} --metric manhattan", 2, "--metric"),
    cli("audit-metric-euclidean-ok", "{A} --metric euclidean", 0),
    cli("audit-det-scale-foo", "audit {S} --group-by group --fmr 0.1 --no-intervals --det-scale foo", 2,
        "--det-scale"),
    cli("audit-det-scale-log-ok", "audit {S} --group-by group --fmr 0.1 --no-intervals --det-scale log", 0,
        check=has_files("det_pooled.png")),
    cli("audit-llr-ok", "{A} --llr", 0),
    cli("audit-json-ok", "{A} --json", 0, '"operating_points"'),
    cli("audit-quiet-ok", "{A} --quiet", 0, check=not_says("Results written")),
    cli("audit-unknown-flag", "{A} --foo", 2, "--foo"),
    cli("audit-extra-argument", "{A} extra", 2, "extra"),
    cli("audit-nothing", "audit", 2, "--samples"),
    # ----- audit: interval flags
    cli("audit-n-resamples-1", "{AI} --n-resamples 1", 2, "--n-resamples"),
    cli("audit-n-resamples-0", "{AI} --n-resamples 0", 2, "--n-resamples"),
    cli("audit-n-resamples-neg", "{AI} --n-resamples -5", 2, "--n-resamples"),
    cli("audit-n-resamples-float", "{AI} --n-resamples 40.5", 2, "--n-resamples"),
    cli("audit-level-0", "{AI} --level 0", 2, "--level"),
    cli("audit-level-1", "{AI} --level 1", 2, "--level"),
    cli("audit-level-95", "{AI} --level 95", 2, "--level"),
    cli("audit-level-nan", "{AI} --level nan", 2, "--level"),
    cli("audit-seed-neg", "{AI} --seed -1", 2, "--seed"),
    cli("audit-seed-2^32", "{AI} --seed 4294967296", 2, "--seed"),
    cli("audit-seed-text", "{AI} --seed x", 2, "--seed"),
    cli("audit-seed-max-ok", "{AI} --seed 4294967295", 0),
    cli("audit-ci-method-foo", "{AI} --ci-method foo", 2, "--ci-method"),
    cli("audit-ci-method-empty-item", "{AI} --ci-method wilson,,vertex", 2, "--ci-method"),
    cli("audit-ci-method-several-ok", "{AI} --ci-method wilson,double-or-nothing", 0),
    cli("audit-band-foo", "{AI} --band foo", 2, "--band"),
    cli("audit-memory-neg", "{AI} --memory -1", 2, "--memory"),
    cli("audit-memory-zero", "{AI} --memory 0", 2, "--memory"),
    cli("audit-memory-tiny", "{AI} --n-resamples 1000 --memory 0.0001", 2, "--memory"),
    cli("audit-one-sided-ok", "{AI} --one-sided --band pointwise", 0),
    cli("audit-no-intervals-with-ci-method", "{A} --ci-method wilson", 2, "--ci-method"),  # N1
    cli("audit-no-intervals-with-level-N1", "{A} --level 0.5", 2, "--level"),
    cli("audit-no-intervals-with-n-resamples-N1", "{A} --n-resamples 7", 2, "--n-resamples"),
    cli("audit-no-intervals-with-one-sided-M13", "{A} --one-sided", 2, "--one-sided"),
    cli("audit-no-intervals-with-band", "{A} --band pointwise", 2, "--band"),
    cli("audit-no-intervals-with-memory", "{A} --memory 1", 2, "--memory"),  # session 44's hostile run
    cli("audit-test-resamples-without-tests", "{A} --test-resamples 19", 2, "--test-resamples"),
    cli("audit-tests-versus-without-tests", "{A} --tests-versus rest", 2, "--tests-versus"),
    cli("audit-tests-resamples-0", "{A} --tests --test-resamples 0", 2, "--test-resamples"),
    cli("audit-tests-versus-foo", "{A} --tests --test-resamples 19 --tests-versus foo", 2, "--tests-versus"),
    cli("audit-tests-ok", "{A} --tests --test-resamples 19 --tests-versus both", 0),
    cli("audit-equivalence-one-value", "{A} --equivalence 0.8", 2, "--equivalence"),
    cli("audit-equivalence-reversed", "{A} --equivalence 1.25,0.8", 2, "--equivalence"),
    cli("audit-equivalence-scale-foo", "{A} --equivalence 0.8,1.25 --equivalence-scale foo", 2,
        "--equivalence-scale"),
    cli("audit-equivalence-log-negative", "{A} --equivalence -0.1,0.1 --equivalence-scale ratio", 2,
        "--equivalence"),
    cli("audit-backend-tpu", "{AI} --backend tpu", 2, "--backend"),
    cli("audit-workers-without-dask", "{AI} --workers 3", 2, "workers"),
    cli("audit-scheduler-without-dask", "{AI} --scheduler tcp://localhost:1", 2, "scheduler"),
    cli("audit-out-of-core-csv", "{AT} --out-of-core", 2, "out-of-core"),
    # ----- audit: groups
    cli("audit-group-by-missing", "audit {S} --group-by nope {Q}", 2, "nope"),
    cli("audit-group-by-trailing-comma-ok", "audit {S} --group-by group, {Q}", 0),
    cli("audit-group-by-twice", "audit {S} --group-by group,group {Q}", 2, "--group-by"),  # N2
    cli("audit-group-by-identity", "audit {S} --group-by identity {Q}", 2, "A00"),
    cli("audit-ungrouped-ok", "audit {S} {Q}", 0),
    cli("audit-one-group-ok", "audit --samples {d}/s_onegroup.csv --embeddings {d}/embeddings.npy --group-by group {Q}",
        0, check=groups_are("A")),
    cli("audit-group-one-identity", "audit --samples {d}/s_oneidgroup.csv --embeddings {d}/embeddings.npy "
        "--group-by group {Q}", 2, "group(s) C"),
    cli("audit-group-named-all", "audit --samples {d}/s_groupall.csv --embeddings {d}/embeddings.npy --group-by group "
        "{Q}", 2, "'all'"),
    cli("audit-group-unicode-ok", "audit --samples {d}/s_unicode.csv --embeddings {d}/embeddings.npy --group-by group "
        "{Q}", 0, check=groups_are("Ærø/東京 ñ", "x y", "C")),
    cli("audit-group-5000-chars-ok", "audit --samples {d}/s_longgroup.csv --embeddings {d}/embeddings.npy --group-by "
        "group --fmr 0.1 --no-intervals", 0),
    cli("audit-group-missing-values", "audit --samples {d}/s_groupmissing.csv --embeddings {d}/embeddings.npy "
        "--group-by group {Q}", 2, "rows 1,"),
    cli("audit-group-varies-within-identity", "audit --samples {d}/s_groupvaries.csv --embeddings {d}/embeddings.npy "
        "--group-by group {Q}", 2, "group"),
    cli("audit-group-NA-M6", "audit --samples {d}/s_groupNA.csv --embeddings {d}/embeddings.npy --group-by group {Q}",
        0, check=groups_are("A", "B", "NA")),
    cli("audit-group-None-M6", "audit --samples {d}/s_groupNone.csv --embeddings {d}/embeddings.npy --group-by group "
        "{Q}", 0, check=groups_are("A", "B", "None")),
    cli("audit-identity-NA-M6", "audit --samples {d}/s_identNA.csv --embeddings {d}/embeddings.npy --group-by group "
        "{Q}", 0),
    cli("audit-intersection-pipe-S2", "audit --samples {d}/s_pipe.csv --embeddings {d}/embeddings.npy --group-by g1,g2 "
        "{Q}", 2, "|"),
    # ----- audit: samples files
    cli("audit-samples-missing-file", "audit --samples {d}/missing.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "missing.csv"),
    cli("audit-samples-directory-M16", "audit --samples {d} --embeddings {d}/embeddings.npy {Q}", 2, "director"),
    cli("audit-samples-txt", "audit --samples {d}/samples.txt --embeddings {d}/embeddings.npy {Q}", 2, ".txt"),
    cli("audit-samples-empty", "audit --samples {d}/s_empty.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "s_empty.csv"),
    cli("audit-samples-zero-bytes", "audit --samples {d}/t_zero.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "t_zero.csv"),
    cli("audit-samples-binary", "audit --samples {d}/t_binary.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "t_binary.csv"),
    cli("audit-samples-not-parquet", "audit --samples {d}/t.xlsx --embeddings {d}/embeddings.npy {Q}", 2, "t.xlsx"),
    cli("audit-samples-duplicate-id", "audit --samples {d}/s_dupid.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "rows"),
    cli("audit-samples-missing-identity", "audit --samples {d}/s_noident.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "row"),
    cli("audit-samples-no-identity-column", "audit --samples {d}/s_noidcol.csv --embeddings {d}/embeddings.npy {Q}",
        2, "identity"),
    cli("audit-samples-id-col-wrong", "audit {S} --id-col nope {Q}", 2, "nope"),
    cli("audit-samples-identity-col-wrong", "audit {S} --identity-col nope {Q}", 2, "nope"),
    cli("audit-samples-int-ids-ok", "audit --samples {d}/s_intids.csv --embeddings {d}/embeddings.npy {Q}", 0),
    cli("audit-samples-one-identity", "audit --samples {d}/s_oneident.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "impostor"),
    cli("audit-samples-singletons", "audit --samples {d}/s_singletons.csv --embeddings {d}/embeddings.npy {Q}", 2,
        "genuine"),
    cli("audit-samples-is-embeddings", "audit --samples {d}/embeddings.npy --embeddings {d}/embeddings.npy {Q}", 2,
        "samples table 'embeddings.npy'"),
    # ----- audit: embeddings files
    cli("audit-embeddings-missing", "audit --samples {d}/samples.csv {Q}", 2, "--embeddings"),
    cli("audit-embeddings-missing-file", "audit --samples {d}/samples.csv --embeddings {d}/nope.npy {Q}", 2,
        "nope.npy"),
    cli("audit-embeddings-directory-M16", "audit --samples {d}/samples.csv --embeddings {d} {Q}", 2, "director"),
    cli("audit-embeddings-nan", "audit --samples {d}/samples.csv --embeddings {d}/e_nan.npy {Q}", 2, "row"),
    cli("audit-embeddings-inf", "audit --samples {d}/samples.csv --embeddings {d}/e_inf.npy {Q}", 2, "row"),
    cli("audit-embeddings-zero-row", "audit --samples {d}/samples.csv --embeddings {d}/e_zerorow.npy {Q}", 2,
        "rows 8"),
    cli("audit-embeddings-zero-row-advice-M13", "audit --samples {d}/samples.csv --embeddings {d}/e_zerorow.npy {Q}",
        2, "--metric euclidean"),
    cli("audit-embeddings-zero-row-euclidean-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_zerorow.npy "
        "--metric euclidean {Q}", 0),
    cli("audit-embeddings-1d", "audit --samples {d}/samples.csv --embeddings {d}/e_1d.npy {Q}", 2, "e_1d.npy"),
    cli("audit-embeddings-3d", "audit --samples {d}/samples.csv --embeddings {d}/e_3d.npy {Q}", 2, "e_3d.npy"),
    cli("audit-embeddings-short", "audit --samples {d}/samples.csv --embeddings {d}/e_short.npy {Q}", 2, "rows"),
    cli("audit-embeddings-long", "audit --samples {d}/samples.csv --embeddings {d}/e_long.npy {Q}", 2, "rows"),
    cli("audit-embeddings-text-file", "audit --samples {d}/samples.csv --embeddings {d}/e_text.npy {Q}", 2,
        "e_text.npy"),
    cli("audit-embeddings-zero-bytes", "audit --samples {d}/samples.csv --embeddings {d}/e_empty.npy {Q}", 2,
        "e_empty.npy"),
    cli("audit-embeddings-object-pickle", "audit --samples {d}/samples.csv --embeddings {d}/e_obj.npy {Q}", 2,
        "e_obj.npy"),
    cli("audit-embeddings-strings", "audit --samples {d}/samples.csv --embeddings {d}/e_str.npy {Q}", 2,
        "e_str.npy"),
    cli("audit-embeddings-complex", "audit --samples {d}/samples.csv --embeddings {d}/e_complex.npy {Q}", 2,
        "e_complex.npy"),
    cli("audit-embeddings-npz", "audit --samples {d}/samples.csv --embeddings {d}/e.npz {Q}", 2, "e.npz"),
    cli("audit-embeddings-csv", "audit --samples {d}/samples.csv --embeddings {d}/samples.csv {Q}", 2,
        "embeddings 'samples.csv'"),
    cli("audit-embeddings-float16-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_f16.npy {Q}", 0),
    cli("audit-embeddings-int-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_int.npy {Q}", 0),
    cli("audit-embeddings-fortran-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_fortran.npy --group-by "
        "group {Q}", 0, check=threshold_equal_to_base),
    cli("audit-embeddings-bigendian-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_bigend.npy --group-by "
        "group {Q}", 0, check=threshold_equal_to_base),
    cli("audit-embeddings-bool", "audit --samples {d}/samples.csv --embeddings {d}/e_bool.npy {Q}", 2, "bool"),
    cli("audit-embeddings-dim1-ok", "audit --samples {d}/samples.csv --embeddings {d}/e_dim1.npy {Q}", 0),
    cli("audit-embeddings-huge-S4", "audit --samples {d}/samples.csv --embeddings {d}/e_huge.npy --group-by group {Q}",
        0, check=threshold_equal_to_base),
    cli("audit-embeddings-tiny-M10", "audit --samples {d}/samples.csv --embeddings {d}/e_tiny.npy --group-by group {Q}",
        0, check=threshold_equal_to_base),
    cli("audit-embedding-col-missing", "audit --samples {d}/s_list.parquet --embedding-col nope {Q}", 2, "nope"),
    cli("audit-embedding-col-and-embeddings", "audit --samples {d}/s_list.parquet --embedding-col embedding "
        "--embeddings {d}/embeddings.npy {Q}", 2, "--embedding"),
    cli("audit-embedding-col-not-list", "audit --samples {d}/samples.parquet --embedding-col group {Q}", 2, "group"),
    # ----- audit: pairs
    cli("audit-pairs-ok", "audit {S} --pairs {d}/pairs.csv {Q}", 0),
    cli("audit-pairs-unknown-sample", "audit {S} --pairs {d}/pairs_unknown.csv {Q}", 2, "ghost"),
    cli("audit-pairs-self", "audit {S} --pairs {d}/pairs_self.csv {Q}", 2, "compared with itself at rows 1"),
    cli("audit-pairs-empty", "audit {S} --pairs {d}/pairs_empty.csv {Q}", 2, "pairs_empty.csv"),
    cli("audit-pairs-two-other-columns-ok", "audit {S} --pairs {d}/pairs_nocols.csv {Q}", 0),  # documented
    cli("audit-pairs-three-columns", "audit {S} --pairs {d}/pairs_3cols.csv {Q}", 2, "sample_a"),
    cli("audit-pairs-missing-file", "audit {S} --pairs {d}/nope.csv {Q}", 2, "nope.csv"),
    cli("audit-pairs-directory-M16", "audit {S} --pairs {d}/emptydir {Q}", 2, "director"),
    cli("audit-pairs-without-samples", "audit --comparisons {d}/t.csv --pairs {d}/pairs.csv {Q}", 2, "--pairs"),
    # ----- audit: comparison tables
    cli("audit-t-ok", "{AT}", 0, check=groups_are("F", "M")),
    cli("audit-t-parquet-ok", "audit --comparisons {d}/t.parquet --group-by group {Q}", 0),
    cli("audit-t-tsv-ok", "audit --comparisons {d}/t.tsv --group-by group {Q}", 0),
    cli("audit-t-bom-ok", "audit --comparisons {d}/t_bom.csv --group-by group {Q}", 0),
    cli("audit-t-crlf-ok", "audit --comparisons {d}/t_crlf.csv --group-by group {Q}", 0),
    cli("audit-t-gz", "audit --comparisons {d}/t.csv.gz --group-by group {Q}", 2, "'.gz'"),
    cli("audit-t-parquet-out-of-core-ok", "audit --comparisons {d}/t.parquet --group-by group --out-of-core {Q}", 0),
    cli("audit-t-missing-file", "audit --comparisons {d}/nope.csv {Q}", 2, "nope.csv"),
    cli("audit-t-directory", "audit --comparisons {d}/emptydir {Q}", 2, "emptydir"),
    cli("audit-t-json", "audit --comparisons {d}/t.json {Q}", 2, "t.json"),
    cli("audit-t-empty", "audit --comparisons {d}/t_empty.csv {Q}", 2, "t_empty.csv"),
    cli("audit-t-zero-bytes", "audit --comparisons {d}/t_zero.csv {Q}", 2, "t_zero.csv"),
    cli("audit-t-binary", "audit --comparisons {d}/t_binary.csv {Q}", 2, "t_binary.csv"),
    cli("audit-t-utf16-M16", "audit --comparisons {d}/t_utf16.csv {Q}", 2, "UTF-16"),
    cli("audit-t-nul", "audit --comparisons {d}/t_nul.csv {Q}", 2, "t_nul.csv"),
    cli("audit-t-semicolon", "audit --comparisons {d}/t_semicolon.csv {Q}", 2, "';'"),
    cli("audit-t-nan-score", "audit --comparisons {d}/t_nan.csv {Q}", 2, "row"),
    cli("audit-t-inf-score", "audit --comparisons {d}/t_inf.csv {Q}", 2, "row"),
    cli("audit-t-neginf-score", "audit --comparisons {d}/t_neginf.csv {Q}", 2, "row"),
    cli("audit-t-1e400-score", "audit --comparisons {d}/t_1e400.csv {Q}", 2, "row"),
    cli("audit-t-text-score", "audit --comparisons {d}/t_badscore.csv {Q}", 2, "rows 8"),
    cli("audit-t-blank-score", "audit --comparisons {d}/t_blankscore.csv {Q}", 2, "--fta-policy"),
    cli("audit-t-blank-score-exclude-ok", "audit --comparisons {d}/t_blankscore.csv --fta-policy exclude {Q}", 0),
    cli("audit-t-fta-policy-foo", "{AT} --fta-policy foo", 2, "--fta-policy"),
    cli("audit-t-no-score-column", "audit --comparisons {d}/t_noscore.csv {Q}", 2, "score"),
    cli("audit-t-score-col-wrong", "{AT} --score-col nope", 2, "nope"),
    cli("audit-t-score-col-is-text", "{AT} --score-col group_a", 2, "not a number"),
    cli("audit-t-sample-cols-one", "{AT} --sample-cols sample_a", 2, "--sample-cols"),
    cli("audit-t-sample-cols-three", "{AT} --sample-cols a,b,c", 2, "--sample-cols"),
    cli("audit-t-sample-cols-wrong", "{AT} --sample-cols x,y", 2, "x"),
    cli("audit-t-identity-cols-wrong", "{AT} --identity-cols x,y", 2, "x"),
    cli("audit-t-no-ids-ok", "{AT} --sample-cols ''", 0),
    cli("audit-t-no-identities-no-labels", "{AT} --sample-cols '' --identity-cols ''", 2, "label column"),
    cli("audit-t-same-score-ok", "audit --comparisons {d}/t_same.csv {Q}", 0, "every score is the same value"),
    cli("audit-t-ties-ok", "audit --comparisons {d}/t_ties.csv --group-by group {Q}", 0),
    cli("audit-t-ties-rule-gt-ok", "audit --comparisons {d}/t_ties.csv --group-by group --rule '>' {Q}", 0),
    cli("audit-t-binary-scores-M3", "audit --comparisons {d}/t_binscores.csv --group-by group {Q}", 0,
        check=not_says("every score is the same value")),
    cli("audit-t-huge-scores-ok", "audit --comparisons {d}/t_huge.csv --group-by group {Q}", 0),
    cli("audit-t-tiny-scores-ok", "audit --comparisons {d}/t_tiny.csv --group-by group {Q}", 0),
    cli("audit-t-zero-errors-S3", "audit --comparisons {d}/t_perfect.csv --group-by group --fmr 0.1 --n-resamples 40 "
        "--no-figures", 0, check=zero_errors_not_certain_parity),
    cli("audit-t-zero-errors-upper-bound-ok", "audit --comparisons {d}/t_perfect.csv --group-by group --zero-policy "
        "upper-bound --fmr 0.1 --n-resamples 40 --no-figures", 0),
    cli("audit-t-one-group-ok", "audit --comparisons {d}/t_onegroup.csv --group-by group {Q}", 0,
        check=groups_are("F")),
    cli("audit-t-group-without-genuine", "audit --comparisons {d}/t_nogenM.csv --group-by group {Q}", 2, "M"),
    cli("audit-t-genuine-only", "audit --comparisons {d}/t_genonly.csv {Q}", 2, "impostor"),
    cli("audit-t-impostor-only", "audit --comparisons {d}/t_impostoronly.csv {Q}", 2, "genuine"),
    cli("audit-t-one-row", "audit --comparisons {d}/t_onerow.csv {Q}", 2, "impostor"),
    cli("audit-t-duplicates-default-warns", "audit --comparisons {d}/t_dup.csv {Q}", 0, "more than once"),
    cli("audit-t-duplicates-refuse", "audit --comparisons {d}/t_dup.csv --duplicates refuse {Q}", 2, "rows"),
    cli("audit-t-duplicates-mean-ok", "audit --comparisons {d}/t_dup.csv --duplicates mean {Q}", 0),
    cli("audit-t-duplicates-foo", "{AT} --duplicates foo", 2, "--duplicates"),
    cli("audit-t-duplicates-first-without-ids", "{AT} --sample-cols '' --duplicates first", 2, "--duplicates"),
    cli("audit-t-duplicates-first-without-ids-M13", "{AT} --sample-cols '' --duplicates first", 2, "--duplicates",
        check=not_says("duplicates='")),
    cli("audit-t-self-comparison", "audit --comparisons {d}/t_self.csv {Q}", 2, "row"),
    cli("audit-t-missing-identity", "audit --comparisons {d}/t_noident.csv {Q}", 2, "row"),
    cli("audit-t-group-varies", "audit --comparisons {d}/t_groupvaries.csv --group-by group {Q}", 2, "group"),
    cli("audit-t-group-named-all", "audit --comparisons {d}/t_groupall.csv --group-by group {Q}", 2, "'all'"),
    cli("audit-t-group-NA-M6", "audit --comparisons {d}/t_groupNA.csv --group-by group {Q}", 0,
        check=groups_are("F", "NA")),
    cli("audit-t-intersection-pipe-S2", "audit --comparisons {d}/t_pipe.csv --group-by g1,g2 {Q}", 2, "|"),
    cli("audit-t-group-by-missing", "audit --comparisons {d}/t_nogroups.csv --group-by group {Q}", 2, "group"),
    cli("audit-t-label-ok", "audit --comparisons {d}/t_label.csv --label-col label {Q}", 0),
    cli("audit-t-label-pm1-ok", "audit --comparisons {d}/t_label_pm1.csv --label-col label {Q}", 0),
    cli("audit-t-label-words-ok", "audit --comparisons {d}/t_label_words.csv --label-col label {Q}", 0),
    cli("audit-t-label-yesno-M14", "audit --comparisons {d}/t_label_yesno.csv --label-col label {Q}", 0),
    cli("audit-t-label-two", "audit --comparisons {d}/t_label_two.csv --label-col label {Q}", 2, "row"),
    cli("audit-t-label-clash", "audit --comparisons {d}/t_label_clash.csv --label-col label {Q}", 2, "row"),
    cli("audit-t-label-missing", "audit --comparisons {d}/t_label_missing.csv --label-col label {Q}", 2, "row"),
    cli("audit-t-label-col-wrong", "{AT} --label-col nope", 2, "nope"),
    cli("audit-t-labels-only-ok", "audit --comparisons {d}/t_labelonly.csv --label-col label --sample-cols '' "
        "--identity-cols '' {Q}", 0),
    cli("audit-t-labels-only-intervals-ok", "audit --comparisons {d}/t_labelonly.csv --label-col label --sample-cols "
        "'' --identity-cols '' --fmr 0.1 --n-resamples 40 --no-figures", 0),
    cli("audit-t-distance-ok", "audit --comparisons {d}/t_distance.csv --score-col distance --distance --group-by "
        "group {Q}", 0),
    cli("audit-t-return-code-refused", "audit --comparisons {d}/t_rc.csv --return-code-col rc {Q}", 2,
        "--fta-policy"),
    cli("audit-t-return-code-exclude-ok", "audit --comparisons {d}/t_rc.csv --return-code-col rc --fta-policy exclude "
        "{Q}", 0),
    cli("audit-t-return-code-count-ok", "audit --comparisons {d}/t_rc.csv --return-code-col rc --fta-policy count {Q}",
        0),
    cli("audit-t-return-code-text", "audit --comparisons {d}/t_rc_text.csv --return-code-col rc --fta-policy exclude "
        "{Q}", 2, "rc"),
    cli("audit-t-return-code-col-wrong", "{AT} --return-code-col nope", 2, "nope"),
    cli("audit-t-metadata-ok", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/meta.csv --group-by group {Q}",
        0, check=groups_are("F", "M")),
    cli("audit-t-metadata-missing-identity", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/meta_missing.csv "
        "--group-by group {Q}", 2, "0"),
    cli("audit-t-metadata-duplicate-key", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/meta_dupkey.csv "
        "--group-by group {Q}", 2, "meta_dupkey.csv"),
    cli("audit-t-metadata-key-wrong", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/meta.csv --metadata-key "
        "nope --group-by group {Q}", 2, "nope"),
    cli("audit-t-metadata-no-key", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/meta_person.csv --group-by "
        "group {Q}", 2, "--metadata-key"),
    cli("audit-t-metadata-clash", "audit --comparisons {d}/t.csv --metadata {d}/meta_clash.csv --group-by group {Q}",
        2, "'group' is given twice"),
    cli("audit-t-metadata-directory-M16", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/emptydir --group-by "
        "group {Q}", 2, "director"),
    cli("audit-t-metadata-binary", "audit --comparisons {d}/t_nogroups.csv --metadata {d}/t_binary.csv --group-by "
        "group {Q}", 2, "t_binary.csv"),
    cli("audit-t-samples-and-comparisons", "audit --comparisons {d}/t.csv --samples {d}/samples.csv {Q}", 2,
        "--comparisons"),
    cli("audit-t-threshold-impostors-same-sex-ok", "audit --comparisons {d}/t_sex.csv --group-by group,sex "
        "--threshold-impostors same:sex {Q}", 0),
    # ----- audit: --thresholds-from
    cli("audit-thresholds-from-ok", "{AT} --thresholds-from {d}/audit/results.json", 0),
    cli("audit-thresholds-from-folder-ok", "{AT} --thresholds-from {d}/audit", 0),
    cli("audit-thresholds-from-missing", "{AT} --thresholds-from {d}/nope.json", 2, "--thresholds-from"),
    cli("audit-thresholds-from-notjson", "{AT} --thresholds-from {d}/notjson.json", 2, "--thresholds-from"),
    cli("audit-thresholds-from-compare-M13", "{AT} --thresholds-from {d}/cmp/compare.json", 2, "compare.json",
        check=not_says("give it with --compare")),
    cli("audit-thresholds-from-other-target-ok", "audit --comparisons {d}/t.csv --group-by group --fmr 0.01 "
        "--no-intervals --no-figures --thresholds-from {d}/audit/results.json", 0),
    cli("audit-threshold-fmr-ok", "{AT} --threshold 0.3 --threshold-fmr 1e-3", 0),
    cli("audit-threshold-fmr-count", "{AT} --threshold 0.3,0.4 --threshold-fmr 1e-2,1e-3,1e-4", 2, "--threshold-fmr"),
    cli("audit-threshold-fmr-alone", "{AT} --threshold-fmr 1e-3", 2, "--threshold-fmr"),
    cli("audit-threshold-fmr-range", "{AT} --threshold 0.3 --threshold-fmr 2", 2, "--threshold-fmr"),
    cli("audit-threshold-fmr-zero-H45", "{AT} --threshold 0.3 --threshold-fmr 0", 2, "--threshold-fmr"),
    cli("audit-thresholds-from-other-rule-H45", "{AT} --rule '>' --thresholds-from {d}/audit/results.json", 2,
        "--rule"),
    # ----- audit: toolkit formats
    cli("fmt-foo", "audit --format foo --scores {f}/bob4.txt {Q}", 2, "--format"),
    cli("fmt-bob4-ok", "audit --format bob --scores {f}/bob4.txt {Q}", 0),
    cli("fmt-bob5-ok", "audit --format bob --scores {f}/bob5.txt --metadata {f}/clients.csv --group-by gender {Q}", 0),
    cli("fmt-bob-nan", "audit --format bob --scores {d}/bob_nan.txt {Q}", 2, "line 2"),
    cli("fmt-bob-nan-advice-M4", "audit --format bob --scores {d}/bob_nan.txt {Q}", 2, "line 2",
        check=not_says("Choose --fta-policy")),
    cli("fmt-bob-3-columns", "audit --format bob --scores {d}/bob_3col.txt {Q}", 2, "lines 1, 2"),
    cli("fmt-bob-mixed-columns", "audit --format bob --scores {d}/bob_mixed.txt {Q}", 2, "line 2"),
    cli("fmt-bob-text-score", "audit --format bob --scores {d}/bob_text.txt {Q}", 2, "line 1"),
    cli("fmt-bob-is-tidy-csv", "audit --format bob --scores {d}/t.csv {Q}", 2, "t.csv"),
    cli("fmt-bob-missing-scores", "audit --format bob {Q}", 2, "--scores"),
    cli("fmt-bob-scores-directory", "audit --format bob --scores {d}/emptydir {Q}", 2, "is not a file"),
    cli("fmt-bob-fta-policy", "audit --format bob --scores {f}/bob4.txt --fta-policy exclude {Q}", 2, "--fta-policy"),
    cli("fmt-bob-csv-ok", "audit --format bob-csv --scores {f}/bob_scores.csv --group-by gender {Q}", 0),
    cli("fmt-bob-csv-bad-score", "audit --format bob-csv --scores {d}/bob_csv_bad.csv {Q}", 2, "line 3"),
    cli("fmt-bob-csv-wrong-columns", "audit --format bob-csv --scores {d}/bob_csv_nocol.csv {Q}", 2,
        "bob_csv_nocol.csv"),
    cli("fmt-bob-csv-is-bob4", "audit --format bob-csv --scores {f}/bob4.txt {Q}", 2, "bob4.txt"),
    cli("fmt-bob-csv-score-col-wrong", "audit --format bob-csv --scores {f}/bob_scores.csv --score-col nope {Q}", 2,
        "nope"),
    cli("fmt-kaldi-ok", "audit --format kaldi --trials {f}/kaldi_trials --scores {f}/kaldi_scores {Q}", 0),
    cli("fmt-kaldi-utt2spk-ok", "audit --format kaldi --trials {f}/kaldi_trials --scores {f}/kaldi_scores --speaker-of "
        "{f}/kaldi_utt2spk --metadata {f}/kaldi_speakers.csv --group-by gender {Q}", 0),
    cli("fmt-kaldi-score-missing", "audit --format kaldi --trials {f}/kaldi_trials --scores {d}/kaldi_scores_missing "
        "{Q}", 2, "line"),
    cli("fmt-kaldi-score-twice", "audit --format kaldi --trials {f}/kaldi_trials --scores {d}/kaldi_scores_dup {Q}", 2,
        "line"),
    cli("fmt-kaldi-bad-label", "audit --format kaldi --trials {d}/kaldi_trials_badlabel --scores {f}/kaldi_scores {Q}",
        2, "line 1"),
    cli("fmt-kaldi-no-trials", "audit --format kaldi --scores {f}/kaldi_scores {Q}", 2, "--trials"),
    cli("fmt-kaldi-trials-are-bob", "audit --format kaldi --trials {f}/bob5.txt --scores {f}/kaldi_scores {Q}", 2,
        "bob5.txt"),
    cli("fmt-kaldi-speaker-of-missing-file", "audit --format kaldi --trials {f}/kaldi_trials --scores "
        "{f}/kaldi_scores --speaker-of {d}/nope.txt {Q}", 2, "nope.txt"),
    cli("fmt-voxceleb-ok", "audit --format voxceleb --trials {f}/vox_trials.txt --scores {f}/vox_scores_aligned.txt "
        "--metadata {f}/vox1_meta.csv --group-by Gender {Q}", 0),
    cli("fmt-voxceleb-keyed-ok", "audit --format voxceleb --trials {f}/vox_trials.txt --scores "
        "{f}/vox_scores_keyed.txt {Q}", 0),
    cli("fmt-voxceleb-short-scores", "audit --format voxceleb --trials {f}/vox_trials.txt --scores "
        "{d}/vox_scores_short.txt {Q}", 2, "vox_scores_short.txt"),
    cli("fmt-voxceleb-bad-label", "audit --format voxceleb --trials {d}/vox_trials_badlabel.txt --scores "
        "{f}/vox_scores_aligned.txt {Q}", 2, "line 1"),
    cli("fmt-voxceleb-trials-are-kaldi", "audit --format voxceleb --trials {f}/kaldi_trials --scores "
        "{f}/kaldi_scores {Q}", 2, "kaldi_trials"),
    cli("fmt-voxceleb-group-by-missing", "audit --format voxceleb --trials {f}/vox_trials.txt --scores "
        "{f}/vox_scores_aligned.txt --metadata {f}/vox1_meta.csv --group-by nope {Q}", 2, "nope"),
    cli("fmt-voxsrc-ok", "audit --format voxsrc --trials {f}/vox_trials.txt --scores {f}/voxsrc_scores.txt {Q}", 0),
    cli("fmt-voxsrc-scores-are-wespeaker", "audit --format voxsrc --trials {f}/vox_trials.txt --scores "
        "{f}/wespeaker.score {Q}", 2, "lines 1, 2"),
    cli("fmt-wespeaker-ok", "audit --format wespeaker --scores {f}/wespeaker.score {Q}", 0),
    cli("fmt-wespeaker-mixed-columns-M11", "audit --format wespeaker --scores {d}/w_mixed.score {Q}", 2,
        "found 4; expected 3"),
    cli("fmt-wespeaker-bad-label", "audit --format wespeaker --scores {d}/w_badlabel.score {Q}", 2, "line 1"),
    cli("fmt-wespeaker-is-bob5", "audit --format wespeaker --scores {f}/bob5.txt {Q}", 2, "bob5.txt"),
    cli("fmt-speechbrain-is-wespeaker", "audit --format speechbrain --scores {f}/wespeaker.score {Q}", 2,
        "wespeaker.score"),
    cli("fmt-nist-sre-ok", "audit --format nist-sre --scores {f}/sre_output.tsv --key {f}/sre_key.tsv {Q}", 0),
    cli("fmt-nist-sre-trials-ok", "audit --format nist-sre --scores {f}/sre_output.tsv --key {f}/sre_key.tsv --trials "
        "{f}/sre_trials.tsv {Q}", 0),
    cli("fmt-nist-sre-no-key", "audit --format nist-sre --scores {f}/sre_output.tsv {Q}", 2, "--key"),
    cli("fmt-nist-sre-nan", "audit --format nist-sre --scores {d}/sre_output_nan.tsv --key {f}/sre_key.tsv {Q}", 2,
        "line 3"),
    cli("fmt-nist-sre-nan-advice-M4", "audit --format nist-sre --scores {d}/sre_output_nan.tsv --key {f}/sre_key.tsv "
        "{Q}", 2, "line 3", check=not_says("Choose --fta-policy")),
    cli("fmt-nist-sre-fta-policy", "audit --format nist-sre --scores {f}/sre_output.tsv --key {f}/sre_key.tsv "
        "--fta-policy exclude {Q}", 2, "--fta-policy"),
    cli("fmt-nist-sre-key-is-output", "audit --format nist-sre --scores {f}/sre_key.tsv --key {f}/sre_key.tsv {Q}", 2,
        "'LLR'"),
    cli("fmt-nist-sre-kaldi-files", "audit --format nist-sre --scores {f}/kaldi_scores --key {f}/kaldi_trials {Q}", 2,
        "kaldi"),
    cli("fmt-frvt-exclude-ok", "audit --format frvt --scores {f}/frvt_match.log --subject-of {f}/frvt_subjects.txt "
        "--fta-policy exclude {Q}", 0),
    cli("fmt-frvt-count-ok", "audit --format frvt --scores {f}/frvt_match.log --subject-of {f}/frvt_subjects.txt "
        "--fta-policy count {Q}", 0),
    cli("fmt-frvt-failures-refused", "audit --format frvt --scores {f}/frvt_match.log --subject-of "
        "{f}/frvt_subjects.txt {Q}", 2, "--fta-policy"),
    cli("fmt-frvt-no-subjects", "audit --format frvt --scores {f}/frvt_match.log {Q}", 2, "--subject-of"),
    cli("fmt-frvt-no-header", "audit --format frvt --scores {d}/frvt_noheader.log --subject-of {f}/frvt_subjects.txt "
        "--fta-policy exclude {Q}", 2, "frvt_noheader.log"),
    cli("fmt-frvt-text-return-code", "audit --format frvt --scores {d}/frvt_badrc.log --subject-of "
        "{f}/frvt_subjects.txt --fta-policy exclude {Q}", 2, "line 3"),
    cli("fmt-frvt-is-tidy-csv", "audit --format frvt --scores {d}/t.csv --subject-of {f}/frvt_subjects.txt {Q}", 2,
        "t.csv"),
    cli("fmt-pair-table-ok", "audit --format pair-table --comparisons {f}/bfw_pairs.csv --score-col senet50 "
        "--group-by e {Q}", 0),
    cli("fmt-pair-table-default-score-col", "audit --format pair-table --comparisons {f}/bfw_pairs.csv {Q}", 2,
        "--score-col"),
    cli("fmt-pair-table-score-col-wrong", "audit --format pair-table --comparisons {f}/bfw_pairs.csv --score-col nope "
        "{Q}", 2, "nope"),
    cli("fmt-pair-table-is-tidy", "audit --format pair-table --comparisons {d}/t.csv {Q}", 2, "'p1'"),
    cli("fmt-pair-table-renamed-M5", "audit --format pair-table --comparisons {d}/pt_rfw.csv --score-col senet50 "
        "--sample-cols img1,img2 --identity-cols subj1,subj2 --label-col issame --group-by e {Q}", 0),
    cli("fmt-pair-table-renamed-wrong-cols", "audit --format pair-table --comparisons {d}/pt_rfw.csv --score-col "
        "senet50 --sample-cols x1,x2 {Q}", 2, "x1"),
    cli("fmt-tidy-is-bob4", "audit --comparisons {f}/bob4.txt {Q}", 2, "bob4.txt"),
    cli("fmt-score-matrix-ok", "audit --format score-matrix --scores {f}/matrix.npy --ids {f}/matrix_ids.txt "
        "--metadata {f}/identity_embeddings.csv {Q}", 0),
    cli("fmt-score-matrix-no-metadata", "audit --format score-matrix --scores {f}/matrix.npy --ids "
        "{f}/matrix_ids.txt {Q}", 2, "--metadata"),
    cli("fmt-score-matrix-wrong-ids", "audit --format score-matrix --scores {f}/matrix.npy --ids "
        "{f}/matrix_probes.txt --metadata {f}/identity_embeddings.csv {Q}", 2, "8 ids"),
    cli("fmt-score-matrix-ids-short", "audit --format score-matrix --scores {f}/matrix.npy --ids {d}/m_ids_short.txt "
        "--metadata {f}/identity_embeddings.csv {Q}", 2, "m_ids_short.txt"),
    cli("fmt-score-matrix-nan", "audit --format score-matrix --scores {d}/m_nan.npy --ids {f}/matrix_ids.txt "
        "--metadata {f}/identity_embeddings.csv {Q}", 2, "(0, 1)"),
    cli("fmt-score-matrix-rectangular-one-set", "audit --format score-matrix --scores {d}/m_rect.npy --ids "
        "{f}/matrix_ids.txt --metadata {f}/identity_embeddings.csv {Q}", 2, "m_rect.npy"),
    cli("fmt-score-matrix-1d", "audit --format score-matrix --scores {d}/m_1d.npy --ids {f}/matrix_ids.txt "
        "--metadata {f}/identity_embeddings.csv {Q}", 2, "m_1d.npy"),
    cli("fmt-score-matrix-mask-shape", "audit --format score-matrix --scores {f}/matrix.npy --ids {f}/matrix_ids.txt "
        "--mask {d}/m_mask_shape.npy --metadata {f}/identity_embeddings.csv {Q}", 2, "mask 'm_mask_shape.npy'"),
    cli("fmt-score-matrix-is-csv", "audit --format score-matrix --scores {d}/t.csv --ids {f}/matrix_ids.txt "
        "--metadata {f}/identity_embeddings.csv {Q}", 2, "t.csv"),
    cli("fmt-score-matrix-asymmetric-N6", "audit --format score-matrix --scores {d}/m_asym.npy --ids "
        "{f}/matrix_ids.txt --metadata {f}/identity_embeddings.csv {Q}", 2, "symmetric"),
    cli("fmt-identity-embeddings-csv-ok", "audit --format identity-embeddings --embeddings "
        "{f}/identity_embeddings.csv --group-by gender {Q}", 0),
    cli("fmt-identity-embeddings-npz-ok", "audit --format identity-embeddings --embeddings "
        "{f}/identity_embeddings.npz {Q}", 0),
    cli("fmt-identity-embeddings-nan", "audit --format identity-embeddings --embeddings {d}/ie_nan.csv --group-by "
        "gender {Q}", 2, "row"),
    cli("fmt-identity-embeddings-npz-no-identities", "audit --format identity-embeddings --embeddings "
        "{d}/ie_noident.npz {Q}", 2, "identities"),
    cli("fmt-identity-embeddings-is-samples", "audit --format identity-embeddings --embeddings {d}/samples.csv {Q}",
        2, "samples.csv"),
    cli("fmt-identity-embeddings-numeric-attribute-S1", "audit --format identity-embeddings --embeddings "
        "{d}/ie_age.csv --group-by gender {Q}", 2, "age"),
    # ----- audit: outputs
    cli("audit-fmr-threshold-bob-ok", "{AT} --fmr-threshold bob", 0),
    cli("audit-fmr-threshold-bob-with-intervals", "audit --comparisons {d}/t.csv --group-by group --fmr 0.1 "
        "--no-figures --fmr-threshold bob", 2, "--fmr-threshold"),
    cli("audit-fmr-threshold-bob-rule-gt", "{AT} --fmr-threshold bob --rule '>'", 2, "--fmr-threshold"),
    cli("audit-fmr-threshold-unknown", "{AT} --fmr-threshold highest", 2, "--fmr-threshold"),
    cli("audit-fmr-threshold-bob-with-tests", "{AT} --fmr-threshold bob --tests", 2, "no --tests",
        check=not_says("CLI --no-intervals")),
    cli("audit-distance-given-to-similarities", "{AT} --distance", 0, check=warns("leave --distance out")),
    cli("audit-eer-closest-ok", "{AT} --eer closest", 0),
    cli("audit-eer-fvc2000-ok", "{AT} --eer fvc2000", 0),
    cli("audit-eer-unknown", "{AT} --eer pyeer", 2, "--eer"),
    cli("audit-out-is-file", "{A} --out {d}/afile", 2, "--out", out=False),
    cli("audit-out-proc", "{A} --out /proc/matchaudit", 2, "--out", out=False),
    cli("audit-out-dev-null", "{A} --out /dev/null", 2, "--out", out=False),
    cli("audit-out-empty-N5", "{A} --out ''", 2, "--out", out=False),
    cli("audit-out-is-input-file", "audit --samples {c}/samples.csv --embeddings {c}/embeddings.npy {Q} --out "
        "{c}/samples.csv", 2, "--out", out=False),
    cli("audit-out-is-input-folder-ok", "audit --comparisons {c}/t.csv --group-by group {Q} --out {c}", 0,
        out=False),
    cli("audit-out-user-file-of-output-name", "audit --comparisons {c}/t.csv {Q} --out {c}/userfiles", 2,
        "results.json", out=False),
    cli("audit-report-proc", "{A} --report /proc/nope/r.html", 2, "--report"),
    cli("audit-report-is-input-D2", "audit --comparisons {c}/t.csv {Q} --report {c}/t.csv", 2, "--report"),
    cli("audit-report-is-embeddings-D2", "audit --samples {c}/samples.csv --embeddings {c}/embeddings.npy {Q} "
        "--report {c}/embeddings.npy", 2, "--report"),
    cli("audit-report-is-own-results-D2", "audit --comparisons {c}/t.csv {Q} --out {c}/o --report {c}/o/results.json",
        2, "--report", out=False),
    cli("audit-report-folder-ok", "audit --comparisons {c}/t.csv --fmr 0.1 --no-intervals --out {c}/o --report "
        "{c}/rep/", 0, out=False),
    cli("audit-heatmap-order-wrong", "audit {S} --group-by group --fmr 0.1 --no-intervals --report {o}/r.html "
        "--heatmap-order nope", 2, "--heatmap-order"),
    cli("audit-heatmap-without-report", "{A} --heatmap-order group", 2, "--heatmap-order"),
    cli("audit-heatmap-aggregate-wrong", "audit {S} --group-by group --fmr 0.1 --no-intervals --report {o}/r.html "
        "--heatmap-aggregate nope", 2, "--heatmap-aggregate"),
    # ----- compare
    cli("compare-ok", "{CMP}", 0, check=all_of(has_files("compare.json"), warns("not significant"))),  # M9
    cli("compare-samples-ok", "{CMPS}", 0),
    cli("compare-score-cols-ok", "compare --comparisons {d}/t2.csv --score-cols score_a,score_b --group-by group "
        "--fmr 0.1 --n-resamples 40 --n-permutations 19", 0),
    cli("compare-no-permutations-ok", "{CMP} --n-permutations 0", 0),
    cli("compare-same-table-ok", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t.csv --fmr 0.1 "
        "--n-resamples 40 --n-permutations 19", 0),
    cli("compare-fmr-2", "{CMP} --fmr 2", 2, "--fmr"),
    cli("compare-fmr-neg", "{CMP} --fmr -1", 2, "--fmr"),
    cli("compare-fmr-empty", "{CMP} --fmr ''", 2, "--fmr"),
    cli("compare-fmr-nan", "{CMP} --fmr nan", 2, "--fmr"),
    cli("compare-level-1.5", "{CMP} --level 1.5", 2, "--level"),
    cli("compare-n-resamples-0", "{CMP} --n-resamples 0", 2, "--n-resamples"),
    cli("compare-test-resamples-neg", "{CMP} --n-permutations -1", 2, "--n-permutations"),
    cli("compare-n-permutations-huge", "{CMP} --n-permutations 1000000000", 2, "--n-permutations"),
    cli("compare-method-foo", "{CMP} --method foo", 2, "--ci-method"),
    cli("compare-method-wilson", "{CMP} --ci-method wilson", 2, "--ci-method"),
    cli("compare-seed-neg", "{CMP} --seed -1", 2, "--seed"),
    cli("compare-threshold-impostors-foo", "{CMP} --threshold-impostors foo", 2, "--threshold-impostors"),
    cli("compare-group-by-missing", "{CMP} --group-by nope", 2, "nope"),
    cli("compare-only-a", "compare --comparisons-a {d}/t.csv --fmr 0.1", 2, "--comparisons-b"),
    cli("compare-score-cols-one", "compare --comparisons {d}/t2.csv --score-cols score_a --fmr 0.1", 2,
        "--score-cols"),
    cli("compare-score-cols-missing", "compare --comparisons {d}/t2.csv --fmr 0.1", 2, "--score-cols"),
    cli("compare-score-cols-wrong", "compare --comparisons {d}/t2.csv --score-cols score_a,nope --fmr 0.1", 2,
        "nope"),
    cli("compare-b-shorter", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b_short.csv --fmr 0.1 "
        "--n-resamples 40", 2, "rows"),
    cli("compare-b-reordered", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b_reversed.csv --fmr 0.1 "
        "--n-resamples 40", 2, "row"),
    cli("compare-b-other-identity", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b_otherident.csv "
        "--fmr 0.1 --n-resamples 40", 2, "identity_b", check=rows_named(2)),
    cli("compare-b-one-sample-id", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b_sample.csv --fmr 0.1 "
        "--n-resamples 40", 2, "sample_b", check=rows_named(6)),
    cli("compare-b-nan", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_b_nan.csv --fmr 0.1 "
        "--n-resamples 40", 2, "row"),
    cli("compare-b-missing-file", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/nope.csv --fmr 0.1", 2,
        "nope.csv"),
    cli("compare-b-directory", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/emptydir --fmr 0.1", 2,
        "emptydir"),
    cli("compare-b-binary", "compare --comparisons-a {d}/t.csv --comparisons-b {d}/t_binary.csv --fmr 0.1", 2,
        "t_binary.csv"),
    cli("compare-embeddings-b-short", "compare --samples {d}/samples.csv --embeddings-a {d}/embeddings.npy "
        "--embeddings-b {d}/e_short.npy --fmr 0.1 --n-resamples 40", 2, "rows"),
    cli("compare-embeddings-b-nan", "compare --samples {d}/samples.csv --embeddings-a {d}/embeddings.npy "
        "--embeddings-b {d}/e_nan.npy --fmr 0.1 --n-resamples 40", 2, "row"),
    cli("compare-embeddings-b-missing", "compare --samples {d}/samples.csv --embeddings-a {d}/embeddings.npy --fmr 0.1",
        2, "--embeddings-b"),
    cli("compare-mixed-inputs", "compare --samples {d}/samples.csv --embeddings-a {d}/embeddings.npy "
        "--comparisons-b {d}/t.csv --fmr 0.1", 2, "--"),
    cli("compare-nothing", "compare --fmr 0.1", 2, "--comparisons"),
    cli("compare-pair-table-ok", "compare --format pair-table --comparisons {f}/bfw_pairs.csv --score-cols "
        "vgg16,senet50 --fmr 0.1 --n-resamples 40 --n-permutations 19", 0),
    cli("compare-pair-table-renamed-M5", "compare --format pair-table --comparisons {d}/pt_rfw.csv --score-cols "
        "vgg16,senet50 --sample-cols img1,img2 --identity-cols subj1,subj2 --fmr 0.1 --n-resamples 40 "
        "--n-permutations 19", 0),
    cli("compare-format-foo", "compare --format foo --scores-a {f}/bob4.txt --scores-b {f}/bob4.txt --fmr 0.1", 2,
        "--format"),
    cli("compare-wespeaker-ok", "compare --format wespeaker --scores-a {f}/wespeaker.score --scores-b "
        "{f}/wespeaker.score --speaker-of path --fmr 0.1 --n-resamples 40 --n-permutations 9", 0),
    cli("compare-bob-b-missing", "compare --format bob --scores-a {f}/bob4.txt --fmr 0.1", 2, "--scores-b"),
    cli("compare-bob-b-other-trials", "compare --format bob --scores-a {f}/bob4.txt --scores-b {d}/bob4_other.txt "
        "--fmr 0.1 --n-resamples 40", 2, "comparison rows differ"),
    cli("compare-out-is-file", "{CMP} --out {d}/afile", 2, "--out", out=False),
    cli("compare-out-proc", "{CMP} --out /proc/matchaudit", 2, "--out", out=False),
    cli("compare-out-user-compare-json", "{CMP} --out {c}/userfiles", 2, "compare.json", out=False),
    cli("compare-out-at-input-folder-ok", "compare --comparisons-a {c}/t.csv --comparisons-b {c}/t_b.csv --fmr 0.1 "
        "--n-resamples 40 --n-permutations 19 --out {c}", 0, out=False),
    # ----- test (matching data)
    cli("test-ok", "{TEST}", 0, check=has_files("test.json")),
    cli("test-samples-ok", "{TESTS}", 0),
    cli("test-fnmr-threshold-ok", "test --comparisons {d}/t.csv --group-by group --metric fnmr --threshold 0 "
        "--n-resamples 39", 0),
    cli("test-two-groups-ok", "{TESTS} --groups A,B", 0),
    cli("test-versus-rest-ok", "{TESTS} --versus rest", 0),
    cli("test-fmr-2", "{TEST} --fmr 2", 2, "--fmr"),
    cli("test-fmr-neg", "{TEST} --fmr -0.1", 2, "--fmr"),
    cli("test-fmr-nan", "{TEST} --fmr nan", 2, "--fmr"),
    cli("test-metric-foo", "{TEST} --metric foo", 2, "--metric"),
    cli("test-metric-fnr-on-matching", "{TEST} --metric fnr", 2, "--metric"),
    cli("test-level-2", "{TEST} --level 2", 2, "--level"),
    cli("test-alpha-0", "{TEST} --alpha 0", 2, "--alpha"),
    cli("test-level-as-significance", "{TEST} --level 0.05", 2, "--alpha"),  # the old meaning of --level: refused
    cli("test-confidence-level-gone", "{TEST} --confidence-level 0.9", 2, "--confidence-level"),
    cli("test-n-resamples-0", "{TEST} --n-resamples 0", 2, "--n-resamples"),
    cli("test-n-resamples-text", "{TEST} --n-resamples many", 2, "--n-resamples"),
    cli("test-n-resamples-huge", "{TEST} --n-resamples 1000000000", 2, "over the budget"),
    cli("test-n-resamples-exact-too-big", "{TEST} --n-resamples exact", 2, "exact"),
    cli("test-metric-fnmr-no-threshold", "test --comparisons {d}/t.csv --group-by group --metric fnmr "
        "--n-resamples 39", 2, "--threshold"),
    cli("test-alternative-foo", "{TEST} --alternative foo", 2, "--alternative"),
    cli("test-alternative-3-groups-N4", "{TESTS} --alternative greater", 2, "--alternative"),
    cli("test-groups-three-T3", "{TESTS} --groups A,B,C", 2, "--groups"),
    cli("test-groups-unknown", "{TESTS} --groups A,Z", 2, "Z"),
    cli("test-groups-same", "{TESTS} --groups A,A", 2, "'A' twice"),
    cli("test-groups-empty", "{TESTS} --groups ,", 2, "--groups"),
    cli("test-versus-foo", "{TESTS} --versus foo", 2, "--versus"),
    cli("test-unit-foo", "{TEST} --unit foo", 2, "--unit"),
    cli("test-studentize-foo", "{TEST} --studentize foo", 2, "--studentize"),
    cli("test-threshold-impostors-foo", "{TEST} --threshold-impostors foo", 2, "--threshold-impostors"),
    cli("test-seed-neg", "{TEST} --seed -1", 2, "--seed"),
    cli("test-one-group", "test --comparisons {d}/t_onegroup.csv --group-by group --fmr 0.1 --n-resamples 39", 2,
        "group"),
    cli("test-no-group-by", "test --comparisons {d}/t.csv --fmr 0.1 --n-resamples 39", 2, "--group-by"),
    cli("test-group-by-two-attributes", "test --comparisons {d}/t_sex.csv --group-by group,sex --fmr 0.1 "
        "--n-resamples 39", 0),
    cli("test-equivalence-ok", "{TEST} --equivalence 0.8,1.25", 0),
    cli("test-equivalence-reversed", "{TEST} --equivalence 1.1,2", 2, "--equivalence"),
    cli("test-equivalence-no-fmr", "test --comparisons {d}/t.csv --group-by group --equivalence 0.8,1.25 "
        "--n-resamples 39", 2, "--fmr"),
    cli("test-comparisons-missing-file", "test --comparisons {d}/nope.csv --group-by group --fmr 0.1", 2, "nope.csv"),
    cli("test-comparisons-directory", "test --comparisons {d}/emptydir --group-by group --fmr 0.1", 2, "emptydir"),
    cli("test-comparisons-nan", "test --comparisons {d}/t_nan.csv --group-by group --fmr 0.1 --n-resamples 39", 2,
        "row"),
    cli("test-duplicates-refuse", "test --comparisons {d}/t_dup.csv --group-by group --fmr 0.1 --n-resamples 39 "
        "--duplicates refuse", 2, "rows"),
    cli("test-samples-no-embeddings", "test --samples {d}/samples.csv --group-by group --fmr 0.1", 2, "--embeddings"),
    cli("test-table-and-samples", "test --table {d}/cls.csv --samples {d}/samples.csv --embeddings "
        "{d}/embeddings.npy --group-by group --fmr 0.1", 2, "--table"),
    cli("test-nothing", "test --fmr 0.1", 2, "--table"),
    cli("test-zero-errors-ok", "test --comparisons {d}/t_perfect.csv --group-by group --fmr 0.1 --n-resamples 39", 0),
    cli("test-ties-ok", "test --comparisons {d}/t_ties.csv --group-by group --fmr 0.1 --n-resamples 39", 0),
    # ----- test --table (classifier tables)
    cli("test-table-ok", "{TT}", 0),
    cli("test-table-score-auc-ok", "test --table {d}/cls.csv --y-score y_score --metric auc --n-resamples 99", 0),
    cli("test-table-score-threshold-ok", "test --table {d}/cls.csv --y-score y_score --threshold 0.5 "
        "--n-resamples 99", 0),
    cli("test-table-three-groups-ok", "test --table {d}/cls3.csv --y-pred y_pred --n-resamples 99", 0),
    cli("test-table-exact-ok", "test --table {d}/cls.csv --y-pred y_pred --n-resamples exact", 2, "exact"),
    cli("test-table-missing-file", "test --table {d}/nope.csv --y-pred y_pred", 2, "nope.csv"),
    cli("test-table-directory", "test --table {d}/emptydir --y-pred y_pred", 2, "emptydir"),
    cli("test-table-binary", "test --table {d}/t_binary.csv --y-pred y_pred", 2, "t_binary.csv"),
    cli("test-table-y-pred-wrong", "test --table {d}/cls.csv --y-pred nope", 2, "nope"),
    cli("test-table-y-true-wrong", "{TT} --y-true nope", 2, "nope"),
    cli("test-table-group-wrong", "{TT} --group nope", 2, "nope"),
    cli("test-table-no-prediction", "test --table {d}/cls.csv --n-resamples 99", 2, "--y-pred"),
    cli("test-table-y-true-2", "test --table {d}/cls_ytrue2.csv --y-pred y_pred --n-resamples 99", 2, "row"),
    cli("test-table-y-pred-missing", "test --table {d}/cls_ypredna.csv --y-pred y_pred --n-resamples 99", 2, "row"),
    cli("test-table-one-group", "test --table {d}/cls_onegroup.csv --y-pred y_pred --n-resamples 99", 2, "group"),
    cli("test-table-yes-no-ok", "test --table {d}/cls_yesno.csv --y-pred y_pred --n-resamples 99", 0),
    cli("test-table-pm1-M14", "test --table {d}/cls_pm1.csv --y-pred y_pred --n-resamples 99", 0),
    cli("test-table-all-positive-fpr", "test --table {d}/cls_allpos.csv --y-pred y_pred --metric fpr "
        "--n-resamples 99", 2, "FPR needs"),
    cli("test-table-inf-score", "test --table {d}/cls_inf.csv --y-score y_score --metric auc --n-resamples 99", 2,
        "row"),
    cli("test-table-metric-fnmr-at-fmr", "{TT} --metric fnmr_at_fmr", 2, "unknown metric 'fnmr_at_fmr'"),
    cli("test-table-fmr-on-table", "{TT} --fmr 0.1", 2, "--fmr"),
    cli("test-table-variance-foo", "{TT} --variance foo", 2, "--variance"),
    cli("test-table-permutation-foo", "{TT} --permutation foo", 2, "--permutation"),
    cli("test-table-variance-bootstrap", "{TT} --variance bootstrap", 2, "--studentize"),
    cli("test-table-n-bootstrap-0", "{TT} --variance bootstrap --studentize permutation-sd --n-bootstrap 0", 2,
        "--n-bootstrap"),
    cli("test-table-n-bootstrap-ok", "{TT} --variance bootstrap --studentize permutation-sd --n-bootstrap 20", 0),
    cli("test-table-threshold-without-score", "{TT} --threshold 0.5", 2, "--threshold"),
    # ----- test: outputs
    cli("test-out-proc", "{TEST} --out /proc/matchaudit", 2, "--out", out=False),
    cli("test-out-is-file", "{TEST} --out {d}/afile", 2, "--out", out=False),
    cli("test-out-overwrites-input-D1", "test --comparisons {c}/comparisons.csv --group-by group --fmr 0.1 "
        "--n-resamples 39 --out {c}", 2, "comparisons.csv", out=False),
    cli("test-out-empty-N5", "{TEST} --out ''", 2, "--out", out=False),
    # ----- estimate
    cli("estimate-ok", "{EST}", 0, check=has_files("estimate.json")),
    cli("estimate-labels-ok", "{EST} --label-col label", 0),
    cli("estimate-missing-file", "estimate {d}/nope.csv --sampler numpy", 2, "nope.csv"),
    cli("estimate-directory", "estimate {d}/emptydir --sampler numpy", 2, "emptydir"),
    cli("estimate-binary", "estimate {d}/t_binary.csv --sampler numpy", 2, "t_binary.csv"),
    cli("estimate-empty", "estimate {d}/est_empty.csv --sampler numpy --chains 2 --draws 200", 2, "est_empty.csv"),
    cli("estimate-tiny", "estimate {d}/est_tiny.csv --sampler numpy --chains 2 --draws 200", 2,
        "fewer than 100 pairs"),
    cli("estimate-score-col-wrong", "{EST} --score-col nope", 2, "nope"),
    cli("estimate-group-col-wrong", "{EST} --group-col nope", 2, "nope"),
    cli("estimate-label-col-wrong", "{EST} --label-col nope", 2, "nope"),
    cli("estimate-nan-score", "estimate {d}/est_nan.csv --sampler numpy --chains 2 --draws 200", 2, "row"),
    cli("estimate-text-score", "estimate {d}/est_text.csv --sampler numpy --chains 2 --draws 200", 2, "row"),
    cli("estimate-same-score", "estimate {d}/est_same.csv --sampler numpy --chains 2 --draws 200", 2, "identical"),
    cli("estimate-group-missing", "estimate {d}/est_groupmissing.csv --sampler numpy --chains 2 --draws 200", 2,
        "row"),
    cli("estimate-one-group-ok", "estimate {d}/est_onegroup.csv --sampler numpy --chains 2 --draws 1000 --fmr 0.1",
        0),
    cli("estimate-labels-yesno-M14", "estimate {d}/est_label_yesno.csv --label-col label --sampler numpy --chains 2 "
        "--draws 1000 --fmr 0.1", 0),
    cli("estimate-labels-bad", "estimate {d}/est_label_bad.csv --label-col label --sampler numpy --chains 2 "
        "--draws 200", 2, "label"),
    cli("estimate-fmr-2", "{EST} --fmr 2", 2, "--fmr"),
    cli("estimate-fmr-empty", "{EST} --fmr ''", 2, "--fmr"),
    cli("estimate-level-1.5", "{EST} --level 1.5", 2, "--level"),
    cli("estimate-chains-1", "{EST} --chains 1", 2, "--chains"),
    cli("estimate-chains-0", "{EST} --chains 0", 2, "--chains"),
    cli("estimate-draws-0", "{EST} --draws 0", 2, "--draws"),
    cli("estimate-draws-neg", "{EST} --draws -10", 2, "--draws"),
    cli("estimate-family-foo", "{EST} --family foo", 2, "--family"),
    cli("estimate-shape-prior-foo", "{EST} --shape-prior foo", 2, "shape prior 'foo'"),
    cli("estimate-sampler-foo", "{EST} --sampler foo", 2, "--sampler"),
    cli("estimate-rule-foo", "{EST} --rule '<'", 2, "--rule"),
    cli("estimate-seed-neg", "{EST} --seed -1", 2, "--seed"),
    cli("estimate-out-proc", "{EST} --out /proc/matchaudit", 2, "--out", out=False),
    cli("estimate-out-is-file", "{EST} --out {d}/afile", 2, "--out", out=False),
    cli("estimate-out-user-file", "{EST} --out {c}/userfiles", 2, "estimate.json", out=False),
    cli("estimate-no-table", "estimate --sampler numpy", 2, "Missing argument"),
    cli("estimate-not-converged", "estimate {d}/est.csv --sampler numpy --chains 2 --draws 20 --fmr 0.1 --family sas", 2,
        "Not converged"),
    # ----- protocol
    cli("protocol-ok", "{PROT}", 0, check=has_files("pairs.csv")),
    cli("protocol-embeddings-threshold-ok", "{PROT} --embeddings {d}/embeddings.npy --threshold 0.4", 0,
        check=has_files("pairs.csv", "protocol.json")),
    cli("protocol-genuine-neg", "protocol --samples {d}/samples.csv --genuine -1 --impostor 10", 2, "--genuine"),
    cli("protocol-impostor-huge", "protocol --samples {d}/samples.csv --genuine 10 --impostor 1000000000", 2,
        "--impostor"),
    cli("protocol-genuine-huge", "protocol --samples {d}/samples.csv --genuine 1000000 --impostor 10", 2,
        "--genuine"),
    cli("protocol-zero-zero-N3", "protocol --samples {d}/samples.csv --genuine 0 --impostor 0", 2, "--genuine"),
    cli("protocol-threshold-without-embeddings-N3", "{PROT} --threshold 0.5", 2, "--threshold"),
    cli("protocol-threshold-nan", "{PROT} --embeddings {d}/embeddings.npy --threshold nan", 2, "--threshold"),
    cli("protocol-genuine-text", "protocol --samples {d}/samples.csv --genuine ten --impostor 10", 2, "--genuine"),
    cli("protocol-no-samples", "protocol --genuine 10 --impostor 10", 2, "--samples"),
    cli("protocol-samples-missing", "protocol --samples {d}/nope.csv --genuine 10 --impostor 10", 2, "nope.csv"),
    cli("protocol-samples-directory", "protocol --samples {d}/emptydir --genuine 10 --impostor 10", 2, "emptydir"),
    cli("protocol-samples-singletons", "protocol --samples {d}/s_singletons.csv --genuine 10 --impostor 10", 2,
        "genuine"),
    cli("protocol-samples-duplicate-id", "protocol --samples {d}/s_dupid.csv --genuine 10 --impostor 10", 2, "A01_1"),
    cli("protocol-id-col-wrong", "{PROT} --id-col nope", 2, "nope"),
    cli("protocol-embeddings-short", "{PROT} --embeddings {d}/e_short.npy --threshold 0.4", 2, "rows"),
    cli("protocol-embeddings-nan", "{PROT} --embeddings {d}/e_nan.npy --threshold 0.4", 2, "row"),
    cli("protocol-seed-neg", "{PROT} --seed -1", 2, "--seed"),
    cli("protocol-out-proc", "{PROT} --out /proc/matchaudit", 2, "--out", out=False),
    cli("protocol-out-is-file", "{PROT} --out {d}/afile", 2, "--out", out=False),
    cli("protocol-out-over-user-pairs", "protocol --samples {c}/samples.csv --genuine 20 --impostor 200 --out "
        "{c}/userfiles", 2, "pairs.csv", out=False),
    cli("protocol-out-over-input-pairs", "protocol --samples {c}/samples.csv --genuine 20 --impostor 200 --out {c}",
        2, "pairs.csv", out=False),
    # ----- report
    cli("report-ok", "report {d}/audit/results.json --out {o}/r.html", 0, out=False, check=has_files("r.html"),
        make_out=True),
    cli("report-folder-ok", "report {c}/audit --out {o}/", 0, out=False, check=has_files("report.html")),
    cli("report-out-trailing-slash-M15", "report {d}/audit/results.json --out {o}/newrep/", 0, out=False,
        check=has_files("newrep/report.html")),
    cli("report-out-missing-folder", "report {d}/audit/results.json --out {o}/nofolder/r.html", 2, "does not exist",
        out=False),
    cli("report-out-empty-N5", "report {d}/audit/results.json --out ''", 2, "--out", out=False),
    cli("audit-report-empty-N5", "{A} --report ''", 2, "--report"),
    cli("simulate-out-empty-N5", "simulate --out ''", 2, "--out", out=False),
    cli("report-truncated", "report {d}/truncated.json --out {o}/", 2, "truncated.json", out=False),
    cli("report-notjson", "report {d}/notjson.json --out {o}/", 2, "notjson.json", out=False),
    cli("report-empty-object", "report {d}/incomplete.json --out {o}/", 2, "incomplete.json", out=False),
    cli("report-list", "report {d}/list.json --out {o}/", 2, "list.json", out=False),
    cli("report-null", "report {d}/nulls.json --out {o}/", 2, "nulls.json", out=False),
    cli("report-wrong-type", "report {d}/wrongtype.json --out {o}/", 2, "operating_points", out=False),
    cli("report-missing-key", "report {d}/nan.json --out {o}/", 2, "rule", out=False),
    cli("report-compare-json", "report {d}/cmp/compare.json --out {o}/", 2, "compare", out=False),
    cli("report-csv", "report {d}/t.csv --out {o}/", 2, "t.csv", out=False),
    cli("report-missing", "report {d}/nope.json --out {o}/", 2, "nope.json", out=False),
    cli("report-empty-directory", "report {d}/emptydir --out {o}/", 2, "a folder without results.json", out=False),
    cli("report-out-proc", "report {d}/audit/results.json --out /proc/matchaudit/r.html", 2, "--out", out=False),
    cli("report-out-is-results-D2", "report {c}/audit/results.json --out {c}/audit/results.json", 2, "--out",
        out=False),
    cli("report-out-is-input-csv-D2", "report {c}/audit/results.json --out {c}/t.csv", 2, "--out", out=False),
    cli("report-compare-notjson", "report {d}/audit/results.json --compare {d}/notjson.json --out {o}/", 2,
        "--compare", out=False),
    cli("report-compare-missing", "report {d}/audit/results.json --compare {d}/nope.json --out {o}/", 2,
        "--compare", out=False),
    cli("report-compare-is-results", "report {d}/audit/results.json --compare {d}/audit/results.json --out {o}/", 2,
        "--compare", out=False),
    cli("report-estimate-incomplete", "report {d}/audit/results.json --estimate {d}/incomplete.json --out {o}/",
        2, "--estimate", out=False),
    cli("report-heatmap-order-wrong", "report {d}/audit/results.json --heatmap-order nope --out {o}/", 2,
        "--heatmap-order", out=False),
    cli("report-heatmap-aggregate-wrong", "report {d}/audit/results.json --heatmap-aggregate nope --out {o}/",
        2, "--heatmap-aggregate", out=False),
    cli("report-no-argument", "report", 2, "Missing argument", out=False),
    # ----- coverage
    cli("coverage-ok", "{COV}", 0, check=has_files("coverage.csv", "coverage.json", "coverage.md")),
    cli("coverage-datasets-0", "{COV} --datasets 0", 2, "--datasets"),
    cli("coverage-datasets-1-N8", "{COV} --datasets 1", 0, check=md_has_se),
    cli("coverage-identities-1", "{COV} --identities 1", 2, "--identities"),
    cli("coverage-samples-1", "{COV} --samples 1", 2, "--samples"),
    cli("coverage-dim-2", "{COV} --dim 2", 2, "--dim"),
    cli("coverage-n-resamples-0", "{COV} --n-resamples 0", 2, "--n-resamples"),
    cli("coverage-kappa-text", "{COV} --kappa x", 2, "--kappa"),
    cli("coverage-kappa-reversed", "{COV} --kappa 800,100", 2, "--kappa"),
    cli("coverage-kappa-negative", "{COV} --kappa -5,10", 2, "--kappa"),
    cli("coverage-group-kappas-one-group", "{COV} --group-kappas 1,2", 2, "--group-kappas"),
    cli("coverage-group-kappas-text", "{COV} --group-kappas 'a,b;c,d'", 2, "--group-kappas"),
    cli("coverage-fmr-2", "{COV} --fmr 2", 2, "--fmr"),
    cli("coverage-levels-1.5", "{COV} --levels 1.5", 2, "--levels"),
    cli("coverage-levels-empty", "{COV} --levels ''", 2, "--levels"),
    cli("coverage-roc-methods-foo", "{COV} --roc-methods foo", 2, "--roc-methods"),
    cli("coverage-fixed-methods-foo", "{COV} --fixed-methods foo", 2, "--fixed-methods"),
    cli("coverage-protocol-foo", "{COV} --protocol foo", 2, "--protocol"),
    cli("coverage-truth-samples-neg", "{COV} --truth-samples -1", 2, "--truth-samples"),
    cli("coverage-seed-neg", "{COV} --seed -1", 2, "--seed"),
    cli("coverage-out-proc", "{COV} --out /proc/matchaudit", 2, "--out", out=False),
    cli("coverage-out-is-file", "{COV} --out {d}/afile", 2, "--out", out=False),
    cli("coverage-out-user-file", "{COV} --out {c}/userfiles", 2, "coverage.csv", out=False),
    # ----- simulate
    cli("simulate-ok", "{SIM}", 0, check=has_files("samples.csv", "embeddings.npy")),
    cli("simulate-identities-3-S5", "simulate --identities 3 --samples-per-identity 2 --dim 8 --format csv", 0,
        check=identities_written(3)),
    cli("simulate-identities-199-S5", "simulate --identities 199 --samples-per-identity 2 --dim 8 --format csv", 0,
        check=identities_written(199)),
    cli("simulate-identities-0", "{SIM} --identities 0", 2, "--identities"),
    cli("simulate-identities-neg", "{SIM} --identities -3", 2, "--identities"),
    cli("simulate-identities-1", "{SIM} --identities 1", 2, "--identities"),
    cli("simulate-dim-1", "{SIM} --dim 1", 2, "--dim"),
    cli("simulate-dim-0", "{SIM} --dim 0", 2, "--dim"),
    cli("simulate-samples-text", "{SIM} --samples-per-identity x", 2, "--samples-per-identity"),
    cli("simulate-samples-0", "{SIM} --samples-per-identity 0", 2, "--samples-per-identity"),
    cli("simulate-samples-range-reversed", "{SIM} --samples-per-identity 5:2", 2, "--samples-per-identity"),
    cli("simulate-samples-range-ok", "{SIM} --samples-per-identity 2:4", 0),
    cli("simulate-preset-foo", "{SIM} --preset foo", 2, "--preset"),
    cli("simulate-preset-paper-ok", "simulate --preset paper-b1 --identities 6 --samples-per-identity 2 --dim 8", 0),
    cli("simulate-format-foo", "{SIM} --format xlsx", 2, "--format"),
    cli("simulate-seed-neg", "{SIM} --seed -1", 2, "--seed"),
    cli("simulate-seed-huge", "{SIM} --seed 99999999999", 2, "--seed"),
    cli("simulate-no-out", "{SIM}", 2, "--out", out=False),
    cli("simulate-out-proc", "{SIM} --out /proc/matchaudit", 2, "--out", out=False),
    cli("simulate-out-is-file", "{SIM} --out {d}/afile", 2, "--out", out=False),
    cli("simulate-out-over-user-files-D3", "{SIM} --out {c}", 2, "was not written by matchaudit", out=False),
    # ----- demo
    cli("demo-out-proc", "demo --out /proc/matchaudit", 2, "--out", out=False),
    cli("demo-out-is-file", "demo --out {d}/afile", 2, "--out", out=False),
    cli("demo-out-over-user-data-D3", "demo --out {c}/demo", 2, "samples.parquet", out=False),
    cli("demo-seed-neg", "demo --seed -1", 2, "--seed"),
    cli("demo-test-resamples-0", "demo --test-resamples 0", 2, "--test-resamples"),
    cli("demo-unknown-flag", "demo --fmr 0.1", 2, "--fmr"),
    # ----- schema
    cli("schema-ok", "schema", 0, '"$schema"', out=False),
    cli("schema-extra-argument", "schema extra", 2, "extra", out=False),
    cli("schema-unknown-flag", "schema --out x", 2, "--out", out=False),
    cli("schema-quiet-C8", "schema --quiet", 0, out=False),
    # ----- the top level
    cli("no-command", "", 2, "Usage", out=False),
    cli("unknown-command", "auditt", 2, "auditt", out=False),
]


def _copy_inputs(d: Path, c: Path) -> None:
    """A per-case copy of the inputs for cases whose outputs are aimed at input files or folders."""
    c.mkdir()
    for name in ("samples.csv", "embeddings.npy", "t.csv", "t_b.csv", "pairs.csv"):
        shutil.copy(d / name, c / name)
    shutil.copy(d / "t.csv", c / "comparisons.csv")
    shutil.copytree(d / "audit", c / "audit")
    user = c / "userfiles"
    user.mkdir()
    for name in ("results.json", "compare.json", "estimate.json", "pairs.csv", "coverage.csv", "test.json"):
        (user / name).write_text("my own file\n")
    demo = c / "demo" / "data"
    demo.mkdir(parents=True)
    (demo / "samples.parquet").write_text("my precious\n")


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli(case: Cli, inputs: Path, tmp_path: Path, monkeypatch):
    c = tmp_path / "c"
    o = tmp_path / "o"
    text = case.args
    for _ in range(2):  # macros may hold macros
        for k, v in MACROS.items():
            text = text.replace("{" + k + "}", v)
    if "{c}" in text:
        _copy_inputs(inputs, c)
    if case.make_out:
        o.mkdir()
    args = [a.replace("{d}", str(inputs)).replace("{f}", str(FORMATS)).replace("{c}", str(c)).replace("{o}", str(o))
            for a in shlex.split(text)]
    if case.out and "--out" not in args and args and args[0] not in ("report", "schema"):
        args += ["--out", str(o)]
    roots = [inputs, FORMATS] + ([c] if c.exists() else [])
    before = _digest(*roots)
    cwd = tmp_path / "cwd"  # `--out ''` and relative paths must never write into the repository
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    res = runner.invoke(app, args)
    output = res.output
    changed = _unchanged(before, _digest(*roots))
    assert not changed, f"input files modified: {changed}"
    assert "Traceback" not in output, output[-3000:]
    assert res.exit_code != 1, (res.exception, output[-3000:])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == case.code, (res.exit_code, output[-3000:])
    if case.says is not None:
        assert case.says in output, output[-3000:]
    if case.check is not None:
        case.check(o, output)


# ---------------------------------------------------------------------------------------------------------------
# The library table
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lib:
    call: Callable[[SimpleNamespace], Any]
    ok: bool                    # True: must succeed; False: must raise ma.InputError
    says: str | None = None     # a substring of the message
    param: str | None = None    # the InputError's param
    check: Callable[[Any, SimpleNamespace], None] | None = None


def lib(id: str, call, ok: bool = False, says: str | None = None, *, param=None, check=None, xfail: str = ""):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(Lib(call, ok, says, param, check), id=id, marks=marks)


@pytest.fixture(scope="module")
def x(inputs: Path) -> SimpleNamespace:
    d = inputs
    s = pd.read_csv(d / "samples.csv")
    e = np.load(d / "embeddings.npy")
    t = pd.read_csv(d / "t.csv")
    tb = pd.read_csv(d / "t_b.csv")
    est = pd.read_csv(d / "est.csv", keep_default_na=False)
    data = ma.load_samples(d / "samples.csv", d / "embeddings.npy", group_by="group")
    tdata = ma.load_comparisons(d / "t.csv", group_by="group")
    bdata = ma.load_comparisons(d / "t_b.csv", group_by="group")
    return SimpleNamespace(d=d, s=s, e=e, t=t, tb=tb, est=est, data=data, tdata=tdata, bdata=bdata,
                           e16=np.load(d / "e_f16.npy"))


def _fingerprint(x: SimpleNamespace) -> str:
    h = hashlib.sha256()
    for arr in (x.e, x.e16):
        h.update(np.ascontiguousarray(arr).tobytes())
    for df in (x.s, x.t, x.tb, x.est):
        h.update(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
        h.update(repr(list(df.columns)).encode())
    return h.hexdigest()


FAST = dict(fmr=0.1, intervals=False, measures=ma.MeasureOptions(calibration=False))
EST_FAST = dict(sampler="numpy", chains=2, draws=1000, warmup=1000, fmr=[0.1])  # converges in about 0.5 s


def _scores(x, **kw):
    t = x.t
    args = dict(identity_a=t.identity_a, identity_b=t.identity_b, sample_a=t.sample_a, sample_b=t.sample_b,
                attributes_a=pd.DataFrame({"group": t.group_a}), attributes_b=pd.DataFrame({"group": t.group_b}),
                group_by="group")
    args.update(kw)
    score = args.pop("score", t.score)
    return ma.from_scores(score, **args)


def _emb(x, **kw):
    args = dict(attributes=x.s[["group"]], group_by="group", ids=x.s.sample_id)
    args.update(kw)
    emb = args.pop("embeddings", x.e)
    identities = args.pop("identities", x.s.identity)
    return ma.from_embeddings(emb, identities, **args)


def _est(x, **kw):
    est = x.est
    args = dict(EST_FAST)
    args.update(kw)
    scores = args.pop("scores", est.score.to_numpy())
    groups = args.pop("groups", est.group.to_numpy())
    return ma.estimate(scores, groups, **args)


def _fnmr_at(res, fmr=0.1):
    return res.at_fmr(fmr).loc["all", "fnmr"]


def same_as_aligned(res, x):
    base = ma.audit(x.tdata, **FAST)
    assert abs(res.at_fmr(0.1).loc["all", "threshold"] - base.at_fmr(0.1).loc["all", "threshold"]) < 1e-9


def lib_threshold_equal_to_base(res, x):
    t = res.at_fmr(0.1).loc["all", "threshold"]
    assert np.isfinite(t) and abs(t - 0.38906) < 1e-4, t


LIB_CASES = [
    # ----- ma.audit
    lib("audit-ok", lambda x: ma.audit(x.data, **FAST), True),
    lib("audit-intervals-ok", lambda x: ma.audit(x.data, fmr=0.1, intervals=ma.IntervalOptions(n_resamples=40)), True),
    lib("audit-fmr-2", lambda x: ma.audit(x.data, fmr=2, intervals=False), says="fmr", param="fmr"),
    lib("audit-fmr-neg", lambda x: ma.audit(x.data, fmr=-0.1, intervals=False), param="fmr"),
    lib("audit-fmr-nan", lambda x: ma.audit(x.data, fmr=float("nan"), intervals=False), param="fmr"),
    lib("audit-fmr-empty", lambda x: ma.audit(x.data, fmr=[], intervals=False), param="fmr"),
    lib("audit-fmr-str-ok", lambda x: ma.audit(x.data, fmr="0.1", intervals=False), True),
    lib("audit-fmr-none", lambda x: ma.audit(x.data, fmr=None, intervals=False), param="fmr"),
    lib("audit-fmr-bool", lambda x: ma.audit(x.data, fmr=True, intervals=False), param="fmr"),
    lib("audit-fmr-repeated", lambda x: ma.audit(x.data, fmr=[0.1, 0.1], intervals=False), param="fmr"),
    lib("audit-fmr-float32-T1", lambda x: ma.audit(x.data, fmr=np.float32(0.1), intervals=False), True),
    lib("audit-fmr-numpy-array-ok", lambda x: ma.audit(x.data, fmr=np.array([0.1, 0.01]), intervals=False), True),
    lib("audit-fmr-numpy-float64-ok", lambda x: ma.audit(x.data, fmr=np.float64(0.1), intervals=False), True),
    lib("audit-thresholds-float32-T1", lambda x: ma.audit(x.data, fmr=0.1, thresholds=np.float32(0.5),
                                                          intervals=False), True),
    lib("audit-thresholds-nan", lambda x: ma.audit(x.data, fmr=0.1, thresholds=[float("nan")], intervals=False),
        param="thresholds"),
    lib("audit-fnmr-1", lambda x: ma.audit(x.data, fmr=0.1, fnmr=1.0, intervals=False), param="fnmr"),
    lib("audit-rule-eq", lambda x: ma.audit(x.data, fmr=0.1, rule="==", intervals=False), param="rule"),
    lib("audit-weightings-str-foo", lambda x: ma.audit(x.data, fmr=0.1, measures=ma.MeasureOptions(weightings=["foo"]),
                                                       intervals=False),
        param="weightings"),
    lib("audit-weightings-bare-string-ok", lambda x: ma.audit(x.data, fmr=0.1,
                                                              measures=ma.MeasureOptions(weightings="pooled"),
                                                              intervals=False),
        True),
    lib("audit-threshold-impostors-foo", lambda x: ma.audit(x.data, fmr=0.1, threshold_impostors="foo",
                                                            intervals=False), param="threshold_impostors"),
    lib("audit-level-95", lambda x: ma.audit(x.data, fmr=0.1,
                                             intervals=ma.IntervalOptions(level=95, n_resamples=40)), param="level"),
    lib("audit-n-resamples-1", lambda x: ma.audit(x.data, fmr=0.1,
                                                  intervals=ma.IntervalOptions(n_resamples=1)), param="n_resamples"),
    lib("audit-n-resamples-float", lambda x: ma.audit(x.data, fmr=0.1,
                                                      intervals=ma.IntervalOptions(n_resamples=100.5)), param="n_resamples"),
    lib("audit-n-resamples-str", lambda x: ma.audit(x.data, fmr=0.1,
                                                    intervals=ma.IntervalOptions(n_resamples="100")), param="n_resamples"),
    lib("audit-n-resamples-numpy-int-ok", lambda x: ma.audit(x.data, fmr=0.1,
                                                             measures=ma.MeasureOptions(calibration=False),
                                                             intervals=ma.IntervalOptions(n_resamples=np.int64(40))), True),
    lib("audit-seed-neg", lambda x: ma.audit(x.data, fmr=0.1,
                                             intervals=ma.IntervalOptions(n_resamples=40, seed=-1)), param="seed"),
    lib("audit-seed-2^32", lambda x: ma.audit(x.data, fmr=0.1,
                                              intervals=ma.IntervalOptions(n_resamples=40, seed=2 ** 32)), param="seed"),
    lib("audit-seed-float", lambda x: ma.audit(x.data, fmr=0.1,
                                               intervals=ma.IntervalOptions(n_resamples=40, seed=1.5)), param="seed"),
    lib("audit-ci-method-foo", lambda x: ma.audit(x.data, fmr=0.1,
                                                  intervals=ma.IntervalOptions(method="foo", n_resamples=40)),
        param="ci_method"),
    lib("audit-memory-neg", lambda x: ma.audit(x.data, fmr=0.1,
                                               intervals=ma.IntervalOptions(memory_gb=-1, n_resamples=40)), param="memory_gb"),
    lib("audit-zero-policy-foo", lambda x: ma.audit(x.data, fmr=0.1, measures=ma.MeasureOptions(zero_policy="foo"),
                                                    intervals=False),
        param="zero_policy"),
    lib("audit-band-foo", lambda x: ma.audit(x.data, fmr=0.1,
                                             intervals=ma.IntervalOptions(band="foo", n_resamples=40)), param="band"),
    lib("audit-dcf-bad", lambda x: ma.audit(x.data, fmr=0.1, measures=ma.MeasureOptions(dcf=[(2, 1, 1)]),
                                            intervals=False), param="dcf"),
    lib("audit-eer-foo", lambda x: ma.audit(x.data, fmr=0.1, measures=ma.MeasureOptions(eer="foo"),
                                            intervals=False), param="eer"),
    lib("audit-equivalence-reversed", lambda x: ma.audit(x.data, fmr=0.1, equivalence=(1.25, 0.8), intervals=False),
        says="lo < hi", param="margin"),
    lib("audit-test-resamples-0", lambda x: ma.audit(x.data, fmr=0.1, intervals=False,
                                                     tests=ma.TestOptions(n_resamples=0)), param="test_resamples"),
    lib("audit-tests-ok", lambda x: ma.audit(x.data, fmr=0.1, intervals=False,
                                             tests=ma.TestOptions(n_resamples=19)), True),
    lib("audit-backend-foo", lambda x: ma.audit(x.data, fmr=0.1, intervals=ma.IntervalOptions(n_resamples=40),
                                                backend="tpu"), param="backend"),
    lib("audit-intervals-str", lambda x: ma.audit(x.data, fmr=0.1, intervals="wilson"), param="intervals"),
    lib("audit-measures-false", lambda x: ma.audit(x.data, fmr=0.1, measures=False), param="measures"),
    lib("audit-tests-int", lambda x: ma.audit(x.data, fmr=0.1, intervals=False, tests=999), param="tests"),
    lib("audit-equivalence-str", lambda x: ma.audit(x.data, fmr=0.1, intervals=False, equivalence="0.8,1.25"),
        param="equivalence"),
    lib("audit-equivalence-alpha-half", lambda x: ma.audit(x.data, fmr=0.1, intervals=False,
                                                           equivalence=ma.EquivalenceOptions((0.8, 1.25), alpha=0.5)),
        param="alpha"),
    lib("audit-measures-dcf-bad", lambda x: ma.MeasureOptions(dcf=[(0.5, -1, 1)]), param="dcf"),
    # session 44's hostile run of the option objects (each raised a raw error, or was accepted and misread)
    lib("audit-backend-int", lambda x: ma.audit(x.data, fmr=0.1, backend=5), param="backend"),
    lib("audit-progress-str", lambda x: ma.audit(x.data, fmr=0.1, intervals=False, progress="yes"),
        param="progress"),
    lib("audit-rule-array", lambda x: ma.audit(x.data, fmr=0.1, intervals=False, rule=np.array([">=", ">"])),
        param="rule"),
    lib("audit-fmr-false", lambda x: ma.audit(x.data, fmr=False, intervals=False), param="fmr"),
    lib("options-level-as-alpha", lambda x: ma.IntervalOptions(level=0.05), param="level", says="alpha"),
    lib("options-one-sided-str", lambda x: ma.IntervalOptions(one_sided="no"), param="one_sided"),
    lib("options-method-int", lambda x: ma.IntervalOptions(method=5), param="ci_method"),
    lib("options-weightings-none", lambda x: ma.MeasureOptions(weightings=None), param="weightings"),
    lib("options-weightings-dict", lambda x: ma.MeasureOptions(weightings={"pooled": 1}), param="weightings"),
    lib("options-llr-str", lambda x: ma.MeasureOptions(llr="no"), param="llr"),
    lib("options-calibration-none", lambda x: ma.MeasureOptions(calibration=None), param="calibration"),
    lib("options-equivalence-few-replicates", lambda x: ma.EquivalenceOptions((0.5, 2.0), n_resamples=5),
        param="n_resamples"),
    lib("options-equivalence-method-name", lambda x: ma.EquivalenceOptions((0.5, 2.0), method="percentile"),
        param="method"),
    lib("audit-tests-studentized-ok", lambda x: ma.audit(x.data, fmr=0.1, intervals=False,
                                                         tests=ma.TestOptions(n_resamples=19, studentize="studentized")),
        True, check=lambda r, x: r.test_records or pytest.fail(str(r.warnings))),
    lib("test-gap-studentize-bogus", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B"), fmr=0.1,
                                                           studentize="bogus", n_resamples=39), param="studentize"),
    lib("test-gap-groups-int", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", 5, fmr=0.1, n_resamples=39),
        param="groups"),
    lib("test-gap-groups-unknown-named", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "Z"), fmr=0.1,
                                                               n_resamples=39), param="groups"),
    lib("test-gaps-level-as-alpha", lambda x: ma.test_gaps(x.data, "fnmr_at_fmr", fmr=0.1, level=0.05,
                                                           n_resamples=39), param="level"),
    lib("audit-data-dataframe", lambda x: ma.audit(x.t, fmr=0.1), param="data"),
    lib("audit-data-ndarray", lambda x: ma.audit(x.e, fmr=0.1), param="data"),
    lib("audit-data-str", lambda x: ma.audit(str(x.d / "t.csv"), fmr=0.1), param="data"),
    lib("audit-data-none", lambda x: ma.audit(None, fmr=0.1), param="data"),
    lib("audit-comparisons-ok", lambda x: ma.audit(x.tdata, **FAST), True),
    lib("audit-zero-errors-ok", lambda x: ma.audit(ma.load_comparisons(x.d / "t_perfect.csv", group_by="group"), fmr=0.1,
                                                   intervals=ma.IntervalOptions(n_resamples=40)), True),
    lib("audit-ties-ok", lambda x: ma.audit(ma.load_comparisons(x.d / "t_ties.csv", group_by="group"), **FAST), True),
    lib("audit-one-group-ok", lambda x: ma.audit(ma.load_comparisons(x.d / "t_onegroup.csv", group_by="group"),
                                                 **FAST), True),
    lib("audit-huge-embeddings-S4", lambda x: ma.audit(_emb(x, embeddings=x.e.astype(np.float64) * 1e300), **FAST),
        True, check=lib_threshold_equal_to_base),
    lib("audit-tiny-embeddings-M10", lambda x: ma.audit(_emb(x, embeddings=x.e.astype(np.float64) * 1e-200), **FAST),
        True, check=lib_threshold_equal_to_base),
    lib("audit-scaled-1e150-ok", lambda x: ma.audit(_emb(x, embeddings=x.e.astype(np.float64) * 1e150), **FAST), True,
        check=lib_threshold_equal_to_base),
    # result views
    lib("result-at-fmr-missing", lambda x: ma.audit(x.data, **FAST).at_fmr(0.01), param="fmr"),
    lib("result-at-fmr-weighting-typo-M12", lambda x: ma.audit(x.data, **FAST).at_fmr(0.1, weighting="pooledd"),
        says="weighting", param="weighting"),
    lib("result-ratio-auc-M12", lambda x: ma.audit(x.data, **FAST).ratio("auc", fmr=0.1), says="auc",
        param="metric"),
    lib("result-ratio-ok", lambda x: ma.audit(x.data, **FAST).ratio("fnmr", fmr=0.1), True),
    lib("result-save-proc", lambda x: ma.audit(x.data, **FAST).save("/proc/matchaudit", figures=False), param="out"),
    lib("result-save-over-input", lambda x: ma.audit(x.data, **FAST).save(x.d / "afile", figures=False), param="out"),
    # ----- ma.compare
    lib("compare-ok", lambda x: ma.compare(x.tdata, x.bdata, fmr=0.1, n_resamples=40, test_resamples=19), True),
    lib("compare-fmr-float32-T1", lambda x: ma.compare(x.tdata, x.bdata, fmr=np.float32(0.1), n_resamples=40,
                                                       test_resamples=19), True),
    lib("compare-fmr-2", lambda x: ma.compare(x.tdata, x.bdata, fmr=2, n_resamples=40), param="fmr"),
    lib("compare-level-0", lambda x: ma.compare(x.tdata, x.bdata, fmr=0.1, level=0, n_resamples=40), param="level"),
    lib("compare-test-resamples-neg", lambda x: ma.compare(x.tdata, x.bdata, fmr=0.1, n_resamples=40,
                                                           test_resamples=-1), param="test_resamples"),
    lib("compare-ci-method-wilson", lambda x: ma.compare(x.tdata, x.bdata, fmr=0.1, ci_method="wilson",
                                                         n_resamples=40), param="ci_method"),
    lib("compare-different-comparisons", lambda x: ma.compare(x.tdata, x.data, fmr=0.1, n_resamples=40),
        says="comparisons"),
    lib("compare-b-none", lambda x: ma.compare(x.tdata, None, fmr=0.1, n_resamples=40), param="b"),
    lib("compare-a-dataframe", lambda x: ma.compare(x.t, x.bdata, fmr=0.1, n_resamples=40), param="a"),
    lib("compare-embeddings-ok", lambda x: ma.compare(x.data, _emb(x, embeddings=x.e16), fmr=0.1, n_resamples=40,
                                                      test_resamples=19), True),
    # ----- ma.test_gap
    lib("test-gap-three-groups-unnamed", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", fmr=0.1, n_resamples=39),
        param="groups", says="test_gaps"),
    lib("test-gap-two-groups-ok", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B"), fmr=0.1, n_resamples=39),
        True),
    lib("test-gap-float32-ok", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B"), fmr=np.float32(0.1),
                                                     n_resamples=39), True),
    lib("test-gap-three-groups-T3", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B", "C"), fmr=0.1,
                                                          n_resamples=39), param="groups"),
    lib("test-gap-groups-string-M12", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", "A,B", fmr=0.1, n_resamples=39),
        True, check=lambda r, x: r.details["groups"] == ["A", "B"] or pytest.fail(str(r.details["groups"]))),
    lib("test-gap-unknown-group", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "Z"), fmr=0.1, n_resamples=39),
        says="Z"),
    lib("test-gap-metric-foo", lambda x: ma.test_gap(x.data, "foo", fmr=0.1), param="metric"),
    lib("test-gap-fmr-2", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", fmr=2, n_resamples=39), param="fmr"),
    lib("test-gap-no-fmr", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B"), n_resamples=39),
        param="fmr"),
    lib("test-gap-fnmr-no-threshold", lambda x: ma.test_gap(x.data, "fnmr", ("A", "B"), n_resamples=39),
        param="threshold"),
    lib("test-gap-threshold-nan", lambda x: ma.test_gap(x.data, "fnmr", threshold=float("nan"), n_resamples=39),
        param="threshold"),
    lib("test-gap-n-resamples-0", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", fmr=0.1, n_resamples=0),
        param="n_resamples"),
    lib("test-gap-alternative-foo", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", ("A", "B"), fmr=0.1,
                                                          alternative="foo", n_resamples=39), param="alternative"),
    lib("test-gaps-alpha-2", lambda x: ma.test_gaps(x.data, "fnmr_at_fmr", fmr=0.1, alpha=2, n_resamples=39),
        param="alpha"),
    lib("test-gap-level-1.5", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", fmr=0.1, level=1.5, n_resamples=39),
        param="level"),
    lib("test-gaps-ok", lambda x: ma.test_gaps(x.data, "fnmr_at_fmr", fmr=0.1, n_resamples=39), True),
    lib("test-gaps-comparisons-foo", lambda x: ma.test_gaps(x.data, "fnmr", threshold=0.5, comparisons="foo",
                                                            n_resamples=39), param="comparisons"),
    lib("test-gap-unit-foo", lambda x: ma.test_gap(x.data, "fnmr_at_fmr", fmr=0.1, unit="foo", n_resamples=39),
        param="unit"),
    lib("test-gap-ungrouped", lambda x: ma.test_gap(ma.load_comparisons(x.d / "t.csv"), "fnmr_at_fmr", fmr=0.1,
                                                    n_resamples=39), says="group"),
    lib("test-gap-data-dataframe", lambda x: ma.test_gap(x.t, "fnmr_at_fmr", fmr=0.1), param="data"),
    # ----- ma.estimate
    lib("estimate-ok", lambda x: _est(x), True),
    lib("estimate-labels-ok", lambda x: _est(x, labels=pd.to_numeric(x.est.label, errors="coerce").to_numpy()), True),
    lib("estimate-labels-words-T5", lambda x: _est(x, labels=np.where(x.est.label == "1", "genuine",
                                                                      np.where(x.est.label == "0", "impostor", ""))),
        True),
    lib("estimate-labels-yesno-M14", lambda x: _est(x, labels=np.where(x.est.label == "1", "yes",
                                                                       np.where(x.est.label == "0", "no", None))),
        True),
    lib("estimate-not-converged", lambda x: _est(x, draws=20, warmup=20, family="sas"), says="converge"),
    lib("estimate-draws-3-split-rhat", lambda x: _est(x, draws=3, warmup=10), says="at least 4", param="draws"),
    lib("estimate-group-labelled-one-class-M7", lambda x: _est(x, labels=np.where(x.est.group == x.est.group.iloc[0],
                                                                                  1.0, np.nan)),
        says="all one class"),
    lib("estimate-labels-bad-value", lambda x: _est(x, labels=np.full(len(x.est), 7.0)), says="unrecognised label"),
    lib("estimate-labels-wrong-length", lambda x: _est(x, labels=np.zeros(5)), says="labels must be as long"),
    lib("estimate-nan-score", lambda x: _est(x, scores=np.r_[np.nan, x.est.score.to_numpy()[1:]]),
        says="not finite (rows 0)"),
    lib("estimate-inf-score", lambda x: _est(x, scores=np.r_[np.inf, x.est.score.to_numpy()[1:]]),
        says="not finite (rows 0)"),
    lib("estimate-empty", lambda x: _est(x, scores=[], groups=[]), says="scores"),
    lib("estimate-groups-wrong-length", lambda x: _est(x, groups=x.est.group.to_numpy()[:10]), says="equally long"),
    lib("estimate-scores-str-ok", lambda x: _est(x, scores=x.est.score.astype(str).to_numpy()), True),
    lib("estimate-scores-2d", lambda x: _est(x, scores=np.ones((len(x.est), 2))), says="1-D"),
    lib("estimate-same-score", lambda x: _est(x, scores=np.full(len(x.est), 0.3)), says="identical"),
    lib("estimate-chains-1", lambda x: _est(x, chains=1), param="chains"),
    lib("estimate-draws-0", lambda x: _est(x, draws=0), param="draws"),
    lib("estimate-family-foo", lambda x: _est(x, family="foo"), says="family 'foo'"),
    lib("estimate-sampler-foo", lambda x: _est(x, sampler="foo"), says="sampler 'foo'"),
    lib("estimate-fmr-2", lambda x: _est(x, fmr=[2]), param="fmr"),
    lib("estimate-fmr-float-ok", lambda x: _est(x, fmr=0.1), True),
    lib("estimate-level-0", lambda x: _est(x, level=0), param="level"),
    lib("estimate-rule-foo", lambda x: _est(x, rule="<"), param="rule"),
    lib("estimate-seed-neg", lambda x: _est(x, seed=-1), param="seed"),
    # ----- ma.plan
    lib("plan-ok", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=20, impostor=200), True),
    lib("plan-genuine-neg", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=-1, impostor=200),
        param="genuine"),
    lib("plan-impostor-huge", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=20, impostor=10 ** 9),
        param="impostor"),
    lib("plan-zero-zero", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=0, impostor=0), param="genuine"),
    lib("plan-genuine-float", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=2.5, impostor=10),
        param="genuine"),
    lib("plan-lengths-differ", lambda x: ma.plan(x.s.sample_id, x.s.identity[:10], genuine=5, impostor=5),
        says="identities"),
    lib("plan-duplicate-ids", lambda x: ma.plan(["a", "a", "b", "c"], [1, 1, 2, 2], genuine=1, impostor=1),
        says="a"),
    lib("plan-empty", lambda x: ma.plan([], [], genuine=1, impostor=1), says="only 0"),
    lib("plan-nan-identity", lambda x: ma.plan(["a", "b", "c", "d", "e"], [1, np.nan, 1, np.nan, 2], genuine=1,
                                               impostor=2), says="identit"),
    lib("plan-seed-neg", lambda x: ma.plan(x.s.sample_id, x.s.identity, genuine=20, impostor=200, seed=-1),
        param="seed"),
    # ----- ma.from_scores
    lib("from-scores-ok", lambda x: _scores(x), True),
    lib("from-scores-lists-ok", lambda x: _scores(x, score=x.t.score.tolist()), True),
    lib("from-scores-nan", lambda x: _scores(x, score=x.t.score.where(x.t.index != 5)), says="5"),
    lib("from-scores-inf", lambda x: _scores(x, score=x.t.score.where(x.t.index != 5, np.inf)), says="5"),
    lib("from-scores-strings", lambda x: _scores(x, score=x.t.score.astype(str).where(x.t.index != 3, "x")),
        says="x"),
    lib("from-scores-wrong-length", lambda x: _scores(x, score=x.t.score[:10].to_numpy()), says="score: 10"),
    lib("from-scores-empty", lambda x: ma.from_scores([], [], []), says="no rows"),
    lib("from-scores-2d", lambda x: ma.audit(_scores(x, score=np.c_[x.t.score, x.t.score]), **FAST), says="score"),
    lib("from-scores-scalar", lambda x: ma.from_scores(0.5, [1], [2]), says="score"),
    lib("from-scores-no-identities-no-labels", lambda x: ma.from_scores(x.t.score), says="label"),
    lib("from-scores-label-bad", lambda x: ma.from_scores(x.t.score, label=np.full(len(x.t), 5)),
        says="unrecognised label"),
    lib("from-scores-labels-only-ok", lambda x: ma.from_scores(x.t.score, label=(x.t.identity_a ==
                                                                               x.t.identity_b).astype(int)), True),
    lib("from-scores-attributes-ndarray-T2", lambda x: _scores(x, attributes_a=x.t[["group_a"]].to_numpy(),
                                                               attributes_b=x.t[["group_b"]].to_numpy()),
        says="attributes (side a) must be a table"),
    lib("from-scores-attributes-series-T2", lambda x: _scores(x, attributes_a=x.t.group_a, attributes_b=x.t.group_b),
        says="attributes"),
    lib("from-scores-attributes-dict-ok", lambda x: _scores(x, attributes_a={"group": x.t.group_a.tolist()},
                                                            attributes_b={"group": x.t.group_b.tolist()}), True),
    lib("from-scores-group-by-missing", lambda x: _scores(x, group_by="nope"), says="nope"),
    lib("from-scores-fta-policy-foo", lambda x: _scores(x, fta_policy="foo"), param="fta_policy"),
    lib("from-scores-duplicates-foo", lambda x: _scores(x, duplicates="foo"), param="duplicates"),
    lib("from-scores-self-comparison", lambda x: _scores(x, sample_b=x.t.sample_b.where(x.t.index != 3,
                                                                                          x.t.sample_a)), says="3"),
    lib("from-scores-distance-ok", lambda x: _scores(x, distance=True), True),
    lib("from-scores-shuffled-series-S6", lambda x: _scores(x, score=x.t.score.sample(frac=1, random_state=0)),
        says="index"),
    # ----- ma.from_embeddings
    lib("from-embeddings-ok", lambda x: _emb(x), True),
    lib("from-embeddings-nan", lambda x: _emb(x, embeddings=np.where(np.arange(90)[:, None] == 3, np.nan, x.e)),
        says="positions 3"),
    lib("from-embeddings-inf", lambda x: _emb(x, embeddings=np.where(np.arange(90)[:, None] == 3, np.inf, x.e)),
        says="positions 3"),
    lib("from-embeddings-1d", lambda x: _emb(x, embeddings=x.e[:, 0]), says="2-D"),
    lib("from-embeddings-3d", lambda x: _emb(x, embeddings=x.e.reshape(90, 4, 4)), says="2-D"),
    lib("from-embeddings-list-ok", lambda x: _emb(x, embeddings=x.e.tolist()), True),
    lib("from-embeddings-strings", lambda x: _emb(x, embeddings=x.e.astype(str)), says="not numeric"),
    lib("from-embeddings-empty", lambda x: ma.from_embeddings(np.zeros((0, 4)), []), says="no rows"),
    lib("from-embeddings-identities-short", lambda x: _emb(x, identities=x.s.identity[:10]), says="90 rows"),
    lib("from-embeddings-ids-duplicate", lambda x: _emb(x, ids=x.s.sample_id.where(x.s.index != 5,
                                                                                   x.s.sample_id[4])), says="A01_1"),
    lib("from-embeddings-identity-missing", lambda x: _emb(x, identities=x.s.identity.astype(object).where(
        x.s.index != 6, None)), says="positions 6"),
    lib("from-embeddings-metric-foo", lambda x: _emb(x, metric="manhattan"), says="manhattan"),
    lib("from-embeddings-attributes-short", lambda x: _emb(x, attributes=x.s[["group"]].iloc[:10]),
        says="10 rows"),
    lib("from-embeddings-group-by-missing", lambda x: _emb(x, group_by="nope"), says="nope"),
    lib("from-embeddings-zero-row", lambda x: _emb(x, embeddings=np.where(np.arange(90)[:, None] == 7, 0.0, x.e)),
        says="positions 7"),
    lib("from-embeddings-one-identity", lambda x: ma.audit(ma.from_embeddings(x.e, ["X"] * 90), **FAST),
        says="impostor"),
    lib("from-embeddings-pairs-unknown", lambda x: _emb(x, pairs=pd.DataFrame({"sample_a": ["ghost"],
                                                                               "sample_b": [x.s.sample_id[0]]})),
        says="ghost"),
    lib("from-embeddings-pairs-ok", lambda x: _emb(x, pairs=pd.read_csv(x.d / "pairs.csv"), attributes=None,
                                                   group_by=()), True),
    lib("from-embeddings-pairs-group-without-genuine", lambda x: _emb(x, pairs=pd.read_csv(x.d / "pairs.csv")),
        says="group(s) B, C"),
    lib("from-embeddings-float16-ok", lambda x: _emb(x, embeddings=x.e16), True),
    # ----- ma.load_comparisons
    lib("load-comparisons-ok", lambda x: ma.load_comparisons(x.d / "t.csv", group_by="group"), True),
    lib("load-comparisons-str-path-ok", lambda x: ma.load_comparisons(str(x.d / "t.csv")), True),
    lib("load-comparisons-sample-cols-string-T4", lambda x: ma.load_comparisons(x.d / "t.csv",
                                                                                sample_cols="sample_a,sample_b"),
        True),
    lib("load-comparisons-sample-cols-one", lambda x: ma.load_comparisons(x.d / "t.csv", sample_cols=("sample_a",)),
        param="sample_cols"),
    lib("load-comparisons-missing", lambda x: ma.load_comparisons(x.d / "nope.csv"), says="nope.csv"),
    lib("load-comparisons-directory", lambda x: ma.load_comparisons(x.d / "emptydir"), says="emptydir"),
    lib("load-comparisons-binary", lambda x: ma.load_comparisons(x.d / "t_binary.csv"), says="t_binary.csv"),
    lib("load-comparisons-empty", lambda x: ma.load_comparisons(x.d / "t_empty.csv"), says="t_empty.csv"),
    lib("load-comparisons-nan", lambda x: ma.load_comparisons(x.d / "t_nan.csv"), says="row"),
    lib("load-comparisons-score-col-wrong", lambda x: ma.load_comparisons(x.d / "t.csv", score_col="nope"),
        says="nope"),
    lib("load-comparisons-label-yesno", lambda x: ma.load_comparisons(x.d / "t_label_yesno.csv", label_col="label"),
        True),
    lib("load-comparisons-duplicates-refuse", lambda x: ma.load_comparisons(x.d / "t_dup.csv", duplicates="refuse"),
        says="rows"),
    lib("load-comparisons-path-int", lambda x: ma.load_comparisons(3), says="give a file path"),
    lib("load-comparisons-metadata-missing", lambda x: ma.load_comparisons(x.d / "t_nogroups.csv", group_by="group",
                                                                           metadata_path=x.d / "meta_missing.csv"),
        says="0"),
    lib("load-comparisons-out-of-core-csv", lambda x: ma.load_comparisons(x.d / "t.csv", out_of_core=True),
        says="out-of-core"),
    # ----- ma.load_samples
    lib("load-samples-ok", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy", group_by="group"),
        True),
    lib("load-samples-parquet-list-ok", lambda x: ma.load_samples(x.d / "s_list.parquet", embedding_col="embedding"),
        True),
    lib("load-samples-missing", lambda x: ma.load_samples(x.d / "nope.csv", x.d / "embeddings.npy"),
        says="nope.csv"),
    lib("load-samples-directory", lambda x: ma.load_samples(x.d, x.d / "embeddings.npy"), says="director"),
    lib("load-samples-no-embeddings", lambda x: ma.load_samples(x.d / "samples.csv"), says="embedding"),
    lib("load-samples-embeddings-short", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "e_short.npy"),
        says="rows"),
    lib("load-samples-embeddings-text", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "e_text.npy"),
        says="e_text.npy"),
    lib("load-samples-embeddings-pickle", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "e_obj.npy"),
        says="e_obj.npy"),
    lib("load-samples-id-col-wrong", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy",
                                                               id_col="nope"), says="nope"),
    lib("load-samples-group-by-missing", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy",
                                                                   group_by="nope"), says="nope"),
    lib("load-samples-group-by-list-ok", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy",
                                                                   group_by=["group"]), True),
    lib("load-samples-pairs-unknown", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy",
                                                                pairs_path=x.d / "pairs_unknown.csv"), says="ghost"),
    lib("load-samples-metric-foo", lambda x: ma.load_samples(x.d / "samples.csv", x.d / "embeddings.npy",
                                                             metric="foo"), says="'foo'"),
    lib("load-samples-pipe-intersection-S2", lambda x: ma.load_samples(x.d / "s_pipe.csv", x.d / "embeddings.npy",
                                                                       group_by=["g1", "g2"]), says="|"),
]


@pytest.mark.parametrize("case", LIB_CASES)
def test_library(case: Lib, x: SimpleNamespace):
    before = _digest(x.d, FORMATS)
    fingerprint = _fingerprint(x)
    result = error = other = None
    try:
        result = case.call(x)
    except ma.InputError as e:
        error = e
    except Exception as e:  # noqa: BLE001 - re-raised below, after the inputs are checked
        other = e
    assert _fingerprint(x) == fingerprint, "the caller's arrays or DataFrames were modified"
    changed = _unchanged(before, _digest(x.d, FORMATS))
    assert not changed, f"input files modified: {changed}"
    if other is not None:
        raise other  # anything but ma.InputError: the case fails with its traceback
    if case.ok:
        assert error is None, f"InputError: {error} (param={error.param})"
        if case.check is not None:
            case.check(result, x)
    else:
        assert error is not None, f"no InputError; returned {type(result).__name__}"
        if case.says is not None:
            assert case.says in str(error), str(error)
        if case.param is not None:
            assert error.param == case.param, (error.param, str(error))


def test_the_table_is_large_enough():
    assert len(CLI_CASES) + len(LIB_CASES) >= 300
    for table in (CLI_CASES, LIB_CASES):
        ids = [p.id for p in table]
        assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
