"""Engine counts equal brute-force recomputation on explicitly materialised resampled data sets."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, entries, passes, run, window, weights
from matchaudit.engine.comparison_level import comparison_lists
from matchaudit.pairings import PairCategories
from tests.engine_reference import (
    count,
    exact_target,
    listed,
    make_data,
    materialise,
    materialise_draws,
)

SCHEMES = [rs.WithinIdentity(11), rs.Vertex(12), rs.DoubleOrNothing(13), rs.Subsets(14), rs.GroupPermutation(15)]
TARGETS = [0.3, 0.1, 0.02, 0.0]
B = 4


def _categories(G, reference, layout="pooled"):
    pairs = np.ones((G, G), bool) if reference == "all" else np.eye(G, dtype=bool)
    return PairCategories.full(pairs) if layout == "full" else PairCategories.pooled_by(pairs)


def _check(data, scheme, c, rows_of, rule, reference, layout="pooled"):
    cats = _categories(data.n_groups, reference, layout)
    assert c.categories == list(cats.pairs)
    np.testing.assert_array_equal(c.threshold_categories, cats.reference)
    for b in range(B + 1):
        rows = rows_of(b)
        gen, imp = count(rows, c.grid, cats)
        np.testing.assert_array_equal(c.genuine[b], gen, err_msg=f"{c.scheme} replicate {b} genuine")
        np.testing.assert_array_equal(c.impostor[b], imp, err_msg=f"{c.scheme} replicate {b} impostor")
        for ti, a in enumerate(TARGETS):
            t, gacc, iacc = exact_target(rows, a, cats, rule, reference)
            assert c.target_threshold[b, ti] == t, (c.scheme, b, a)
            np.testing.assert_array_equal(c.target_genuine_accepted[b, ti], gacc)
            np.testing.assert_array_equal(c.target_impostor_accepted[b, ti], iacc)


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.name)
@pytest.mark.parametrize("rule,reference", [(">=", "all"), (">", "same-group")])
@pytest.mark.parametrize("layout", ["pooled", "full"])
def test_all_pairs_matches_brute_force(scheme, rule, reference, layout):
    """Counted in the default categories (same-group pairs, cross-group pairs pooled) or every group pair."""
    data = make_data()
    grid = build_grid(data, n_cells=16, rule=rule)  # coarse: targets need refinement
    cats = _categories(data.n_groups, reference, layout) if layout == "full" else None
    c = run(data, scheme, B, grid=grid, fmr_targets=TARGETS, threshold_impostors=reference, block_rows=3, categories=cats)
    _check(data, scheme, c, lambda b: materialise(data, scheme, b), rule, reference, layout)


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(21), rs.Vertex(22), rs.Subsets(23), rs.GroupPermutation(24)],
                         ids=lambda s: s.name)
def test_listed_matches_brute_force(scheme):
    data = listed(make_data(seed=3))
    grid = build_grid(data, n_cells=32)
    c = run(data, scheme, B, grid=grid, fmr_targets=TARGETS)
    _check(data, scheme, c, lambda b: materialise(data, scheme, b), ">=", "all")


@pytest.mark.parametrize("scheme", [rs.TwoLevel(31), rs.IIDComparison(32)], ids=lambda s: s.name)
def test_comparison_level_matches_brute_force(scheme):
    data = make_data(seed=4)
    grid = build_grid(data, n_cells=16)
    c = run(data, scheme, B, grid=grid, fmr_targets=TARGETS, block_rows=5)
    n = data.samples.ids.shape[0]
    a, b = np.triu_indices(n, 1)
    ident = data.samples.identity
    lists = comparison_lists(ident[a], ident[b], ident[a] == ident[b], data.n_identities)
    _check(data, scheme, c,
           lambda r: materialise(data, None, 0) if r == 0 else materialise_draws(data, scheme, r, lists), ">=", "all")


def test_plug_in_and_thresholds_exact():
    data = make_data(seed=5)
    ts = [0.2, 0.5, 0.9]
    c = run(data, None, fmr_targets=TARGETS, thresholds=ts)
    rows = materialise(data, None, 0)
    gen, imp = c.accepted_at(0.5)
    assert c.genuine.shape[0] == 1
    exp_g = np.zeros(data.n_groups, np.int64)
    exp_i = np.zeros(c.impostor.shape[1], np.int64)
    cats = _categories(data.n_groups, "all")
    for s, g, ga, gb in rows:
        if s >= 0.5:
            if g:
                exp_g[ga] += 1
            else:
                exp_i[cats.slot[ga, gb]] += 1
    np.testing.assert_array_equal(gen[0], exp_g)
    np.testing.assert_array_equal(imp[0], exp_i)



@pytest.mark.parametrize("rule", [">=", ">"])
def test_infinite_thresholds_accept_no_score_or_every_score(rule):
    """``audit --threshold inf`` with intervals ended in a KeyError (an infinite threshold is no grid edge), though
    the exact metrics take it: scores are finite, so +inf accepts none and -inf all, whatever the rule."""
    import matchaudit as ma

    data = make_data(seed=5)
    c = run(data, rs.DoubleOrNothing(3), B, grid=build_grid(data, rule=rule), thresholds=[np.inf, -np.inf])
    assert c.grid.edge_index(-np.inf) == -1 and c.grid.edge_index(np.inf) == c.grid.edges.size
    for t, share in ((np.inf, 0), (-np.inf, 1)):
        gen, imp = c.accepted_at(t)
        np.testing.assert_array_equal(gen, share * c.genuine_total)
        np.testing.assert_array_equal(imp, share * c.impostor_total)
    r = ma.audit(data, fmr=(), thresholds=(np.inf, -np.inf), rule=rule, measures=ma.MeasureOptions(calibration=False),
                 intervals=ma.IntervalOptions(method="wilson,double-or-nothing", n_resamples=50))
    got = {(x["method"], x["metric"], x["threshold"]): x["estimate"] for x in r.interval_records
           if x["kind"] == "threshold" and x["group"] == "all" and x["weighting"] == "pooled"}
    assert got == {(m, metric, t): float((metric == "FMR") == (t < 0)) for m in ("wilson", "double-or-nothing")
                   for metric in ("FMR", "FNMR") for t in (np.inf, -np.inf)}

@pytest.mark.parametrize("scheme", SCHEMES + [rs.TwoLevel(7)], ids=lambda s: s.name)
def test_chunking_invariance(scheme, monkeypatch):
    data = make_data(seed=6, sizes=(3, 5, 2, 6, 1, 4), groups=(0, 1, 1, 0, 1, 0))
    grid = build_grid(data, n_cells=64)
    ref = run(data, scheme, 9, grid=grid, fmr_targets=[0.05], block_rows=2048)
    monkeypatch.setattr(entries, "ENTRIES", 7)
    for block_rows, lanes, collapse, held in [(1, 1, False, None), (4, 3, True, None), (7, 64, None, None),
                                              (4, 3, True, 16)]:  # 16 bytes: collapsed entries added piece by piece
        if held is not None:
            monkeypatch.setattr(passes, "COLLAPSE_BYTES", held)
        c = run(data, scheme, 9, grid=grid, fmr_targets=[0.05], block_rows=block_rows, lanes=lanes,
                collapse=collapse)
        for f in ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted"):
            np.testing.assert_array_equal(getattr(c, f), getattr(ref, f), err_msg=f"{f} {block_rows} {lanes}")
    sub = run(data, scheme, np.array([3, 7]), grid=grid, fmr_targets=[0.05])  # any subset of replicates
    np.testing.assert_array_equal(sub.impostor[1:], ref.impostor[[3, 7]])
    np.testing.assert_array_equal(sub.genuine[1:], ref.genuine[[3, 7]])


def test_collapse_is_chosen_only_where_bench_collapse_measured_it_faster():
    """bench/collapse.py (8,000 samples): merging was 3-10x slower at 10 samples per identity for every B, and faster
    at 1,000 per identity from B ~ 1,100 (1.44x at B = 2,000), at 400 per identity from B ~ 1,900."""
    from matchaudit.engine import driver
    from matchaudit.engine import kernels as K

    def data(per_id: int, n: int = 8000):
        return make_data(seed=1, sizes=(per_id,) * (n // per_id), groups=(0, 1) * (n // per_id // 2))

    ten, four_hundred, thousand = data(10), data(400), data(1000)
    assert driver.expected_repeats(ten, 4300) == 1.0
    assert driver.expected_repeats(thousand, 4300) == pytest.approx(1000 ** 2 / 4300, rel=1e-12)
    uneven = make_data(seed=2, sizes=(300, 40, 900, 5, 1, 120), groups=(0, 1) * 3)  # the bound written out, pair by pair
    m = np.bincount(uneven.samples.identity)
    ab = [m[a] * m[b] for a in range(m.size) for b in range(a + 1, m.size)]
    assert driver.expected_repeats(uneven, 50) == pytest.approx(sum(x * x for x in ab) / (50 * sum(ab)), rel=1e-12)
    for B in (100, 1000, 2000, 4000, 20000):
        assert not driver.collapse_pays(ten, K.PRODUCT, B, 4300)
        assert not driver.collapse_pays(thousand, K.SAMPLE, B, 4300)  # sample-level weights never merge
    assert not driver.collapse_pays(thousand, K.PRODUCT, 1000, 4300)
    assert driver.collapse_pays(thousand, K.PRODUCT, 2000, 4300)
    assert not driver.collapse_pays(four_hundred, K.PRODUCT, 1000, 4300)
    assert driver.collapse_pays(four_hundred, K.PRODUCT, 4000, 4300)


class _Split(passes.Backend):
    """Counts each of P parts separately and adds them up: what a distributed backend does."""

    def __init__(self, n_parts: int):
        self.P = n_parts

    def count(self, data, task, progress, wt=None):
        parts = [task.count(data, (i, self.P)) for i in range(self.P)]
        return sum(t for t, _ in parts), [it for _, f in parts for it in f]

    def items(self, data, task, want):
        return [it for i in range(self.P) for it in task.items(data, want, (i, self.P))]


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.name)
@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
def test_parts_add_up_to_the_whole(scheme, protocol, monkeypatch):
    data = make_data(seed=8, sizes=(3, 5, 2, 6, 1, 4), groups=(0, 1, 1, 0, 1, 0))
    if protocol == "listed":
        data = listed(data)
    grid = build_grid(data, n_cells=32)
    ref = run(data, scheme, 6, grid=grid, fmr_targets=[0.05, 0.2])
    monkeypatch.setattr(window, "Z", 0.0)  # a narrow window: the second pass runs on parts too
    for n_parts in (2, 5):
        c = run(data, scheme, 6, grid=grid, fmr_targets=[0.05, 0.2], block_rows=2, backend=_Split(n_parts))
        for f in ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted"):
            np.testing.assert_array_equal(getattr(c, f), getattr(ref, f), err_msg=f"{f} {n_parts}")


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(2), rs.Vertex(3), rs.DoubleOrNothing(4)], ids=lambda s: s.name)
@pytest.mark.parametrize("B", [7, 15])
def test_direct_and_sorted_counting_agree(scheme, B, monkeypatch):
    """The direct (unsorted, cache-resident table) path equals the sorted path, also when its rows are
    flushed to int64 after every few entries, and whether its entry-counting lane is a padding lane (B + 1
    replicates short of a whole 16-lane vector) or 16 added lanes (B + 1 = 16)."""
    data = make_data(seed=9, sizes=(3, 5, 2, 6, 1, 4), groups=(0, 1, 1, 0, 1, 0))
    grid = build_grid(data, n_cells=64)
    direct = run(data, scheme, B, grid=grid, fmr_targets=[0.05])
    cats = _categories(data.n_groups, "all")
    assert entries.direct_pays(data, entries.Entries(data, grid, weights.mode_of(scheme), True, cats),
                               np.zeros((1, 1, 16), np.float32), False)
    monkeypatch.setattr(entries, "DIRECT_BYTES", 0)
    srt = run(data, scheme, B, grid=grid, fmr_targets=[0.05])
    monkeypatch.setattr(entries, "DIRECT_BYTES", 6 << 20)
    states = []
    new = entries.DirectState.new
    monkeypatch.setattr(entries.DirectState, "new", lambda *a: states.append(new(*a)) or states[-1])
    monkeypatch.setattr(entries, "SMALL_EXACT", 40)  # int8/int16 path while max(w)^2 <= 5, flushed every few entries
    flushed = [run(data, scheme, B, grid=grid, fmr_targets=[0.05])]
    monkeypatch.setattr(entries, "SMALL_EXACT", 0)
    monkeypatch.setattr(entries, "EXACT", 16)  # the float32 path, flushed every few entries
    flushed.append(run(data, scheme, B, grid=grid, fmr_targets=[0.05]))
    n = data.samples.ids.size
    n_entries = n * (n - 1) // 2 + (n if scheme.self_pairs else 0)
    assert len(states) == 2 and states[1].table.any()  # rows were flushed (cap = 16 // max(w)^2)
    for st in states:  # the counting lane counts every entry; the flags mark exactly the rows flushed to the table
        assert st.table[:, :, st.count_lane].sum() + st.acc[:, :, st.count_lane].astype(np.int64).sum() == n_entries
        np.testing.assert_array_equal(st.flushed, st.table[:, :, st.count_lane] > 0)
    for c in [srt] + flushed:
        for f in ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted"):
            np.testing.assert_array_equal(getattr(c, f), getattr(direct, f), err_msg=f)


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(5), rs.DoubleOrNothing(6)], ids=lambda s: s.name)
def test_window_items_buffered_or_rescanned_agree(scheme, monkeypatch):
    """A direct pass buffers the window items in the kernel; a sub-tile whose buffers run out is rescanned
    (``kernels.window_items``) and the buffers grow: counts, thresholds and the kept tail are the same."""
    data = make_data(seed=9, sizes=(3, 5, 2, 6, 1, 4), groups=(0, 1, 1, 0, 1, 0))
    kw = dict(grid=build_grid(data, n_cells=64), fmr_targets=[0.05, 0.2], keep_tail=True, block_rows=4)
    ref = run(data, scheme, 5, **kw)
    rescans = []
    rescan = entries.Entries._window_items
    monkeypatch.setattr(entries.Entries, "_window_items", lambda self, *a: rescans.append(1) or rescan(self, *a))
    monkeypatch.setattr(entries, "item_room", lambda win, share: 1)
    got = run(data, scheme, 5, **kw)
    assert 0 < len(rescans) < data.n_blocks(4)  # buffers ran out, then grew
    for f in ("genuine", "impostor", "target_threshold", "target_genuine_accepted", "target_impostor_accepted"):
        np.testing.assert_array_equal(getattr(got, f), getattr(ref, f), err_msg=f)
    for f in ("genuine_identity", "genuine_score", "impostor_a", "impostor_b", "impostor_score"):
        np.testing.assert_array_equal(getattr(got.tail, f), getattr(ref.tail, f), err_msg=f)


def test_recentered_totals_and_vertex_imputation():
    """Within-identity totals are fixed (C(n_k,2) genuine, n_k n_l impostor); vertex reports C(w_k,2) pairs."""
    data = make_data(seed=8)
    c = run(data, rs.WithinIdentity(1), 6)
    assert (c.genuine_total == c.genuine_total[0]).all() and (c.impostor_total == c.impostor_total[0]).all()
    v = run(data, rs.Vertex(2), 6)
    lay = rs.Layout(identity_group=data.identity_group, sample_identity=data.samples.identity)
    w = rs.Vertex(2).identity_weights(np.arange(1, 7), lay)[0].astype(np.int64)
    np.testing.assert_array_equal(v.imputed_pairs[1:], (w * (w - 1) // 2).sum(axis=1))


@pytest.mark.parametrize("protocol,rule,reference", [
    (p, r, ref) for p in ("all-pairs", "listed") for r in (">=", ">") for ref in ("all", "same-group")])
def test_plug_in_thresholds_match_evaluate(protocol, rule, reference):
    """Replicate 0 of the engine and the exact metrics share one threshold definition and the same counts."""
    from matchaudit.metrics.evaluate import AuditConfig, evaluate

    targets = [0.5, 0.3, 0.1, 0.05, 0.02, 0.0]
    for seed in range(4):
        data = make_data(seed=seed) if protocol == "all-pairs" else listed(make_data(seed=seed), seed=seed)
        grid = build_grid(data, n_cells=16, rule=rule)
        c = run(data, rs.DoubleOrNothing(1), 2, grid=grid, fmr_targets=targets, threshold_impostors=reference,
                categories=_categories(data.n_groups, reference, "full"))  # every group pair: the cross-group FMR
        res = evaluate(data, AuditConfig(fmr_targets=tuple(targets), rule=rule, weightings=("pooled",),
                                         threshold_impostors=reference))
        names = list(data.group_names)
        cat_of = {(names[a], names[b]): k for k, (a, b) in enumerate(c.categories)}
        for ti, a in enumerate(targets):
            ops = [r for r in res.operating_points if r["kind"] == "fmr_target" and r["target"] == a]
            assert c.target_threshold[0, ti] == ops[0]["threshold"], (seed, a)
            for r in ops[1:]:
                g = names.index(r["group"])
                assert c.target_genuine_accepted[0, ti, g] == r["fnmr_comparisons"] - r["fnmr_errors"]
                assert c.target_impostor_accepted[0, ti, g] == r["fmr_errors"]
            for r in res.cross_group_fmr:
                if r["target"] == a:
                    k = cat_of[(r["group_a"], r["group_b"])]
                    assert c.target_impostor_accepted[0, ti, k] == r["errors"], (seed, a, k)


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(3), rs.Subsets(4), rs.GroupPermutation(5)], ids=lambda s: s.name)
def test_refinement_window_is_only_a_cost_decision(scheme, monkeypatch):
    """Target items come from the counting pass (window cells) or a second pass: identical results."""
    data = make_data(seed=9, sizes=(3, 5, 2, 6, 1, 4, 4), groups=(0, 1, 1, 0, 1, 0, 1))
    grid = build_grid(data, n_cells=64)
    out = []
    predicted = window.window_cells
    # the predicted window, nothing kept in one pass, everything kept
    for cells in (predicted, lambda *a: np.zeros(grid.n_cells, bool), lambda *a: np.ones(grid.n_cells, bool)):
        monkeypatch.setattr(window, "window_cells", cells)
        out.append(run(data, scheme, 6, grid=grid, fmr_targets=[0.2, 0.05, 0.0], block_rows=4))
    for c in out[1:]:
        for f in ("target_threshold", "target_genuine_accepted", "target_impostor_accepted"):
            np.testing.assert_array_equal(getattr(c, f), getattr(out[0], f), err_msg=f)
    everything = np.ones((data.n_groups,) * 2, bool)
    win = predicted(window.sample(data), data, grid.cell_of, grid.n_cells, np.array([0.05]), everything)
    assert win.any() and not win.all()


def test_grid_has_at_least_the_requested_number_of_distinct_edges():
    """Coinciding quantiles are replaced: >= n_cells distinct edges whenever the data have that many scores."""
    from matchaudit.data import from_embeddings
    from matchaudit.simulation import simulate_vmf

    sim = simulate_vmf(seed=1)
    data = from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples[["group"]],
                           group_by="group")
    grid = build_grid(data, n_cells=4096)
    assert grid.edges.size >= 4096 and np.unique(grid.edges).size == grid.edges.size
    tiny = make_data(seed=0)
    assert build_grid(tiny, n_cells=16).edges.size >= 16


@pytest.mark.parametrize("design", ["two groups", "four unequal groups", "listed", "few samples per identity"])
def test_the_predicted_window_holds_every_replicates_threshold(design):
    """The window predictor (:mod:`matchaudit.engine.window`) on data it was not tuned on: identity bootstraps of
    60 replicates at three FMR targets need no second pass (every replicate's threshold cell was in the window),
    and the window is a small part of the grid at the larger sizes (the items it keeps cost memory)."""
    from matchaudit.simulation import GroupSpec, simulate_vmf

    groups = {"two groups": {"A": GroupSpec(150, (100, 400)), "B": GroupSpec(100, (60, 300), centroid_kappa=20.0)},
              "four unequal groups": {"A": GroupSpec(300, (150, 600)), "B": GroupSpec(40, (40, 200)),
                                      "C": GroupSpec(120, (80, 300), centroid_kappa=30.0),
                                      "D": GroupSpec(15, (100, 400))},
              "listed": {"A": GroupSpec(120, (100, 400)), "B": GroupSpec(80, (60, 300))},
              "few samples per identity": {"A": GroupSpec(500, (50, 200)), "B": GroupSpec(400, (50, 200))}}[design]
    per = 2 if design == "few samples per identity" else 4
    data = simulate_vmf(groups, dim=32, samples_per_identity=per, seed=11).as_data()
    if design == "listed":
        data = listed(data, keep=0.5)
    grid = build_grid(data)
    for scheme in (rs.DoubleOrNothing(5), rs.Vertex(6), rs.WithinIdentity(7)):
        c = run(data, scheme, 60, grid=grid, fmr_targets=[1e-1, 1e-2, 1e-3])
        assert c.info["second_pass_cells"] == 0, (design, scheme.name)
    win = window.window_cells(window.sample(data), data, grid.cell_of, grid.n_cells, np.array([1e-3]),
                              np.ones((data.n_groups,) * 2, bool))
    assert 0 < win.sum() < grid.n_cells / 4, (design, win.sum())
