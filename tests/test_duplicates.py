"""A comparison listed more than once (issue #19): ``duplicates`` keep-both (the default: every row counts, as
trial-list scorers count trial lines, with a warning), first, mean or refuse; the same rule for tidy tables in
memory and out of core, the format readers and the command line. Before: every duplicate was an error whose
message did not say which row to keep, and identity-only tables silently counted every row."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from matchaudit.cli.formats import load_by_format
from matchaudit.data import from_scores, load_comparisons
from matchaudit.data.formats import load_voxceleb
from matchaudit.errors import InputError
from tests.test_out_of_core import comparisons as ooc_table
from tests.test_out_of_core import write

FIX = Path(__file__).parent / "fixtures" / "formats"
ORIGINAL = (7, 30, 50)  # rows listed a second time, reversed, at the end of the table
SECOND = (1.75, 0.5, 0.25)  # their second scores: two differ from the first (1.25, 0.5, -0.25)


def _table() -> tuple[pd.DataFrame, int]:
    """6 identities (3 F, 3 M) x 3 samples, every pair, scores on a grid of 1/4; rows 7, 30 and 50 listed again
    as (b, a) at the end. Returns the table and its number of distinct comparisons."""
    rng = np.random.default_rng(0)
    ident = np.repeat(np.arange(6), 3)
    i, j = np.triu_indices(ident.size, 1)
    gen = ident[i] == ident[j]
    sex = np.where(np.arange(6) < 3, "F", "M")
    df = pd.DataFrame({"sample_a": [f"s{k}" for k in i], "sample_b": [f"s{k}" for k in j],
                       "identity_a": [f"id{ident[k]}" for k in i], "identity_b": [f"id{ident[k]}" for k in j],
                       "score": np.round(4 * (rng.normal(size=i.size) + 2 * gen)) / 4,
                       "sex_a": sex[ident[i]], "sex_b": sex[ident[j]]})
    df.loc[list(ORIGINAL), "score"] = [1.25, 0.5, -0.25]
    extra = df.loc[list(ORIGINAL)].rename(columns={"sample_a": "sample_b", "sample_b": "sample_a",
                                                   "identity_a": "identity_b", "identity_b": "identity_a",
                                                   "sex_a": "sex_b", "sex_b": "sex_a"})[df.columns]
    extra["score"] = SECOND
    return pd.concat([df, extra], ignore_index=True), len(df)


def _in_memory(df: pd.DataFrame, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_scores(df["score"], df["identity_a"], df["identity_b"], sample_a=df["sample_a"],
                           sample_b=df["sample_b"], attributes_a={"sex": df["sex_a"]},
                           attributes_b={"sex": df["sex_b"]}, group_by="sex", **kw)


def _from_csv(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_comparisons(path, group_by="sex", **kw)


@pytest.fixture()
def dup(tmp_path):
    df, n = _table()
    path = tmp_path / "dup.csv"
    df.to_csv(path, index=False)
    return df, n, path


def test_keep_both_is_the_default_counts_every_row_and_warns(dup):
    df, n, path = dup
    for data in (_from_csv(path), _in_memory(df)):
        assert data.n_comparisons() == len(df) == n + 3
        np.testing.assert_array_equal(data.pairs.score, df["score"].to_numpy())
        note = [w for w in data.warnings if "listed more than once" in w]
        assert len(note) == 1
        assert "3 comparisons are listed more than once" in note[0] and "6 rows in all" in note[0]
        assert "2 of them with different scores" in note[0]
        assert "s0 vs s8 at" in note[0] and "--duplicates" in note[0] and "'first'" in note[0]
    assert "s0 vs s8 at rows 8, 154" in _from_csv(path).warnings[0]  # file rows (first data row = 1)
    assert "s0 vs s8 at positions 7, 153" in _in_memory(df).warnings[0]


def test_first_keeps_the_first_row_of_each_pair(dup):
    df, n, path = dup
    csv, mem = _from_csv(path, duplicates="first"), _in_memory(df, duplicates="first")
    for data in (csv, mem):
        assert data.n_comparisons() == n
        np.testing.assert_array_equal(data.pairs.score, df["score"].to_numpy()[:n])
        assert data.pairs.score[list(ORIGINAL)].tolist() == [1.25, 0.5, -0.25]
        assert any("Kept the first row of each (duplicates='first'): 3 rows fewer" in w for w in data.warnings)
    for f in ("score", "identity_a", "identity_b", "sample_a", "sample_b", "group_a", "genuine"):
        np.testing.assert_array_equal(getattr(csv.pairs, f), getattr(mem.pairs, f), err_msg=f)


def test_mean_averages_the_scores_of_each_pair(dup):
    df, n, path = dup
    for data in (_from_csv(path, duplicates="mean"), _in_memory(df, duplicates="mean")):
        assert data.n_comparisons() == n
        assert data.pairs.score[list(ORIGINAL)].tolist() == [1.5, 0.5, 0.0]
        others = np.setdiff1d(np.arange(n), ORIGINAL)
        np.testing.assert_array_equal(data.pairs.score[others], df["score"].to_numpy()[others])


def test_refuse_names_the_option(dup):
    df, _, path = dup
    for load in (lambda: _from_csv(path, duplicates="refuse"), lambda: _in_memory(df, duplicates="refuse")):
        with pytest.raises(InputError, match=r"listed more than once.*s0 vs s8 at .*duplicates='keep-both'") as e:
            load()
        assert e.value.param == "duplicates" and "'first'" in str(e.value) and "'mean'" in str(e.value)
    with pytest.raises(InputError, match=r"duplicates 'bogus': choose from") as e:
        _in_memory(df, duplicates="bogus")
    assert e.value.param == "duplicates"


def test_inputs_are_not_modified(dup):
    df, _, _ = dup
    score = df["score"].to_numpy().copy()
    arr = df["score"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_scores(arr, df["identity_a"].tolist(), df["identity_b"].tolist(), sample_a=df["sample_a"].tolist(),
                    sample_b=df["sample_b"].tolist(), duplicates="mean")
    np.testing.assert_array_equal(arr, score)


def test_a_pair_with_two_labels_or_identities_is_an_error_whatever_the_policy(dup):
    df, n, _ = dup
    lab = (df["identity_a"] == df["identity_b"]).to_numpy().copy()
    lab[n] = not lab[n]  # the second listing of row 7 says the opposite
    two_ids = df.copy()
    two_ids.loc[n + 1, "identity_a"] = "id5" if two_ids.loc[n + 1, "identity_a"] != "id5" else "id4"
    for policy in ("keep-both", "first", "mean", "refuse"):
        with pytest.raises(InputError, match=r"more than once with different labels.*s0 vs s8 at positions 7, 153"):
            from_scores(df["score"], label=lab, sample_a=df["sample_a"], sample_b=df["sample_b"],
                        duplicates=policy)
        with pytest.raises(InputError, match=r"samples listed with more than one identity"):
            _in_memory(two_ids, duplicates=policy)
        self_pair = df.copy()
        self_pair.loc[3, "sample_b"] = self_pair.loc[3, "sample_a"]
        with pytest.raises(InputError, match=r"compared with itself at positions 3"):
            _in_memory(self_pair, duplicates=policy)


def test_failures_keep_their_input_rows_after_duplicates_are_merged(dup):
    df, n, _ = dup
    df = df.copy()
    df.loc[n + 1, "score"] = np.nan  # the second listing of row 30 failed
    df.loc[60, "score"] = np.nan
    first = _in_memory(df, duplicates="first", fta_policy="exclude")
    assert first.n_comparisons() == n - 1 and first.failures.rows.tolist() == [60]
    mean = _in_memory(df, duplicates="mean", fta_policy="exclude")  # a failed row fails its pair
    assert mean.n_comparisons() == n - 2 and mean.failures.rows.tolist() == [30, 60]
    both = _in_memory(df, fta_policy="exclude")
    assert both.n_comparisons() == n + 1 and both.failures.rows.tolist() == [60, n + 1]


# --- without sample ids ----------------------------------------------------------------------------------


def test_identity_only_tables_keep_both_only(dup):
    df, _, path = dup
    data = from_scores(df["score"], df["identity_a"], df["identity_b"])
    assert data.n_comparisons() == len(df) and not any("more than once" in w for w in data.warnings)
    assert load_comparisons(path, sample_cols=None).n_comparisons() == len(df)
    for policy in ("first", "mean", "refuse"):
        with pytest.raises(InputError, match=r"needs sample ids.*cannot be told apart") as e:
            from_scores(df["score"], df["identity_a"], df["identity_b"], duplicates=policy)
        assert e.value.param == "duplicates" and f"duplicates={policy!r}" in str(e.value)
        with pytest.raises(InputError, match=r"needs sample ids"):
            load_comparisons(path, sample_cols=None, duplicates=policy)


# --- a trial list -----------------------------------------------------------------------------------------


def _vox(tmp_path: Path) -> tuple[Path, Path]:
    """The VoxCeleb fixture with its first trial listed again, reversed, and scored again (differently)."""
    trials = (FIX / "vox_trials.txt").read_text()
    label, enrol, test = trials.splitlines()[0].split()
    (tmp_path / "trials.txt").write_text(trials + f"{label} {test} {enrol}\n")
    (tmp_path / "scores.txt").write_text((FIX / "vox_scores_keyed.txt").read_text() + f"{test} {enrol} 0.9\n")
    return tmp_path / "trials.txt", tmp_path / "scores.txt"


def test_voxceleb_reversed_trial_loads_by_default_with_a_warning(tmp_path):
    trials, scores = _vox(tmp_path)
    with pytest.warns(UserWarning, match="1 comparison is listed more than once"):
        data = load_voxceleb(trials, scores)
    assert data.n_comparisons() == 67
    note = data.warnings[0]
    assert "1 of them with different scores" in note and "at lines 1, 67" in note and "--duplicates" in note
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_voxceleb(trials, scores, duplicates="first").n_comparisons() == 66
        via_cli = load_by_format("voxceleb", trials=trials, scores=scores, duplicates="mean")
    assert via_cli.n_comparisons() == 66
    with pytest.raises(InputError, match=r"listed more than once.*at lines 1, 67.*duplicates='keep-both'"):
        load_voxceleb(trials, scores, duplicates="refuse")


# --- out of core ------------------------------------------------------------------------------------------


def _ooc_dup(tmp_path: Path, flip_label: bool = False) -> Path:
    """The out-of-core tests' table with rows 10 and 900 listed again reversed in later row groups (one with
    another score), and row 30 again as is (same score)."""
    df = ooc_table()
    extra = df.loc[[10, 900]].rename(columns={"sample_a": "sample_b", "sample_b": "sample_a",
                                              "identity_a": "identity_b", "identity_b": "identity_a",
                                              "sex_a": "sex_b", "sex_b": "sex_a"})[df.columns]
    extra["score"] = extra["score"].to_numpy() + np.array([0.5, 0.0])
    extra["sample_a"] = extra["sample_a"].str.strip()
    extra["identity_b"] = extra["identity_b"].str.strip() + " "
    again = df.loc[[30]]
    if flip_label:
        again = again.assign(label=np.where(again["label"] == "genuine", "impostor", "genuine"))
    df = pd.concat([df.iloc[:1500], extra, df.iloc[1500:], again], ignore_index=True)
    return write(df, tmp_path / "dup.parquet")


def test_out_of_core_keep_both_warns_as_in_memory_and_refuses_first(tmp_path):
    path = _ooc_dup(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = load_comparisons(path, group_by="sex")
        ooc = load_comparisons(path, group_by="sex", out_of_core=True)
    assert ooc.out_of_core and ooc.source.n_blocks() > 3
    assert ooc.n_comparisons() == mem.n_comparisons() == len(pd.read_parquet(path))
    assert ooc.warnings == mem.warnings
    assert "3 comparisons are listed more than once" in ooc.warnings[0]
    assert "1 of them with different scores" in ooc.warnings[0]
    for policy in ("first", "mean"):
        with pytest.raises(InputError, match=r"listed more than once.*--in-memory") as e:
            load_comparisons(path, group_by="sex", out_of_core=True, duplicates=policy)
        assert e.value.param == "duplicates"
    with pytest.raises(InputError) as m:
        load_comparisons(path, group_by="sex", duplicates="refuse")
    with pytest.raises(InputError) as o:
        load_comparisons(path, group_by="sex", duplicates="refuse", out_of_core=True)
    assert str(o.value) == str(m.value) and o.value.param == "duplicates"
    for policy in ("first", "mean", "refuse"):
        with pytest.raises(InputError, match="needs sample ids"):
            load_comparisons(path, sample_cols=None, out_of_core=True, duplicates=policy)


def test_out_of_core_label_conflict_is_the_loaders_error(tmp_path):
    path = _ooc_dup(tmp_path, flip_label=True)
    opts = dict(identity_cols=None, label_col="label")
    with pytest.raises(InputError, match="different labels") as m:
        load_comparisons(path, **opts)
    with pytest.raises(InputError) as o:
        load_comparisons(path, out_of_core=True, **opts)
    assert str(o.value) == str(m.value)


# --- command line -----------------------------------------------------------------------------------------


def _audit(path: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, ["audit", "--comparisons", str(path), "--group-by", "sex", "--fmr", "1e-1",
                                    "--n-resamples", "40", "--no-figures", "--no-calibration", "--quiet",
                                    "--out", str(out), *extra])


def test_cli_audit_duplicates(dup, tmp_path):
    _, n, path = dup
    first = _audit(path, tmp_path / "first", "--duplicates", "first")
    assert first.exit_code == 0, first.output
    summary = json.loads((tmp_path / "first" / "results.json").read_text())["summary"]
    assert summary["n_comparisons"] == n
    both = _audit(path, tmp_path / "both")
    assert both.exit_code == 0, both.output
    summary = json.loads((tmp_path / "both" / "results.json").read_text())["summary"]
    assert summary["n_comparisons"] == n + 3
    assert any("3 comparisons are listed more than once" in w for w in summary["warnings"])
    bogus = _audit(path, tmp_path / "bogus", "--duplicates", "bogus")
    assert bogus.exit_code == 2 and "--duplicates 'bogus'" in bogus.output and "Traceback" not in bogus.output
    refuse = _audit(path, tmp_path / "refuse", "--duplicates", "refuse")
    assert refuse.exit_code == 2 and "--duplicates" in refuse.output and "listed more than once" in refuse.output
    no_ids = _audit(path, tmp_path / "no_ids", "--sample-cols", "", "--duplicates", "mean")
    assert no_ids.exit_code == 2 and "--duplicates" in no_ids.output and "needs sample ids" in no_ids.output


def test_cli_test_and_compare_take_duplicates(dup, tmp_path):
    _, _, path = dup
    runner = CliRunner()
    test = runner.invoke(app, ["test", "--comparisons", str(path), "--group-by", "sex", "--duplicates", "refuse",
                               "--out", str(tmp_path / "t")])
    assert test.exit_code == 2 and "--duplicates" in test.output and "listed more than once" in test.output
    bogus = runner.invoke(app, ["compare", "--comparisons-a", str(path), "--comparisons-b", str(path),
                                "--duplicates", "bogus", "--out", str(tmp_path / "c0")])
    assert bogus.exit_code == 2 and "--duplicates 'bogus'" in bogus.output
    ok = runner.invoke(app, ["compare", "--comparisons-a", str(path), "--comparisons-b", str(path), "--group-by",
                             "sex", "--fmr", "1e-1", "--duplicates", "mean", "--n-resamples", "40",
                             "--n-permutations", "0", "--quiet", "--out", str(tmp_path / "c")])
    assert ok.exit_code == 0, ok.output
