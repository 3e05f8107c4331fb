"""The exact all-pairs audit in one pass: the tally pass collects the impostors of the cells the FMR targets'
thresholds will fall into (predicted from a sample of rows, :mod:`matchaudit.metrics.windows`), so the refinement
has nothing left to do; a prediction that misses falls back to the second pass. Either way every record equals the
two-pass audit's exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from matchaudit.engine import window
from matchaudit.metrics import evaluate as ev
from matchaudit.metrics import tally as tally_module
from matchaudit.metrics import windows
from matchaudit.model import MatchData
from matchaudit.simulation import GroupSpec, simulate_vmf

FMR = (0.1, 1e-2, 1e-3, 1e-4, 0.0)


@pytest.fixture(scope="module")
def data() -> MatchData:
    groups = {"A": GroupSpec(70, (100, 500)), "B": GroupSpec(50, (60, 300), centroid_kappa=20.0),
              "C": GroupSpec(30, (60, 300))}
    return simulate_vmf(groups, dim=24, samples_per_identity=4, seed=5).as_data()  # 600 samples, ~180k pairs


def _passes(monkeypatch) -> list[str]:
    """Record every pass over the comparisons (each call of MatchData.blocks) by caller."""
    seen: list[str] = []
    real = MatchData.blocks

    def counted(self, *a, **k):
        import inspect

        seen.append(inspect.stack()[1].function)
        return real(self, *a, **k)

    monkeypatch.setattr(MatchData, "blocks", counted)
    return seen


def _same(a: list[dict], b: list[dict]) -> bool:
    """Equal records, every float to the last bit (repr round-trips a float exactly; NaN equals NaN)."""
    return json.dumps(a) == json.dumps(b)


def _audit(data: MatchData, **kw) -> ev.AuditResult:
    return ev.evaluate(data, ev.AuditConfig(fmr_targets=FMR, thresholds=(0.3, 0.5), **kw))


@pytest.mark.parametrize("kw", [{}, {"rule": ">"}, {"threshold_impostors": "same-group"}])
def test_one_pass_equals_two_passes_exactly(data, monkeypatch, kw):
    monkeypatch.setattr(windows, "MIN_SAMPLES", 10**9)  # no prediction: the two-pass audit
    two = _audit(data, **kw)
    monkeypatch.setattr(windows, "MIN_SAMPLES", 0)
    monkeypatch.setattr(window, "SAMPLE_ROWS", 64)  # a sample, not every row
    passes = _passes(monkeypatch)
    one = _audit(data, **kw)
    assert passes == ["build_tally"]  # refine found every cell collected
    for name in ("operating_points", "curve_summaries", "cross_group_fmr", "fairness"):
        assert _same(getattr(one, name), getattr(two, name)), name  # every float (balanced sums included)


def test_a_prediction_that_misses_falls_back_to_the_second_pass(data, monkeypatch):
    monkeypatch.setattr(windows, "MIN_SAMPLES", 10**9)
    two = _audit(data)
    monkeypatch.setattr(windows, "MIN_SAMPLES", 0)
    monkeypatch.setattr(window, "score_window", lambda *a: (0.99, 1.0))  # windows far above every threshold
    passes = _passes(monkeypatch)
    one = _audit(data)
    assert passes == ["build_tally", "refine"]
    assert _same(one.operating_points, two.operating_points) and _same(one.curve_summaries, two.curve_summaries)


def test_a_collection_that_overflows_its_buffers_falls_back(data, monkeypatch):
    monkeypatch.setattr(windows, "MIN_SAMPLES", 10**9)
    two = _audit(data)
    monkeypatch.setattr(windows, "MIN_SAMPLES", 0)
    real = windows.predicted_cells

    def everything(*a, **k):  # every cell selected, buffers sized for none: overflow
        sel, _ = real(*a, **k)
        return np.ones_like(sel), 0.0

    monkeypatch.setattr(ev, "predicted_cells", everything)
    monkeypatch.setattr(tally_module, "COLLECT_SLACK", 0)
    passes = _passes(monkeypatch)
    one = _audit(data)
    assert passes == ["build_tally", "refine"]
    assert _same(one.operating_points, two.operating_points)


def test_the_window_holds_the_threshold(data, monkeypatch):
    """On the full sample (every row) each window contains the exact threshold of its target."""
    monkeypatch.setattr(window, "SAMPLE_ROWS", 10**6)
    thr = ev.evaluate(data, ev.AuditConfig(fmr_targets=FMR[:3], weightings=("pooled", "balanced")))
    smp = window.sample(data)
    assert smp.n_rows == data.n_identities and smp.score.size == 600 * 599 - int((data.identity_sizes * (data.identity_sizes - 1)).sum())
    for p in thr.operating_points:
        if p["group"] != "all":
            continue
        w = smp.balanced(data, np.ones(smp.score.size, bool)) if p["weighting"] == "balanced" else np.ones(smp.score.size)
        lo, hi = window.score_window(smp.score, smp.row, w, smp.n_rows, p["target"])
        assert lo < p["threshold"] <= hi, (p["weighting"], p["target"], lo, p["threshold"], hi)
