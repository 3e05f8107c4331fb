"""Identity-aware calibration intervals and score distributions: every replicate of the compiled pass equals the
plug-in on the explicitly resampled comparison list; argument checks; a coverage sanity simulation; figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matchaudit.errors import InputError
from matchaudit.estimators import score_views as sv
from matchaudit.estimators.calibration import NOT_LLR, calibration
from matchaudit.estimators.distributions import score_distributions, sorted_density
from matchaudit.metrics import calibration as cal
from matchaudit.model import MatchData, PairBlock
from matchaudit.simulation import GroupSpec, simulate_vmf

OPS = ((0.01, 1.0, 1.0), (0.3, 1.0, 2.0))


@pytest.fixture(scope="module")
def pairs() -> MatchData:
    groups = {"A": GroupSpec(9, (20.0, 60.0)), "B": GroupSpec(7, (20.0, 60.0))}
    return simulate_vmf(groups, dim=8, samples_per_identity=3, seed=1).as_data()


def listed(data: MatchData) -> MatchData:
    """The same comparisons as a listed table (samples named), built from the one block of the small data."""
    (blk,) = data.blocks()
    a, b = np.triu_indices(blk.scores.shape[0], 1)
    s = blk.scores[a, b]
    ident = data.samples.identity
    grp = data.identity_group[ident]
    p = PairBlock(s, ident[a], ident[b], grp[a], grp[b], ident[a] == ident[b], a, b)
    return MatchData(data.identity_names, data.identity_group, data.group_names, data.group_by, "listed",
                     "similarity", samples=data.samples, pairs=p)


def brute_lists(data: MatchData, method: str, U: np.ndarray, view: int):
    """(targets, non-targets) of one view, each comparison repeated by its replicate weight, built directly."""
    p = data.pairs if data.protocol == "listed" else listed(data).pairs
    ga, gb = p.group_a, p.group_b
    keep = np.ones(len(p), bool) if view == 0 else (ga == view - 1) & (gb == view - 1)
    if method == "recentered":
        w = U[p.sample_a] * U[p.sample_b]
    else:
        w = np.where(p.genuine, U[p.identity_a], U[p.identity_a] * U[p.identity_b])
    tar = np.repeat(p.score[keep & p.genuine], w[keep & p.genuine].astype(int))
    non = np.repeat(p.score[keep & ~p.genuine], w[keep & ~p.genuine].astype(int))
    if method == "recentered" and data.protocol == "all-pairs":  # C(c_i, 2) self-pairs at the self-score 1
        ident = data.samples.identity
        mine = np.ones(ident.size, bool) if view == 0 else data.identity_group[ident] == view - 1
        tar = np.concatenate([tar, np.ones(int((U * (U - 1) // 2)[mine].sum()))])
    return tar, non


def plug_ins(tar, non) -> dict[int, float]:
    out = {cal.CLLR: cal.cllr(tar, non), cal.MIN_CLLR: cal.min_cllr(tar, non), cal.W_TAR: tar.size,
           cal.W_NON: non.size, cal.MEAN_TAR: tar.mean(), cal.SD_TAR: tar.std(), cal.MEAN_NON: non.mean(),
           cal.SD_NON: non.std()}
    for t, op in enumerate(OPS):
        out[cal.N_FIXED + t] = cal.act_dcf(tar, non, *op)
        out[cal.N_FIXED + len(OPS) + t] = cal.min_dcf(tar, non, *op)
    return out


@pytest.mark.parametrize("method", sv.METHODS)
@pytest.mark.parametrize("protocol", ["all-pairs", "listed"])
def test_replicates_equal_the_resampled_lists(pairs, method, protocol):
    data = pairs if protocol == "all-pairs" else listed(pairs)
    views = sv.materialise(data, method)
    assert views.names == ("all", "A", "B")
    run = sv.Runner(views, OPS, llr=True)
    reps = np.arange(1, 4)
    U = run.weights(method, reps, seed=5)
    got = run.run(U)
    # the same seed gives the same numbers; the scheme's own weights are used
    np.testing.assert_array_equal(run.weights(method, reps, seed=5), U)
    for r in range(reps.size):
        for view in range(3):
            want = plug_ins(*brute_lists(data, method, U[r], view))
            for col, x in want.items():
                assert math.isclose(got[r, view, col], x, rel_tol=1e-12, abs_tol=1e-12), (r, view, col)


def test_all_ones_replicate_is_the_plug_in(pairs):
    views = sv.materialise(pairs, "recentered")
    run = sv.Runner(views, OPS, llr=True)
    est = run.plug_in()
    for view in range(3):
        want = plug_ins(*brute_lists(pairs, "double-or-nothing", np.ones(pairs.n_identities), view))
        for col, x in want.items():
            assert math.isclose(est[view, col], x, rel_tol=1e-12, abs_tol=1e-12)


def test_v_statistic_is_the_replicate_mean(pairs):
    """The recentered centre: the statistic at the expected weights; the replicates' mean weights tend to them, so
    a linear statistic (the weighted genuine mean's numerator and denominator) agrees closely."""
    views = sv.materialise(pairs, "recentered")
    run = sv.Runner(views, calib=False)
    v = run.v_statistic()
    reps = run.run(run.weights("recentered", np.arange(1, 2001), 0))
    assert math.isclose(reps[:, 0, cal.W_TAR].mean(), v[0, cal.W_TAR], rel_tol=0.02)
    assert v[0, cal.W_TAR] == pytest.approx(run.plug_in()[0, cal.W_TAR])  # within-identity: totals kept


def _expected_weights(views: sv.ScoreViews) -> np.ndarray:
    """The recentered bootstrap's expected comparison weights by the module's definition: E c_i c_j = (n-1)/n within
    an identity of n samples, 1 across identities, E c_i^2 = 2 - 1/n for a sample listed against itself, and
    E C(c_i, 2) = (n-1)/(2n) for a self-pair."""
    n = views.unit_size[views.u].astype(float)
    ident = views.layout.sample_identity
    e = np.where(ident[views.u] == ident[views.v], (n - 1) / n, 1.0)
    e = np.where(views.u == views.v, 2 - 1 / n, e)
    return np.where(views.kind == cal.SELF, (n - 1) / (2 * n), e)


def test_v_statistic_is_the_sweep_at_the_expected_weights_to_the_bit(pairs):
    """The V-statistic version looks its weights up in a table of the few distinct ones; the same summaries and rates
    at FNMR targets, bit for bit, as one weight per comparison: all pairs (with self-pairs) and a listed table in
    which one sample is compared with itself (E c^2)."""
    blk = listed(pairs).pairs
    self_row = PairBlock(np.array([0.99]), blk.identity_a[:1], blk.identity_a[:1], blk.group_a[:1], blk.group_a[:1],
                         np.array([True]), blk.sample_a[:1], blk.sample_a[:1])
    with_self = MatchData(pairs.identity_names, pairs.identity_group, pairs.group_names, pairs.group_by, "listed",
                          "similarity", samples=pairs.samples, pairs=PairBlock.concat([blk, self_row]))
    for data in (pairs, with_self):
        views = sv.materialise(data, "recentered")
        run = sv.Runner(views, OPS, llr=True, fnmr_targets=[0.1, 0.5])
        one_each = (_expected_weights(views)[None], np.full(views.n, cal.SINGLE, np.int8), np.arange(views.n))
        np.testing.assert_array_equal(run.v_statistic(), run.run(*one_each)[0])
        np.testing.assert_array_equal(run.v_statistic(dual=True), run.dual(*one_each)[0])
    assert (views.u == views.v).sum() > (views.kind == cal.SELF).sum()  # the listed sample against itself is there


def test_score_views_stay_within_their_memory_budget():
    """``materialise`` refuses data over ``memory_gib`` at ``BYTES_PER_COMPARISON`` bytes each; building the views and
    the V-statistic's sweeps must stay within it (a bootstrap batch adds only its PAV stacks, per genuine comparison
    and lane: ``calibration.PAV_BYTES``). They did not: the V-statistic's per-comparison weights, padded to 8 lanes,
    took 185 bytes per comparison at 8.0e6 comparisons (tracemalloc), and the views' fields 75-83 at their peak."""
    import tracemalloc

    grid = {"A": GroupSpec(60, (20.0, 60.0)), "B": GroupSpec(60, (20.0, 60.0))}
    big = simulate_vmf(grid, dim=8, samples_per_identity=5, seed=2).as_data()  # 600 samples: 179,700 comparisons
    for data in (big, listed(big)):
        sv.materialise(data, "recentered")  # compiled and warm
        tracemalloc.start()
        try:
            views = sv.materialise(data, "recentered")
            run = sv.Runner(views, OPS, fnmr_targets=[0.1])
            run.v_statistic()
            run.v_statistic(dual=True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak / views.n <= sv.BYTES_PER_COMPARISON, (data.protocol, peak / views.n)


def test_records(pairs):
    res = calibration(pairs, operating_points=OPS, n_resamples=40, seed=1)
    recs = res.to_records()
    assert len(recs) == 3 * (2 + 2 * len(OPS))
    for r in recs:
        if r["metric"] in ("cllr", "act_dcf"):
            assert r["estimate"] is None and r["low"] is None and r["reason"] == NOT_LLR
        else:
            assert r["low"] <= r["estimate"] <= r["high"] and r["reason"] is None
        assert (r["p_target"] is None) == (r["metric"] in ("cllr", "min_cllr"))
        assert r["llr"] is False and r["n_resamples"] == 40 and r["method"] == "double-or-nothing"
    assert [c.actual for c in res.ape] == [None] * 3
    full = calibration(pairs, operating_points=OPS, llr=True, method="vertex", n_resamples=40, seed=1)
    assert all(r["estimate"] is not None and r["reason"] is None for r in full.to_records())
    top = {(r["group"], r["metric"], r["p_target"]): r for r in full.to_records()}
    tar, non = brute_lists(pairs, "vertex", np.ones(pairs.n_identities), 1)
    assert math.isclose(top[("A", "min_dcf", 0.3)]["estimate"], cal.min_dcf(tar, non, *OPS[1]), rel_tol=1e-12)
    assert top[("A", "min_dcf", 0.3)]["genuine_comparisons"] == tar.size
    assert top[("A", "min_dcf", 0.3)]["impostor_comparisons"] == non.size
    assert math.isclose(full.ape[1].minimum[35], cal.min_dcf(tar, non, 0.5), rel_tol=1e-12)  # eta = 0


def test_arguments(pairs, tmp_path):
    with pytest.raises(InputError, match="spill_dir") as e:  # over the memory budget, and no folder to sort on disk
        calibration(pairs, n_resamples=40, memory_gib=1e-6)
    assert e.value.param == "memory_gib"
    on_disk = calibration(pairs, n_resamples=40, memory_gib=1e-6, spill_dir=tmp_path)  # sorted there: the same
    assert on_disk.to_records() == calibration(pairs, n_resamples=40).to_records()
    assert list(tmp_path.iterdir()) == []  # the folder on disk went when the call returned
    with pytest.raises(InputError) as e:
        calibration(pairs, operating_points=((1.5, 1, 1),), n_resamples=40)
    assert e.value.param == "operating_points"
    with pytest.raises(InputError):
        calibration(pairs, method="subsets", n_resamples=40)
    with pytest.raises(InputError):
        calibration(pairs, n_resamples=10)
    p = listed(pairs).pairs
    nameless = MatchData(pairs.identity_names, pairs.identity_group, pairs.group_names, pairs.group_by, "listed",
                         "similarity", pairs=PairBlock(*(getattr(p, f) for f in ("score", "identity_a", "identity_b",
                                                                                 "group_a", "group_b", "genuine")),
                                                       np.full(len(p), -1), np.full(len(p), -1)))
    with pytest.raises(InputError, match="names no samples"):
        calibration(nameless, method="recentered", n_resamples=40)


def test_distributions(pairs, tmp_path):
    res = score_distributions(pairs, method="recentered", n_resamples=40, bins=20)
    rec = {(r["group"], r["metric"]): r for r in res.to_records()}
    assert ("all", "genuine_shift") not in rec
    tar, non = brute_lists(pairs, "double-or-nothing", np.ones(pairs.n_identities), 1)
    assert math.isclose(rec[("A", "genuine_mean")]["estimate"], tar.mean(), rel_tol=1e-12)
    assert math.isclose(rec[("A", "impostor_sd")]["estimate"], non.std(), rel_tol=1e-12)
    d = (tar.mean() - non.mean()) / math.sqrt((tar.var() + non.var()) / 2)
    assert math.isclose(rec[("A", "d_prime")]["estimate"], d, rel_tol=1e-12)
    shift = rec[("A", "genuine_mean")]["estimate"] - rec[("all", "genuine_mean")]["estimate"]
    assert math.isclose(rec[("A", "genuine_shift")]["estimate"], shift, rel_tol=1e-9, abs_tol=1e-15)
    assert all(r["low"] <= r["estimate"] <= r["high"] for r in rec.values())
    width = np.diff(res.edges)
    for h in res.histograms:
        assert math.isclose((h.genuine * width).sum(), 1.0) and math.isclose((h.impostor * width).sum(), 1.0)
    from matchaudit.plots.score_figures import ape_figure, distributions_figure

    cres = calibration(pairs, operating_points=OPS, llr=True, n_resamples=40)
    for path in (ape_figure(cres, tmp_path / "ape.png"), distributions_figure(res, tmp_path / "dist.png")):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _clustered(seed: int, K: int = 30, m: int = 4, mu: float = 1.5, sd_id: float = 0.6, sd: float = 1.0):
    """A listed table with identity effects: genuine s = mu + a_k + e, impostor s = -mu + b_k + b_l + e."""
    g = np.random.default_rng(seed)
    a, b = g.normal(0, sd_id, K), g.normal(0, sd_id / math.sqrt(2), K)
    ia = np.repeat(np.arange(K), m)
    k, l = np.triu_indices(K, 1)
    s = np.concatenate([mu + a[ia] + g.normal(0, sd, ia.size), -mu + b[k] + b[l] + g.normal(0, sd, k.size)])
    i1, i2 = np.concatenate([ia, k]), np.concatenate([ia, l])
    z = np.zeros(s.size, np.int64)
    p = PairBlock(s, i1, i2, z, z, i1 == i2, z - 1, z - 1)
    return MatchData(np.arange(K).astype(str), np.zeros(K, np.int64), ("all",), (), "listed", "similarity", pairs=p)


@pytest.mark.parametrize("size", [1, 7, 70_000, 200_003])  # one value; a few; past one and three of NumPy's blocks
def test_sorted_density_is_numpys_histogram_density(size):
    """The score distributions' densities: NumPy's histogram density to the bit, with values on the edges (the last
    bin closed on both sides), below the first edge and above the last (left out), and ties."""
    g = np.random.default_rng(size)
    x = np.round(g.normal(0.2, 0.3, size), 3)
    edges = np.histogram_bin_edges(x[(x > -0.2) & (x < 0.7)] if size > 7 else x, 13)
    x[: size // 4] = g.choice(edges, size // 4)
    x = np.sort(x)
    np.testing.assert_array_equal(sorted_density(x, edges), np.histogram(x, edges, density=True)[0])


def test_coverage_of_cllr():
    """200 data sets, 95% double-or-nothing intervals of Cllr around its population value (both classes are
    Gaussian with the identity variance included: s_gen ~ N(1.5, 0.36 + 1), s_imp ~ N(-1.5, 0.36 + 1); Gauss-Hermite).
    The binomial SD of the coverage is 1.5 points; double-or-nothing is a little conservative for the impostors'
    two-way identity dependence (measured: 0.98 with these seeds). [0.88, 0.995] flags intervals that ignore the
    identity clustering (they cover far less) or that are degenerate wide, and is deterministic (fixed seeds)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    sd = math.sqrt(0.36 + 1.0)
    truth = 0.5 * ((w * np.logaddexp(0, -(1.5 + sd * x))).sum() + (w * np.logaddexp(0, -1.5 + sd * x)).sum()) / math.log(2)
    hits = 0
    for seed in range(200):
        rec = calibration(_clustered(seed), llr=True, n_resamples=200, seed=seed).to_records()[0]
        assert rec["metric"] == "cllr"
        hits += rec["low"] <= truth <= rec["high"]
    assert 0.88 <= hits / 200 <= 0.995
