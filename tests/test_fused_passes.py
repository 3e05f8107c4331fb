"""One scoring pass feeding several accumulators (:func:`matchaudit.engine.run_together`): the pooled and the
identity-balanced bootstrap counts and the identity counts from each tile scored once give what separate passes give,
bit for bit, on every path a counting pass takes (direct, sorted, collapsed), and a backend other than this process
still makes each pass its own way."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit import scores
from matchaudit.engine import LocalBackend, build_grid, identity_counts, identity_pass, plan, run, run_together
from matchaudit.engine import identity
from matchaudit.estimators import balanced
from matchaudit.auditing import class_passes
from tests.engine_reference import make_data

FIELDS = ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted",
          "replicates")
TARGETS = (0.3, 0.1, 0.02)


def _data():
    """Tied scores (integer embeddings), three groups, identities of 1 to 5 samples (three size classes a group)."""
    return make_data(seed=7, sizes=(3, 1, 4, 2, 5, 3, 2, 4, 1, 3, 5, 2), groups=(0, 1, 2, 0, 1, 2, 2, 1, 0, 0, 1, 2))


def _same(a, b) -> None:
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.info == b.info and a.scheme == b.scheme and a.seed == b.seed


def _ic_fields(ic) -> list:
    return [ic.g, ic.e, ic.m_row, ic.e_row, ic.e_row_cat, *ic.pair_k, *ic.pair_l, *ic.pair_e, *ic.pair_m]


@pytest.mark.parametrize("scheme, kw", [
    (rs.DoubleOrNothing(3), {}),  # identity level: the direct path (one lane batch, a small table)
    (rs.WithinIdentity(5), {}),  # sample level, self-pairs
    (rs.Vertex(2), {"lanes": 16}),  # several lane batches: entries sorted by key
    (rs.DoubleOrNothing(4), {"lanes": 16, "collapse": True}),  # identity-level entries merged first
])
def test_one_pass_feeds_each_accumulator_what_its_own_pass_would(monkeypatch, scheme, kw):
    """The pooled run (FMR targets: window items and exact thresholds; a fixed threshold), the balanced run (relabelled
    data, every class pair a category) and the identity counts, all from one pass over blocks of 4 rows, equal their
    separate passes; the pass scores each tile once."""
    data = _data()
    grid = build_grid(data, n_cells=12)
    t = [float(np.median(grid.edges))]
    reps = np.arange(1, 41)
    other = type(scheme)(scheme.seed + 1)  # the balanced run's scheme: other weights
    alone = run(data, scheme, reps, grid=grid, fmr_targets=TARGETS, thresholds=t, block_rows=4, **kw)
    bal_alone = class_passes.balanced_counts(data, other, reps, grid, thresholds=t)
    ts = np.sort(np.unique(np.concatenate([grid.edges[::3], t])))
    ic_alone = identity_counts(data, ts)
    tiles = []
    real = scores._tile
    monkeypatch.setattr(scores, "_tile", lambda *a, **k: (tiles.append(a[2:6]), real(*a, **k))[1])
    monkeypatch.setattr(identity, "_all_pairs_hits", None)  # identity counts from a pass of their own would fail
    with scores.tile_cache():
        monkeypatch.setattr(scores, "CACHE_BYTES", 0)  # streamed: each pass scores the tiles again
        pooled = plan(data, scheme, reps, grid=grid, fmr_targets=TARGETS, thresholds=t, block_rows=4, **kw)
        bal = class_passes.balanced_plan(data, other, reps, grid, t)
        bal = dataclasses.replace(bal, block_rows=4, task=dataclasses.replace(bal.task, block_rows=4))
        got, bal_got = run_together(data, [pooled, bal], also=[identity_pass(data, ts)])
        ic = identity_counts(data, ts)
    _same(got, alone)
    _same(balanced.unit_weighted(data, bal_got), bal_alone)
    for x, y in zip(_ic_fields(ic), _ic_fields(ic_alone), strict=True):
        np.testing.assert_array_equal(x, y)
    assert len(tiles) == len(set(tiles)) == len(list(scores.tiles(data.samples.ids.shape[0], 4)))


@pytest.mark.parametrize("fuses, serves", [(False, False), (True, False), (True, True)])
def test_a_backend_other_than_this_process_counts_the_runs_its_own_way(monkeypatch, fuses, serves):
    """Another backend makes the passes its own way: one that cannot fuse gets the runs in its ``count`` one by one,
    one that can (:attr:`Backend.fuses`, as the Dask backend's workers do with ``count_many``) gets them together in
    ``count_together``, one scoring pass, which also feeds the accumulators ``also`` that it serves
    (:meth:`Backend.serves`: Dask and torch the identity pass); the others get a pass of their own here. The counts
    are those of the fused pass either way."""
    data = _data()
    grid = build_grid(data, n_cells=12)
    scheme, reps = rs.DoubleOrNothing(3), np.arange(1, 21)

    class Elsewhere(LocalBackend):
        calls: list = []

        def count(self, data, task, progress, wt=None):
            self.calls.append(task.replicates.size)
            return super().count(data, task, progress, wt)

        def serves(self, acc):
            return serves

    Elsewhere.fuses = fuses

    def plans():
        return [plan(data, scheme, reps, grid=grid, fmr_targets=TARGETS), class_passes.balanced_plan(data, scheme, reps, grid)]

    ts = grid.edges[::4]
    tiles = []
    real = scores._tile
    with scores.tile_cache():
        monkeypatch.setattr(scores, "CACHE_BYTES", 0)  # streamed: each pass scores the tiles again
        monkeypatch.setattr(scores, "_tile", lambda *a, **k: (tiles.append(a[2:6]), real(*a, **k))[1])
        there = run_together(data, plans(), backend=Elsewhere(), also=[identity_pass(data, ts)])
        ic = identity_counts(data, ts)
        monkeypatch.setattr(scores, "_tile", real)
    assert Elsewhere.calls == ([] if fuses else [20, 20])
    per_pass = len(list(scores.tiles(data.samples.ids.shape[0], 2048)))
    # the identity counts' pass here unless served, then the runs' pass(es)
    assert len(tiles) == (1 if serves else 2 if fuses else 3) * per_pass
    here = run_together(data, plans())
    for a, b in zip(there, here, strict=True):
        _same(a, b)
    for x, y in zip(_ic_fields(ic), _ic_fields(identity_counts(data, ts)), strict=True):
        np.testing.assert_array_equal(x, y)


def test_an_audit_on_another_backend_equals_the_fused_audit(monkeypatch):
    """The audit on the PyTorch backend (which fuses too: the pooled and the balanced replicates and the shared identity
    counts from one scoring of each tile on the device, no identity pass here) gives the fused CPU audit's results, to
    the byte."""
    pytest.importorskip("torch")
    import json

    import matchaudit as ma
    from matchaudit.engine import torch_backend as tb
    from matchaudit.simulation import GroupSpec, simulate_vmf

    data = simulate_vmf({"A": GroupSpec(20, (20.0, 60.0)), "B": GroupSpec(15, (15.0, 40.0))}, dim=16,
                        samples_per_identity=4, seed=2).as_data()
    kw = dict(fmr=(1e-1, 1e-2), intervals=ma.IntervalOptions(n_resamples=40), tests=ma.TestOptions(n_resamples=19))
    here = json.dumps(ma.audit(data, **kw).to_dict(), sort_keys=True, default=str)
    device = tb.TorchBackend("cpu", tile=1 << 12)
    seen = []
    real = tb.tile_scores
    monkeypatch.setattr(tb, "tile_scores", lambda *a: (seen.append(a[2:6]), real(*a))[1])
    monkeypatch.setattr(identity.IdentityPass, "feed", None)  # an identity pass here would fail
    monkeypatch.setattr(identity, "_all_pairs_hits", None)
    there = json.dumps(ma.audit(data, backend=device, **kw).to_dict(), sort_keys=True, default=str)
    assert here == there
    assert sorted(seen) == sorted(step[2:] for step in tb._Tiles(device, data, 2048).steps)  # one pass on the device


def test_the_fused_pass_in_smaller_blocks_gives_the_same_audit(monkeypatch):
    """With a progress display the bootstrap's pass streams smaller blocks (256 rows: 3 row blocks here, against one
    of 2,048), which the shared identity counts are fed too, then answer the steps' calls made with the default
    blocks: the same results, to the byte."""
    import json

    import matchaudit as ma
    from matchaudit.simulation import GroupSpec, simulate_vmf

    data = simulate_vmf({"A": GroupSpec(40, (20.0, 60.0)), "B": GroupSpec(20, (15.0, 40.0))}, dim=16,
                        samples_per_identity=10, seed=4).as_data()
    monkeypatch.setattr(scores, "CACHE_BYTES", 0)  # streamed: every pass scores its blocks
    rows = []
    real = scores.tiles
    monkeypatch.setattr(scores, "tiles", lambda n, block_rows=2048, part=(0, 1): (
        rows.append(block_rows), real(n, block_rows, part))[1])
    kw = dict(fmr=(1e-1, 1e-2), intervals=ma.IntervalOptions(n_resamples=40), tests=ma.TestOptions(n_resamples=19))
    quiet, shown = (json.dumps(ma.audit(data, progress=p, **kw).to_dict(), sort_keys=True, default=str)
                    for p in (False, True))
    assert quiet == shown and 256 in rows
