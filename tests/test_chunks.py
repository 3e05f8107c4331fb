"""Replicates counted in chunks (#15 item 1): memory follows a budget, not B, with the same numbers bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.cli import app
from matchaudit.engine import chunks
from matchaudit.auditing import intervals as ai
from matchaudit.errors import InputError

runner = CliRunner()


@pytest.fixture(scope="module")
def data():
    return ma.simulate(samples_per_identity=4, dim=32, seed=1).as_data()


def _plain(result: ma.Audit) -> str:
    bands = [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in b.items()} for b in result.bands]
    return json.dumps([result.interval_records, bands], default=str, sort_keys=True)


@pytest.mark.parametrize("method", [None, "double-or-nothing", "vertex", "two-level", "wilson"])
def test_chunked_replicates_equal_one_run_bit_for_bit(data, monkeypatch, method):
    """Every interval record and DET band of both weightings, at FMR targets and a fixed threshold, is the same
    when the 40 replicates are counted 7 at a time (6 engine runs per weighting and pass) as in one run."""
    kw = dict(fmr=[1e-3, 1e-2], thresholds=[0.5], intervals=ma.IntervalOptions(method, n_resamples=40))
    whole = ma.audit(data, **kw)
    calls = []
    real = ai.plan
    monkeypatch.setattr(chunks, "chunk_size", lambda *a, **k: 7)
    monkeypatch.setattr(ai, "plan", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    split = ma.audit(data, **kw)
    # one pass: the fairness measures share the rates' bootstrap (the default's double-or-nothing, or the one asked)
    assert len([c for c in calls if np.size(c) > 0]) == 6  # the pooled weighting's chunks
    assert _plain(split) == _plain(whole)


def test_chunk_size_follows_the_budget(data):
    """The plan: as many replicates per chunk as fit the budget beside the statistics kept; one run when all fit;
    refused, naming memory_gb, when not even one replicate fits."""
    opts = ai.IntervalOptions(n_resamples=1000)
    per = ai.plan_chunks(data, opts, ("pooled",))[0].per_replicate
    G = data.n_groups
    assert per == (chunks.ENGINE_BYTES + chunks.REDUCE_BYTES) * (G + G + 2) * 4096  # pooled cross-group pairs
    kept = 1001 * (1 + G) * 8 * (60 + 16)  # the replicates' statistics: DET points and a few more per view
    plan = ai.plan_chunks(data, ai.IntervalOptions(n_resamples=1000, memory_gb=(kept + 101.5 * per) / 1e9),
                          ("pooled",))[0]
    assert plan.chunk == 100 and plan.runs == 10
    assert ai.plan_note([plan], ai.IntervalOptions(n_resamples=1000)) is not None
    one = ai.plan_chunks(data, ai.IntervalOptions(n_resamples=1000, memory_gb=100.0), ("pooled", "balanced"))
    assert [p.runs for p in one] == [1, 1] and ai.plan_note(one, opts) is None
    with pytest.raises(InputError, match="memory_gb"):
        ai.plan_chunks(data, ai.IntervalOptions(n_resamples=1000, memory_gb=1e-4), ("pooled",))


def test_cli_announces_chunks_and_one_display_covers_them(tmp_path, meter_log):
    """A small --memory: the run says before it starts that it is split, the one progress display ends at exactly
    every comparison x replicate of every run (plug-in rows included), and results.json equals the one-run audit."""
    assert runner.invoke(app, ["simulate", "--identities", "30", "--samples-per-identity", "3", "--dim", "16",
                               "--out", str(tmp_path / "d")]).exit_code == 0
    base = ["audit", "--samples", str(tmp_path / "d" / "samples.parquet"), "--embeddings",
            str(tmp_path / "d" / "embeddings.npy"), "--fmr", "0.1", "--n-resamples", "40"]
    data = ma.load_samples(tmp_path / "d" / "samples.parquet", tmp_path / "d" / "embeddings.npy")
    plans = ai.plan_chunks(data, ai.IntervalOptions(n_resamples=40, memory_gb=0.004), ("pooled", "balanced"))
    assert all(p.runs > 1 for p in plans)
    res = runner.invoke(app, base + ["--memory", "0.004", "--out", str(tmp_path / "split")])
    assert res.exit_code == 0, res.output
    assert "do not fit the memory budget" in res.output and "pooled in" in res.output
    n = data.n_comparisons()
    boot = [s for s in meter_log if s[0] == "bootstrap"]
    assert boot[-1][2] == n * sum(40 + p.runs for p in plans) and boot[-1][1] == boot[-1][2]
    assert runner.invoke(app, base + ["--out", str(tmp_path / "whole"), "--quiet"]).exit_code == 0
    a, b = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("split", "whole"))
    assert a["intervals"] == b["intervals"]
    assert (tmp_path / "split" / "det.csv").read_bytes() == (tmp_path / "whole" / "det.csv").read_bytes()


def test_balanced_weighting_alone(data):
    """--weighting balanced used to end in a KeyError traceback (the pooled bootstrap ran regardless)."""
    r = ma.audit(data, fmr=1e-2, thresholds=[0.5], measures=ma.MeasureOptions(weightings=("balanced",)),
                 intervals=ma.IntervalOptions(n_resamples=40))
    assert {x["weighting"] for x in r.interval_records} == {"balanced"} and r.bands
    assert {b["weighting"] for b in r.bands} == {"balanced"}


def test_group_tests_and_model_comparison_in_chunks_are_unchanged(data, monkeypatch):
    """The permutation tests and the paired model comparison count their replicates in budgeted chunks too: the
    same p-values and intervals with 7 replicates per run as in one run."""
    from matchaudit.auditing.model_comparison import paired_bootstrap
    from matchaudit.auditing.matching_passes import matching_all_groups_test

    def both():
        t = [matching_all_groups_test(data, m, fmr_target=1e-2, n_resamples=49, seed=3,
                                      **({} if m == "fnmr_at_fmr" else {"studentize": False})).rows
             for m in ("fnmr_at_fmr", "auc")]
        return json.dumps([t, paired_bootstrap(data, data, [1e-2], n_resamples=30, seed=2)[0]], default=str)

    whole = both()
    monkeypatch.setattr(chunks, "chunk_size", lambda *a, **k: 7)
    assert both() == whole


def test_sizes_are_written_in_the_unit_that_says_something():
    """A budget of 0.0001 GB was reported as '0.0 GB'; a huge one as '2432000.0 GB'."""
    assert [chunks.size_text(n) for n in (512, 1e5, 1.5e6, 25.2e9, 6.3e9, 2.432e15)] == \
        ["512 bytes", "100 kB", "1.5 MB", "25 GB", "6.3 GB", "2,432 TB"]
