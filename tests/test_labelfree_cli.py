"""`matchaudit estimate` on the command line: outputs, per-side groups, bad input -> exit 2 without traceback."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit.cli.estimate  # noqa: F401  (registers the command until the lead imports it in cli/__init__)
from matchaudit.cli.app import app
from matchaudit.labelfree import family

runner = CliRunner()


def _table(tmp_path, n=600):
    rng = np.random.default_rng(0)
    f = family("sas")
    y = rng.random(2 * n) < 0.5
    s = np.where(y, f.rvs(rng, 2 * n, 0.55, 0.08, 0.06, 1.0), f.rvs(rng, 2 * n, 0.1, 0.07, 0.09, 0.9))
    side = np.repeat(["x", "y"], n)
    other = side.copy()
    other[:20] = "y"  # 20 cross-group pairs: excluded and counted
    lab = np.where(rng.random(2 * n) < 0.1, y.astype(int).astype(str), "")
    path = tmp_path / "scores.csv"
    pd.DataFrame({"sim": s, "eth_a": side, "eth_b": other, "lab": lab}).to_csv(path, index=False)
    return path


def test_estimate_command_writes_outputs(tmp_path):
    path = _table(tmp_path)
    out = tmp_path / "est"
    r = runner.invoke(app, ["estimate", str(path), "--score-col", "sim", "--group-col", "eth", "--label-col", "lab",
                            "--sampler", "numpy", "--draws", "1500", "--fmr", "1e-2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "estimate.json").read_text())
    assert "20 of 1200 pairs" in doc["input"]["excluded_pairs"]
    assert [g["n_pairs"] for g in doc["groups"]] == [580, 600]
    assert doc["groups"][0]["n_labelled"] > 30
    assert (out / "estimate.csv").exists() and (out / "ppc.png").exists() and (out / "det_bands.png").exists()
    assert "Results written" in r.output
    quiet = runner.invoke(app, ["estimate", str(path), "--score-col", "sim", "--group-col", "eth", "--label-col", "lab",
                                "--sampler", "numpy", "--draws", "1500", "--fmr", "1e-2", "--out", str(out), "--quiet"])
    assert quiet.exit_code == 0 and "Results written" not in quiet.output
    assert json.loads((out / "estimate.json").read_text()) == doc  # same seed, same numbers


def test_bad_input_exits_2_without_traceback(tmp_path):
    path = _table(tmp_path)
    r = runner.invoke(app, ["estimate", str(path), "--score-col", "nope", "--group-col", "eth"])
    assert r.exit_code == 2 and "Traceback" not in r.output and "nope" in r.output
    r = runner.invoke(app, ["estimate", str(path), "--score-col", "sim", "--group-col", "country"])
    assert r.exit_code == 2 and "country" in r.output


def test_help_has_an_example():
    r = runner.invoke(app, ["estimate", "--help"])
    assert r.exit_code == 0 and "matchaudit estimate matchaudit-demo/data/comparisons.csv" in r.output


def test_estimate_reads_minus_one_as_a_non_match():
    """``estimate --label-col`` used to read -1 as a labelled match (the sign was stripped)."""
    import pandas as pd

    from matchaudit.data.validate import Where, partial_labels

    got = partial_labels(pd.Series([1, -1, None, "+1", "-1"], dtype=object), Where("t.csv", 2))
    assert got[[0, 1, 3, 4]].tolist() == [1.0, 0.0, 1.0, 0.0] and np.isnan(got[2])


@pytest.mark.slow
def test_estimate_shows_progress_in_mcmc_iterations(tmp_path, meter_log):
    """`estimate` used to show a spinner for a fit of minutes: one display counts every chain's warm-up and draws
    of every group (a line every EVERY seconds off a terminal), with the same numbers as a quiet run."""
    from matchaudit.labelfree.samplers import numpyro_available

    path = _table(tmp_path, n=200)
    seen = meter_log
    for sampler in ["numpy", "numpyro"] if numpyro_available() else ["numpy"]:
        seen.clear()
        args = ["estimate", str(path), "--score-col", "sim", "--group-col", "eth", "--sampler", sampler, "--draws",
                "100", "--chains", "2", "--fmr", "1e-2", "--family", "sas", "--out", str(tmp_path / sampler)]
        r = runner.invoke(app, args)
        assert r.exit_code in (0, 2), r.output  # a short chain may not converge; the display is what is tested
        assert seen and seen[-1][1] == seen[-1][2] == 2 * 2 * (100 + 100), seen[-1]  # groups x chains x iterations
        assert f"MCMC (sas, {sampler}, 2 chains): 100% (" in r.output
    if not numpyro_available():
        pytest.skip("numpyro not installed: only the numpy sampler's display was checked")


@pytest.mark.slow
def test_ctrl_c_during_numpyro_ends_the_process_at_once(tmp_path):
    """A Ctrl-C during a NumPyro fit used to print "Interrupted." while the compiled sampler ran on (its progress
    lines too) until it finished: the process now ends at once with 130 and nothing written."""
    import signal
    import subprocess
    import sys

    from matchaudit.labelfree.samplers import numpyro_available

    if not numpyro_available():
        pytest.skip("numpyro not installed")
    path = _table(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "matchaudit", "estimate", str(path), "--score-col", "sim",
                             "--group-col", "eth", "--sampler", "numpyro", "--draws", "100000", "--out",
                             str(tmp_path / "est")], stderr=subprocess.PIPE, text=True,
                            # as at a terminal: a suite started in the background (`make test &`, nohup) passes
                            # SIGINT ignored to its children, and the command rightly keeps ignoring it then
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stderr:  # the first progress line (every 10 s off a terminal): the sampler is running
        if line.startswith("MCMC"):
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=20)[1]
    assert proc.returncode == 130 and "Interrupted." in rest and "Traceback" not in rest
    assert not (tmp_path / "est").exists()
