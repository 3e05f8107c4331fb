"""Identity-balanced intervals: unit-weighted engine counts against explicitly resampled data sets; the plug-in
equals the audit's balanced numbers; AUC/EER interval estimates are the audit's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit.engine import build_grid, run
from matchaudit.auditing import intervals as ai
from matchaudit.estimators import bootstrap as bs
from matchaudit.auditing.class_passes import balanced_counts, v_statistic
from matchaudit.estimators.balanced import unsupported
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from tests.engine_reference import listed, make_data, score_matrix


def _units(data, S, scheme, b):
    """The resampled data set of replicate ``b`` as units: genuine units [(weight, rejected-at-t function)] and
    impostor units, each a list of (weight, scores, group(s)), built explicitly (pure Python)."""
    ident, grp = data.samples.identity, data.identity_group
    K = data.n_identities
    members = [np.flatnonzero(ident == k).tolist() for k in range(K)]
    lay = rs.Layout(identity_group=grp, sample_identity=ident)
    gen, imp = [], []  # (weight, scores, group_a, group_b)
    if isinstance(scheme, rs.WithinIdentity):
        c = scheme.sample_weights([b], lay)[0] if b else np.ones(len(ident), int)
        draws = [[i for i in members[k] for _ in range(c[i])] for k in range(K)]
        for k in range(K):  # one unit per identity; draw pairs hitting one sample are self-pairs (score 1)
            if len(draws[k]) >= 2:
                gen.append((1, [1.0 if i == j else S[i, j] for i, j in itertools.combinations(draws[k], 2)],
                            grp[k], grp[k]))
        for k, l in itertools.combinations(range(K), 2):
            imp.append((1, [S[i, j] for i in draws[k] for j in draws[l]], grp[k], grp[l]))
        return gen, imp
    if isinstance(scheme, rs.Subsets):  # genuine rows weighted u_k, identity-pair rows w_k + w_l
        u, w = scheme.identity_weights([b], lay) if b else (np.ones((1, K), int), np.ones((1, K), int))
        gw = {k: u[0][k] for k in range(K)}
        pw = {(k, l): w[0][k] + w[0][l] for k, l in itertools.combinations(range(K), 2)}
        copies = None
    else:  # vertex, double-or-nothing: the data set of the drawn copies, each copy an identity
        w = scheme.identity_weights([b], lay)[0][0] if b else np.ones(K, int)
        copies = [k for k in range(K) for _ in range(w[k])]
    if copies is not None:
        gw = {k: 0 for k in range(K)}
        pw = {p: 0 for p in itertools.combinations(range(K), 2)}
        for k in copies:
            gw[k] += 1
        for x, y in itertools.combinations(range(len(copies)), 2):
            if copies[x] != copies[y]:  # two copies of one identity have no impostor comparison
                pw[tuple(sorted((copies[x], copies[y])))] += 1
    for k in range(K):
        if len(members[k]) >= 2:
            gen.append((gw[k], [S[i, j] for i, j in itertools.combinations(members[k], 2)], grp[k], grp[k]))
    for (k, l), wt in pw.items():
        imp.append((wt, [S[i, j] for i in members[k] for j in members[l]], grp[k], grp[l]))
    return gen, imp


def _balanced(units, t, reject, keep):
    """Weighted mean over units (kept by ``keep``) of their rate at t."""
    num = den = 0.0
    for wt, scores, ga, gb in units:
        if wt and keep(ga, gb) and scores:
            num += wt * np.mean([reject(s, t) for s in scores])
            den += wt
    return num / den if den else np.nan


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(5), rs.Vertex(3), rs.DoubleOrNothing(4), rs.Subsets(2)],
                         ids=lambda s: s.name)
def test_balanced_replicates_equal_explicitly_resampled_data_sets(scheme):
    data = make_data(seed=1)
    S = score_matrix(data)
    t, B = 0.4, 5
    grid = build_grid(data, n_cells=16, thresholds=[t])
    c = balanced_counts(data, scheme, B, grid, thresholds=[t])
    fnmr, fmr, _, _ = bs.rates_at_threshold(c, t)
    views = [lambda a, b: True] + [lambda a, b, g=g: a == b == g for g in range(data.n_groups)]
    for b in range(B + 1):
        gen, imp = _units(data, S, scheme, b)
        ref_fn = [_balanced(gen, t, lambda s, t: s < t, keep) for keep in views]
        ref_fm = [_balanced(imp, t, lambda s, t: s >= t, keep) for keep in views]
        np.testing.assert_allclose(fnmr[b], ref_fn, rtol=1e-12)
        np.testing.assert_allclose(fmr[b], ref_fm, rtol=1e-12)


@pytest.mark.parametrize("rule,reference", [(">=", "all"), (">", "same-group")])
def test_balanced_plug_in_equals_evaluate(rule, reference):
    """The records' estimates are evaluate's balanced numbers, and so is the unit-weighted grid plug-in (the
    balanced thresholds are grid edges), at FMR targets, fixed thresholds and per group; the balanced
    V-statistic is the mean over identities of FNMR~_k (diagonal kept) at the balanced threshold."""
    data = make_data(seed=2)
    config = AuditConfig(fmr_targets=(0.3, 0.1, 1e-2), thresholds=(0.25, 0.6), rule=rule,
                         threshold_impostors=reference)
    result = evaluate(data, config)
    opts = ai.IntervalOptions(n_resamples=40, n_cells=16)
    records, bands = ai.compute_intervals(data, config, opts, result=result)
    ops = {(p["weighting"], p["kind"], p["target"], p["group"]): p for p in result.operating_points}
    bal = [r for r in records if r["weighting"] == "balanced"]
    assert {r["kind"] for r in bal} == {"fmr_target", "threshold", "curve"}
    assert {b["weighting"] for b in bands} == {"pooled", "balanced"}
    for r in records:
        if r["metric"] in ("FMR", "FNMR"):
            op = ops[(r["weighting"], r["kind"], r["target"], r["group"])]
            key = r["metric"].lower()
            assert r["estimate"] == op[key] or np.isnan(op[key]) and np.isnan(r["estimate"])
            assert (r["errors"], r["comparisons"]) == (op[f"{key}_errors"], op[f"{key}_comparisons"])
    # the grid plug-in (replicate 0) of the unit-weighted counts
    S = score_matrix(data)
    bal_t = [ops[("balanced", "fmr_target", a, "all")]["threshold"] for a in config.fmr_targets]
    grid = build_grid(data, n_cells=16, rule=rule, thresholds=list(config.thresholds) + bal_t)
    c = balanced_counts(data, rs.WithinIdentity(0), 0, grid, reference, config.thresholds)
    fn_t, fm_t = bs.targets_on_grid(c, config.fmr_targets)
    names = bs.view_names(c)
    for ti, a in enumerate(config.fmr_targets):
        for j, name in enumerate(names):
            op = ops[("balanced", "fmr_target", a, name)]
            np.testing.assert_allclose([fn_t[0, ti, j], fm_t[0, ti, j]], [op["fnmr"], op["fmr"]], rtol=1e-12)
    for t in config.thresholds:
        fnmr, fmr, _, _ = bs.rates_at_threshold(c, t)
        for j, name in enumerate(names):
            op = ops[("balanced", "threshold", t, name)]
            np.testing.assert_allclose([fnmr[0, j], fmr[0, j]], [op["fnmr"], op["fmr"]], rtol=1e-12)
    # balanced V-statistic against the literal per-identity average
    pooled = run(data, rs.WithinIdentity(0), 0, grid=grid, fmr_targets=config.fmr_targets,
                    thresholds=config.thresholds, threshold_impostors=reference)
    v = v_statistic(data, pooled, config.thresholds, bal_t).balanced
    fn_v = bs.fnmr_v_at_targets(c, v)
    np.fill_diagonal(S, 1.0)
    rej = (lambda s, t: s < t) if rule == ">=" else (lambda s, t: s <= t)
    ident, grp = data.samples.identity, data.identity_group
    for ti, t in enumerate(bal_t):
        per = {k: rej(S[np.ix_(idx, idx)], t).mean() for k in range(data.n_identities)
               if (idx := np.flatnonzero(ident == k)).size >= 2}
        want = [np.mean(list(per.values()))] + [np.mean([x for k, x in per.items() if grp[k] == g])
                                                for g in range(data.n_groups)]
        np.testing.assert_allclose(fn_v[ti], want, rtol=1e-12)


@pytest.mark.parametrize("rule", [">=", ">"])
def test_auc_eer_estimates_are_the_audits(rule):
    """AUC/EER records carry evaluate's exact numbers; the grid plug-in EER (ROCCH of the grid curve, the hull's
    vertices made edges) equals it and the grid AUC is within the recorded bound, for both weightings, on a
    coarse grid where the hull edges are needed."""
    data = make_data(seed=4)
    config = AuditConfig(fmr_targets=(0.1,), rule=rule)
    result = evaluate(data, config)
    records, _ = ai.compute_intervals(data, config, ai.IntervalOptions(method="vertex", n_resamples=40, n_cells=8),
                                      result=result)
    curves = {(c["weighting"], c["group"]): c for c in result.curve_summaries}
    seen = 0
    for r in records:
        if r["kind"] != "curve":
            continue
        exact = curves[(r["weighting"], r["group"])][r["metric"].lower()]
        if not np.isfinite(exact):
            continue
        seen += 1
        assert r["estimate"] == exact
        if r["metric"] == "EER":
            assert r["grid_estimate"] == pytest.approx(exact, rel=1e-12, abs=1e-15)
        else:
            assert abs(r["grid_estimate"] - exact) <= r["grid_bound"] + 1e-15
    assert seen >= 2 * 2 * (1 + data.n_groups) - 4
    grid = build_grid(data, n_cells=8, rule=rule)  # without the hull's vertices the grid EER is off
    c = run(data, None, grid=grid)
    _, eer = bs.auc_eer(bs.grid_curves(c))
    exact = [curves[("pooled", name)]["eer"] for name in bs.view_names(c)]
    assert (eer[0] >= np.array(exact) - 1e-12).all() and (eer[0] > np.array(exact) + 1e-3).any()


def test_balanced_support_and_fallbacks():
    data = make_data(seed=1)
    config = AuditConfig(fmr_targets=(0.1,), thresholds=(0.3,))
    assert ai.balanced_method(data, config, ai.IntervalOptions()) == (ai.DEFAULT_BOOTSTRAP, None)
    assert ai.balanced_method(data, config, ai.IntervalOptions(method="two-level"))[0] == "vertex"
    assert ai.balanced_method(data, AuditConfig(weightings=("pooled",)), ai.IntervalOptions()) == (None, None)
    lst = listed(data)
    method, reason = ai.balanced_method(lst, config, ai.IntervalOptions())
    assert method is None and "listed" in reason and unsupported(lst, "vertex")
    records, _ = ai.compute_intervals(lst, config, ai.IntervalOptions(n_resamples=40, n_cells=16))
    assert {r["weighting"] for r in records} == {"pooled"}
    records, _ = ai.compute_intervals(data, config, ai.IntervalOptions(method="two-level", n_resamples=40, n_cells=16))
    bal = [r for r in records if r["weighting"] == "balanced"]
    assert bal and all(r["method"] == "vertex" and "two-level" in r["note"] for r in bal)
    records, _ = ai.compute_intervals(data, config, ai.IntervalOptions(n_resamples=40, n_cells=16))
    fixed = [r for r in records if r["kind"] == "threshold"]
    assert {(r["weighting"], r["method"]) for r in fixed} == {("pooled", "wilson"), ("balanced", ai.DEFAULT_BOOTSTRAP)}
    assert all("pooled rates only" in r["note"] for r in fixed if r["weighting"] == "balanced")


def test_pooled_target_estimates_are_the_engines_plug_in():
    """Pooled FNMR@FMR records carry evaluate's numbers (errors / n); the engine's exact plug-in (replicate 0) has
    the same threshold and counts."""
    data = make_data(seed=3)
    config = AuditConfig(fmr_targets=(0.3, 0.1, 1e-2), weightings=("pooled",))
    result = evaluate(data, config)
    records, _ = ai.compute_intervals(data, config, ai.IntervalOptions(n_resamples=40, n_cells=16), result=result)
    c = run(data, None, grid=build_grid(data, n_cells=16), fmr_targets=config.fmr_targets)
    fn = bs.fnmr_at_targets(c)[0]
    got = {(r["target"], r["group"]): r for r in records if r["kind"] == "fmr_target" and r["metric"] == "FNMR"}
    for ti, a in enumerate(config.fmr_targets):
        for j, name in enumerate(bs.view_names(c)):
            r = got[(a, name)]
            assert r["estimate"] == pytest.approx(fn[ti, j], rel=1e-12, nan_ok=True)  # engine: 1 - accepted/n
            assert r["errors"] == r["comparisons"] - bs.views_gen(c.target_genuine_accepted[0, ti])[j]
            assert r["threshold"] == c.target_threshold[0, ti]


@pytest.mark.parametrize("scheme", [rs.WithinIdentity(1), rs.Vertex(2)], ids=lambda s: s.name)
def test_equal_identity_sizes_make_balanced_and_pooled_replicates_equal(scheme):
    """With equal identity sizes every unit has the same denominator: the two weightings coincide replicate by
    replicate (and differ with unequal sizes)."""
    t, B = 0.4, 8
    for sizes, equal in (((3,) * 8, True), ((1, 2, 3, 4, 1, 5, 2, 3), False)):
        data = make_data(seed=5, sizes=sizes)
        grid = build_grid(data, n_cells=16, thresholds=[t])
        pooled = bs.rates_at_threshold(run(data, scheme, B, grid=grid, thresholds=[t]), t)
        bal = bs.rates_at_threshold(balanced_counts(data, scheme, B, grid, thresholds=[t]), t)
        same = all(np.allclose(p, b, rtol=1e-12, equal_nan=True) for p, b in zip(pooled[:2], bal[:2]))
        assert same == equal


def test_balanced_recentering_on_all_pairs_vmf_data():
    """Unequal identity sizes: the naive balanced replicates are centred on the balanced V-statistic
    (mean of (n_k-1)/n_k FNMR_k: self-pairs are never rejected), below the empirical balanced FNMR; the
    recentered interval is centred on the empirical value (the paper's section 3.2, for its eq. 2)."""
    from matchaudit.data import from_embeddings
    from matchaudit.simulation import GroupSpec, VmfPopulation

    pop = VmfPopulation.draw({"all": GroupSpec(60, (20.0, 60.0))}, dim=16, seed=4)
    sim = pop.sample((4, 10), seed=5)
    data = from_embeddings(sim.embeddings, sim.samples.identity.to_numpy())
    t = 0.55
    grid = build_grid(data, n_cells=256, thresholds=[t])
    c = balanced_counts(data, rs.WithinIdentity(9), 400, grid, thresholds=[t])
    fnmr, _, _, _ = bs.rates_at_threshold(c, t)
    theta, reps = fnmr[0, 0], fnmr[1:, 0]
    pooled = run(data, rs.WithinIdentity(9), 0, grid=grid, thresholds=[t])
    v = v_statistic(data, pooled, [t], balanced_targets=[]).balanced
    tv = 1 - v.threshold_genuine_accepted[0].sum() / c.genuine_total[0].sum()
    per_k = [(n - 1) / n for n in data.identity_sizes if n >= 2]
    assert len(set(per_k)) > 3  # unequal sizes: balanced and pooled differ
    se = reps.std(ddof=1) / np.sqrt(reps.size)
    assert abs(reps.mean() - tv) < 4 * se
    assert theta - reps.mean() > 6 * se
    rec = bs.interval_from_replicates("recentered", theta, reps, tv, 0.9)
    naive = bs.interval_from_replicates("naive", theta, reps, None, 0.9)
    assert abs(np.mean(rec.confidence_interval) - theta) < abs(np.mean(naive.confidence_interval) - theta) / 3
