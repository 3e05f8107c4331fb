"""The Dask backend (LocalCluster: 2 worker processes) gives the CPU engine's counts bit for bit, for every
resampling scheme, on all-pairs, listed and out-of-core data; the audit's results are identical."""

from __future__ import annotations

import json
import signal

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("distributed")

from matchaudit import resampling as rs  # noqa: E402
from matchaudit.cli import app  # noqa: E402
from matchaudit.data import load_comparisons  # noqa: E402
from matchaudit.engine import LocalBackend, build_grid, run, window  # noqa: E402
from matchaudit.engine.backends import make_backend  # noqa: E402
from matchaudit.engine.dask_backend import DaskBackend  # noqa: E402
from matchaudit.errors import InputError  # noqa: E402
from tests.engine_reference import listed, make_data  # noqa: E402
from tests.test_out_of_core import comparisons, write  # noqa: E402

FIELDS = ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted",
          "imputed_pairs")


SIGINT_AT_START = signal.getsignal(signal.SIGINT)  # Python's handler, or SIG_IGN in a shell's background job


@pytest.fixture(scope="module")
def dask():
    with DaskBackend(n_workers=2) as backend:
        assert len(backend.client.nthreads()) == 2
        yield backend


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    small = make_data(seed=8, sizes=(3, 5, 2, 6, 1, 4), groups=(0, 1, 1, 0, 1, 0))
    big = make_data(seed=9, sizes=tuple(range(1, 9)) * 5, groups=(0, 1, 2, 1, 0) * 8)  # ~ 9k listed rows
    path = write(comparisons(seed=4), tmp_path_factory.mktemp("dask") / "c.parquet", rows=300)
    return {"all-pairs": (small, 2), "listed": (listed(big, keep=0.7), 1),
            "out-of-core": (load_comparisons(path, group_by="sex", out_of_core=True), 2048)}


@pytest.mark.parametrize("name", rs.SCHEMES)
@pytest.mark.parametrize("kind", ["all-pairs", "listed", "out-of-core"])
def test_dask_counts_equal_cpu(dask, datasets, kind, name, monkeypatch):
    data, block_rows = datasets[kind]
    assert data.n_blocks(block_rows) > 1  # several parts, on both workers
    scheme = rs.SCHEMES[name](17)
    grid = build_grid(data, n_cells=64)
    if kind == "out-of-core" and scheme.level == "comparison":
        with pytest.raises(InputError, match="needs the whole comparison table"):
            run(data, scheme, 6, grid=grid, fmr_targets=[0.05, 0.2], backend=dask)
        return
    ref = run(data, scheme, 6, grid=grid, fmr_targets=[0.05, 0.2], block_rows=block_rows)
    monkeypatch.setattr(window, "Z", 0.0)  # a narrow window: the second pass runs on the workers too
    got = run(data, scheme, 6, grid=grid, fmr_targets=[0.05, 0.2], block_rows=block_rows, backend=dask)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)


@pytest.mark.parametrize("name", ["double-or-nothing", "within-identity", "vertex"])
def test_dask_counts_several_runs_in_one_pass_as_the_cpu_does(dask, datasets, name, monkeypatch):
    """``run_together`` on Dask (``count_together``: each part's blocks scored once on a worker and fed to every
    run, ``count_many``) gives each run's CPU counts: the pooled run and the identity-balanced run over the size
    classes (relabelled data, other categories) in one pass of several parts."""
    import dataclasses

    from matchaudit.auditing.class_passes import balanced_plan
    from matchaudit.engine import plan, run_together

    data, block_rows = datasets["all-pairs"]
    grid = build_grid(data, n_cells=64)

    def plans():
        bal = balanced_plan(data, rs.SCHEMES[name](23), 6, grid)
        return [plan(data, rs.SCHEMES[name](17), 6, grid=grid, fmr_targets=[0.05, 0.2], block_rows=block_rows),
                dataclasses.replace(bal, block_rows=block_rows, task=dataclasses.replace(bal.task,
                                                                                         block_rows=block_rows))]

    together = []
    real = dask.count_together
    monkeypatch.setattr(dask, "count_together", lambda *a, **k: (together.append(len(a[1])), real(*a, **k))[1])
    here = run_together(data, plans())

    def one_run(*args, **kwargs):
        raise AssertionError("a pass of its own for one run")

    monkeypatch.setattr(dask, "count", one_run)
    there = run_together(data, plans(), backend=dask)
    assert together == [2]  # both runs in one call, counted by count_many: one scoring pass per part
    for a, b in zip(there, here, strict=True):
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def _refuse_local_identity_passes(monkeypatch) -> None:
    """Identity counts made in this process (an identity pass fed here, or one of its own) fail; the workers are
    other processes."""
    from matchaudit.engine import identity

    def here(*args, **kwargs):
        raise AssertionError("an identity pass in this process")

    monkeypatch.setattr(identity.IdentityPass, "feed", here)
    monkeypatch.setattr(identity, "_all_pairs_hits", here)


@pytest.mark.parametrize("rule", [">=", ">"])
def test_dask_counts_the_identity_pass_on_the_workers(dask, datasets, rule, monkeypatch):
    """The identity pass fed by Dask's pass (``run_together(also=...)`` -> ``count_together``): each part's hits
    counted on a worker beside the runs and merged in tile order, the local pass's result array for array (parts of
    interleaved row blocks: concatenated as they finish, the order would differ), and the identity counts answered
    from it the CPU's; no identity pass in this process."""
    from matchaudit.engine import identity_counts, identity_pass, plan, run_together
    from matchaudit.engine.passes import feed
    from matchaudit.scores import tile_cache, upper_triangle

    data, block_rows = datasets["all-pairs"]
    grid = build_grid(data, n_cells=64, rule=rule)
    obs = np.unique(upper_triangle(data.samples.embeddings)[0])
    ts = np.concatenate([obs[::3], [-np.inf, np.inf]])  # on observed scores (ties), and beyond both ends
    local = identity_pass(data, ts, rule)
    feed(data, block_rows, [local])
    want = local.done()
    want_counts = identity_counts(data, ts, rule, block_rows=block_rows)
    assert want[1].size > 0 and data.n_blocks(block_rows) >= 2 * dask._parts(data, plan(data, block_rows=block_rows).task)

    def plans():
        return [plan(data, rs.Vertex(17), 6, grid=grid, fmr_targets=[0.05, 0.2], block_rows=block_rows),
                plan(data, rs.DoubleOrNothing(23), 6, grid=grid, block_rows=block_rows)]

    ref = run_together(data, plans())
    _refuse_local_identity_passes(monkeypatch)
    with tile_cache():
        acc = identity_pass(data, ts, rule, block_rows=block_rows)
        got = run_together(data, plans(), backend=dask, also=[acc])
        counts = identity_counts(data, ts, rule, block_rows=block_rows)
    for x, y in zip(acc.done(), want, strict=True):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    for f in ("g", "e", "m_row", "e_row", "m_row_cat", "e_row_cat", "sum_m2", "pair_k", "pair_l", "pair_e", "pair_m"):
        x, y = getattr(counts, f), getattr(want_counts, f)
        for a, b in zip(*((v if isinstance(v, list) else [v]) for v in (x, y)), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f)
    for a, b in zip(got, ref, strict=True):
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def test_dask_audit_counts_its_identities_in_the_one_distributed_pass(dask, monkeypatch):
    """A Dask audit with intervals and group tests: the pooled and balanced bootstraps and the shared identity counts
    in one distributed pass (one ``count_together``, no ``count``), nothing of it here (no identity pass in this
    process), the score views' replicates on the workers, and the CPU audit's results to the byte."""
    import matchaudit as ma
    from matchaudit import scores
    from matchaudit.simulation import GroupSpec, simulate_vmf

    data = simulate_vmf({"A": GroupSpec(30, (20.0, 60.0)), "B": GroupSpec(20, (15.0, 40.0))}, dim=16,
                        samples_per_identity=5, seed=3).as_data()
    kw = dict(fmr=(1e-1, 1e-2, 3e-2), fnmr=(5e-2,), intervals=ma.IntervalOptions(n_resamples=40),
              tests=ma.TestOptions(n_resamples=19))
    monkeypatch.setattr(scores, "CACHE_BYTES", 0)  # streamed: every pass here scores its tiles
    tiles = []
    real = scores._tile
    monkeypatch.setattr(scores, "_tile", lambda *a, **k: (tiles.append(1), real(*a, **k))[1])
    cpu = json.dumps(ma.audit(data, **kw).to_dict(), sort_keys=True, default=str)
    here_cpu, tiles[:] = len(tiles), []
    calls = []
    real_together = dask.count_together
    monkeypatch.setattr(dask, "count_together", lambda *a, **k: (calls.append(len(a[3])), real_together(*a, **k))[1])
    monkeypatch.setattr(dask, "count", lambda *a, **k: calls.append("count"))
    _refuse_local_identity_passes(monkeypatch)
    blocks = []
    real_blocks = dask.blocks
    monkeypatch.setattr(dask, "blocks", lambda fn, spans: (blocks.append(len(spans)), real_blocks(fn, spans))[1])
    dist = json.dumps(ma.audit(data, backend=dask, **kw).to_dict(), sort_keys=True, default=str)
    assert calls == [1]  # one distributed pass, serving the one identity pass
    assert blocks == [1]  # the score views' replicates (calibration, distributions, FNMR targets) on the workers
    # here: the CPU audit's passes but the bootstrap's, which kept the comparisons for the score views; on Dask a
    # pass here keeps them instead (the views' own pass, without the plan)
    assert here_cpu - len(tiles) == 0 and len(list(scores.tiles(data.samples.ids.shape[0]))) == 1
    assert dist == cpu


@pytest.mark.parametrize("method", ["double-or-nothing", "vertex", "recentered"])
def test_score_view_replicates_on_the_workers_equal_the_local_ones(dask, method):
    """The score views' bootstrap in blocks on the Dask workers (``Backend.blocks``: the views sent once, each block's
    weights regenerated from the seed there) gives this process's summaries and FNMR-target rates bit for bit, over
    several blocks in order."""
    from matchaudit.estimators import score_views as sv
    from matchaudit.simulation import GroupSpec, simulate_vmf

    data = simulate_vmf({"A": GroupSpec(20, (20.0, 60.0)), "B": GroupSpec(15, (15.0, 40.0))}, dim=8,
                        samples_per_identity=4, seed=2).as_data()
    runner = sv.Runner(sv.materialise(data, method), ((0.01, 1, 1),), llr=False, fnmr_targets=(0.05, 0.2))
    n = 2 * sv.BATCH + 7  # three blocks, the last short
    here = runner.bootstrap(method, n, seed=4)
    there = runner.bootstrap(method, n, seed=4, blocks=dask.blocks)
    for a, b in ((here.replicates, there.replicates), (here.dual[2], there.dual[2]), (here.estimate, there.estimate)):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(here.replicates[:sv.BATCH], here.replicates[sv.BATCH:2 * sv.BATCH])


def test_audit_results_identical(dask, tmp_path):
    path = write(comparisons(seed=5), tmp_path / "c.parquet")
    runner = CliRunner()
    base = ["audit", "--comparisons", str(path), "--group-by", "sex", "--n-resamples", "60", "--threshold", "1",
            "--quiet"]
    cpu = runner.invoke(app, base + ["--out", str(tmp_path / "cpu")])
    address = dask.client.scheduler.address
    dist = runner.invoke(app, base + ["--out", str(tmp_path / "dask"), "--backend", "dask", "--scheduler", address,
                                      "--out-of-core"])
    assert cpu.exit_code == 0 and dist.exit_code == 0, cpu.output + dist.output
    docs = [json.loads((tmp_path / d / "results.json").read_text()) for d in ("cpu", "dask")]
    for d in docs:
        d.pop("command", None)
    assert docs[0]["intervals"] and docs[0] == docs[1]


def test_registry_and_options():
    assert isinstance(make_backend("cpu"), LocalBackend)
    with pytest.raises(InputError, match="choose from cpu, dask") as e:
        make_backend("tpu")
    assert e.value.param == "backend" and "--" not in str(e.value)  # the library names parameters, not flags
    with pytest.raises(InputError, match="workers sets the size of a local cluster"):
        make_backend("dask", scheduler="tcp://127.0.0.1:1", workers=2)
    with pytest.raises(InputError, match="cannot connect"):
        DaskBackend(scheduler="tcp://127.0.0.1:1", timeout=1)
    res = CliRunner().invoke(app, ["audit", "--comparisons", "x.parquet", "--backend", "tpu"])
    assert res.exit_code == 2 and "--backend 'tpu': choose from" in res.output  # the CLI names its flag


def _sigint_disposition() -> str:
    return str(signal.getsignal(signal.SIGINT))


def test_local_workers_leave_ctrl_c_to_the_client(dask):
    """A terminal's Ctrl-C reaches the whole process group: the local cluster's workers ignore it (no
    tracebacks of theirs), and this process handles it as before."""
    assert set(dask.client.run(_sigint_disposition).values()) == {str(signal.SIG_IGN)}
    assert signal.getsignal(signal.SIGINT) is SIGINT_AT_START


def test_ctrl_c_cancels_the_parts(dask, datasets, monkeypatch):
    import distributed

    data, block_rows = datasets["all-pairs"]
    cancelled = []
    monkeypatch.setattr(distributed, "as_completed", lambda fs: (_ for _ in ()).throw(KeyboardInterrupt()))
    monkeypatch.setattr(dask.client, "cancel", lambda fs: cancelled.extend(fs))
    with pytest.raises(KeyboardInterrupt):
        run(data, rs.Vertex(1), 4, block_rows=block_rows, backend=dask)
    assert len(cancelled) > 1
