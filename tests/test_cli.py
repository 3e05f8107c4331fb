"""The commands as a user runs them: demo, audit on both input kinds, schema, help, and bad input."""

from __future__ import annotations

from matchaudit.auditing.intervals import DEFAULT_BOOTSTRAP
import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from matchaudit.cli.app import reflowed
from matchaudit.encoding import schema

runner = CliRunner()


@pytest.fixture
def demo_dir(demo_run):
    return demo_run


def test_demo_writes_valid_results_tables_and_plots(demo_dir):
    doc = json.loads((demo_dir / "results.json").read_text())
    jsonschema.validate(doc, schema())
    for name in ("operating_points", "curve_summaries", "cross_group_fmr", "fairness", "det"):
        assert len(pd.read_csv(demo_dir / f"{name}.csv")) > 0
    assert (demo_dir / "det_pooled.png").stat().st_size > 10_000
    assert (demo_dir / "det_balanced.png").exists()
    # the designed gap is visible: group B has the highest FNMR at every FMR target
    pts = [p for p in doc["operating_points"] if p["weighting"] == "pooled" and p["group"] != "all"
           and p["kind"] == "fmr_target"]
    for target in {p["target"] for p in pts}:
        at = {p["group"]: p["fnmr"] for p in pts if p["target"] == target}
        assert max(at, key=at.get) == "B"
    # group tests: every pair at every target, estimates are the audit's own FNMRs, B's designed gap is found
    ops = [p for p in doc["operating_points"] if p["weighting"] == "pooled" and p["group"] != "all"]
    rate = {(p["kind"], m, p["target"], p["group"]): p[m] for p in ops for m in ("fnmr", "fmr")}
    points = [("fmr_target", x) for x in doc["config"]["fmr_targets"]] + [
        ("fnmr_target", x) for x in doc["config"]["fnmr_targets"]]
    assert sorted((t["kind"], t["metric"], t["target"], t["group_a"], t["group_b"]) for t in doc["tests"]) == sorted(
        (k, m, x, a, b) for m in ("fnmr", "fmr") for k, x in points for a, b in (("A", "B"), ("A", "C"), ("B", "C")))
    for t in doc["tests"]:  # estimates are the audit's own rates (FMR: same-group, at the audit's threshold)
        assert t["estimate_a"] == pytest.approx(rate[t["kind"], t["metric"], t["target"], t["group_a"]], abs=1e-12)
    tests = [t for t in doc["tests"] if t["metric"] == "fnmr" and t["kind"] == "fmr_target"]
    for t in tests:
        assert t["effect"] == pytest.approx(t["estimate_a"] - t["estimate_b"], abs=1e-12)
        if t["reason"]:  # too few errors to test (A and C have none at some targets): no p-value, not significant
            assert "not testable" in t["reason"] and t["pvalue"] == "nan" and not t["significant"]
            continue
        assert t["pvalue"] <= t["pvalue_holm"] and t["pvalue_adjusted"] == t["pvalue_maxt"]
        assert t["significant"] == (t["pvalue_maxt"] <= t["alpha"]) == ("B" in (t["group_a"], t["group_b"]))
    assert sum(not t["reason"] for t in tests) >= 2


def test_audit_tests_option_on_a_small_table(tmp_path):
    fx = "tests/fixtures/formats"
    args = ["audit", "--format", "voxceleb", "--trials", f"{fx}/vox_trials.txt", "--scores",
            f"{fx}/vox_scores_aligned.txt", "--metadata", f"{fx}/vox1_meta.csv", "--group-by", "Gender",
            "--fmr", "0.1,0.2", "--no-intervals", "--out", str(tmp_path), "--quiet", "--tests"]
    res = runner.invoke(app, [*args, "--test-resamples", "49", "--seed", "3", "--level", "0.9"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    jsonschema.validate(doc, schema())
    assert [(t["metric"], t["target"]) for t in doc["tests"]] == [("fnmr", 0.1), ("fmr", 0.1), ("fnmr", 0.2),
                                                                  ("fmr", 0.2)]
    assert all(t["n_resamples"] == 49 and t["seed"] == 3 and t["alpha"] == pytest.approx(0.1)
               and (t["reason"] or 0 < t["pvalue"] <= 1) for t in doc["tests"])  # degenerate: a reason
    assert doc["config"]["tests"]["studentize"] == "permutation-sd"
    bad = runner.invoke(app, [*args, "--test-resamples", "0"])
    assert bad.exit_code == 2 and "--test-resamples" in bad.output


@pytest.mark.slow
def test_demo_is_reproducible(demo_dir, tmp_path):
    res = runner.invoke(app, ["demo", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0
    a = json.loads((demo_dir / "results.json").read_text())
    b = json.loads((tmp_path / "results.json").read_text())
    a.pop("command"), b.pop("command")
    assert a == b


def test_audit_on_a_comparison_table_matches_the_all_pairs_audit(tmp_path):
    """The same comparisons given as a scored table (distances, per-side attributes) give the same numbers as the
    all-pairs audit of the embeddings (three groups of the demo's kinds, 400 samples: 79,800 comparisons)."""
    from matchaudit.scores import pair_scores
    from matchaudit.simulation import DEMO_GROUPS, GroupSpec, simulate_vmf

    groups = {name: GroupSpec(spec.n_identities // 5, spec.kappa, centroid_kappa=spec.centroid_kappa)
              for name, spec in DEMO_GROUPS.items()}
    files = simulate_vmf(groups, dim=32, seed=3).write(tmp_path / "data")
    samples = pd.read_parquet(files.samples)
    emb = np.load(files.embeddings)
    i, j = np.triu_indices(len(samples), k=1)
    table = pd.DataFrame({
        "sample_a": samples.sample_id.values[i], "sample_b": samples.sample_id.values[j],
        "identity_a": samples.identity.values[i], "identity_b": samples.identity.values[j],
        "group_a": samples.group.values[i], "group_b": samples.group.values[j],
        "dist": -pair_scores(emb, i, j),
    })
    path = tmp_path / "cmp.parquet"
    table.to_parquet(path)
    common = ["--group-by", "group", "--fmr", "1e-2,1e-3,1e-4", "--quiet", "--no-intervals", "--no-figures"]
    res = runner.invoke(app, ["audit", "--comparisons", str(path), "--score-col", "dist", "--distance",
                              "--out", str(tmp_path / "o"), *common])  # the exact numbers are compared
    assert res.exit_code == 0, res.output
    ref = runner.invoke(app, ["audit", "--samples", str(files.samples), "--embeddings", str(files.embeddings),
                              "--out", str(tmp_path / "ref"), *common])
    assert ref.exit_code == 0, ref.output
    mine = json.loads((tmp_path / "o/results.json").read_text())
    want_doc = json.loads((tmp_path / "ref/results.json").read_text())
    key = lambda p: (p["weighting"], p["target"], p["group"])  # noqa: E731
    # thresholds are in the negated-distance space (score_kind says so): the all-pairs audit's similarity
    # thresholds, bit for bit, sign included (a flipped sign or a distance-space threshold fails here)
    got = {key(p): (p["fmr_errors"], p["fnmr_errors"], p["threshold"]) for p in mine["operating_points"]}
    want = {key(p): (p["fmr_errors"], p["fnmr_errors"], p["threshold"]) for p in want_doc["operating_points"]}
    assert got == want and len(got) >= 12 and any(v[0] for v in got.values())
    assert mine["summary"]["score_kind"] == "negated distance"


@pytest.mark.parametrize("command", ["audit", "demo", "schema", "simulate"])
def test_help_is_complete_with_an_example(command):
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0
    assert "Example" in res.output


def test_help_prose_wraps_to_the_terminal_and_examples_stay_whole():
    """Typer's help keeps a docstring's line breaks: prose written to 115 columns broke raggedly at 80 columns
    (one line of 80, one of 35). Each prose paragraph is one line for the help to wrap; an example keeps its lines."""
    res = runner.invoke(app, ["audit", "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0
    prose = " ".join(res.output.split())
    assert "(a scored table), or another --format: bob, bob-csv, frvt (--scores)," in prose  # was broken there
    assert ("      matchaudit audit --samples samples.parquet --embeddings embeddings.npy --group-by ethnicity --fmr "
            "1e-3,1e-4 --out results/\n") in res.output  # an example is never re-wrapped
    narrow = runner.invoke(app, ["audit", "--help"], env={"COLUMNS": "80"}).output
    assert "…" not in narrow and "  --threshold-impostors " in narrow  # C4: Rich's panels cut names at 80 columns
    listing = runner.invoke(app, ["--help"], env={"COLUMNS": "250"}).output
    assert re.search(r"\n  coverage +Share of intervals containing the truth, per method", listing)  # one line
    assert reflowed("A\nb.\n\n    x --y\n    z\n\nC\nd.") == "A b.\n\n\b\n    x --y\n    z\n\nC d."


def test_schema_command_prints_the_schema():
    res = runner.invoke(app, ["schema"])
    assert json.loads(res.output) == schema()


@pytest.mark.parametrize("args, message", [
    (["audit"], "either --samples"),
    (["audit", "--comparisons", "/nonexistent/x.csv"], "x.csv"),
    (["audit", "--comparisons", "{demo}/data/samples.parquet"], "score"),
    (["audit", "--samples", "{demo}/data/samples.parquet", "--embeddings", "{demo}/data/embeddings.npy",
      "--fmr", "2"], "--fmr 2.0: give a number in [0, 1)"),
    (["audit", "--samples", "{demo}/data/samples.parquet", "--embeddings", "{demo}/data/embeddings.npy",
      "--group-by", "ethnicity"], "ethnicity"),
    (["audit", "--samples", "{demo}/data/samples.parquet", "--embeddings", "{demo}/data/embeddings.npy",
      "--no-intervals", "--backend", "tpu"], "'tpu'"),
])
def test_bad_input_exits_2_with_a_message_and_no_traceback(demo_dir, tmp_path, args, message):
    args = [a.replace("{demo}", str(demo_dir)) for a in args] + ["--out", str(tmp_path / "o")]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Error" in res.output and message in res.output
    assert "Traceback" not in res.output


def test_audit_reads_other_formats(tmp_path):
    fx = "tests/fixtures/formats"
    res = runner.invoke(app, ["audit", "--format", "voxceleb", "--trials", f"{fx}/vox_trials.txt", "--scores",
                              f"{fx}/vox_scores_aligned.txt", "--metadata", f"{fx}/vox1_meta.csv", "--group-by", "Gender",
                              "--fmr", "0.1", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["summary"]["n_genuine"] == 12 and doc["summary"]["n_impostor"] == 54
    res = runner.invoke(app, ["audit", "--format", "bob", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--scores" in res.output


def test_audit_writes_intervals_and_bands(tmp_path):
    from matchaudit.simulation import simulate_vmf

    files = simulate_vmf(seed=3).write(tmp_path / "data")
    out = tmp_path / "out"
    res = runner.invoke(app, ["audit", "--samples", str(files.samples), "--embeddings", str(files.embeddings),
                              "--group-by", "group", "--fmr", "1e-2", "--threshold", "0.3", "--n-resamples", "50",
                              "--seed", "7", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    jsonschema.validate(doc, schema())
    iv = pd.read_csv(out / "intervals.csv")
    fixed = iv[iv["kind"] == "threshold"]
    assert set(fixed[fixed["weighting"] == "pooled"]["method"]) == {"wilson"}
    assert set(fixed[fixed["weighting"] == "balanced"]["method"]) == {DEFAULT_BOOTSTRAP}  # closed forms: pooled only
    measures = iv["metric"].str.contains(":")  # fairness measures: identities redrawn, as the group tests
    assert set(iv[(iv["kind"] == "fmr_target") & ~measures]["method"]) == {DEFAULT_BOOTSTRAP}
    assert set(iv[measures]["method"]) == {"double-or-nothing"}
    assert (iv["n_resamples"].dropna() == 50).all() and (iv["seed"].dropna() == 7).all()
    ok = iv["estimate"].notna() & iv["low"].notna()
    assert (iv.loc[ok, "low"] <= iv.loc[ok, "estimate"] + 1e-9).all()
    bad = runner.invoke(app, ["audit", "--samples", str(files.samples), "--embeddings", str(files.embeddings),
                              "--ci-method", "bogus", "--out", str(out)])
    assert bad.exit_code == 2 and "--ci-method" in bad.output



@pytest.mark.slow
def test_no_figures_and_no_calibration_write_the_rest_and_load_no_plotting(tmp_path):
    """`--no-figures` writes results.json and the tables only, `--no-calibration` drops the calibration and score
    distributions but keeps the intervals at FNMR targets (same pass), and such a run never imports matplotlib
    or scipy.stats (0.3 s and 0.4 s of start-up: bench/cli_vs_cimat.py)."""
    import subprocess
    import sys

    from matchaudit.simulation import GroupSpec, simulate_vmf

    groups = {"A": GroupSpec(24, (120.0, 800.0)), "B": GroupSpec(16, (70.0, 250.0))}  # 400 samples: 80,000 pairs
    files = simulate_vmf(groups, dim=32, seed=3).write(tmp_path / "data")
    out = tmp_path / "out"
    args = ["audit", "--samples", str(files.samples), "--embeddings", str(files.embeddings), "--group-by", "group",
            "--fmr", "1e-2", "--fnmr", "0.05", "--n-resamples", "40", "--out", str(out), "--quiet",
            "--no-figures", "--no-calibration"]
    probe = (f"import sys\nfrom matchaudit.cli import app\ntry:\n    app({args!r})\nexcept SystemExit as e:\n"
             f"    assert not e.code, e.code\nprint(sorted(m for m in ('matplotlib', 'scipy.stats') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"
    assert not list(out.glob("*.png")) and not list(out.glob("*.svg"))
    doc = json.loads((out / "results.json").read_text())
    jsonschema.validate(doc, schema())
    assert "calibration" not in doc and "score_distributions" not in doc
    assert {r["kind"] for r in doc["intervals"]} >= {"fmr_target", "fnmr_target"}
    full = tmp_path / "full"
    assert runner.invoke(app, args[:-2] + ["--out", str(full)]).exit_code == 0
    assert {"det_pooled.png", "ape.png"} <= {p.name for p in full.glob("*.png")}
    assert "calibration" in json.loads((full / "results.json").read_text())

def test_coverage_command_small(tmp_path):
    res = runner.invoke(app, ["coverage", "--datasets", "2", "--identities", "20", "--samples", "4", "--dim", "16",
                              "--n-resamples", "20", "--fmr", "1e-1", "--levels", "0.9", "--out", str(tmp_path),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "coverage.csv")
    assert {"recentered", "naive", "wilson", "wilson-naive"} <= set(table["method"])
    assert table["coverage"].between(0, 1).all() and (table["n"] == 2).all()


def test_json_to_stdout_far_alias_fvc_names_and_report(demo_dir, tmp_path):
    args = ["audit", "--samples", str(demo_dir / "data/samples.parquet"), "--embeddings",
            str(demo_dir / "data/embeddings.npy"), "--group-by", "group", "--far", "1e-2,0", "--no-intervals",
            "--out", str(tmp_path / "o"), "--json", "--report", str(tmp_path / "r.html")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {p["alias"] for p in doc["operating_points"] if p["kind"] == "fmr_target"} == {"FMR100", "ZeroFMR"}
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_thresholds_from_a_development_set_are_applied_as_fixed_thresholds(demo_dir, tmp_path):
    dev = json.loads((demo_dir / "results.json").read_text())
    want = sorted(p["threshold"] for p in dev["operating_points"]
                  if p["group"] == "all" and p["weighting"] == "pooled" and p["kind"] == "fmr_target")
    res = runner.invoke(app, ["audit", "--samples", str(demo_dir / "data/samples.parquet"), "--embeddings",
                              str(demo_dir / "data/embeddings.npy"), "--group-by", "group", "--no-intervals",
                              "--thresholds-from", str(demo_dir / "results.json"), "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    fixed = [p for p in doc["operating_points"] if p["kind"] == "threshold" and p["group"] == "all"
             and p["weighting"] == "pooled"]
    assert sorted(p["threshold"] for p in fixed) == want
    # same data: the dev thresholds reproduce the dev operating points exactly
    dev_pts = {p["threshold"]: p["fnmr_errors"] for p in dev["operating_points"]
               if p["group"] == "all" and p["weighting"] == "pooled"}
    assert all(dev_pts[p["threshold"]] == p["fnmr_errors"] for p in fixed)
    bad = runner.invoke(app, ["audit", "--samples", str(demo_dir / "data/samples.parquet"), "--embeddings",
                              str(demo_dir / "data/embeddings.npy"), "--thresholds-from", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "results.json" in bad.output
    # the dev audit's --out directory, as the report takes it (it said "not a JSON file")
    again = runner.invoke(app, ["audit", "--samples", str(demo_dir / "data/samples.parquet"), "--embeddings",
                                str(demo_dir / "data/embeddings.npy"), "--group-by", "group", "--no-intervals",
                                "--thresholds-from", str(demo_dir), "--out", str(tmp_path / "d"), "--quiet"])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "d/results.json").read_text())["operating_points"] == doc["operating_points"]


def test_test_command_on_matching_data_finds_the_designed_gap(demo_dir, tmp_path):
    res = runner.invoke(app, ["test", "--samples", str(demo_dir / "data/samples.parquet"), "--embeddings",
                              str(demo_dir / "data/embeddings.npy"), "--group-by", "group", "--groups", "A,B",
                              "--metric", "fnmr_at_fmr", "--fmr", "1e-3", "--n-resamples", "99", "--out", str(tmp_path),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "test.json").read_text())
    assert doc["result"]["pvalue"] <= 0.02 and doc["result"]["effect"] < 0  # B's FNMR is far higher than A's
    both = runner.invoke(app, ["test", "--table", "x.csv", "--samples", "s.parquet"])
    assert both.exit_code == 2


def test_far_frr_aliases_on_matching_data(demo_dir, tmp_path):
    """FAR/FRR (docs/methods.md section 1) name the same tests as FMR/FNMR: identical results for the same seed."""
    common = ["--samples", str(demo_dir / "data/samples.parquet"), "--embeddings", str(demo_dir / "data/embeddings.npy"),
              "--group-by", "group", "--groups", "A,C", "--threshold", "0.3", "--n-resamples", "40", "--quiet"]
    docs = []
    for metric, sub in (("frr", "a"), ("fnmr", "b")):
        res = runner.invoke(app, ["test", *common, "--metric", metric, "--out", str(tmp_path / sub)])
        assert res.exit_code == 0, res.output
        docs.append(json.loads((tmp_path / sub / "test.json").read_text())["result"])
    assert docs[0]["statistic"] == docs[1]["statistic"] and docs[0]["pvalue"] == docs[1]["pvalue"]


def test_ctrl_c_stops_cleanly_with_exit_130(tmp_path):
    """SIGINT ends the run within seconds: exit 130, one line, no traceback -- also when it lands while Numba
    compiles a kernel (deferred to the next block; before, it could be dropped in a ctypes callback and the
    run went on: CI, stop 10)."""
    import signal
    import subprocess
    import sys
    import time

    from matchaudit.simulation import simulate_vmf

    files = simulate_vmf(seed=3).write(tmp_path / "data")
    cmd = [sys.executable, "-m", "matchaudit", "audit", "--samples", str(files.samples), "--embeddings",
           str(files.embeddings), "--n-resamples", "20000", "--out", str(tmp_path / "out"), "--quiet"]
    # SIGINT at its default in the child, as in a terminal (pytest may run as a background job that ignores it)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(6)  # imports, JIT compilation (cold cache), the exact metrics, then 20,000 replicates (~5 min)
    assert proc.poll() is None, proc.communicate()
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Interrupted." in err and "Traceback" not in err + out
    assert time.monotonic() - start < 30


def test_a_refused_write_is_exit_2_with_a_message_not_a_traceback():
    """A full disk (or a file the system refuses) while writing the outputs ended in a traceback, exit 1."""
    import typer

    from matchaudit.cli.common import EXIT_INPUT, user_errors

    app_ = typer.Typer()

    @app_.command()
    @user_errors
    def job() -> None:
        raise OSError(28, "No space left on device", "/data/out/det.csv")

    res = CliRunner().invoke(app_, [])
    assert res.exit_code == EXIT_INPUT and "Traceback" not in res.output
    assert "the file system refused: No space left on device (/data/out/det.csv)" in res.output


def test_a_refused_allocation_is_exit_2_with_a_message_not_a_traceback():
    """``compare --n-resamples 99999999999`` asked numpy for 745 GiB and ended in a traceback, exit 1."""
    import typer

    from matchaudit.cli.common import EXIT_INPUT, user_errors

    app_ = typer.Typer()

    @app_.command()
    @user_errors
    def job() -> None:
        raise MemoryError("Unable to allocate 745. GiB for an array with shape (99999999999,)")  # as numpy does

    res = CliRunner().invoke(app_, [])
    assert res.exit_code == EXIT_INPUT and "not enough memory" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("command", [["coverage", "--datasets", "1"], ["demo"],
                                     ["protocol", "--samples", "missing.parquet", "--genuine", "5",
                                      "--impostor", "5"]])
def test_an_out_that_is_a_file_is_refused_at_once(command, tmp_path):
    """``coverage --out <a file>`` ran the whole study, then ended in FileExistsError, exit 1."""
    target = tmp_path / "taken"
    target.write_text("keep me")
    r = CliRunner().invoke(app, command + ["--out", str(target)])
    assert r.exit_code == 2 and "--out" in r.output and "a file of that name exists" in r.output
    assert target.read_text() == "keep me"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, a folder that takes no file")
@pytest.mark.parametrize("command", [["audit", "--samples", "{data}/samples.parquet", "--embeddings",
                                      "{data}/embeddings.npy", "--no-figures", "--out", "/proc"],
                                     ["simulate", "--out", "/proc"],
                                     ["report", "{run}/results.json", "--out", "/proc/page.html"]],
                         ids=lambda c: c[0])
def test_an_out_where_no_file_can_be_made_is_refused_at_once(command, demo_run, tmp_path):
    """As root, the permission bits said /proc was writable: the run went on and ended in a traceback when it wrote
    its outputs. The check now makes (and removes) a file there."""
    args = [a.replace("{data}", str(demo_run / "data")).replace("{run}", str(demo_run)) for a in command]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--out /proc" in r.output and ("cannot write in the directory" in r.output or "not writable" in r.output)


def test_checking_an_out_leaves_nothing_behind(tmp_path):
    from matchaudit.cli.common import output_dir, report_file

    (tmp_path / "keep.txt").write_text("x")
    assert output_dir(tmp_path, "audit") == tmp_path
    assert report_file(tmp_path / "results.json", str(tmp_path / "p.html"), "--out") == tmp_path / "p.html"
    assert report_file(tmp_path / "results.json", f"{tmp_path}/new/deeper/", "--out") == tmp_path / "new/deeper/report.html"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_coverage_needs_enough_replicates_for_its_highest_level(tmp_path):
    r = CliRunner().invoke(app, ["coverage", "--n-resamples", "1", "--levels", "0.9,0.95", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--n-resamples" in r.output and "at least 40" in r.output
    r = CliRunner().invoke(app, ["coverage", "--levels", "", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--levels" in r.output


HEAVY = ("numpy", "pandas", "scipy", "numba", "matplotlib", "pyarrow", "jax", "torch", "dask")


@pytest.mark.parametrize("code", ["import matchaudit", "import matchaudit.cli",
                                  "from matchaudit.cli import app; app(['audit', '--help'])"])
def test_start_up_and_help_load_no_numeric_library(code):
    """`matchaudit --help`, `matchaudit audit --help` and `import matchaudit` stay fast (a fraction of a second,
    measured in bench/startup.py) because the numeric libraries load only in the command that runs."""
    import subprocess
    import sys

    probe = (f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_the_choices_offered_are_the_ones_implemented():
    """The help lists choices from matchaudit.choices; the registries that implement them hold exactly those."""
    from matchaudit import choices
    from matchaudit.engine import backends
    from matchaudit.estimators.classifier import METRICS

    from matchaudit.labelfree import twopiece

    assert backends.names() == choices.BACKENDS
    assert tuple(METRICS) == choices.CLASSIFIER_METRICS
    assert twopiece.KERNEL_NAMES == choices.LABELFREE_KERNELS
    for name in choices.LABELFREE_FAMILIES:
        twopiece.parse(name)  # every family offered is one the model builds


def test_a_long_group_name_does_not_push_the_numbers_off_a_wide_terminal(tmp_path):
    """C6: a 5,000-character group name widened the group column to the whole terminal."""
    import matchaudit as ma

    sim = ma.simulate(samples_per_identity=3, dim=16, seed=1)
    s = sim.samples.assign(group=sim.samples.group.replace({"A": "L" * 5000}))
    s.to_csv(tmp_path / "s.csv", index=False)
    np.save(tmp_path / "e.npy", sim.embeddings)
    res = runner.invoke(app, ["audit", "--samples", str(tmp_path / "s.csv"), "--embeddings", str(tmp_path / "e.npy"),
                              "--group-by", "group", "--fmr", "0.1", "--no-intervals", "--no-figures", "--out",
                              str(tmp_path / "o")], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if line.startswith("│ FMR 0.1")]
    assert len(rows) == 4 and max(map(len, rows)) < 130, rows
