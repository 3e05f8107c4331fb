"""The score views beyond their memory budget (estimators.score_views, external_sort): sorted on disk by an external
sort, every array equal to the in-memory views' to the bit (ties across runs in the stream's order, infinities,
both zeros), and every bootstrap summary, rate at FNMR targets, record and histogram the same; bounded memory; the
temporary folder gone with the views; a disk without room or a folder that cannot be made an InputError."""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import tracemalloc
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import matchaudit as ma
from matchaudit import external_sort as es
from matchaudit.data import load_comparisons
from matchaudit.errors import InputError
from matchaudit.estimators import score_views as sv
from matchaudit.estimators.calibration import calibration_from
from matchaudit.estimators.distributions import distributions_from
from matchaudit.model import MatchData, PairBlock
from tests.test_out_of_core import comparisons, write

OPS = ((0.01, 1.0, 1.0), (0.3, 1.0, 2.0))
BETAS = (0.0, 0.05, 0.3)
RUN = 300  # comparisons per run on disk
FIELDS = ("score", "genuine", "view", "kind", "u", "v", "reference", "unit_size")


def _budget(run: int = RUN) -> float:
    """A memory budget (GiB) whose runs hold ``run`` comparisons."""
    return run * sv.BYTES_PER_COMPARISON / 2**30


@pytest.fixture(autouse=True)
def small_steps(monkeypatch):
    """Runs, spans and merge steps far smaller than the data, so that every loop over them runs many times."""
    monkeypatch.setattr(sv, "MIN_RUN", 1)
    monkeypatch.setattr(sv, "SPAN", 1000)
    monkeypatch.setattr(es, "CHUNK", 777)


def _data(listed: bool, grouped: bool, seed: int = 5) -> MatchData:
    """Embeddings on a coarse lattice in 3 dimensions: a few hundred distinct scores among ~9,000 comparisons, so most
    tie blocks span several runs (a merge that broke ties by anything but the stream's order would move u, v)."""
    rng = np.random.default_rng(seed)
    n_id = 40
    ident = np.repeat(np.arange(n_id), rng.integers(2, 6, n_id))
    emb = np.round(rng.normal(size=(n_id, 3))[ident] + 0.9 * rng.normal(size=(ident.size, 3)), 0)
    emb[np.all(emb == 0, axis=1)] = 1.0
    attrs = pd.DataFrame({"g": np.where(ident % 3 == 0, "A", "B")}) if grouped else None
    pairs = None
    if listed:
        i, j = np.triu_indices(ident.size, 1)
        keep = (ident[i] == ident[j]) | (rng.random(i.size) < 0.6)
        pairs = np.stack([i[keep], j[keep]], axis=1).astype(str)
    return ma.from_embeddings(emb, ident, attributes=attrs, group_by="g" if grouped else None, pairs=pairs)


def _hostile_table(seed: int = 2) -> MatchData:
    """A listed table whose scores hold both infinities, both zeros and heavy ties."""
    base = _data(True, True, seed)
    p = base.pairs
    rng = np.random.default_rng(seed)
    s = np.round(p.score, 1)
    for value, share in ((np.inf, 0.02), (-np.inf, 0.02), (0.0, 0.05), (-0.0, 0.05)):
        s[rng.random(s.size) < share] = value
    return MatchData(base.identity_names, base.identity_group, base.group_names, base.group_by, "listed",
                     "similarity", samples=base.samples, pairs=PairBlock(s, *(getattr(p, f) for f in
                                                                              list(PairBlock.__dataclass_fields__)[1:])))


def _assert_same_views(mem: sv.ScoreViews, disk: sv.ScoreViews) -> None:
    assert mem.spill is None and disk.spill is not None
    assert isinstance(disk.score, np.memmap) and not disk.score.flags.writeable
    for f in FIELDS:
        a, b = getattr(mem, f), getattr(disk, f)
        assert a.dtype == b.dtype, f
        np.testing.assert_array_equal(a, b, err_msg=f)
    assert (mem.unit, mem.n_units, mem.names) == (disk.unit, disk.n_units, disk.names)
    np.testing.assert_array_equal(mem.layout.identity_group, disk.layout.identity_group)
    assert sum(getattr(disk, f).itemsize for f in FIELDS[:-1]) * 2 == sv.DISK_BYTES_PER_COMPARISON


def _assert_same_summaries(a: sv.Summaries, b: sv.Summaries) -> None:
    for f in ("estimate", "v_estimate", "replicates", "ops"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    for x, y in zip(a.dual, b.dual):
        np.testing.assert_array_equal(x, y)


def _both(data: MatchData, method: str, tmp_path: Path, **kw) -> tuple[sv.ScoreViews, sv.ScoreViews]:
    return sv.materialise(data, method, **kw), sv.materialise(data, method, _budget(), spill_dir=tmp_path, **kw)


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("listed", [False, True])
@pytest.mark.parametrize("method", sv.METHODS)
def test_views_on_disk_equal_the_views_in_memory(tmp_path, method, listed, grouped):
    """Every field, summary, rate, record and histogram to the bit. Nearly every comparison is tied with others
    from other runs: a merge that broke ties by the later run first fails here (tried)."""
    data = _data(listed, grouped)
    mem, disk = _both(data, method, tmp_path, threshold_impostors="same-group" if listed else "all")
    _assert_same_views(mem, disk)
    ties = np.diff(np.flatnonzero(np.diff(np.concatenate([[-np.inf], mem.score, [np.inf]])) != 0))
    assert mem.n > 15 * RUN and ties[ties > 1].sum() > 0.9 * mem.n and (ties >= 10).sum() > 50  # ties across runs
    for llr in (True, False):
        a, b = (sv.Runner(v, OPS, llr=llr, fnmr_targets=BETAS).bootstrap(method, 24, 3) for v in (mem, disk))
        _assert_same_summaries(a, b)
    args = (method, 0.95, 24, 3)
    assert calibration_from(mem, a, False, *args).to_records() == calibration_from(disk, b, False, *args).to_records()
    da, db = distributions_from(mem, a, *args), distributions_from(disk, b, *args)
    assert da.to_records() == db.to_records()
    np.testing.assert_array_equal(da.edges, db.edges)
    for x, y in zip(da.histograms, db.histograms):
        np.testing.assert_array_equal(x.genuine, y.genuine)
        np.testing.assert_array_equal(x.impostor, y.impostor)


@pytest.mark.parametrize("method", sv.METHODS)
def test_infinities_and_both_zeros(tmp_path, method):
    data = _hostile_table()
    mem, disk = _both(data, method, tmp_path)
    assert np.isinf(mem.score).sum() > 100 and np.signbit(mem.score[mem.score == 0]).any()
    _assert_same_views(mem, disk)
    np.testing.assert_array_equal(np.signbit(mem.score), np.signbit(disk.score))  # -0.0 where it was
    a, b = (sv.Runner(v, OPS, llr=True, fnmr_targets=BETAS).bootstrap(method, 16, 1) for v in (mem, disk))
    _assert_same_summaries(a, b)


@pytest.mark.parametrize("method", ["vertex", "recentered"])
def test_a_table_read_from_disk(tmp_path, method):
    """A Parquet table read a row group at a time (runs cut across its row groups) against the same table loaded."""
    path = write(comparisons(n_ids=40, per=4), tmp_path / "c.parquet", rows=700)
    mem = sv.materialise(load_comparisons(path, group_by="sex"), method)
    disk = sv.materialise(load_comparisons(path, group_by="sex", out_of_core=True), method, _budget(),
                          spill_dir=tmp_path)
    _assert_same_views(mem, disk)
    a, b = (sv.Runner(v, OPS, fnmr_targets=BETAS).bootstrap(method, 16, 2) for v in (mem, disk))
    _assert_same_summaries(a, b)


def test_memory_holds_runs_and_spans_not_the_comparisons(tmp_path):
    """On disk, building the views and the plug-in, V-statistic and count passes allocate about a run's budget and
    a few spans (tracemalloc), where in memory they take 50-58 bytes per comparison: a listed table of 90,000
    comparisons (no score tile), runs of 2,000 (128 kB budget), spans of 4,096."""
    from matchaudit.estimators.distributions import histograms

    data = load_comparisons(write(comparisons(n_ids=150, per=4), tmp_path / "c.parquet", rows=5000), group_by="sex")
    sv.SPAN = 4096
    budget = _budget(2000)

    def passes() -> sv.ScoreViews:
        views = sv.materialise(data, "recentered", budget, spill_dir=tmp_path)
        run = sv.Runner(views, OPS, llr=True, fnmr_targets=BETAS)
        run.v_statistic()
        run.v_statistic(dual=True)
        run.plug_in()
        views.comparisons()
        histograms(views, 60)
        return views

    passes()  # compiled and warm
    tracemalloc.start()
    try:
        views = passes()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert views.n > 90_000 and isinstance(views.score, np.memmap)
    assert peak < 2 * budget * 2**30, (peak, budget * 2**30)  # 5% of the 5 MB the views take in memory


def _folders(root: Path) -> list[Path]:
    return sorted(root.glob("matchaudit-*"))


def test_the_folder_goes_with_the_views(tmp_path):
    data = _data(False, True)
    views = sv.materialise(data, "recentered", _budget(), spill_dir=tmp_path)
    run = sv.Runner(views, OPS, llr=True)
    run.plug_in()
    (folder,) = _folders(tmp_path)
    assert views.spill.path == folder
    del views, run
    gc.collect()
    assert _folders(tmp_path) == []
    nameless = _data(True, True)
    p = nameless.pairs
    nameless = MatchData(nameless.identity_names, nameless.identity_group, nameless.group_names, nameless.group_by,
                         "listed", "similarity", pairs=PairBlock(*(getattr(p, f) for f in list(
                             PairBlock.__dataclass_fields__)[:-2]), np.full(len(p), -1), np.full(len(p), -1)))
    with pytest.raises(InputError, match="names no samples"):  # raised by the first run, after the folder is made
        sv.materialise(nameless, "recentered", _budget(), spill_dir=tmp_path)
    assert _folders(tmp_path) == []


def test_a_disk_without_room_is_an_input_error(tmp_path, monkeypatch):
    data = _data(False, True)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    with pytest.raises(InputError) as e:
        sv.materialise(data, "vertex", _budget(), "calibration intervals", spill_dir=tmp_path)
    text = str(e.value)
    assert e.value.param == "spill_dir" and str(tmp_path) in text and "GiB free" in text and "sorted on disk" in text
    assert "spill_dir" in text and "memory_gib" in text
    assert _folders(tmp_path) == []


def test_a_disk_that_fills_while_sorting_is_an_input_error(tmp_path, monkeypatch):
    def full(fd, offset, size):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(InputError, match="No space left on device") as e:
        sv.materialise(_data(True, False), "vertex", _budget(), spill_dir=tmp_path)
    assert e.value.param == "spill_dir" and str(tmp_path) in str(e.value)
    assert _folders(tmp_path) == []


@pytest.mark.parametrize("where", ["missing", "a file"])
def test_a_folder_that_cannot_be_made_is_an_input_error(tmp_path, where):
    target = tmp_path / "nowhere" if where == "missing" else tmp_path / "file"
    if where == "a file":
        target.write_text("")
    with pytest.raises(InputError, match="no temporary folder can be made") as e:
        sv.materialise(_data(False, True), "vertex", _budget(), spill_dir=target)
    assert e.value.param == "spill_dir" and str(target) in str(e.value)


def test_an_audit_without_room_skips_the_score_analyses_and_says_why(tmp_path, monkeypatch):
    """An audit's score analyses sort on disk beyond the budget when given a folder; where the disk has no room either
    they are skipped with a warning (the rest of the audit runs), never a traceback."""
    analyses = importlib.import_module("matchaudit.auditing.score_analyses")  # the package's name is its function
    data = _data(False, True)
    monkeypatch.setattr(analyses, "MEMORY_GIB", _budget())
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    audit = ma.audit(data, fmr=(1e-2,), intervals=ma.IntervalOptions(n_resamples=50, spill_dir=str(tmp_path)))
    assert any("skipped" in w and str(tmp_path) in w and "GiB free" in w for w in audit.warnings)
    assert _folders(tmp_path) == []
