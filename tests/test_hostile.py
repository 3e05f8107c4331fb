"""Every command as a hostile new user runs it (#15): bad flags, bad files, nonsense values. Each case must
exit with status 2, print a message naming the flag or the rows, never a traceback, and leave the input files
byte for byte as they were."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from tests.test_labelfree_cli import _table as labelfree_table
from tests.test_hostile_table import _comparisons

runner = CliRunner()
FORMATS = Path(__file__).parent / "fixtures" / "formats"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small valid inputs (a simulated data set, a comparison table, an audit's results.json) and broken ones."""
    d = tmp_path_factory.mktemp("hostile")
    assert runner.invoke(app, ["simulate", "--identities", "30", "--samples-per-identity", "3", "--dim", "16",
                               "--out", str(d)]).exit_code == 0
    t = _comparisons()  # the hostile table's tidy comparison table (same seed, same rows)
    t.to_csv(d / "t.csv", index=False)
    t.to_csv(d / "semicolon.csv", index=False, sep=";")
    t.replace({"group_a": {"F": "all"}, "group_b": {"F": "all"}}).to_csv(d / "allgroup.csv", index=False)
    t.assign(score=t.score.astype(str).str.replace(".", ",", regex=False)).to_csv(d / "comma.csv", index=False,
                                                                                   sep=";")
    t.assign(score=t.score.astype(object).where(t.index != 7, "x")).to_csv(d / "badscore.csv", index=False)
    t.assign(score=0.5).to_csv(d / "same.csv", index=False)
    meta = pd.DataFrame({"identity": np.arange(40), "group": np.where(np.arange(40) % 2 == 0, "F", "M")})
    meta.to_csv(d / "meta_same.csv", index=False)
    meta.assign(group=meta.group.where(meta.identity != 3, "F")).to_csv(d / "meta_clash.csv", index=False)
    (d / "empty.csv").write_text("sample_a,sample_b,identity_a,identity_b,score\n")
    (d / "notparquet.parquet").write_text("not a parquet file\n")
    np.save(d / "short.npy", np.zeros((5, 16), np.float32))
    res = runner.invoke(app, ["audit", "--comparisons", str(d / "t.csv"), "--group-by", "group", "--fmr", "0.1",
                              "--n-resamples", "50", "--out", str(d / "audit"), "--quiet"])
    assert res.exit_code == 0, res.output
    text = (d / "audit" / "results.json").read_text()
    (d / "truncated.json").write_text(text[: len(text) // 2])
    (d / "notjson.json").write_text("hello\n")
    (d / "incomplete.json").write_text("{}")
    doc = json.loads(text)
    (d / "wrongtype.json").write_text(json.dumps({**doc, "operating_points": 3}))
    (d / "afile").write_text("x")
    labelfree_table(d)  # scores.csv: label-free scores with a few labels
    (d / "bad_bob.csv").write_text("probe_template_id,probe_subject_id,bio_ref_template_id,bio_ref_subject_id,score\n"
                                   "p1,s1,r1,s1,0.9\np2,s2,r1,s1,x\n")
    (d / "bad.score").write_text("a-1 a-2 0.9\na-1 b-2 0.1\n")
    return d


S = ["--samples", "{d}/samples.parquet", "--embeddings", "{d}/embeddings.npy"]
T = ["--comparisons", "{d}/t.csv", "--group-by", "group"]
A = ["audit", *S, "--group-by", "group", "--no-intervals"]
AT = ["audit", *T, "--no-intervals"]
CMP = ["compare", "--comparisons-a", "{d}/t.csv", "--comparisons-b", "{d}/t.csv", "--group-by", "group"]
TEST = ["test", *T]
EST = ["estimate", "{d}/t.csv", "--group-col", "group", "--draws", "20", "--chains", "2"]

CASES = [
    # audit: values
    (A + ["--fmr", "2"], "--fmr"),
    (A + ["--fmr", "-1"], "--fmr"),
    (A + ["--fmr", ""], "--fmr"),
    (A + ["--fmr", "1e-3,1e-3"], "--fmr"),
    (A + ["--fmr", "abc"], "--fmr"),
    (A + ["--threshold", "nan"], "--threshold"),
    (A + ["--threshold", "0.3,0.3"], "--threshold"),
    (["audit", *S, "--n-resamples", "1"], "--n-resamples"),
    (["audit", *S, "--n-resamples", "0"], "--n-resamples"),
    (["audit", *S, "--n-resamples", "-5"], "--n-resamples"),
    (["audit", *S, "--level", "1.5"], "--level"),
    (["audit", *S, "--n-resamples", "1000", "--memory", "0.0001"], "over the budget of 100 kB (--memory)"),
    (["audit", *S, "--memory", "-1"], "--memory"),
    ([*CMP, "--n-resamples", "100000000"], "over the budget"),  # kept replicates, refused before any work
    ([*CMP, "--n-resamples", "40", "--test-resamples", "1000000000"], "--test-resamples 1,000,000,000 keeps"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--fmr", "0.1", "--equivalence", "1.1,2"],
     "--equivalence"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--equivalence", "0.8,1.25"], "--fmr"),
    (A + ["--equivalence", "0.8"], "--equivalence"),
    (["audit", *S, "--group-by", "group", "--equivalence", "0.8,1.25", "--level", "0.3"], "--level"),
    (A + ["--equivalence", "-0.1,0.1", "--equivalence-scale", "log"], "--equivalence-scale"),
    (["audit", *S, "--ci-method", "wilson,,vertex"], "--ci-method"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--fmr", "0.1", "--n-resamples", "1000000000"],
     "over the budget"),
    (["audit", *S, "--level", "0"], "--level"),
    (A + ["--dcf-p-target", "1.5"], "--dcf-p-target"),
    (A + ["--dcf-p-target", "0"], "--dcf-p-target"),
    (A + ["--dcf-c-miss", "-1"], "--dcf-c-miss"),
    (A + ["--dcf-c-fa", "0"], "--dcf-c-fa"),
    (A + ["--rule", "="], "--rule"),
    (A + ["--weighting", "foo"], "--weighting"),
    (["audit", *S, "--ci-method", "foo"], "--ci-method"),
    (A + ["--threshold-impostors", "foo"], "--threshold-impostors"),
    (A + ["--zero-policy", "foo"], "--zero-policy"),
    (A + ["--backend", "tpu"], "--backend"),
    (["audit", *S, "--group-by", "nope", "--no-intervals"], "nope"),
    # audit: files and folders
    (A + ["--out", "{d}/afile"], "--out"),
    (A + ["--out", "/proc/matchaudit"], "--out"),
    (A + ["--report", "/proc/nope/r.html"], "--report"),
    (["audit", "--samples", "{d}/missing.parquet", "--embeddings", "{d}/embeddings.npy"], "missing.parquet"),
    (["audit", "--samples", "{d}/samples.parquet"], "--embeddings"),
    (["audit", "--samples", "{d}/samples.parquet", "--embeddings", "{d}/short.npy"], "rows"),
    (["audit", "--samples", "{d}/notparquet.parquet", "--embeddings", "{d}/embeddings.npy"], "notparquet"),
    (["audit", "--comparisons", "{d}/badscore.csv"], "rows 8 (first data row = 1)"),
    (["audit", "--comparisons", "{d}/empty.csv"], "empty.csv"),
    (["audit", "--comparisons", "{d}/t.csv", "--score-col", "nope"], "nope"),
    (["audit", "--comparisons", "{d}/semicolon.csv"], "';'"),
    (["audit", "--comparisons", "{d}/comma.csv"], "';'"),
    (["audit"], "either --samples"),
    (["audit", "--comparisons", "{d}/allgroup.csv", "--group-by", "group"], "a group is named 'all'"),
    (AT + ["--metadata", "{d}/meta_clash.csv"], "'group' is given twice"),
    (["audit", "--comparisons", "{d}/t.csv", "--samples", "{d}/samples.parquet"], "--comparisons"),
    # audit: the toolkit formats (fixtures of tests/test_formats_toolkits.py; broken ones made by `inputs`)
    (["audit", "--format", "bob-csv", "--scores", "{d}/bad_bob.csv"], "line 3"),
    (["audit", "--format", "frvt", "--scores", "{f}/frvt_match.log", "--subject-of", "{f}/frvt_subjects.txt"],
     "--fta-policy"),
    (["audit", "--format", "frvt", "--scores", "{f}/frvt_match.log"], "--subject-of"),
    (["audit", "--format", "wespeaker", "--scores", "{d}/bad.score"], "trials"),
    (["audit", "--format", "voxsrc", "--trials", "{f}/vox_trials.txt", "--scores", "{f}/wespeaker.score"],
     "wrong number of columns at lines 1, 2"),
    (["audit", "--format", "nist-sre", "--scores", "{f}/sre_output.tsv"], "--key"),
    (["audit", "--format", "nist-sre", "--scores", "{f}/sre_key.tsv", "--key", "{f}/sre_key.tsv"], "'LLR'"),
    (["audit", "--format", "pair-table", "--comparisons", "{f}/bfw_pairs.csv", "--score-col", "arcface"],
     "--score-col"),
    (["audit", "--format", "score-matrix", "--scores", "{f}/matrix.npy", "--ids", "{f}/matrix_probes.txt",
      "--metadata", "{f}/identity_embeddings.csv"], "8 ids"),
    (["audit", "--format", "score-matrix", "--scores", "{f}/matrix.npy", "--ids", "{f}/matrix_ids.txt"],
     "--metadata"),
    (["audit", "--format", "bob", "--scores", "{f}/bob4.txt", "--fta-policy", "exclude"], "--fta-policy"),
    # compare
    (CMP + ["--fmr", "2"], "--fmr"),
    (CMP + ["--fmr", "-1"], "--fmr"),
    (CMP + ["--fmr", ""], "--fmr"),
    (CMP + ["--level", "1.5"], "--level"),
    (CMP + ["--n-resamples", "0"], "--n-resamples"),
    (CMP + ["--test-resamples", "-1"], "--test-resamples"),
    (CMP + ["--method", "foo"], "--ci-method"),
    (["compare", "--comparisons-a", "{d}/t.csv"], "--comparisons-b"),
    (["compare", "--comparisons", "{d}/t.csv", "--score-cols", "score"], "--score-cols"),
    (["compare", "--comparisons", "{d}/t.csv"], "--score-cols"),
    (CMP + ["--out", "{d}/afile"], "--out"),
    # test
    (TEST + ["--fmr", "2"], "--fmr"),
    (TEST + ["--fmr", "-0.1"], "--fmr"),
    (TEST + ["--metric", "foo"], "--metric"),
    (TEST + ["--level", "2"], "--level"),
    (TEST + ["--fmr", "0.1", "--n-resamples", "0"], "--n-resamples"),
    (TEST + ["--metric", "fnmr"], "--threshold"),
    (TEST + ["--alternative", "foo"], "--alternative"),
    (["test", "--table", "{d}/missing.csv", "--y-pred", "p"], "missing.csv"),
    # report
    (["report", "{d}/truncated.json"], "truncated.json"),
    (["report", "{d}/notjson.json"], "notjson.json"),
    (["report", "{d}/incomplete.json"], "incomplete.json"),
    (["report", "{d}/wrongtype.json"], "operating_points"),
    (["report", "{d}/missing.json"], "missing.json"),
    (["report", "{d}/audit/results.json", "--out", "/proc/matchaudit/r.html"], "--out"),
    (["report", "{d}/audit/results.json", "--compare", "{d}/notjson.json"], "--compare"),
    (["report", "{d}/audit/results.json", "--estimate", "{d}/incomplete.json"], "--estimate"),
    # estimate
    (["estimate", "{d}/missing.csv"], "missing.csv"),
    (EST + ["--score-col", "nope"], "nope"),
    (EST + ["--fmr", "2"], "--fmr"),
    (EST + ["--level", "1.5"], "--level"),
    (EST[:1] + ["{d}/same.csv"] + EST[2:], "identical"),
    (EST + ["--chains", "0"], "--chains"),
    (EST + ["--draws", "0"], "--draws"),
    # protocol
    (["protocol", "--samples", "{d}/samples.parquet", "--genuine", "-1", "--impostor", "10"], "--genuine"),
    (["protocol", "--samples", "{d}/samples.parquet", "--genuine", "10", "--impostor", "1000000000"],
     "--impostor"),
    # coverage and simulate
    (["coverage", "--datasets", "0"], "--datasets"),
    (["coverage", "--kappa", "x"], "--kappa"),
    (["coverage", "--group-kappas", "1,2"], "--group-kappas"),
    (["coverage", "--dim", "2"], "--dim"),
    (["simulate", "--identities", "0"], "--identities"),
    (["simulate", "--dim", "1"], "--dim"),
    (["simulate", "--samples-per-identity", "x"], "--samples-per-identity"),
]


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.mark.parametrize("args, message", CASES, ids=[" ".join(a[:1] + a[-2:]) for a, _ in CASES])
def test_bad_input_exits_2_naming_the_flag_or_rows(inputs, tmp_path, args, message):
    args = [a.replace("{d}", str(inputs)).replace("{f}", str(FORMATS)) for a in args]
    if "--out" not in args and args[0] != "report":
        args += ["--out", str(tmp_path / "o")]
    before = _digest(inputs)
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.exit_code, res.output[-2000:])
    assert "Traceback" not in res.output and res.exception is None or isinstance(res.exception, SystemExit)
    assert message in res.output, res.output[-2000:]
    assert _digest(inputs) == before


def test_the_suite_is_large_enough():
    assert len(CASES) >= 60


def test_ungrouped_audit_writes_each_row_once(inputs, tmp_path):
    """Without --group-by the overall "all" and the one implicit group "all" used to be written twice each."""
    res = runner.invoke(app, ["audit", "--comparisons", str(inputs / "t.csv"), "--fmr", "0.1,0.01", "--n-resamples",
                              "50", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
    for name, keys in (("operating_points", ["weighting", "kind", "target", "group"]),
                       ("curve_summaries", ["weighting", "group"]),
                       ("intervals", ["weighting", "metric", "kind", "target", "group"])):
        df = pd.read_csv(tmp_path / f"{name}.csv")
        assert len(df) > 0 and not df.duplicated(keys).any(), name
        assert set(df.group) == {"all"}
    det = pd.read_csv(tmp_path / "det.csv")
    assert set(det.group) == {"all"}


def test_outputs_are_one_set_replaced_whole_and_never_half_written(inputs, tmp_path, monkeypatch):
    """A re-run used to leave the previous run's intervals.csv and report.html beside the new results.json, and an
    interrupted run left a complete-looking mix."""
    base = ["audit", "--comparisons", str(inputs / "t.csv"), "--group-by", "group", "--fmr", "0.1", "--out",
            str(tmp_path), "--quiet"]
    assert runner.invoke(app, [*base, "--n-resamples", "50", "--report", str(tmp_path / "r.html")]).exit_code == 0
    assert runner.invoke(app, ["report", str(tmp_path / "results.json")]).exit_code == 0
    assert (tmp_path / "intervals.csv").exists() and (tmp_path / "report.html").exists()
    assert runner.invoke(app, [*base, "--no-intervals"]).exit_code == 0
    assert not (tmp_path / "intervals.csv").exists() and not (tmp_path / "report.html").exists()
    assert (tmp_path / "r.html").exists()  # a file named by the user is theirs, not part of the set
    before = (tmp_path / "results.json").read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("matchaudit.plots.det.plot_det", interrupted)
    res = runner.invoke(app, [*base, "--fmr", "0.2"])
    assert res.exit_code == 130
    assert (tmp_path / "results.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".matchaudit-partial")]


@pytest.mark.parametrize("args, hook", [
    (["compare", "--comparisons-a", "{d}/t.csv", "--comparisons-b", "{d}/t.csv", "--fmr", "0.1", "--n-resamples",
      "40", "--test-resamples", "19"], "matchaudit.cli.compare.plot_compare"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--fmr", "0.1", "--n-resamples", "39"],
     "matchaudit.cli.matching_writer.plot_null"),
    (["estimate", "{d}/scores.csv", "--score-col", "sim", "--group-col", "eth", "--label-col", "lab", "--sampler",
      "numpy", "--draws", "1500", "--fmr", "0.01", "--family", "sas"], "matchaudit.labelfree.figures.plot_ppc"),
    (["protocol", "--samples", "{d}/samples.parquet", "--genuine", "50", "--impostor", "200"],
     "matchaudit.encoding.jsonable"),
    (["coverage", "--datasets", "2", "--identities", "20", "--samples", "3", "--dim", "8", "--n-resamples", "50"],
     "matchaudit.studies.coverage.markdown"),
])
def test_every_command_writes_its_outputs_as_one_set(inputs, tmp_path, monkeypatch, args, hook):
    """compare, test, estimate, protocol and coverage wrote file by file: a run that failed or was interrupted
    half-way left a mix of new and previous files (protocol wrote pairs.csv before refusing its options)."""
    base = [a.format(d=inputs) for a in args] + ["--out", str(tmp_path), "--quiet"]
    first = runner.invoke(app, base + ["--seed", "1"])
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert len(before) >= 3, before.keys()  # the outputs and the set's manifest

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(hook, interrupted)
    res = runner.invoke(app, base + ["--seed", "2"])
    assert res.exit_code == 130, res.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".matchaudit-partial")]


def test_commands_sharing_a_folder_keep_each_others_outputs(inputs, tmp_path):
    """Each command's set is its own: a compare or test written into an audit's folder (where the report looks for
    compare.json) leaves the audit's files, and the report built there includes the comparison."""
    t = str(inputs / "t.csv")
    out = ["--out", str(tmp_path), "--quiet"]
    assert runner.invoke(app, ["audit", "--comparisons", t, "--group-by", "group", "--fmr", "0.1", "--n-resamples",
                               "40", *out]).exit_code == 0
    audit_files = {p.name for p in tmp_path.iterdir()}
    for args in (["compare", "--comparisons-a", t, "--comparisons-b", t, "--group-by", "group", "--fmr", "0.1",
                  "--n-resamples", "40", "--test-resamples", "19"],
                 ["test", "--comparisons", t, "--group-by", "group", "--fmr", "0.1", "--n-resamples", "39"]):
        res = runner.invoke(app, args + out)
        assert res.exit_code == 0, res.output
    names = {p.name for p in tmp_path.iterdir()}
    assert audit_files <= names and {"compare.json", "test.json"} <= names
    res = runner.invoke(app, ["report", str(tmp_path / "results.json")])
    assert res.exit_code == 0 and "Warning" not in res.output, res.output
    assert "<h2>Model comparison" in (tmp_path / "report.html").read_text()


def test_reading_is_right_with_zero_and_tied_rates_and_tests_cover_fmr(tmp_path):
    """The Reading used to say "group A has the highest FNMR, 0% (0/180), infinitely many times group A's 0%" and,
    in an audit run with --tests, "No test was run on this gap" for every FMR gap."""
    rng = np.random.default_rng(3)
    rows = []
    for k in range(60):
        g = "F" if k % 2 else "M"
        for i in range(4):
            rows.append((f"{k}_{i}", k, g))
    s = pd.DataFrame(rows, columns=["sample_id", "identity", "group"])
    emb = np.zeros((len(s), 64), np.float32)
    emb[np.arange(len(s)), s.identity.to_numpy()] = 1.0  # genuine pairs score ~1, impostors ~0: no FNMR errors
    emb += rng.normal(scale=0.01, size=emb.shape).astype(np.float32)
    s.to_parquet(tmp_path / "s.parquet")
    np.save(tmp_path / "e.npy", emb)
    res = runner.invoke(app, ["audit", "--samples", str(tmp_path / "s.parquet"), "--embeddings", str(tmp_path / "e.npy"),
                              "--group-by", "group", "--fmr", "0.1", "--no-intervals", "--tests", "--test-resamples",
                              "99", "--out", str(tmp_path / "o"), "--quiet", "--report", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    reading = html[html.index("<h2>Reading</h2>"):]
    reading = reading[:reading.index("</div>")]
    assert "every group has the same FNMR, 0% (no errors in any group)" in reading
    assert "infinitely many times" not in reading and "No test was run" not in reading
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert {t["metric"] for t in doc["tests"]} == {"fnmr", "fmr"}
    assert "The gap is" in reading  # the FMR gap reads its test's verdict


@pytest.mark.parametrize("case, expected", [("same", "every score is the same value"),
                                            ("negated", "are these distances?"), ("t", None)])
def test_scores_that_look_wrong_are_flagged(inputs, tmp_path, case, expected):
    """Distances given as similarities (AUC 0.0002) and constant scores used to pass without a word."""
    path = inputs / f"{case}.csv"
    if case == "negated":
        t = pd.read_csv(inputs / "t.csv")
        path = tmp_path / "negated.csv"
        t.assign(score=-t.score).to_csv(path, index=False)
    res = runner.invoke(app, ["audit", "--comparisons", str(path), "--fmr", "0.1", "--no-intervals", "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    warnings = json.loads((tmp_path / "o" / "results.json").read_text())["summary"]["warnings"]
    if expected is None:
        assert not any("distances" in w or "same value" in w for w in warnings)
    else:
        assert any(expected in w for w in warnings) and expected in res.output


def test_progress_counts_comparisons_times_replicates_and_prints_lines_off_a_terminal(inputs, tmp_path, meter_log):
    """The bar used to count 2,048-row blocks (the demo: 0/1 for the whole bootstrap) and print nothing outside a
    terminal."""
    seen = meter_log
    res = runner.invoke(app, ["audit", "--samples", str(inputs / "samples.parquet"), "--embeddings",
                              str(inputs / "embeddings.npy"), "--fmr", "0.1", "--n-resamples", "40", "--weighting",
                              "pooled", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    n = 90 * 89 // 2
    boot = [s for s in seen if s[3] == "comparisons x replicates" and s[2] == n * 41]
    assert boot and boot[-1][1] == n * 41  # every comparison of every replicate (and the plug-in) counted
    assert "bootstrap: 100% (" in res.output and "comparisons x replicates" in res.output


@pytest.mark.parametrize("args, label, unit", [
    (["compare", "--comparisons-a", "{d}/t.csv", "--comparisons-b", "{d}/t.csv", "--fmr", "0.1", "--n-resamples",
      "40", "--test-resamples", "19"], "paired bootstrap", "comparisons x replicates"),
    (["compare", "--comparisons-a", "{d}/t.csv", "--comparisons-b", "{d}/t.csv", "--fmr", "0.1", "--n-resamples",
      "40", "--test-resamples", "19"], "swap test at FMR 0.1", "comparisons x swaps"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--fmr", "0.1", "--n-resamples", "39"],
     "relabellings", "relabellings"),  # threshold impostors 'all': the threshold is fixed, closed form per relabelling
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--fmr", "0.1", "--threshold-impostors",
      "same-group", "--n-resamples", "39"], "relabellings", "comparisons x replicates"),
    (["test", "--comparisons", "{d}/t.csv", "--group-by", "group", "--metric", "fnmr", "--threshold", "0",
      "--n-resamples", "39"], "relabellings", "relabellings"),
])
def test_compare_and_test_show_progress_to_the_end(inputs, tmp_path, meter_log, args, label, unit):
    """compare and test used to show only a spinner: each step's display counts its real work to the end."""
    res = runner.invoke(app, [a.format(d=inputs) for a in args] + ["--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    mine = [x for x in meter_log if x[0] == label]
    assert mine and mine[-1][3] == unit and mine[-1][1] == mine[-1][2] > 0
    assert f"{label}: 100% (" in res.output


def test_metadata_that_agrees_with_the_table_is_accepted(inputs, tmp_path):
    """--metadata used to be ignored without a word when group_a/group_b columns exist; agreeing values pass."""
    res = runner.invoke(app, ["audit", "--comparisons", str(inputs / "t.csv"), "--group-by", "group", "--metadata",
                              str(inputs / "meta_same.csv"), "--no-intervals", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
