"""Comparison tables with identities but no sample ids (``--sample-cols ''``): every interval method either runs or
is refused by name; the default bootstrap is the identity-level one (the within-identity bootstrap redraws samples,
which such a table does not name). Before: an AssertionError traceback for the default and for ``wilson``."""

from __future__ import annotations

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.cli import app


def _table(seed: int = 0):
    """30 identities in two groups, 4 samples each: every genuine pair and a fifth of the impostor pairs, scored
    with an identity effect; the sample ids dropped."""
    rng = np.random.default_rng(seed)
    ident = np.repeat(np.arange(30), 4)
    effect = rng.normal(0, 0.3, 30)
    i, j = np.triu_indices(ident.size, 1)
    gen = ident[i] == ident[j]
    keep = gen | (rng.random(i.size) < 0.2)
    i, j, gen = i[keep], j[keep], gen[keep]
    score = np.where(gen, 2.0, 0.0) + effect[ident[i]] + effect[ident[j]] + rng.normal(0, 1, i.size)
    sex = np.where(np.arange(30) < 12, "F", "M")
    return dict(score=score, identity_a=[f"id{k}" for k in ident[i]], identity_b=[f"id{k}" for k in ident[j]],
                sex_a=sex[ident[i]], sex_b=sex[ident[j]])


@pytest.fixture(scope="module")
def data():
    t = _table()
    return ma.from_scores(t["score"], t["identity_a"], t["identity_b"], attributes_a={"sex": t["sex_a"]},
                          attributes_b={"sex": t["sex_b"]}, group_by="sex")


@pytest.mark.parametrize("method", [None, "wilson", "double-or-nothing", "vertex"])
def test_every_identity_level_method_runs(data, method):
    res = ma.audit(data, fmr=1e-2, thresholds=1.0, measures=ma.MeasureOptions(calibration=False),
                   intervals=ma.IntervalOptions(method=method, n_resamples=40))
    iv = res.intervals
    assert len(iv) and np.isfinite(iv[["low", "high"]].to_numpy(float)).any()
    boot = set(iv.method) - {"wilson"}
    assert boot == {method if method not in (None, "wilson") else "double-or-nothing"}


@pytest.mark.parametrize("method", ["recentered", "naive", "gaussian"])
def test_a_bootstrap_of_samples_is_refused_by_name(data, method):
    with pytest.raises(ma.InputError, match="ci_method.*no sample ids"):
        ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(method=method, n_resamples=40))


def test_the_cli_runs_with_sample_cols_empty_and_refuses_recentered(tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    path = tmp_path / "t.csv"
    pd.DataFrame(_table()).to_csv(path, index=False)
    base = ["audit", "--comparisons", str(path), "--sample-cols", "", "--group-by", "sex", "--fmr", "1e-2",
            "--n-resamples", "40", "--no-figures", "--no-calibration", "--quiet"]
    ok = CliRunner().invoke(app, base + ["--out", str(tmp_path / "a"), "--ci-method", "wilson"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, base + ["--out", str(tmp_path / "b"), "--ci-method", "recentered"])
    assert bad.exit_code == 2 and "--ci-method" in bad.output and "Traceback" not in bad.output
