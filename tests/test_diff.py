"""``ma.diff`` / ``matchaudit diff``: two audits of versions of one system compared (docs/workflow.md).

Arithmetic against brute force (the paired rows are ``ma.compare``'s, the max-T critical value from the replicates,
the unpaired standard errors and Šidák value by hand), the pairing rule (never pairs different trials), and hostile
inputs of the command (exit 2, a message naming the flag or file, nothing the user gave modified)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.auditing.model_comparison import paired_bootstrap
from matchaudit.cli import app
from matchaudit.estimators.audit_diff import maxt_critical, sidak_critical, unpaired_rows

TARGETS = (1e-2, 1e-3)
R = 60


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """Two versions of a small system on the same samples (NEW noisier), each audited and saved."""
    root = tmp_path_factory.mktemp("diff")
    sim = ma.simulate(samples_per_identity=4, dim=32, seed=3)
    sim.write(root / "data")
    np.save(root / "data" / "embeddings_b.npy", sim.second_model(kappa=300))
    data, audits = {}, {}
    for side, emb in (("old", "embeddings.npy"), ("new", "embeddings_b.npy")):
        data[side] = ma.load_samples(root / "data" / "samples.parquet", root / "data" / emb, group_by="group")
        audits[side] = ma.audit(data[side], fmr=TARGETS, intervals=ma.IntervalOptions(n_resamples=R))
        audits[side].save(root / side, figures=False)
    return {"root": root, "data": data, "audits": audits, "sim": sim}


def _paired(two, **kw):
    return ma.diff(two["audits"]["old"], two["audits"]["new"], old_data=two["data"]["old"],
                   new_data=two["data"]["new"], n_resamples=R, seed=4, **kw)


def test_paired_rows_are_compares_records(two):
    res = _paired(two)
    assert res.paired and "same trials" in res.pairing
    cmp = ma.compare(two["data"]["new"], two["data"]["old"], fmr=TARGETS, n_resamples=R, seed=4, test_resamples=0)
    want = {(r["fmr_target"], r["view"]): r for r in cmp.records if r["metric"] == "fnmr_at_fmr"}
    rows = [r for r in res.rows if r["metric"] == "FNMR"]
    assert len(rows) == len(want) == 2 * 4
    for r in rows:
        c = want[(r["fmr_target"], r["view"])]
        assert (r["new"], r["old"], r["difference"], r["low"], r["high"], r["standard_error"]) == (
            c["model_a"], c["model_b"], c["difference"], c["low"], c["high"], c["standard_error"])
    # OLD and NEW are each audit's own exact rates (FMR per group, FNMR overall and per group)
    for side in ("old", "new"):
        pts = two["audits"][side].exact.operating_points
        for r in res.rows:
            p = next(p for p in pts if p["weighting"] == "pooled" and p["kind"] == "fmr_target"
                     and p["target"] == r["fmr_target"] and p["group"] == r["view"])
            assert r[side] == pytest.approx(p[r["metric"].lower()], abs=1e-12)


def _brute_critical(maxima: np.ndarray, level: float) -> float:
    """The smallest replicate maximum above which every |T| has max-T p-value (1 + #{s >= T}) / (1 + B) <= 1 - level."""
    ok = [s for s in maxima if (1 + np.sum(maxima > s)) / (1 + maxima.size) <= 1 - level + 1e-12]
    return min(ok) if ok else math.inf


def test_maxt_critical_is_brute_force():
    rng = np.random.default_rng(0)
    for b, m, level in ((99, 3, 0.95), (1000, 5, 0.95), (200, 1, 0.9), (10, 2, 0.95)):
        z = rng.standard_normal((b, m))
        z[rng.random((b, m)) < 0.01] = np.nan  # NaN counts as +inf
        top = np.where(np.isnan(z), np.inf, np.abs(z)).max(axis=1)
        assert maxt_critical(z, level) == _brute_critical(top, level)
    assert maxt_critical(rng.standard_normal((10, 2)), 0.95) == math.inf  # 10 replicates: no 5% claim possible


def test_paired_verdicts_are_max_t_on_the_replicates(two):
    level = 0.9
    res = _paired(two, level=level)
    records, reps = paired_bootstrap(two["data"]["new"], two["data"]["old"], TARGETS, n_resamples=R, seed=4,
                                     level=level, group_fmr=True)
    name = {"FNMR": "fnmr_at_fmr", "FMR": "fmr"}
    for metric in ("FNMR", "FMR"):
        for t in TARGETS:
            fam = [r for r in res.rows if r["metric"] == metric and r["fmr_target"] == t
                   and r["verdict"] != "not testable"]
            z = np.stack([(reps[(name[metric], r["view"], t)] - r["difference"]) / r["standard_error"] for r in fam], 1)
            c = _brute_critical(np.where(np.isnan(z), np.inf, np.abs(z)).max(axis=1), level)
            for r in fam:
                assert r["critical"] == c
                assert r["simultaneous_low"] == r["difference"] - c * r["standard_error"]
                beyond = abs(r["difference"] / r["standard_error"]) > c
                assert r["verdict"] == ("within noise" if not beyond else "worse" if r["difference"] > 0 else "better")
                assert beyond == (r["pvalue_adjusted"] <= 1 - level)
    assert res.worse  # the noisier version is worse somewhere, beyond noise


def _records(folder: Path) -> dict:
    doc = json.loads((folder / "results.json").read_text())
    return {(r["metric"], r["target"], r["group"]): r for r in doc["intervals"]
            if r["weighting"] == "pooled" and r["kind"] == "fmr_target" and r["metric"] in ("FNMR", "FMR")}


def test_unpaired_by_hand(two):
    root = two["root"]
    res = ma.diff(root / "old", root / "new", level=0.9)
    assert not res.paired and "no scores were given" in res.pairing
    assert any("independent" in n and "Doubtful" in n for n in res.notes)
    old, new = _records(root / "old"), _records(root / "new")
    assert {(r["metric"], r["fmr_target"], r["view"]) for r in res.rows} == set(old) - {
        ("FMR", t, "all") for t in TARGETS}  # the overall FMR at a target is the target: not a row
    for r in res.rows:
        o, n = old[(r["metric"], r["fmr_target"], r["view"])], new[(r["metric"], r["fmr_target"], r["view"])]
        se = math.sqrt(o["standard_error"] ** 2 + n["standard_error"] ** 2)
        assert r["difference"] == n["estimate"] - o["estimate"] and r["standard_error"] == pytest.approx(se, 1e-15)
        if r["verdict"] == "not testable":
            assert se == 0
            continue
        m = sum(x["verdict"] != "not testable" for x in res.rows
                if (x["metric"], x["fmr_target"]) == (r["metric"], r["fmr_target"]))
        assert r["critical"] == pytest.approx(norm.ppf(1 - (1 - 0.9 ** (1 / m)) / 2), rel=1e-12)
        assert r["low"] == pytest.approx(r["difference"] - norm.ppf(0.95) * se, rel=1e-12)


def test_unpaired_nan_and_one_row():
    rows = unpaired_rows({("FNMR", 0.01, "all"): (0.1, 0.01), ("FNMR", 0.01, "A"): (math.nan, 0.02),
                          ("FNMR", 0.01, "B"): (0.2, math.nan)},
                         {("FNMR", 0.01, "all"): (0.15, 0.01), ("FNMR", 0.01, "A"): (0.1, 0.02),
                          ("FNMR", 0.01, "B"): (0.3, 0.02)}, 0.95)
    assert [r["verdict"] for r in rows] == ["worse", "not testable", "not testable"]
    # one testable row: Šidák of one is the marginal value, and the simultaneous interval the marginal one
    assert rows[0]["critical"] == pytest.approx(norm.ppf(0.975), rel=1e-12) == sidak_critical(1, 0.95)
    assert rows[0]["simultaneous_low"] == pytest.approx(rows[0]["low"], rel=1e-12)


def test_different_trials_are_never_paired(two):
    sim = two["sim"]
    frames = [sim.trial_list(60, 300, seed=s) for s in (0, 1)]
    frames.append(frames[0].iloc[::-1])  # the same trials in another order: not pairable by position
    data = [ma.from_scores(f.score, f.identity_a, f.identity_b, sample_a=f.sample_a, sample_b=f.sample_b,
                           attributes_a={"group": f.group_a}, attributes_b={"group": f.group_b}, group_by="group")
            for f in frames]
    audits = [ma.audit(d, fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=R)) for d in data]
    for k in (1, 2):
        res = ma.diff(audits[0], audits[k], old_data=data[0], new_data=data[k])
        assert not res.paired and "the trials differ" in res.pairing
        assert res.old["trials"] != res.new["trials"]
        assert any("share" in n for n in res.notes)
    same = ma.diff(audits[0], audits[0], old_data=data[0], new_data=data[0], n_resamples=R)
    assert same.paired and same.old["trials"] == same.new["trials"]


def test_scores_must_be_the_audited_ones(two):
    with pytest.raises(ma.InputError) as e:  # NEW's audit, OLD's scores
        ma.diff(two["audits"]["old"], two["audits"]["new"], old_data=two["data"]["old"],
                new_data=two["data"]["old"], n_resamples=R)
    assert e.value.param == "new_data" and "do not reproduce" in str(e.value)


def test_shared_targets_and_groups_only(two):
    d = two["data"]["old"]
    ungrouped = ma.load_samples(two["root"] / "data" / "samples.parquet", two["root"] / "data" / "embeddings.npy")
    other = ma.audit(ungrouped, fmr=(1e-2, 1e-4), intervals=ma.IntervalOptions(n_resamples=R))
    res = ma.diff(two["audits"]["old"], other)
    assert {(r["metric"], r["fmr_target"], r["view"]) for r in res.rows} == {("FNMR", 1e-2, "all")}
    assert set(res.skipped) == {"FMR target 0.001: only in OLD", "FMR target 0.0001: only in NEW",
                                "group A: only in OLD", "group B: only in OLD", "group C: only in OLD"}
    with pytest.raises(ma.InputError, match="share no FMR target"):
        ma.diff(two["audits"]["old"], ma.audit(d, fmr=0.05, intervals=False))
    with pytest.raises(ma.InputError, match="rule"):
        ma.diff(two["audits"]["old"], ma.audit(d, fmr=TARGETS, rule=">", intervals=False))
    with pytest.raises(ma.InputError, match="without intervals"):
        ma.diff(two["audits"]["old"], ma.audit(d, fmr=TARGETS, intervals=False))


def _digest(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_cli_paired_and_hostile(two, tmp_path):
    root = two["root"]
    before = _digest(root)
    run = CliRunner().invoke
    paired = ["--samples", str(root / "data" / "samples.parquet"), "--embeddings-old",
              str(root / "data" / "embeddings.npy"), "--embeddings-new", str(root / "data" / "embeddings_b.npy")]
    out = tmp_path / "d"
    res = run(app, ["diff", str(root / "old"), str(root / "new"), *paired, "--n-resamples", str(R), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Paired" in res.output and "worse" in res.output
    doc = json.loads((out / "diff.json").read_text())
    assert doc["result"]["paired"] and {"diff.csv", "diff.html", "det_diff.png"} <= {p.name for p in out.iterdir()}
    assert "<img" in (out / "diff.html").read_text()
    res = run(app, ["diff", str(root / "old"), str(root / "new"), "--out", str(tmp_path / "u")])
    assert res.exit_code == 0 and "Unpaired" in res.output
    assert json.loads((tmp_path / "u" / "diff.json").read_text())["result"]["paired"] is False
    hostile = [
        ([str(tmp_path / "nowhere"), str(root / "new")], "OLD"),
        ([str(root / "data"), str(root / "new")], "without results.json"),
        ([str(root / "old"), str(root / "new"), "--out", str(root / "old" / "sub")], "inside the audit folder"),
        ([str(root / "old"), str(root / "new"), "--out", str(root / "new")], "inside the audit folder"),
        ([str(root / "old"), str(root / "new"), "--out", str(root / "data" / "samples.parquet")], "a file"),
        ([str(root / "old"), str(root / "new"), "--out", "/proc/matchaudit-diff"], "--out"),
        ([str(root / "old"), str(root / "new"), "--comparisons-old", str(root / "data" / "samples.parquet")],
         "--comparisons-new"),
        ([str(root / "old"), str(root / "new"), *paired[:4]], "--embeddings-new"),
        ([str(root / "old"), str(root / "new"), "--level", "1.5"], "--level"),
    ]
    for args, said in hostile:
        res = run(app, ["diff", *args])
        assert res.exit_code == 2, (args, res.output)
        assert "Error:" in res.output and said in res.output and "Traceback" not in res.output, (args, res.output)
    assert _digest(root) == before  # nothing the user gave was modified
