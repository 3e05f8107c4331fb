"""Thresholds carried to a new population (#45 item 4): each view's own threshold, exact and per replicate, against
brute force; the portability table against the audit's own records; the command with hostile inputs."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit import resampling as rs
from matchaudit.cli import app
from matchaudit.engine import build_grid, run
from matchaudit.simulation import GroupSpec, simulate_vmf

sys.path.insert(0, str(Path(__file__).parent))
from engine_reference import listed, make_data, materialise  # noqa: E402

runner = CliRunner()


def own_threshold(rows, alpha: float, view: int, rule: str) -> float:
    """Brute force: the lowest score of the data set (any comparison) whose FMR over the view's impostors (view 0:
    every impostor; view g + 1: group g's same-group ones) is at most ``alpha``; +inf if none."""
    ref = np.array([s for s, gen, ga, gb in rows if not gen and (view == 0 or ga == gb == view - 1)])
    for t in sorted({s for s, *_ in rows}):
        if ref.size and np.mean(ref >= t if rule == ">=" else ref > t) <= alpha:
            return t
    return np.inf


@pytest.mark.parametrize("scheme_name,rule,protocol", [("double-or-nothing", ">=", "all-pairs"),
                                                       ("vertex", ">", "all-pairs"),
                                                       ("double-or-nothing", ">", "listed")])
def test_each_views_own_threshold_per_replicate_is_the_brute_force_one(scheme_name, rule, protocol):
    """Every replicate (the plug-in first) of every view's own threshold equals the definition applied to the
    materialised resampled data set (tied integer scores, unequal identities, two groups; a coarse grid so that
    thresholds fall inside cells and the window misses some: the second pass is exercised)."""
    data = make_data(seed=3, sizes=(3, 4, 2, 5, 3, 4, 3, 2, 4, 3), groups=(0, 1, 0, 1, 0, 1, 0, 1, 0, 1))
    if protocol == "listed":
        data = listed(data)
    targets = np.array([0.0, 0.05, 0.2])
    scheme = rs.SCHEMES[scheme_name](7)
    c = run(data, scheme, 8, grid=build_grid(data, n_cells=6, rule=rule), fmr_targets=[0.1], view_targets=targets)
    assert c.view_threshold.shape == (9, 3, 3)
    for b in range(9):
        rows = materialise(data, scheme, b)
        want = [[own_threshold(rows, a, v, rule) for v in range(3)] for a in targets]
        assert c.view_threshold[b].tolist() == want, b
    # the overall view over every impostor is the engine's own global threshold
    assert np.array_equal(c.view_threshold[:, 2, 0], run(data, scheme, 8, grid=build_grid(data, rule=rule),
                                                          fmr_targets=[0.2]).target_threshold[:, 0])


@pytest.fixture(scope="module")
def carried_audit():
    sim = simulate_vmf({"A": GroupSpec(40, (60.0, 200.0)), "B": GroupSpec(30, (30.0, 90.0))}, dim=16,
                       samples_per_identity=4, seed=2)
    data = sim.as_data()
    carried = ma.CarriedThresholds((0.35, 0.5, 0.999), (1e-2, 1e-3, 1e-2), source="dev")
    result = ma.audit(data, fmr=1e-2, carried=carried, measures=ma.MeasureOptions(calibration=False),
                      intervals=ma.IntervalOptions(n_resamples=60, seed=4))
    return sim, data, carried, result


def test_required_thresholds_are_the_groups_brute_force_ones(carried_audit):
    """The plug-in own thresholds from the scores by hand (lowest observed score whose FMR over the group's
    same-group impostors is <= target); the overall one is the audit's threshold at that target."""
    sim, data, carried, result = carried_audit
    emb = np.asarray(sim.embeddings, float)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    ident, group = sim.samples["identity"].to_numpy(), sim.samples["group"].to_numpy()
    i, j = np.triu_indices(ident.size, 1)
    s = (emb[i] * emb[j]).sum(axis=1)
    imp = ident[i] != ident[j]
    table = result.portability.set_index(["threshold", "group"])
    for t, a in carried.pairs:
        for g in ("A", "B"):
            ref = s[imp & (group[i] == g) & (group[j] == g)]
            want = next((v for v in np.unique(s) if np.mean(ref >= v) <= a), np.inf)
            assert table.loc[(t, g), "required_threshold"] == pytest.approx(want, abs=2e-6)  # quantised scores
            assert table.loc[(t, g), "impostor_comparisons"] == ref.size
    assert table.loc[(0.35, "all"), "required_threshold"] == result.at_fmr(1e-2).loc["all", "threshold"]


def test_the_table_reads_the_audits_records(carried_audit):
    """FMR and FNMR and their intervals are the audit's at the fixed threshold; the ratio is FMR / target; the
    required threshold's interval holds its estimate and is the percentile of the same replicates in a plain run of
    the engine with the audit's scheme and seed."""
    _, data, carried, result = carried_audit
    rows = result.portability
    assert len(rows) == 3 * 3 and rows.source.eq("dev").all()
    for _, r in rows.iterrows():
        at = result.at_threshold(r.threshold).loc[r.group]
        assert (r.fmr, r.fnmr, r.fmr_low, r.fmr_high, r.fnmr_low) == (at.fmr, at.fnmr, at.fmr_low, at.fmr_high,
                                                                        at.fnmr_low)
        assert r.fmr_ratio == pytest.approx(r.fmr / r.target) and r.ratio_high == pytest.approx(r.fmr_high / r.target)
        assert r.status == ("above target" if r.fmr_low > r.target else
                            "at or below target" if r.fmr_high <= r.target else "undetermined")
    c = run(data, rs.SCHEMES["double-or-nothing"](4), 60, grid=build_grid(data), view_targets=[1e-3, 1e-2])
    for ti, a in enumerate((1e-3, 1e-2)):
        for v, g in enumerate(("all", "A", "B")):
            r = rows[(rows.target == a) & (rows.group == g)].iloc[0]
            lo, hi = np.quantile(c.view_threshold[1:, ti, v], [0.025, 0.975])
            assert (r.required_low, r.required_high) == pytest.approx(  # numpy's linear rule, to rounding
                (min(lo, r.required_threshold), max(hi, r.required_threshold)), rel=1e-12)
            assert r.required_threshold == c.view_threshold[0, ti, v]


def test_hostile_cases_say_why_instead_of_a_number(carried_audit):
    """A carried threshold above every impostor score: no false match (FMR 0, its zero-error bound above 0); a
    target the group's impostors cannot resolve (FMR 1e-5 on a few thousand): no required threshold, a note; ungrouped
    data: one view; no intervals: the plug-in thresholds, no bounds."""
    _, data, _, result = carried_audit
    top = result.portability[result.portability.threshold == 0.999]
    assert (top.fmr == 0).all() and (top.fmr_high > 0).all() and (top.fmr_low == 0).all()
    few = ma.audit(data, fmr=1e-2, carried=ma.CarriedThresholds([0.5], [1e-5]), intervals=False)
    p = few.portability
    assert p.required_threshold.isna().all() and p.note.str.contains("below one false match").all()
    assert p.fmr_low.isna().all() and p.threshold_method.isna().all()
    one = ma.audit(make_data(groups=(0,) * 8), fmr=0.1, carried=ma.CarriedThresholds([0.2], [0.1]),
                   intervals=ma.IntervalOptions(n_resamples=40))
    assert one.portability.group.tolist() == list(one.groups)
    assert one.portability.required_threshold.iloc[0] == one.portability.required_threshold.iloc[-1]
    with pytest.raises(ma.InputError, match="pooled") as e:
        ma.audit(data, carried=ma.CarriedThresholds([0.5], [1e-2]), intervals=False,
                 measures=ma.MeasureOptions(weightings=("balanced",)))
    assert e.value.param == "weightings"
    with pytest.raises(ma.InputError, match="FMR targets") as e:
        ma.CarriedThresholds([0.1, 0.2], [0.01])
    assert e.value.param == "targets"


def test_no_table_unless_thresholds_are_carried(carried_audit):
    """The same audit without carried thresholds has no portability section (results.json unchanged: the golden
    corpus checks it byte for byte); saved and loaded, the table comes back."""
    _, data, _, result = carried_audit
    assert "portability" not in ma.audit(data, fmr=1e-2, intervals=False).to_dict()
    assert result.portability.columns[0] == "source"


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A development audit's folder and an evaluation table (the demo's generator, another seed)."""
    sim = simulate_vmf({"A": GroupSpec(30, (60.0, 200.0)), "B": GroupSpec(30, (30.0, 90.0))}, dim=16,
                       samples_per_identity=3, seed=5)
    files = sim.write(tmp_path / "data")
    dev = runner.invoke(app, ["audit", "--samples", str(files.samples), "--embeddings", str(files.embeddings),
                              "--group-by", "group", "--fmr", "1e-2,1e-3", "--no-intervals", "--no-figures",
                              "--out", str(tmp_path / "dev"), "--quiet"])
    assert dev.exit_code == 0, dev.output
    return tmp_path / "dev", files.samples, files.embeddings


def _digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_command_prints_and_writes_the_table_and_refuses_hostile_input(tmp_path):
    dev, samples, emb = _files(tmp_path)
    before = _digest(tmp_path)
    base = ["audit", "--samples", str(samples), "--embeddings", str(emb), "--group-by", "group", "--no-figures",
            "--no-calibration", "--n-resamples", "40"]
    ok = runner.invoke(app, [*base, "--thresholds-from", str(dev), "--threshold", "0.5", "--threshold-fmr", "1e-3",
                             "--out", str(tmp_path / "eval")])
    assert ok.exit_code == 0, ok.output
    assert "Carried thresholds on this population" in ok.output
    doc = json.loads((tmp_path / "eval/results.json").read_text())
    assert len(doc["portability"]) == 3 * 3 and (tmp_path / "eval/portability.csv").is_file()
    loaded = ma.Audit.load(tmp_path / "eval")
    assert json.loads(json.dumps(loaded.document()["portability"])) == doc["portability"]
    assert _digest(tmp_path / "data") == {k: v for k, v in before.items() if "/data/" in k}  # inputs untouched
    # a development audit without thresholds at FMR targets
    runner.invoke(app, [*base[:7], "--fmr", "", "--threshold", "0.4", "--no-intervals", "--out", str(tmp_path / "t"),
                        "--quiet"])
    cases = [
        (["--thresholds-from", str(tmp_path / "t")], "--thresholds-from"),
        (["--threshold", "0.4,0.5", "--threshold-fmr", "1e-2,1e-3,1e-4"], "--threshold-fmr"),
        (["--threshold-fmr", "1e-2"], "--threshold-fmr"),
        (["--thresholds-from", str(dev), "--out-of-core"], "--out-of-core"),
    ]
    for extra, flag in cases:
        bad = runner.invoke(app, [*base, *extra, "--out", str(tmp_path / "x")])
        assert bad.exit_code == 2 and flag in bad.output and "Traceback" not in bad.output, (extra, bad.output)
    into_input = runner.invoke(app, [*base, "--thresholds-from", str(dev), "--out", str(dev)])
    assert into_input.exit_code == 2 and "--out" in into_input.output
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        denied = runner.invoke(app, [*base, "--thresholds-from", str(dev), "--out", str(locked / "o")])
        assert denied.exit_code == 2 and "--out" in denied.output
    assert _digest(dev) == {k: v for k, v in before.items() if k.startswith(str(dev))}
