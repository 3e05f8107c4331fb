"""The PyTorch backend gives the CPU engine's counts, thresholds and items bit for bit (CPU tensors here;
the CUDA tests run where a GPU is present and skip cleanly elsewhere)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, passes, run, weights, window
from matchaudit.engine import torch_backend as tb
from matchaudit.engine.torch_backend import TorchBackend, tile_scores
from matchaudit.errors import InputError
from matchaudit.pairings import PairCategories
from matchaudit.scores import iter_similarity_blocks, quantise
from tests.engine_reference import listed, make_data

FIELDS = ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted",
          "imputed_pairs")
TARGETS = [0.3, 0.1, 0.02, 0.0]
HOOK_SCHEMES = [s for s in (cls(seed=40 + k) for k, cls in enumerate(rs.SCHEMES.values())) if s.level != "comparison"]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _same(c, ref, msg=""):
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(c, f), getattr(ref, f), err_msg=f"{f} {msg}")


def _vmf(metric: str = "cosine"):
    """Mid-size vMF data: three groups, 60 identities x 8 samples (114,960 comparisons)."""
    from matchaudit.data import from_embeddings
    from matchaudit.simulation import GroupSpec, simulate_vmf

    groups = {"A": GroupSpec(25, (120.0, 800.0)), "B": GroupSpec(20, (70.0, 250.0)),
              "C": GroupSpec(15, (120.0, 800.0), centroid_kappa=40.0)}
    sim = simulate_vmf(groups, dim=32, samples_per_identity=8, seed=3)
    return from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples[["group"]],
                           group_by="group", metric=metric)


def test_hook_schemes_cover_every_entry_mode():
    assert {weights.mode_of(s) for s in HOOK_SCHEMES} == {0, 1, 2, 3}  # SAMPLE, PRODUCT, SUM, RELABEL


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_tile_scores_bit_for_bit(metric):
    g = np.random.default_rng(5)
    emb = g.standard_normal((300, 48)).astype(np.float32)
    q, scale = quantise(emb, metric)
    qt = torch.as_tensor(q)
    sq = (qt * qt).sum(dim=1)
    for b in iter_similarity_blocks(emb, metric, block_rows=64):
        r, c = b.scores.shape
        s = tile_scores(qt, sq, b.row0, b.row0 + r, b.col0, b.col0 + c, metric == "cosine", scale).numpy()
        i = np.arange(b.row0, b.row0 + r)[:, None]
        j = np.arange(b.col0, b.col0 + c)[None, :]
        off = j > i  # the diagonal holds the self-score, set separately
        np.testing.assert_array_equal(s[off].view(np.int64), b.scores[off].view(np.int64))


@pytest.mark.parametrize("method", ["scatter", "onehot"])
@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
@pytest.mark.parametrize("scheme", HOOK_SCHEMES + [None], ids=lambda s: "plug-in" if s is None else s.name)
def test_small_data_identical_to_cpu(scheme, protocol, method, monkeypatch):
    """Tiny tiles and product chunks (many flushes), a narrow window (the second pass runs), both rules."""
    monkeypatch.setattr(window, "Z", 0.0)
    for seed, rule, ref_kind in ((3, ">=", "all"), (7, ">", "same-group")):
        data = make_data(seed=seed)
        if protocol == "listed":
            data = listed(data, seed=seed)
        grid = build_grid(data, n_cells=16, rule=rule)
        kw = {"grid": grid, "fmr_targets": TARGETS, "threshold_impostors": ref_kind}
        ref = run(data, scheme, 6, **kw)
        c = run(data, scheme, 6, backend=TorchBackend("cpu", method=method, tile=7, budget=40, lanes=4), **kw)
        _same(c, ref, f"{seed} {rule}")


@pytest.mark.parametrize("metric,rule", [("cosine", ">="), ("euclidean", ">")])
def test_vmf_identical_to_cpu(metric, rule):
    data = _vmf(metric)
    grid = build_grid(data, n_cells=1024, rule=rule)
    for scheme in HOOK_SCHEMES:
        ref = run(data, scheme, 12, grid=grid, fmr_targets=[1e-2, 1e-3, 1e-4])
        for method in ("scatter", "onehot"):
            c = run(data, scheme, 12, grid=grid, fmr_targets=[1e-2, 1e-3, 1e-4],
                    backend=TorchBackend("cpu", method=method, tile=1 << 14))
            _same(c, ref, f"{scheme.name} {method}")


@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
def test_items_are_the_same_multiset(protocol):
    data = make_data(seed=2)
    if protocol == "listed":
        data = listed(data)
    grid = build_grid(data, n_cells=16)
    for scheme in HOOK_SCHEMES:
        task = passes.CountTask(grid=grid, mode=weights.mode_of(scheme), scheme=scheme, replicates=np.arange(1, 4),
                                lanes=16, collapse=False, win=np.zeros(0, np.bool_), block_rows=3,
                                cats=PairCategories.pooled_by(np.ones((data.n_groups,) * 2, bool)))
        want = np.arange(grid.n_cells) % 3 == 1

        def rows(items):
            k, u, v, s = (np.concatenate(x) for x in zip(*items))
            return sorted(zip(k.tolist(), u.tolist(), v.tolist(), s.tolist()))

        got = TorchBackend("cpu", tile=5).items(data, task, want)
        assert rows(got) == rows(task.items(data, want)) and len(rows(got)) > 0, scheme.name


@pytest.mark.parametrize("method", ["scatter", "onehot", "fused"])
def test_exactness_limits_force_flushes_and_fallbacks(method, monkeypatch):
    """Tiny int32 / fp32 limits: partial tables flush after every chunk and segments fall back to the
    scatter; the counts do not change (a wrong flush rule would overflow or drop sums)."""
    data = make_data(seed=4)
    grid = build_grid(data, n_cells=16)
    scheme = rs.Vertex(3)
    ref = run(data, scheme, 8, grid=grid, fmr_targets=[0.1])
    monkeypatch.setattr(tb, "INT32", 200)
    c = run(data, scheme, 8, grid=grid, fmr_targets=[0.1], backend=TorchBackend("cpu", method=method, tile=11))
    _same(c, ref, "int32 limit")
    monkeypatch.setattr(tb, "INT32", (1 << 31) - 1)
    monkeypatch.setattr(tb, "EXACT32", 64)
    c = run(data, scheme, 8, grid=grid, fmr_targets=[0.1], backend=TorchBackend("cpu", method=method, tile=11))
    _same(c, ref, "fp32 limit")
    monkeypatch.setattr(tb, "EXACT32", 1 << 24)
    prec = torch.get_float32_matmul_precision()
    try:  # reduced-precision matmul inputs (TF32 / bf16): products above 256 go to the scatter
        torch.set_float32_matmul_precision("medium")
        c = run(data, scheme, 8, grid=grid, fmr_targets=[0.1], backend=TorchBackend("cpu", method=method, tile=11))
    finally:
        torch.set_float32_matmul_precision(prec)
    _same(c, ref, "reduced matmul precision")


def test_the_fused_kernel_counts_as_the_cpu_engine_in_one_compiled_kernel(monkeypatch):
    """``method="fused"`` (gather, product and add compiled into one kernel by ``torch.compile``; Triton on a GPU):
    every scheme's counts and window items equal the CPU engine's, on both protocols and rules, with tiny tiles and a
    partial table that flushes after every few entries; the compiled kernel is what counted (not the eager scatter)."""
    calls = []
    real = tb._fused_add(torch)
    monkeypatch.setattr(tb, "_fused_add", lambda t: lambda *a: (calls.append(1), real(*a)))
    monkeypatch.setattr(tb._Pass, "_scatter", None)  # the eager path must not run
    for seed, rule, protocol in ((3, ">=", "all-pairs"), (7, ">", "listed")):
        data = make_data(seed=seed)
        if protocol == "listed":
            data = listed(data, seed=seed)
        grid = build_grid(data, n_cells=16, rule=rule)
        for scheme in HOOK_SCHEMES:
            ref = run(data, scheme, 6, grid=grid, fmr_targets=TARGETS)
            c = run(data, scheme, 6, grid=grid, fmr_targets=TARGETS,
                    backend=TorchBackend("cpu", method="fused", tile=7, lanes=4))
            _same(c, ref, f"{seed} {rule} {scheme.name}")
    assert calls


def test_too_large_weights_and_bad_options_are_clear_errors():
    data = make_data(seed=1)
    task = passes.CountTask(grid=build_grid(data, n_cells=16), mode=0, scheme=rs.WithinIdentity(1),
                            replicates=np.arange(1, 3), lanes=16, collapse=False, win=np.zeros(0, np.bool_),
                            block_rows=3, cats=PairCategories.pooled_by(np.ones((data.n_groups,) * 2, bool)))
    wt, _ = task.weights(data)
    with pytest.raises(InputError, match="too large"):
        TorchBackend("cpu").count(data, task, False, wt * 50000)
    with pytest.raises(InputError, match="method"):
        TorchBackend("cpu", method="dense")


@cuda
@pytest.mark.parametrize("method", ["scatter", "onehot", "fused"])
def test_cuda_identical_to_cpu(method):
    data = _vmf("cosine")
    grid = build_grid(data, n_cells=1024)
    for scheme in HOOK_SCHEMES:
        ref = run(data, scheme, 12, grid=grid, fmr_targets=[1e-2, 1e-3])
        _same(run(data, scheme, 12, grid=grid, fmr_targets=[1e-2, 1e-3], backend=TorchBackend("cuda", method=method)),
              ref, f"{scheme.name} {method}")


@cuda
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_cuda_tile_scores_within_the_recheck_band(metric):
    """The device's own scores need not be the CPU's bits (cuBLAS on an H200: 1 ulp off in 9.7%); they must lie
    within a quarter of the band inside which the backend recomputes them exactly (what it checks on every tile's
    first row), so that every count and kept score is the CPU's (``test_device_rounding_is_rechecked...``)."""
    emb = np.random.default_rng(6).standard_normal((500, 128)).astype(np.float32)
    q, scale = quantise(emb, metric)
    qt = torch.as_tensor(q, device="cuda")
    sq = (qt * qt).sum(dim=1)
    for b in iter_similarity_blocks(emb, metric, block_rows=128):
        r, c = b.scores.shape
        s = tile_scores(qt, sq, b.row0, b.row0 + r, b.col0, b.col0 + c, metric == "cosine", scale).cpu().numpy()
        off = np.arange(b.col0, b.col0 + c)[None, :] > np.arange(b.row0, b.row0 + r)[:, None]
        err = tb.RECHECK_ULPS * np.finfo(np.float64).eps
        sqh = np.einsum("ij,ij->i", q, q)
        band = (np.full((r, c), err) if metric == "cosine" else
                np.sqrt(err * (sqh[b.row0:b.row0 + r, None] + sqh[None, b.col0:b.col0 + c])) / scale)
        assert (np.abs(s[off] - b.scores[off]) <= band[off] / 4).all()


@cuda
def test_cuda_identical_to_cpu_with_thresholds_on_observed_scores():
    data = _vmf("cosine")
    obs = np.sort(run(data, None, grid=build_grid(data, n_cells=64), fmr_targets=[1e-2, 1e-3],
                      keep_tail=True).tail.impostor_score)
    thresholds = obs[:: max(1, obs.size // 40)]
    grid = build_grid(data, n_cells=1024, thresholds=thresholds)
    for scheme in HOOK_SCHEMES:
        kw = dict(grid=grid, fmr_targets=[1e-2, 1e-3], thresholds=thresholds)
        _same(run(data, scheme, 12, backend=TorchBackend("cuda"), **kw), run(data, scheme, 12, **kw), scheme.name)


@cuda
def test_cuda_listed_identical_to_cpu():
    data = listed(make_data(seed=9))
    grid = build_grid(data, n_cells=16, rule=">")
    for scheme in HOOK_SCHEMES:
        ref = run(data, scheme, 6, grid=grid, fmr_targets=TARGETS)
        _same(run(data, scheme, 6, grid=grid, fmr_targets=TARGETS, backend=TorchBackend("cuda")), ref, scheme.name)


def test_cuda_request_without_cuda_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.raises(InputError, match="no CUDA device: use the cpu backend"):
        TorchBackend("cuda")


def test_registered_as_gpu():
    from matchaudit.engine import backends

    data = make_data(seed=5)
    grid = build_grid(data, n_cells=16)
    ref = run(data, rs.Subsets(2), 5, grid=grid, fmr_targets=TARGETS)
    _same(run(data, rs.Subsets(2), 5, grid=grid, fmr_targets=TARGETS,
              backend=backends.make_backend("gpu", device="cpu", method="onehot")), ref)
    with pytest.raises(InputError, match="no options"):
        backends.make_backend("gpu", workers=2)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA"):
            backends.make_backend("gpu", scheduler=None)  # the CLI's --backend gpu, on a machine without CUDA


def test_tail_hits_same_comparisons():
    """``keep_tail`` reads the window items: the same comparisons (as multisets) from either backend."""
    data = _vmf()
    grid = build_grid(data, n_cells=256)
    for scheme in (rs.WithinIdentity(4), rs.Vertex(5)):
        ref = run(data, scheme, 3, grid=grid, fmr_targets=[1e-3], keep_tail=True).tail
        got = run(data, scheme, 3, grid=grid, fmr_targets=[1e-3], keep_tail=True, backend=TorchBackend("cpu")).tail
        assert got.floor == ref.floor and ref.impostor_score.size > 0
        for fields in (("genuine_identity", "genuine_score"), ("impostor_a", "impostor_b", "impostor_score")):
            order = [np.lexsort([getattr(t, f) for f in fields][::-1]) for t in (got, ref)]
            for f in fields:
                np.testing.assert_array_equal(getattr(got, f)[order[0]], getattr(ref, f)[order[1]], err_msg=f)


def test_cli_backend_gpu(tmp_path):
    """``audit --backend gpu``: without CUDA one clear line and exit 2; with CUDA the CPU's results."""
    import json

    from typer.testing import CliRunner

    from matchaudit.cli import app
    from tests.test_out_of_core import comparisons, write

    path = write(comparisons(seed=5), tmp_path / "c.parquet")
    base = ["audit", "--comparisons", str(path), "--group-by", "sex", "--n-resamples", "40", "--threshold", "1",
            "--quiet"]
    res = CliRunner().invoke(app, base + ["--out", str(tmp_path / "gpu"), "--backend", "gpu"])
    if not torch.cuda.is_available():
        assert res.exit_code == 2 and "CUDA" in res.output and "Traceback" not in res.output, res.output
        return
    cpu = CliRunner().invoke(app, base + ["--out", str(tmp_path / "cpu")])
    assert res.exit_code == 0 and cpu.exit_code == 0, res.output + cpu.output
    docs = [json.loads((tmp_path / d / "results.json").read_text()) for d in ("cpu", "gpu")]
    for d in docs:
        d.pop("command", None)
    assert docs[0]["intervals"] and docs[0] == docs[1]


def _nudged(ulps: int, share: float = 0.3, seed: int = 0):
    """``tile_scores`` as a device whose GEMM rounds differently: ``share`` of the scores moved by 1..``ulps`` units
    in the last place, either way (cuBLAS on an H200: 1 ulp in 9.7% of the scores)."""
    rng = np.random.default_rng(seed)

    def scores(*args):
        s = tile_scores(*args).numpy().copy()
        hit = (rng.random(s.shape) < share) & np.isfinite(s) & (s != 0)
        steps = rng.integers(1, ulps + 1, s.shape) * rng.choice([-1, 1], s.shape)
        bits = s.view(np.int64)  # adjacent floats of one sign have adjacent bit patterns
        bits[hit] += steps[hit]
        return torch.from_numpy(s)

    return scores


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_device_rounding_is_rechecked_to_the_cpu_counts_and_scores(metric, monkeypatch):
    """#46 item 5: a device whose scores are a few ulps off (simulated on CPU tensors) still gives the CPU's counts,
    exact FMR-target thresholds and kept items bit for bit: the scores near a cell edge (thresholds on observed
    scores, where one ulp moves a comparison across) and in the kept cells are recomputed by the CPU's formula.
    Without the recheck the same run differs; a device further off than its bound is refused."""
    data = _vmf(metric)
    obs = np.sort(run(data, None, grid=build_grid(data, n_cells=64), fmr_targets=[1e-2, 1e-3],
                      keep_tail=True).tail.impostor_score)
    thresholds = obs[:: max(1, obs.size // 40)]  # edges exactly on observed scores
    grid = build_grid(data, n_cells=512, thresholds=thresholds)
    kw = dict(grid=grid, fmr_targets=[1e-2, 1e-3], thresholds=thresholds)
    for scheme in HOOK_SCHEMES:
        ref = run(data, scheme, 8, **kw)
        monkeypatch.setattr(tb, "tile_scores", _nudged(8))
        got = run(data, scheme, 8, backend=TorchBackend("cpu", tile=1 << 13), **kw)
        _same(got, ref, scheme.name)
        np.testing.assert_array_equal(got.target_threshold.view(np.int64), ref.target_threshold.view(np.int64))
        monkeypatch.setattr(tb._Tiles, "exact", lambda self, s, a, b, consumers: s)
        bare = run(data, scheme, 8, backend=TorchBackend("cpu", tile=1 << 13), **kw)
        assert not (np.array_equal(bare.genuine, ref.genuine) and np.array_equal(bare.impostor, ref.impostor)
                    and np.array_equal(bare.target_threshold, ref.target_threshold)), scheme.name
        monkeypatch.undo()
    monkeypatch.setattr(tb, "tile_scores", lambda *args: tile_scores(*args) * (1 + 1e-6))  # far off: refused
    with pytest.raises(InputError, match="--backend cpu") as e:
        run(data, None, backend=TorchBackend("cpu", tile=1 << 13), **kw)
    assert e.value.param == "backend"


def _two_runs(data, grid, block_rows: int = 2048):
    """The pooled run (FMR targets: window items) and the identity-balanced run (relabelled data) of an audit."""
    import dataclasses

    from matchaudit.auditing.class_passes import balanced_plan
    from matchaudit.engine import plan

    bal = balanced_plan(data, rs.DoubleOrNothing(23), 5, grid)
    return [plan(data, rs.Vertex(17), 5, grid=grid, fmr_targets=[0.1, 0.02], block_rows=block_rows),
            dataclasses.replace(bal, block_rows=block_rows, task=dataclasses.replace(bal.task, block_rows=block_rows))]


def _counted_tiles(monkeypatch) -> list:
    """``tile_scores`` recording the sub-tiles it scores (rows and columns)."""
    seen = []
    monkeypatch.setattr(tb, "tile_scores", lambda *a: (seen.append(a[2:6]), tile_scores(*a))[1])
    return seen


def _rows(items) -> list:
    k, u, v, s = (np.concatenate(x) for x in zip(*items)) if items else ([],) * 4
    return sorted(zip(np.asarray(k).tolist(), np.asarray(u).tolist(), np.asarray(v).tolist(), np.asarray(s).tolist()))


def _local_identity(data, ts, rule, block_rows):
    """The identity pass's result on the CPU (its arrays: genuine levels, impostor hits in tile order)."""
    from matchaudit.engine import identity_pass

    acc = identity_pass(data, ts, rule, block_rows=block_rows)
    passes.feed(data, block_rows, [acc])
    return acc.done()


def _refuse_cpu_identity_passes(monkeypatch) -> None:
    from matchaudit.engine import identity

    def here(*args, **kwargs):
        raise AssertionError("an identity pass on the CPU")

    monkeypatch.setattr(identity.IdentityPass, "feed", here)
    monkeypatch.setattr(identity, "_all_pairs_hits", here)


@pytest.mark.parametrize("method", ["scatter", "onehot"])
def test_count_together_scores_each_tile_once_and_counts_each_run_as_alone(method, monkeypatch):
    """``count_together`` (the torch backend fuses): two runs (the pooled with window items, the balanced over
    relabelled data) and an identity pass from one scoring of each sub-tile -- ``tile_scores`` called once per sub-tile
    of the CPU's tiles, none twice -- each run's table and items those of its own ``count``, and its counts through the
    driver the CPU's; the identity pass the CPU's result, array for array, with no identity pass on the CPU."""
    from matchaudit.engine import identity_pass, run_together

    data = make_data(seed=6, sizes=(3, 1, 4, 2, 5, 3, 2, 4, 1, 3), groups=(0, 1, 2, 0, 1, 2, 2, 1, 0, 0))
    grid = build_grid(data, n_cells=16)
    be = TorchBackend("cpu", method=method, tile=40, budget=64, lanes=4)
    runs = [(p.data, p.task) for p in _two_runs(data, grid, block_rows=8)]
    alone = [be.count(d, task, False) for d, task in runs]
    ts = grid.edges[[2, 5, 8, 11]]
    want = _local_identity(data, ts, ">=", 8)
    assert (want[0][:, [0, -1]].sum(axis=0) > 0).all() and want[1].size > 0  # genuine levels 0 and T, impostor hits
    seen = _counted_tiles(monkeypatch)
    _refuse_cpu_identity_passes(monkeypatch)
    acc = identity_pass(data, ts, ">=", block_rows=8)
    got = be.count_together(data, runs, False, [acc])
    steps = tb._Tiles(be, data, 8).steps
    assert len(steps) > 4 and sorted(seen) == sorted(set(seen)) == sorted(st[2:] for st in steps)
    for (table, items), (table1, items1) in zip(got, alone, strict=True):
        np.testing.assert_array_equal(table, table1)
        assert _rows(items) == _rows(items1)
    for x, y in zip(acc.done(), want, strict=True):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    seen.clear()
    fused = run_together(data, _two_runs(data, grid, block_rows=8), backend=be)
    assert len(seen) == len(steps)
    monkeypatch.undo()
    for c, ref in zip(fused, run_together(data, _two_runs(data, grid, block_rows=8)), strict=True):
        _same(c, ref)


def _near_thresholds(data) -> np.ndarray:
    """Thresholds exactly on observed scores -- genuine ones from their 2% to 98% quantile, and impostor ones among the
    3,000 highest (impostor hits at every level) -- and one ulp either side of them."""
    from matchaudit.scores import upper_triangle

    s, a, b = upper_triangle(data.samples.embeddings, data.metric)
    gen = data.samples.identity[a] == data.samples.identity[b]
    g, i = np.sort(s[gen]), np.sort(s[~gen])
    on = np.concatenate([g[np.linspace(g.size // 50, g.size - g.size // 50, 20).astype(int)],
                         i[np.linspace(i.size - 3000, i.size - 1, 20).astype(int)]])
    return np.unique(np.concatenate([on, np.nextafter(on, -np.inf), np.nextafter(on, np.inf)]))


@pytest.mark.parametrize("metric,rule", [("cosine", ">="), ("euclidean", ">")])
def test_identity_pass_on_the_device_is_rechecked_to_the_cpu_result(metric, rule, monkeypatch):
    """#46 item 5 for the identity counts: thresholds on observed scores and one ulp either side, and a device whose
    scores are off by one ulp (30% of them) or up to 8: the genuine levels and the impostor hits (identities, levels,
    their order) are the CPU pass's, and the identity counts answered from them the CPU's, because the scores within
    the band of a threshold are recomputed exactly. Without the thresholds as recheck edges they differ."""
    from matchaudit.engine import identity_counts, identity_pass, plan, run_together
    from matchaudit.scores import tile_cache

    data = _vmf(metric)
    ts = _near_thresholds(data)
    want = _local_identity(data, ts, rule, 2048)
    want_counts = identity_counts(data, ts, rule)
    assert want[1].size > 1000 and (want[0][:, [0, -1]].sum(axis=0) > 0).all()  # genuine levels 0 and T too

    def device(ulps: int, seed: int):
        with tile_cache():
            acc = identity_pass(data, ts, rule)
            monkeypatch.setattr(tb, "tile_scores", _nudged(ulps, seed=seed))
            run_together(data, [plan(data, grid=build_grid(data, n_cells=16, rule=rule))],
                         backend=TorchBackend("cpu", tile=1 << 13), also=[acc])
            counts = identity_counts(data, ts, rule)
        return acc.done(), counts

    _refuse_cpu_identity_passes(monkeypatch)
    for ulps, seed in ((1, 0), (8, 1)):
        got, counts = device(ulps, seed)
        for x, y in zip(got, want, strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        for f in ("g", "e", "e_row", "e_row_cat", "pair_k", "pair_l", "pair_e"):
            x, y = getattr(counts, f), getattr(want_counts, f)
            for a, b in zip(*((v if isinstance(v, list) else [v]) for v in (x, y)), strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f)
    monkeypatch.setattr(tb._Identity, "near", lambda self, s, delta: torch.zeros_like(s, dtype=torch.bool))
    bare, _ = device(1, 0)
    assert not all(np.array_equal(x, y) for x, y in zip(bare, want))


def test_the_level_rule_on_the_device_is_the_cpu_kernels():
    """Scores exactly on a threshold and one ulp either side, both rules, thresholds with repeats and infinities: the
    device's level (``torch.bucketize``) is the number of thresholds the CPU's definition accepts."""
    from matchaudit.definitions import accepting_thresholds
    from matchaudit.engine.identity import IdentityPass

    ts = np.array([-np.inf, -0.5, 0.0, 0.0, 0.25, 0.7, np.inf])
    s = np.concatenate([ts[1:-1], np.nextafter(ts[1:-1], -1), np.nextafter(ts[1:-1], 2), [-1.0, 1.0, -0.0]])
    for rule in (">=", ">"):
        ids = tb._Identity(torch.device("cpu"), IdentityPass(make_data(), ts, rule == ">="))
        np.testing.assert_array_equal(ids._level(torch.as_tensor(s)).numpy(), accepting_thresholds(s, ts, rule))


def test_count_together_on_a_listed_table_counts_each_run_as_alone():
    """A listed table carries its scores: each run reads it in chunks, with the counts of its own ``count``."""
    data = listed(make_data(seed=3))
    grid = build_grid(data, n_cells=16)
    be = TorchBackend("cpu", tile=7, budget=40, lanes=4)
    runs = [(data, passes.CountTask(grid=grid, mode=weights.mode_of(s), scheme=s, replicates=np.arange(1, 5), lanes=16,
                                     collapse=False, win=np.arange(grid.n_cells) % 4 == 1, block_rows=3,
                                     cats=PairCategories.pooled_by(np.ones((data.n_groups,) * 2, bool))))
            for s in (rs.Vertex(2), rs.WithinIdentity(3))]
    for (table, items), (d, task) in zip(be.count_together(data, runs, False), runs, strict=True):
        table1, items1 = be.count(d, task, False)
        np.testing.assert_array_equal(table, table1)
        assert _rows(items) == _rows(items1) and len(_rows(items)) > 0
