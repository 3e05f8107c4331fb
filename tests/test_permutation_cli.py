"""``matchaudit test`` as a user runs it: two groups, all groups, help, and bad input (exit status 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

import matchaudit.cli.test  # noqa: F401  (registers the command until cli/__init__ imports it)
from matchaudit.cli import app

runner = CliRunner()


def _table(path, groups=("A", "B"), n=400, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(groups, n)
    y = rng.integers(0, 2, n)
    pred = np.where((y == 1) & (rng.random(n) < np.where(g == groups[0], 0.4, 0.1)), 0, y)
    pd.DataFrame({"label": y, "pred": pred, "score": y + rng.normal(size=n), "grp": g}).to_csv(path, index=False)
    return path


def test_two_groups_writes_json_csv_png(tmp_path):
    t = _table(tmp_path / "t.csv")
    out = tmp_path / "out"
    res = runner.invoke(app, ["test", "--table", str(t), "--y-true", "label", "--y-pred", "pred", "--group", "grp",
                              "--metric", "fnr", "--n-resamples", "999", "--seed", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "test.json").read_text())
    assert doc["kind"] == "two-group" and doc["result"]["pvalue"] == 1 / 1000  # a large designed gap
    assert doc["result"]["direction"] == "A > B" and doc["result"]["details"]["seed"] == 0
    assert pd.read_csv(out / "comparisons.csv").loc[0, "significant"]
    assert (out / "null_distribution.png").stat().st_size > 5_000
    again = runner.invoke(app, ["test", "--table", str(t), "--y-true", "label", "--y-pred", "pred", "--group", "grp",
                                "--n-resamples", "999", "--seed", "0", "--out", str(tmp_path / "o2"), "--quiet"])
    assert again.exit_code == 0 and json.loads((tmp_path / "o2" / "test.json").read_text())["result"] == doc["result"]


def test_all_groups_table(tmp_path):
    t = _table(tmp_path / "t.csv", groups=("A", "B", "C"))
    out = tmp_path / "out"
    res = runner.invoke(app, ["test", "--table", str(t), "--y-true", "label", "--y-score", "score", "--group", "grp",
                              "--metric", "auc", "--n-resamples", "199", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out / "comparisons.csv")
    assert len(df) == 6 and {"pvalue_holm", "pvalue_maxt", "significant_maxt"} <= set(df.columns)
    assert json.loads((out / "test.json").read_text())["kind"] == "all-groups"


def test_help_and_bad_input(tmp_path):
    res = runner.invoke(app, ["test", "--help"])
    assert res.exit_code == 0 and "Example" in res.output
    t = _table(tmp_path / "t.csv")
    res = runner.invoke(app, ["test", "--table", str(t), "--y-true", "lab", "--y-pred", "pred", "--group", "grp"])
    assert res.exit_code == 2 and "no column 'lab'" in res.output
    res = runner.invoke(app, ["test", "--table", str(t), "--y-true", "label", "--y-pred", "pred", "--group", "grp",
                              "--n-resamples", "many"])
    assert res.exit_code == 2 and "--n-resamples" in res.output
