"""Nothing the user gave is ever modified or replaced (#42, item 1): every command that writes refuses, before any
work, an output that is an input of the same run or an existing file it did not write; SIGTERM cleans up as
Ctrl-C does. The hostile report's data-loss cases (D1-D3, P1) are re-run here, each against the bytes of the
files it would have destroyed."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit import outputs
from matchaudit.cli import app
from tests.test_labelfree_cli import _table as labelfree_table

runner = CliRunner()


def digest(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (names relative to it) -> its SHA-256."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """A user's folder ``d``: the demo's inputs, a small simulated set, and an audit of the trial list in ``d/res``."""
    d = tmp_path_factory.mktemp("user")
    sim = ma.simulate(samples_per_identity=4, dim=16, seed=3)
    sim.write(d / "sim", fmt="csv")
    trials = sim.trial_list(60, 400, seed=1)
    trials.to_csv(d / "comparisons.csv", index=False)
    labelfree_table(d)  # scores.csv: label-free scores with a few labels
    res = runner.invoke(app, ["audit", "--comparisons", str(d / "comparisons.csv"), "--group-by", "group", "--fmr",
                              "0.1", "--no-intervals", "--no-figures", "--out", str(d / "res"), "--quiet"])
    assert res.exit_code == 0, res.output
    return d


def refused(args: list[str], folder: Path, says: str) -> str:
    """Run ``args``; assert exit 2, the message, and ``folder`` byte for byte as it was (no partial folder)."""
    before = digest(folder)
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and says in res.output, res.output
    assert digest(folder) == before
    assert not list(folder.rglob(".matchaudit-partial-*"))
    return res.output


def test_d1_test_out_at_the_input_folder_keeps_the_trial_list(data):
    """`test --comparisons d/comparisons.csv --out d/` replaced the 7,500-row trial list with the test's table."""
    out = refused(["test", "--comparisons", str(data / "comparisons.csv"), "--group-by", "group", "--metric",
                   "fnmr_at_fmr", "--fmr", "0.1", "--n-resamples", "19", "--out", str(data) + "/"], data,
                  "is an input of this run")
    assert out.startswith("Error: --out") and "comparisons.csv" in out


@pytest.mark.parametrize("target", ["comparisons.csv", "sim/embeddings.npy", "res/results.json", "res/det.csv"])
def test_d2_audit_report_never_replaces_an_input_or_the_runs_own_files(data, target):
    """`--report` onto an input (the trial list, embeddings) or onto the audit's own results replaced it."""
    refused(["audit", "--comparisons", str(data / "comparisons.csv"), "--group-by", "group", "--fmr", "0.1",
             "--no-intervals", "--no-figures", "--out", str(data / "res"), "--quiet", "--report",
             str(data / target)], data, "--report")


@pytest.mark.parametrize("target, says", [("res/results.json", "is an input of this run"),
                                          ("res/operating_points.csv", "one of the audit's own outputs"),
                                          ("res/ape.png", "one of the audit's own outputs"),
                                          ("comparisons.csv", "not written by matchaudit"),
                                          ("sim/samples.csv", "one of matchaudit's simulate outputs")])
def test_d2_report_out_never_replaces_results_or_a_users_file(data, target, says):
    refused(["report", str(data / "res"), "--out", str(data / target)], data, says)


def test_d3_demo_into_a_users_folder_keeps_their_files(tmp_path):
    """`demo --out DIR` replaced DIR/data/samples.parquet (and every other demo file) of a user's folder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "samples.parquet").write_text("my precious")
    refused(["demo", "--out", str(tmp_path), "--quiet"], tmp_path, "not written by matchaudit")
    (tmp_path / "data" / "samples.parquet").unlink()
    (tmp_path / "report.html").write_text("<p>my notes</p>")
    refused(["demo", "--out", str(tmp_path), "--quiet"], tmp_path, "report.html")


@pytest.mark.parametrize("args, name", [
    (["simulate", "--identities", "6", "--dim", "8"], "embeddings.npy"),
    (["coverage", "--datasets", "2", "--identities", "10", "--samples", "3", "--dim", "8", "--n-resamples", "40"],
     "coverage.md"),
    (["protocol", "--samples", "{d}/sim/samples.csv", "--genuine", "10", "--impostor", "50"], "pairs.csv"),
    (["estimate", "{d}/scores.csv", "--score-col", "sim", "--group-col", "eth", "--label-col", "lab", "--sampler",
      "numpy", "--draws", "1500", "--fmr", "0.01", "--family", "sas"], "estimate.json"),
    (["compare", "--comparisons-a", "{d}/comparisons.csv", "--comparisons-b", "{d}/comparisons.csv", "--fmr", "0.1",
      "--n-resamples", "40", "--n-permutations", "9"], "compare.json"),
    (["test", "--comparisons", "{d}/comparisons.csv", "--group-by", "group", "--fmr", "0.1", "--n-resamples", "19"],
     "test.json"),
    (["audit", "--comparisons", "{d}/comparisons.csv", "--fmr", "0.1", "--no-intervals"], "results.json"),
])
def test_every_command_refuses_to_replace_a_file_it_did_not_write(data, tmp_path, args, name):
    """A user's file of an output's name in --out: refused before any work, named, left as it was; once it is
    moved away the same command runs, and its re-run replaces its own outputs."""
    (tmp_path / name).write_text("mine")
    (tmp_path / "notes.txt").write_text("mine too")
    cmd = [a.format(d=data) for a in args] + ["--out", str(tmp_path), "--quiet"]
    out = refused(cmd, tmp_path, "not written by matchaudit")
    assert name in out and "--out" in out
    (tmp_path / name).unlink()
    for _ in range(2):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, res.output
    assert (tmp_path / "notes.txt").read_text() == "mine too"


@pytest.mark.parametrize("args, given", [
    (["estimate", "{out}/estimate.csv", "--score-col", "score", "--group-col", "group", "--fmr", "0.1"],
     "estimate.csv"),
    (["protocol", "--samples", "{out}/pairs.csv", "--genuine", "10", "--impostor", "50"], "pairs.csv"),
    (["compare", "--comparisons-a", "{out}/differences.csv", "--comparisons-b", "{out}/differences.csv"],
     "differences.csv"),
])
def test_an_input_named_like_an_output_is_refused_even_after_a_run_wrote_it(data, tmp_path, args, given):
    """An output of an earlier run used as the next run's input (its name is the command's own): still an input."""
    src = data / ("sim/samples.csv" if given == "pairs.csv" else "comparisons.csv")
    shutil.copy(src, tmp_path / given)
    cmd = [a.format(out=tmp_path) for a in args] + ["--out", str(tmp_path)]
    refused(cmd, tmp_path, "is an input of this run")


def test_an_output_edited_since_is_no_longer_ours(data, tmp_path):
    """The manifest records each file's size and SHA-256: a results.json the user edited (or replaced with their
    own) after the run is refused, not overwritten."""
    cmd = ["audit", "--comparisons", str(data / "comparisons.csv"), "--group-by", "group", "--fmr", "0.1",
           "--no-intervals", "--no-figures", "--out", str(tmp_path), "--quiet"]
    assert runner.invoke(app, cmd).exit_code == 0
    with (tmp_path / "fairness.csv").open("a") as f:
        f.write("# reviewed by me\n")
    refused(cmd, tmp_path, "changed since")
    refused(["report", str(tmp_path), "--out", str(tmp_path / "fairness.csv")], tmp_path, "fairness.csv")


def test_report_out_with_a_trailing_slash_is_a_folder(data, tmp_path):
    """`report --out dir/` wrote a file named dir (M15); a folder, given or existing, gets report.html."""
    res = runner.invoke(app, ["report", str(data / "res"), "--out", f"{tmp_path}/new/", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "new" / "report.html").is_file()
    res = runner.invoke(app, ["report", str(data / "res"), "--out", str(tmp_path / "new"), "--quiet"])
    assert res.exit_code == 0, res.output  # an existing folder; the earlier report there is ours: replaced
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == [".matchaudit-report", "report.html"]
    (tmp_path / "mine.html").write_text("<p>mine</p>")
    refused(["report", str(data / "res"), "--out", str(tmp_path / "mine.html")], tmp_path, "mine.html")


def test_library_writers_follow_the_same_rule(data, tmp_path):
    """Audit.save, SimulatedData.write and write_report: the user's file in the way -> InputError, untouched."""
    from matchaudit.report.html import write_report

    result = ma.audit(ma.load_comparisons(data / "comparisons.csv", group_by="group"), fmr=0.1, intervals=False)
    (tmp_path / "det.csv").write_text("mine")
    with pytest.raises(ma.InputError, match="det.csv exists and was not written by matchaudit") as e:
        result.save(tmp_path, figures=False)
    assert e.value.param == "out" and (tmp_path / "det.csv").read_text() == "mine"
    assert not (tmp_path / "results.json").exists()
    (tmp_path / "embeddings.npy").write_text("mine")
    with pytest.raises(ma.InputError, match="embeddings.npy"):
        ma.simulate(samples_per_identity=2, dim=8).write(tmp_path)
    assert (tmp_path / "embeddings.npy").read_text() == "mine"
    (tmp_path / "det.csv").unlink()
    result.save(tmp_path, figures=False)
    with pytest.raises(ma.InputError, match="is an input of this run") as e:
        write_report(tmp_path / "results.json", tmp_path / "results.json")
    assert e.value.param == "report"


def test_a_file_appearing_during_the_run_is_still_refused(tmp_path):
    """The check is repeated as the files are moved into place: one created meanwhile is not replaced, and the
    staged files are removed."""
    with pytest.raises(ma.InputError, match="coverage.md"):
        with outputs.staged(tmp_path, "coverage") as tmp:
            (tmp / "coverage.md").write_text("new")
            (tmp_path / "coverage.md").write_text("user's, written meanwhile")
    assert (tmp_path / "coverage.md").read_text() == "user's, written meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["coverage.md"]


def test_an_undeclared_output_name_is_a_programming_error(tmp_path):
    """Every name a command writes is in outputs.SETS (what the checks look for before any work)."""
    with pytest.raises(RuntimeError, match="undeclared"):
        with outputs.staged(tmp_path, "coverage") as tmp:
            (tmp / "surprise.csv").write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_a_manifest_of_an_earlier_version_names_only(tmp_path):
    """Sets written before fingerprints were recorded (one name a line) are still the command's own."""
    (tmp_path / "coverage.md").write_text("old")
    outputs.manifest(tmp_path, "coverage").write_text("coverage.md\n")
    with outputs.staged(tmp_path, "coverage") as tmp:
        (tmp / "coverage.csv").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".matchaudit-coverage", "coverage.csv"]


def test_sigterm_during_the_save_cleans_up_like_ctrl_c(data, tmp_path):
    """P1: SIGTERM (timeout, kill, CI cancellation) while the outputs were staged left a .matchaudit-partial-*
    folder for good. Now it unwinds as Ctrl-C does: exit 143, the earlier outputs intact, nothing staged left."""
    out = tmp_path / "out"
    args = ["audit", "--comparisons", str(data / "comparisons.csv"), "--group-by", "group", "--fmr", "0.1",
            "--no-intervals", "--out", str(out), "--quiet"]
    assert runner.invoke(app, args).exit_code == 0
    before = digest(out)
    script = textwrap.dedent(f"""
        import os, signal, sys
        import matchaudit.plots.det as det
        def plot_det(*a, **k):
            os.kill(os.getpid(), signal.SIGTERM)
            raise AssertionError("SIGTERM was not raised where it landed")
        det.plot_det = plot_det
        sys.argv = ["matchaudit", *{args!r}]
        from matchaudit.__main__ import main
        main()
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 143, res.stderr
    assert "Terminated." in res.stderr and "Traceback" not in res.stderr
    assert digest(out) == before
    assert not list(out.glob(".matchaudit-partial-*"))


def test_sigterm_handler_is_restored_after_a_command(data, tmp_path):
    """The handler lives only while a command runs: the host process's own SIGTERM handling comes back."""
    old = signal.getsignal(signal.SIGTERM)
    res = runner.invoke(app, ["report", str(data / "res"), "--out", str(tmp_path / "r.html"), "--quiet"])
    assert res.exit_code == 0, res.output
    assert signal.getsignal(signal.SIGTERM) is old


def test_embeddings_and_samples_inputs_are_checked_too(data, tmp_path):
    """Inputs from samples + embeddings: an embeddings file named like an output in --out is refused."""
    sim = data / "sim"
    shutil.copy(sim / "samples.csv", tmp_path / "samples.csv")
    np.save(tmp_path / "det_pooled.png", np.load(sim / "embeddings.npy"))  # np.save adds .npy
    emb = tmp_path / "det_pooled.png"
    os.replace(tmp_path / "det_pooled.png.npy", emb)
    assert pd.read_csv(tmp_path / "samples.csv").shape[0] > 0
    refused(["audit", "--samples", str(tmp_path / "samples.csv"), "--embeddings", str(emb), "--group-by", "group",
             "--fmr", "0.1", "--no-intervals", "--out", str(tmp_path)], tmp_path, "is an input of this run")
