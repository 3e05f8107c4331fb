"""The audit's calibration, cost and score-distribution views: one definition of minDCF, results, CLI and report."""

from __future__ import annotations

from matchaudit.auditing.intervals import DEFAULT_BOOTSTRAP
import gc
import importlib
import json
import shutil
from collections import namedtuple

import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.auditing import score_analyses
from matchaudit.cli import app
from matchaudit.errors import InputError
from matchaudit.auditing.options import IntervalOptions
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.report.html import write_report


@pytest.fixture(scope="module")
def small():
    return ma.simulate(samples_per_identity=4, dim=16, seed=6).as_data()


def test_audit_carries_calibration_and_distributions(small, tmp_path):
    res = ma.audit(small, fmr=1e-2, measures=ma.MeasureOptions(dcf=[(0.01, 1, 1), (0.1, 2, 1)]),
                   intervals=ma.IntervalOptions(n_resamples=60))
    cal = res.calibration
    curves = res.curves.set_index(["weighting", "group"])
    for g in res.groups:  # the audit's minDCF at its P_target and the calibration view's are one number
        row = cal[(cal.group == g) & (cal.metric == "min_dcf") & (cal.p_target == 0.01)].iloc[0]
        assert row["estimate"] == curves.loc[("pooled", g), "min_dcf"]
        assert row["low"] <= row["estimate"] <= row["high"]
    assert set(cal.p_target.dropna()) == {0.01, 0.1}
    assert cal.loc[cal.metric == "cllr", "estimate"].isna().all()  # not LLRs: no Cllr
    assert (res.score_distributions.method == DEFAULT_BOOTSTRAP).all()
    paths = res.save(tmp_path / "o")
    doc = json.loads(paths["results"].read_text())
    assert {r["metric"] for r in doc["calibration"]} == {"cllr", "min_cllr", "act_dcf", "min_dcf"}
    assert {"d_prime", "genuine_shift"} <= {r["metric"] for r in doc["score_distributions"]}
    assert paths["ape"].exists() and paths["score_distributions"].exists()
    assert (tmp_path / "o" / "calibration.csv").exists()
    html = write_report(paths["results"]).read_text()
    assert "Calibration and cost" in html and "Score distributions" in html and "not declared log-likelihood" in html


def test_llr_and_method_choice(small):
    res = ma.audit(small, fmr=1e-2, measures=ma.MeasureOptions(llr=True),
                   intervals=ma.IntervalOptions(n_resamples=60, method="double-or-nothing"))
    cal = res.calibration
    assert cal.loc[cal.metric == "cllr", "estimate"].notna().all()
    assert (cal.method == "double-or-nothing").all()
    assert ma.audit(small, fmr=1e-2, intervals=False).calibration.empty


def test_over_the_memory_budget_is_a_warning_or_sorted_on_disk_where_asked(small, monkeypatch, tmp_path):
    """Over the score views' memory budget the audit skips them with a warning that says how to sort on disk; with a
    folder (``spill_dir``) it sorts them there, with the same records as in memory; a disk without room is a warning
    again; the folder is not recorded (where to work is not a result) and must exist."""
    config = AuditConfig(fmr_targets=(), fnmr_targets=(0.01,))
    exact = evaluate(small, config)
    opts = IntervalOptions(n_resamples=50, memory_gb=1e-9)
    cal, dist, dual, note = score_analyses(small, config, exact, opts, ((0.01, 1, 1),), False, False)
    assert cal is None and dist is None and dual == [] and "skipped" in note[0] and "spill_dir" in note[0]
    assert "intervals at FNMR targets" in note[0]
    held = []  # a reference kept elsewhere (a cache, a cycle) must not keep the folder: it goes when the analyses end
    module = importlib.import_module("matchaudit.auditing.score_analyses")
    keep = module.calibration_from
    gc.disable()
    try:
        with monkeypatch.context() as m:
            m.setattr(module, "calibration_from", lambda views, *a: held.append(views) or keep(views, *a))
            got = [score_analyses(small, config, exact, IntervalOptions(n_resamples=50, memory_gb=gb,
                                                                        spill_dir=str(tmp_path)),
                                  ((0.01, 1, 1),), False, False) for gb in (None, 1e-9)]  # in memory, sorted on disk
    finally:
        gc.enable()
    assert held[1].spill is not None and held[0].spill is None  # the second sorted on disk
    for a, b in zip(*got):
        assert a == b if isinstance(a, list) else a.to_records() == b.to_records()
    assert list(tmp_path.iterdir()) == []  # the temporary folder went when the analyses ended, the views still held
    assert "spill_dir" not in IntervalOptions(spill_dir=str(tmp_path)).recorded()
    with pytest.raises(InputError, match="not a folder"):
        IntervalOptions(spill_dir=str(tmp_path / "missing"))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    opts = IntervalOptions(n_resamples=50, memory_gb=1e-9, spill_dir=str(tmp_path))
    cal, dist, dual, note = score_analyses(small, config, exact, opts, ((0.01, 1, 1),), False, False)
    assert cal is None and dist is None and dual == [] and "skipped" in note[0] and "GiB free" in note[0]


@pytest.mark.parametrize("flag,value,words", [("--dcf", "0.01,1", "triples"), ("--dcf", "1.5,1,1", "--dcf"),
                                               ("--det-scale", "lin", "--det-scale")])
def test_cli_refuses_bad_values(tmp_path, flag, value, words):
    sim = ma.simulate(samples_per_identity=3, dim=8, seed=1)
    files = sim.write(tmp_path / "d")
    r = CliRunner().invoke(app, ["audit", "--samples", str(files[0]), "--embeddings", str(files[1]),
                                 "--n-resamples", "50", flag, value, "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and words in r.output and "Traceback" not in r.output
