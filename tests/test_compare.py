"""Model comparison: paired identity bootstrap against explicit resampling, identical models, planted gain."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit import resampling as rs
from matchaudit.data import from_embeddings, from_scores
from matchaudit.errors import InputError
from matchaudit.auditing.model_comparison import compare_models, paired_bootstrap
from matchaudit.estimators.compare import check_paired, contenders, fnmr_at_fmr_scores
from matchaudit.simulation import GroupSpec, simulate_vmf


def _pair(seed: int = 5, shift: float = 0.0):
    """Tiny listed data, two models: B = A + noise - shift on genuine scores."""
    rng = np.random.default_rng(seed)
    sizes = [2, 3, 4, 2, 3, 2, 3]
    ident = np.repeat(np.arange(len(sizes)), sizes)
    i, j = np.triu_indices(ident.size, 1)
    gen = ident[i] == ident[j]
    sa = np.round(np.where(gen, rng.normal(0.5, 0.2, i.size), rng.normal(0.0, 0.25, i.size)), 3)
    sb = np.round(sa + rng.normal(0, 0.1, i.size) - shift * gen, 3)
    group = np.array(list("AABBABB"))
    kw = dict(sample_a=[f"s{k}" for k in i], sample_b=[f"s{k}" for k in j],
              attributes_a={"g": group[ident[i]]}, attributes_b={"g": group[ident[j]]}, group_by="g")
    ids_a, ids_b = [f"id{k}" for k in ident[i]], [f"id{k}" for k in ident[j]]
    return (from_scores(sa, ids_a, ids_b, **kw), from_scores(sb, ids_a, ids_b, **kw), sa, sb, ident[i], ident[j], gen)


def _fnmr_at_fmr(score, w, gen, target):
    """Brute force on explicitly repeated comparisons: lowest present score whose FMR (s >= t) <= target."""
    s = np.repeat(score, w)
    g = np.repeat(gen, w)
    imp = s[~g]
    if not g.any():
        return np.nan
    if not imp.size:
        return 1.0  # no reference impostors: threshold +inf (the engine's definition)
    for t in np.sort(np.unique(s)):
        if (imp >= t).mean() <= target:
            return (s[g] < t).mean()
    return 1.0


@pytest.mark.parametrize("method", ["double-or-nothing", "vertex"])
def test_paired_interval_equals_explicit_resampling(method):
    a, b, sa, sb, ka, kb, gen = _pair()
    B, target = 60, 0.1
    records, reps = paired_bootstrap(a, b, [target], method=method, n_resamples=B, seed=3)
    w_id, _ = rs.SCHEMES[method](3).identity_weights(np.arange(1, B + 1), rs.Layout(identity_group=a.identity_group))
    code = {n: k for k, n in enumerate(a.identity_names)}
    ca = np.array([code[f"id{k}"] for k in ka])
    cb = np.array([code[f"id{k}"] for k in kb])
    d = []
    for r in range(B):
        w = np.where(gen, w_id[r, ca], w_id[r, ca] * w_id[r, cb])
        d.append(_fnmr_at_fmr(sa, w, gen, target) - _fnmr_at_fmr(sb, w, gen, target))
    d = np.array(d)
    rec = next(x for x in records if x["view"] == "all" and x["metric"] == "fnmr_at_fmr")
    np.testing.assert_allclose(reps[("fnmr_at_fmr", "all", target)], d, atol=1e-12)
    assert rec["difference"] == pytest.approx(_fnmr_at_fmr(sa, np.ones_like(sa, int), gen, target)
                                              - _fnmr_at_fmr(sb, np.ones_like(sb, int), gen, target), abs=1e-12)
    lo, hi = np.nanquantile(d, [0.025, 0.975])
    assert rec["low"] == pytest.approx(lo, abs=1e-12) and rec["high"] == pytest.approx(hi, abs=1e-12)


def test_identical_models_give_zero_and_a_degenerate_test():
    a, _, *_ = _pair()
    res = compare_models(a, a, [0.1], n_resamples=50, test_resamples=99, seed=1)
    for r in res.records:
        if np.isfinite(r["difference"]):
            assert r["difference"] == 0 and r["low"] == 0 and r["high"] == 0
    t = res.tests[0]
    assert t.effect == 0 and t.pvalue == 1.0 and not t.significant() and t.reason is not None


def test_swap_test_effect_matches_engine_difference():
    a, b, *_ = _pair(shift=0.1)
    res = compare_models(a, b, [0.05, 0.2], n_resamples=40, test_resamples=49, seed=2)
    for tg, t in zip(res.fmr_targets, res.tests):
        rec = next(x for x in res.records if x["view"] == "all" and x["fmr_target"] == tg)
        assert t.effect == pytest.approx(rec["difference"], abs=1e-12)


@pytest.mark.parametrize("target", [0.0, 0.001, 0.01, 0.2, 0.999])
def test_swap_test_on_contenders_equals_the_full_computation(target):
    """The swap test reads only the impostors that can set a threshold (:func:`contenders`): on every swap the
    FNMR@FMR equals the one computed from every impostor, with heavy ties between and within models."""
    rng = np.random.default_rng(3)
    m = 3000
    gen = rng.random(m) < 0.1
    sa = np.round(rng.normal(0, 1, m) + 2 * gen, 1)
    sb = np.where(rng.random(m) < 0.3, sa, np.round(sa + rng.normal(0, 0.5, m), 1))
    ref = ~gen & (rng.random(m) < 0.9)
    keep = contenders(sa, sb, ref, target)
    assert not (keep & ~ref).any()
    if 0 < target < 0.5:
        assert keep.sum() < ref.sum() / 2  # the restriction does save work where it matters
    sw = rng.random((200, m)) < 0.5
    xa, xb = np.where(sw, sb, sa), np.where(sw, sa, sb)
    cols = np.flatnonzero(gen | keep)
    for x in (xa, xb):
        full = fnmr_at_fmr_scores(x, gen, ref, target)
        assert np.array_equal(fnmr_at_fmr_scores(x[:, cols], gen[cols], keep[cols], target, int(ref.sum())), full)


def test_planted_improvement_is_detected():
    """Model B = model A's embeddings plus noise (worse); vMF data, 60 identities x 4 samples."""
    sim = simulate_vmf({"A": GroupSpec(30, (20.0, 60.0)), "B": GroupSpec(30, (20.0, 60.0))}, dim=16,
                       samples_per_identity=4, seed=4)
    rng = np.random.default_rng(0)
    noisy = sim.embeddings + 0.35 * rng.standard_normal(sim.embeddings.shape).astype(np.float32) / 4
    mk = lambda e: from_embeddings(e, sim.samples.identity.values, attributes=sim.samples, group_by="group")  # noqa: E731
    res = compare_models(mk(sim.embeddings), mk(noisy), [1e-2], n_resamples=200, test_resamples=199, seed=0)
    rec = next(x for x in res.records if x["view"] == "all")
    assert rec["difference"] < 0 and rec["high"] < 0
    assert res.tests[0].pvalue <= 0.05 and res.tests[0].direction == "model A < model B"


def test_unpaired_inputs_are_refused():
    a = _pair()[0]
    with pytest.raises(InputError, match="same comparisons"):
        check_paired(a, _reorder(a))


def _reorder(d):
    import dataclasses
    p = d.pairs
    idx = np.arange(len(p))[::-1]
    return dataclasses.replace(d, pairs=type(p)(*(getattr(p, f)[idx] for f in p.__dataclass_fields__)))


def test_compare_cli_writes_json_csv_and_figure(tmp_path):
    import json

    from typer.testing import CliRunner

    import matchaudit.cli.compare  # noqa: F401  (registers the command until cli/__init__ imports it)
    from matchaudit.cli.app import app

    sim = simulate_vmf({"A": GroupSpec(12, (20.0, 60.0)), "B": GroupSpec(12, (20.0, 60.0))}, dim=16,
                       samples_per_identity=3, seed=1)
    sim.write(tmp_path)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "b.npy", (sim.embeddings + 0.05 * rng.standard_normal(sim.embeddings.shape)).astype(np.float32))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["compare", "--samples", str(tmp_path / "samples.parquet"), "--embeddings-a",
                                 str(tmp_path / "embeddings.npy"), "--embeddings-b", str(tmp_path / "b.npy"),
                                 "--group-by", "group", "--fmr", "1e-2", "--n-resamples", "50",
                                 "--test-resamples", "49", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "compare.json").read_text())
    assert doc["result"]["tests"][0]["details"]["fmr_target"] == 0.01
    assert (out / "differences.csv").exists() and (out / "compare.png").stat().st_size > 0
    bad = CliRunner().invoke(app, ["compare", "--samples", str(tmp_path / "samples.parquet"), "--out", str(out)])
    assert bad.exit_code == 2
    args = ["compare", "--samples", str(tmp_path / "samples.parquet"), "--embeddings-a", str(tmp_path / "embeddings.npy"),
            "--embeddings-b", str(tmp_path / "b.npy"), "--fmr", "1e-2", "--n-resamples", "50", "--quiet"]
    old = CliRunner().invoke(app, [*args, "--n-permutations", "49", "--out", str(tmp_path / "old")])
    assert old.exit_code == 0 and "--n-permutations is now --test-resamples" in old.output
    assert json.loads((tmp_path / "old" / "compare.json").read_text())["result"]["tests"] == doc["result"]["tests"]
    both = CliRunner().invoke(app, [*args, "--n-permutations", "49", "--test-resamples", "19", "--out", str(out)])
    assert both.exit_code == 2 and "--test-resamples only" in both.output


def test_the_old_name_of_test_resamples_still_works_with_a_future_warning():
    """``ma.compare(n_permutations=)`` became ``test_resamples`` (one name per meaning: a test's relabellings, as the
    audit's ``--test-resamples``); the old name gives the same numbers, with a FutureWarning, until 1.0."""
    import matchaudit as ma

    a, b, *_ = _pair(seed=2, shift=0.1)
    new = ma.compare(a, b, fmr=0.1, n_resamples=40, test_resamples=19, seed=3)
    with pytest.warns(FutureWarning, match="test_resamples"):
        old = ma.compare(a, b, fmr=0.1, n_resamples=40, n_permutations=19, seed=3)
    assert old.to_dict() == new.to_dict()
    assert new.to_frame().to_dict("records") == new.records  # to_frame: every result's table
    with pytest.raises(InputError, match="test_resamples only") as e:
        ma.compare(a, b, fmr=0.1, n_resamples=40, test_resamples=19, n_permutations=19)
    assert e.value.param == "n_permutations"


@pytest.mark.parametrize("rule", [">=", ">"])
def test_fnmr_at_fmr_rejects_a_genuine_score_tied_with_the_threshold_impostor(rule):
    """Pins ``fnmr_at_fmr_scores``' tie convention ``score <= q``: at FMR target 0 the threshold lies above the
    highest impostor score q (rule ``>=``) or at it (rule ``>``), so a genuine comparison scoring exactly q is
    rejected under either rule (``< q`` would accept it); the brute force and the definitions agree."""
    from matchaudit.definitions import accepts

    score = np.array([[0.5, 0.9, 0.5, 0.1, 0.2, 0.3]])
    gen = np.array([True, True, False, False, False, False])
    got = fnmr_at_fmr_scores(score, gen, ~gen, 0.0)
    assert got.tolist() == [0.5]
    assert _fnmr_at_fmr(score[0], np.ones(6, int), gen, 0.0) == 0.5
    t = 0.9 if rule == ">=" else 0.5  # the lowest score whose FMR under the rule is 0
    assert not accepts(score[0, ~gen], t, rule).any() and accepts(score[0, gen], t, rule).tolist() == [False, True]
