"""Trial conditions as groups (``ma.audit_conditions``, ``audit --condition-cols``; docs/conditions.md): the plug-in
rates against brute-force counts, every replicate against a brute-force weighted count with the scheme's identity
weights (the joint-replicate property), the contrasts' arithmetic, the loaders, and hostile inputs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit import resampling as rs
from matchaudit.auditing.conditions import MAX_CONDITIONS
from matchaudit.cli import app
from matchaudit.data.nist import load_nist_sre
from matchaudit.engine.weights import layout_of

runner = CliRunner()
TARGET = 0.05


def trials(seed: int = 0, K: int = 24, conditions=("c0", "c1", "c2")) -> pd.DataFrame:
    """A scored trial list: identities with effects shared across conditions, two groups, sample ids."""
    rng = np.random.default_rng(seed)
    group = np.where(np.arange(K) % 2 == 0, "A", "B")
    u = rng.normal(0, 0.7, K)
    rows = []
    for c, name in enumerate(conditions):
        for k in range(K):
            for j in range(2):
                rows.append((f"i{k}", f"i{k}", f"i{k}_{name}_g{j}a", f"i{k}_{name}_g{j}b",
                             2.5 - 0.4 * c + u[k] + rng.normal(), name))
            for j in range(5):
                l = (k + rng.integers(1, K)) % K
                rows.append((f"i{k}", f"i{l}", f"i{k}_{name}_m{j}", f"i{l}_{name}_n{j}_{k}", rng.normal(), name))
    t = pd.DataFrame(rows, columns=["identity_a", "identity_b", "sample_a", "sample_b", "score", "channel"])
    t["group_a"] = group[t.identity_a.str[1:].astype(int)]
    t["group_b"] = group[t.identity_b.str[1:].astype(int)]
    return t


def load(t: pd.DataFrame, **kw) -> ma.audit.__class__:
    return ma.from_scores(t.score, t.identity_a, t.identity_b, sample_a=t.sample_a, sample_b=t.sample_b,
                          attributes_a={"group": t.group_a}, attributes_b={"group": t.group_b}, group_by="group",
                          conditions=t[["channel"]], **kw)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return trials()


def _threshold(score: np.ndarray, w: np.ndarray, impostor: np.ndarray, target: float) -> float:
    """The project's threshold at an FMR target, brute force: the lowest score of a comparison with positive weight
    whose weighted FMR (accept iff score >= t) is at most the target."""
    total = w[impostor].sum()
    for s in np.unique(score[w > 0]):
        if w[impostor & (score >= s)].sum() / total <= target:
            return float(s)
    return np.inf


def _brute(t: pd.DataFrame, w_gen: np.ndarray, w_imp: np.ndarray, codes: np.ndarray, target: float):
    """Per condition and per (condition, group): FNMR and FMR at the replicate's threshold, weighted counts."""
    ka, kb = codes[t.identity_a].to_numpy(), codes[t.identity_b].to_numpy()
    gen = (ka == kb)
    w = np.where(gen, w_gen[ka], w_imp[ka] * w_imp[kb]).astype(float)
    score = t.score.to_numpy()
    thr = _threshold(score, w, ~gen, target)
    acc = score >= thr
    out = {}
    for c in sorted(t.channel.unique()):
        cond = (t.channel == c).to_numpy()
        for g in ("all", "A", "B"):
            ing = cond if g == "all" else cond & (t.group_a == g).to_numpy()
            imp = cond & ~gen if g == "all" else cond & ~gen & (t.group_a == g).to_numpy() & (t.group_b == g).to_numpy()
            with np.errstate(invalid="ignore"):
                out[(c, g, "fnmr")] = w[ing & gen & ~acc].sum() / w[ing & gen].sum()
                out[(c, g, "fmr")] = w[imp & acc].sum() / w[imp].sum()
    return thr, out


def test_plug_in_rates_are_brute_force_counts(table):
    r = ma.audit_conditions(load(table), fmr=TARGET, n_resamples=40)
    thr = ma.audit(load(table), fmr=TARGET, intervals=False).at_fmr(TARGET).loc["all", "threshold"]
    rates = r.to_frame().query("kind == 'rate'")
    assert (rates.threshold == thr).all()  # the deployed threshold: the audit's own, over all impostors
    score, acc = table.score.to_numpy(), table.score.to_numpy() >= thr
    gen = (table.identity_a == table.identity_b).to_numpy()
    for rec in rates.itertuples():
        cond = np.ones(len(table), bool) if rec.condition == "all" else (table.channel == rec.condition).to_numpy()
        same = np.ones(len(table), bool) if rec.group == "all" else \
            ((table.group_a == rec.group) & (table.group_b == rec.group)).to_numpy()
        sel = cond & same & (gen if rec.metric == "fnmr" else ~gen)
        errors = int((sel & (~acc if rec.metric == "fnmr" else acc)).sum())
        assert (rec.errors, rec.comparisons) == (errors, int(sel.sum())), rec
        assert rec.estimate == errors / sel.sum(), rec
    assert score.size == len(table)


def _check_replicates(t: pd.DataFrame, method: str, B: int = 20, seed: int = 7) -> None:
    data = load(t)
    r = ma.audit_conditions(data, fmr=TARGET, n_resamples=B, seed=seed, method=method, level=0.9)
    gw, iw = rs.SCHEMES[method](seed).identity_weights(np.arange(1, B + 1), layout_of(data))
    codes = pd.Series(np.arange(data.n_identities), index=data.identity_names)
    conds = list(r.conditions)
    cells = {(c, g): 1 + i for i, (c, g) in enumerate((c, g) for c in conds for g in r.groups)}
    for b in range(B):  # ONE weight vector per replicate, applied to every condition and cell
        _, want = _brute(t, gw[b], iw[b], codes, TARGET)
        for metric in ("fnmr", "fmr"):
            got = r.replicates["conditions"][metric][1 + b, 0]
            np.testing.assert_allclose(got[1:], [want[(c, "all", metric)] for c in conds], rtol=1e-12, atol=1e-15)
            cell = r.replicates["cells"][metric][1 + b, 0]
            np.testing.assert_allclose([cell[cells[(c, g)]] for c in conds for g in r.groups],
                                       [want[(c, g, metric)] for c in conds for g in r.groups], rtol=1e-12,
                                       atol=1e-15)


@pytest.mark.parametrize("method", ["double-or-nothing", "vertex"])
def test_every_replicate_is_the_brute_force_count_with_the_same_identity_weights(table, method):
    """The joint-replicate property: each replicate's rates in every condition and cell are the brute-force weighted
    counts with one identity weight vector, the scheme's (seed, replicate, identity code) weights."""
    _check_replicates(table, method)


@pytest.mark.parametrize("method", ["double-or-nothing", "vertex"])
def test_identities_absent_from_a_condition_keep_the_others_weights(table, method):
    """A condition without some identities: a subset audited on its own would re-code its identities (and vertex
    draws K of them), giving each identity another weight there; the relabelled data keep the codes."""
    absent = table.identity_a.isin([f"i{k}" for k in range(6)]) | table.identity_b.isin([f"i{k}" for k in range(6)])
    _check_replicates(table[~(absent & (table.channel == "c1"))].reset_index(drop=True), method)


def test_equalised_differences_and_interactions_are_their_rates_arithmetic(table):
    uneven = table[~((table.channel == "c2") & table.identity_a.isin([f"i{k}" for k in range(9)]))]
    r = ma.audit_conditions(load(uneven), fmr=TARGET, n_resamples=40).to_frame()  # unequal sizes: mean != pooled
    for metric in ("fnmr", "fmr"):
        m = r[r.metric == metric]
        rate = {(x.condition, x.group): x.estimate for x in m[m.kind == "rate"].itertuples()}
        conds = ["c0", "c1", "c2"]
        eq = m[(m.kind == "equalised")].set_index("group").estimate
        assert eq["all"] == pytest.approx(np.mean([rate[(c, "all")] for c in conds]), abs=1e-15)
        assert eq["B"] == pytest.approx(np.mean([rate[(c, "B")] for c in conds]), abs=1e-15)
        diff = m[m.kind == "difference"].set_index("condition").estimate
        assert diff["c2"] == pytest.approx(rate[("c2", "all")] - rate[("c0", "all")], abs=1e-15)
        inter = m[m.kind == "interaction"].set_index("condition")
        assert (inter.group == "B").all() and (inter.group_ref == "A").all() and (inter.condition_ref == "c0").all()
        want = (rate[("c1", "B")] - rate[("c1", "A")]) - (rate[("c0", "B")] - rate[("c0", "A")])
        assert inter.estimate["c1"] == pytest.approx(want, abs=1e-15)
        assert ((m.low <= m.estimate) & (m.estimate <= m.high)).all()
    zero = r[(r.estimate == 0) & r.kind.isin(["rate", "equalised"])]
    assert len(zero) and (zero.high > 0).all()  # never a zero-width interval (zero-error bounds)


def test_reference_and_intersections_of_condition_columns(table):
    t = table.assign(lang=np.where(np.arange(len(table)) % 2 == 0, "same", "cross"))
    data = ma.from_scores(t.score, t.identity_a, t.identity_b, sample_a=t.sample_a, sample_b=t.sample_b,
                          conditions=t[["channel", "lang"]])
    r = ma.audit_conditions(data, ["channel", "lang"], fmr=TARGET, n_resamples=40, reference="c1|same")
    assert r.conditions[0] == "c1|same" and len(r.conditions) == 6 and r.groups == ()
    assert set(r.to_frame().kind) == {"rate", "equalised", "difference"}  # ungrouped: no interaction
    only = ma.audit_conditions(data, "lang", fmr=TARGET, n_resamples=40)
    assert only.conditions == ("cross", "same")


@pytest.mark.filterwarnings("ignore:.*listed more than once")
def test_conditions_follow_the_rows_kept(tmp_path, table):
    path = tmp_path / "t.csv"
    t = table.copy()
    t.loc[3, "score"] = np.nan  # a failure, excluded
    t = pd.concat([t, t.iloc[[10]].assign(score=9.0)], ignore_index=True)  # a repeated comparison
    t.to_csv(path, index=False)
    data = ma.load_comparisons(path, group_by="group", condition_cols="channel", fta_policy="exclude",
                               duplicates="first")
    assert np.array_equal(data.conditions.columns["channel"], np.delete(t.channel.to_numpy()[:-1], 3))
    t.loc[len(t) - 1, "channel"] = "c2" if t.loc[10, "channel"] != "c2" else "c0"
    t.to_csv(path, index=False)
    with pytest.raises(ma.InputError, match="different values of condition 'channel'"):
        ma.load_comparisons(path, group_by="group", condition_cols="channel", fta_policy="exclude",
                            duplicates="first")
    kept = ma.load_comparisons(path, group_by="group", condition_cols="channel", fta_policy="exclude")
    assert len(kept.conditions.columns["channel"]) == len(kept.pairs) == len(t) - 1


@pytest.mark.filterwarnings("ignore:.*single sample")
def test_nist_sre_key_partition_columns(tmp_path):
    key = tmp_path / "key.tsv"
    out = tmp_path / "out.tsv"
    rows = [("spkA-enr", "spkA-u1.sph", "target", "tel"), ("spkA-enr", "spkB-u1.sph", "nontarget", "tel"),
            ("spkB-enr", "spkB-u2.sph", "target", "mic"), ("spkB-enr", "spkA-u2.sph", "nontarget", "mic")]
    key.write_text("modelid\tsegmentid\tside\ttargettype\tsource_type\n"
                   + "".join(f"{m}\t{s}\ta\t{t}\t{c}\n" for m, s, t, c in rows))
    out.write_text("modelid\tsegmentid\tside\tLLR\n" + "".join(f"{m}\t{s}\ta\t{i}\n" for i, (m, s, *_)
                                                               in enumerate(rows[::-1])))
    data = load_nist_sre(out, key, speaker_of="prefix", condition_cols="source_type")
    assert data.conditions.columns["source_type"].tolist() == ["tel", "tel", "mic", "mic"]
    trials = tmp_path / "trials.tsv"
    trials.write_text("modelid\tsegmentid\tside\nspkB-enr\tspkA-u2.sph\ta\nspkA-enr\tspkA-u1.sph\ta\n")
    out.write_text("modelid\tsegmentid\tside\tLLR\nspkA-enr\tspkA-u1.sph\ta\t1\nspkB-enr\tspkA-u2.sph\ta\t0\n")
    sub = load_nist_sre(out, key, trials=trials, speaker_of="prefix", condition_cols=["source_type"])
    assert sub.conditions.columns["source_type"].tolist() == ["mic", "tel"]
    with pytest.raises(ma.InputError, match="language"):
        load_nist_sre(out, key, speaker_of="prefix", condition_cols="language")


def test_hostile_inputs_say_why(table, tmp_path):
    with pytest.raises(ma.InputError, match="all pairs of samples have none"):
        ma.audit_conditions(ma.simulate(seed=0).as_data())
    with pytest.raises(ma.InputError, match="carry no trial conditions"):
        ma.audit_conditions(ma.from_scores(table.score, table.identity_a, table.identity_b))
    with pytest.raises(ma.InputError, match="'lang'") as e:
        ma.audit_conditions(load(table), "lang")
    assert e.value.param == "conditions"
    with pytest.raises(ma.InputError, match="missing condition 'channel' at positions 5"):
        load(table.assign(channel=table.channel.where(np.arange(len(table)) != 5)))
    with pytest.raises(ma.InputError, match="one value only"):
        ma.audit_conditions(load(table.assign(channel="tel")))
    no_imp = table[~((table.channel == "c1") & (table.identity_a != table.identity_b))]
    with pytest.raises(ma.InputError, match="'c1' .* lack genuine or impostor"):
        ma.audit_conditions(load(no_imp))
    many = table.assign(channel=[f"v{i % (MAX_CONDITIONS + 1)}" for i in range(len(table))])
    with pytest.raises(ma.InputError, match=f"more than {MAX_CONDITIONS}"):
        ma.audit_conditions(load(many))
    with pytest.raises(ma.InputError, match="reference 'x'"):
        ma.audit_conditions(load(table), reference="x")
    labels = ma.from_scores(table.score, label=table.identity_a == table.identity_b, conditions=table[["channel"]])
    with pytest.raises(ma.InputError, match="resample identities"):
        ma.audit_conditions(labels)
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    with pytest.raises(ma.InputError, match="a condition column") as e:
        ma.load_comparisons(path, condition_cols="lang")
    assert e.value.param == "condition_cols"
    with pytest.raises(ma.InputError, match="in memory"):
        ma.load_comparisons(path, condition_cols="channel", out_of_core=True)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_command_writes_the_tables_and_refuses_hostile_input(tmp_path, table):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / "trials.csv"
    table.to_csv(path, index=False)
    before = _digest(data_dir)
    base = ["audit", "--comparisons", str(path), "--group-by", "group", "--fmr", "0.05", "--no-figures",
            "--no-calibration", "--n-resamples", "40"]
    ok = runner.invoke(app, [*base, "--condition-cols", "channel", "--out", str(tmp_path / "res")])
    assert ok.exit_code == 0, ok.output
    assert "Trial conditions (channel)" in ok.output and "interaction" in ok.output
    doc = json.loads((tmp_path / "res/conditions.json").read_text())
    frame = pd.read_csv(tmp_path / "res/conditions.csv")
    assert len(frame) == len(doc["records"]) and doc["conditions"] == ["c0", "c1", "c2"]
    want = ma.audit_conditions(load(table), fmr=0.05, n_resamples=40).to_frame()
    np.testing.assert_array_equal(frame.estimate.to_numpy(), want.estimate.to_numpy())
    np.testing.assert_array_equal(frame.high.to_numpy(), want.high.to_numpy())
    again = runner.invoke(app, [*base, "--condition-cols", "channel", "--out", str(tmp_path / "res"), "--report",
                                str(tmp_path / "res") + "/"])
    assert again.exit_code == 0, again.output  # its own earlier outputs are replaced
    html = (tmp_path / "res/report.html").read_text()
    assert "<h2>Trial conditions</h2>" in html and "Wald tests" in html  # the report shows conditions.json
    other = json.loads((tmp_path / "res/conditions.json").read_text())
    other["details"]["data"]["n_comparisons"] += 1  # a conditions.json of other data: left out, with a warning
    (tmp_path / "res/conditions.json").write_text(json.dumps(other))
    stale = runner.invoke(app, ["report", str(tmp_path / "res"), "--out", str(tmp_path / "r.html")])
    assert stale.exit_code == 0 and "left out of the report" in stale.output
    assert "<h2>Trial conditions</h2>" not in (tmp_path / "r.html").read_text()
    samples = tmp_path / "s"
    runner.invoke(app, ["simulate", "--out", str(samples), "--quiet"])
    cases = [
        (["--condition-cols", "lang"], "--condition-cols", "lang"),
        (["--condition-cols", "channel", "--no-intervals"], "--condition-cols", "--no-intervals"),
        (["--condition-cols", "channel", "--condition-reference", "x"], "--condition-reference", "'x'"),
        (["--condition-reference", "c1"], "--condition-reference", "--condition-cols"),
        (["--condition-cols", "channel", "--out-of-core"], "--condition-cols", "in memory"),
        (["--condition-cols", "sample_a"], "--condition-cols", f"more than {MAX_CONDITIONS}"),
    ]
    for extra, flag, words in cases:
        bad = runner.invoke(app, [*base, *extra, "--out", str(tmp_path / "x")])
        assert bad.exit_code == 2 and flag in bad.output and words in bad.output, (extra, bad.output)
        assert "Traceback" not in bad.output and not (tmp_path / "x" / "results.json").exists()  # refused first
    pairs = runner.invoke(app, ["audit", "--samples", str(samples / "samples.parquet"), "--embeddings",
                                str(samples / "embeddings.npy"), "--condition-cols", "channel", "--out",
                                str(tmp_path / "y")])
    assert pairs.exit_code == 2 and "all pairs" in pairs.output, pairs.output
    into_input = runner.invoke(app, [*base, "--condition-cols", "channel", "--out", str(path)])
    assert into_input.exit_code == 2 and "--out" in into_input.output
    (data_dir / "conditions.csv").write_text("mine\n")  # a file of the user's where conditions.csv would go
    theirs = runner.invoke(app, [*base, "--condition-cols", "channel", "--out", str(data_dir)])
    assert theirs.exit_code == 2 and "conditions.csv" in theirs.output and "--out" in theirs.output
    assert not (data_dir / "results.json").exists()  # refused before any work
    (data_dir / "conditions.csv").unlink()
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        denied = runner.invoke(app, [*base, "--condition-cols", "channel", "--out", str(locked / "o")])
        assert denied.exit_code == 2 and "--out" in denied.output
    assert _digest(data_dir) == before


def test_a_condition_that_repeats_a_group_gives_no_interaction_test_and_says_why(table):
    t = table.assign(side=table.group_a)  # the condition is the first side's group: cells (A, B), (B, A) are empty
    data = ma.from_scores(t.score, t.identity_a, t.identity_b, sample_a=t.sample_a, sample_b=t.sample_b,
                          attributes_a={"group": t.group_a}, attributes_b={"group": t.group_b}, group_by="group",
                          conditions=t[["side"]])
    r = ma.audit_conditions(data, "side", fmr=TARGET, n_resamples=40)
    inter = [x for x in r.tests if x["test"] == "interaction"]
    assert inter and all(np.isnan(x["p_value"]) and "repeat a group attribute" in x["note"] for x in inter)
    assert all(x["note"] is None and np.isfinite(x["p_value"]) for x in r.tests if x["test"] == "conditions")


def test_a_rate_resting_on_few_errors_is_marked_indicative(table):
    r = ma.audit_conditions(load(table), fmr=TARGET, n_resamples=40).to_frame()
    rates = r[r.kind == "rate"]
    few = rates[(rates.errors > 0) & (rates.errors < 5)]
    assert len(few) == 6 and all("read it as indicative" in n for n in few.note)
    assert not any("indicative" in str(n) for n in rates[rates.errors >= 5].note)
