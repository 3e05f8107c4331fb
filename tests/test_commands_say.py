"""The commands say what they do (#42 item 5): nothing dropped or kept silently."""

from __future__ import annotations

import json

import numpy as np

import pandas as pd
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.cli import app

runner = CliRunner()


def test_compare_warns_of_duplicated_comparisons(tmp_path):
    """Its help said "with a warning"; the duplicated pairs were kept silently."""
    t = ma.simulate(samples_per_identity=3, dim=16, seed=2).trial_list(60, 300, seed=0)
    swapped = t.iloc[:5].rename(columns={"sample_a": "sample_b", "sample_b": "sample_a", "identity_a": "identity_b",
                                         "identity_b": "identity_a", "group_a": "group_b", "group_b": "group_a"})
    pd.concat([t, swapped]).to_csv(tmp_path / "dup.csv", index=False)
    res = runner.invoke(app, ["compare", "--comparisons-a", str(tmp_path / "dup.csv"), "--comparisons-b",
                              str(tmp_path / "dup.csv"), "--fmr", "0.1", "--n-resamples", "40", "--n-permutations", "9",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "Warning: model A: 5 comparisons" in res.output or "Warning: model A:" in res.output
    doc = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert any("listed more than once" in w or "more than once" in w for w in doc["result"]["warnings"])


def test_no_intervals_says_the_calibration_metrics_it_asked_for_are_skipped():
    data = ma.simulate(samples_per_identity=3, dim=16, seed=2).as_data()
    res = ma.audit(data, fmr=0.01, measures=ma.MeasureOptions(llr=True), intervals=False)
    assert any("Cllr" in w and "skipped without intervals" in w for w in res.warnings)
    assert not any("Cllr" in w for w in ma.audit(data, fmr=0.01, intervals=False).warnings)


def test_estimate_takes_a_list_of_fmr_targets_and_only_those(tmp_path):
    from tests.test_labelfree_cli import _table

    path = _table(tmp_path)
    res = runner.invoke(app, ["estimate", str(path), "--score-col", "sim", "--group-col", "eth", "--label-col", "lab",
                              "--sampler", "numpy", "--draws", "1500", "--fmr", "1e-2,5e-2", "--out", str(tmp_path / "o"),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "estimate.json").read_text())
    assert sorted(doc["fmr_targets"]) == [0.01, 0.05]


def test_options_that_would_be_ignored_are_refused(tmp_path):
    """Hostile N1, N3, N4: each was accepted and ignored (exit 0)."""
    data = ma.simulate(samples_per_identity=3, dim=16, seed=2).as_data()
    import pytest

    with pytest.raises(ma.InputError, match="intervals=") as e:  # not an option object: refused, named
        ma.audit(data, fmr=0.01, intervals="wilson")
    assert e.value.param == "intervals"
    from matchaudit.cli.matching_writer import write_matching_test

    with pytest.raises(ma.InputError, match="two-group test") as e:  # three groups: every pair, two-sided
        write_matching_test(data, "fnmr", tmp_path / "t", threshold=0.5, alternative="greater")
    assert e.value.param == "alternative" and not (tmp_path / "t").exists()
    with pytest.raises(ma.InputError, match="at least one genuine and one impostor"):
        ma.plan([f"s{i}" for i in range(6)], [0, 0, 1, 1, 2, 2], genuine=0, impostor=0)
    samples = tmp_path / "s.csv"
    pd.DataFrame({"sample_id": [f"s{i}" for i in range(6)], "identity": [0, 0, 1, 1, 2, 2]}).to_csv(samples, index=False)
    res = runner.invoke(app, ["protocol", "--samples", str(samples), "--genuine", "2", "--impostor", "4",
                              "--threshold", "0.5", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--threshold" in res.output and not (tmp_path / "o").exists()


def test_messages_say_what_is_true(tmp_path):
    """Hostile M3, M4, M11: a false 'every score is the same value' on binary scores; advice to use --fta-policy
    for formats that refuse it; a column-count error naming the wrong layout."""
    t = ma.simulate(samples_per_identity=3, dim=16, seed=2).trial_list(60, 300, seed=0)
    binary = ma.from_scores((t.identity_a == t.identity_b).astype(float), t.identity_a, t.identity_b)
    assert not any("same value" in w for w in ma.audit(binary, fmr=0.1, intervals=False).warnings)
    flat = ma.from_scores(np.full(len(t), 0.5), t.identity_a, t.identity_b)
    assert any("same value" in w for w in ma.audit(flat, fmr=0.1, intervals=False).warnings)
    (tmp_path / "b.txt").write_text("c1 c1 s1 nan\nc1 c2 s2 0.3\nc2 c2 s3 0.9\nc2 c1 s4 0.1\n")
    res = runner.invoke(app, ["audit", "--format", "bob", "--scores", str(tmp_path / "b.txt"), "--no-intervals",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no field for a failed comparison" in res.output
    (tmp_path / "m.score").write_text("a b 0.5\nc d 0.6 target\n")
    res = runner.invoke(app, ["audit", "--format", "wespeaker", "--scores", str(tmp_path / "m.score"), "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2 and "found 4; expected 3 (enrol test score), as on its first data line" in res.output


def test_versus_on_two_groups_gives_the_table_it_names(tmp_path):
    """``matchaudit test --versus rest`` on two groups ran the two-group test and ignored the flag (hostile run,
    session 44): a comparisons choice now gives the all-groups table; without it, the two-group test."""
    from matchaudit.cli.matching_writer import write_matching_test
    from matchaudit.simulation import GroupSpec

    data = ma.simulate({"A": GroupSpec(20, (20.0, 60.0)), "B": GroupSpec(20, (10.0, 40.0))}, dim=16,
                       samples_per_identity=4, seed=2).as_data()
    doc, rows = write_matching_test(data, "fnmr", tmp_path / "rest", threshold=0.5, comparisons="rest",
                                    n_resamples=19)
    assert doc["kind"] == "all-groups" and {r["kind"] for r in rows} == {"one-vs-rest"}
    doc, rows = write_matching_test(data, "fnmr", tmp_path / "two", threshold=0.5, n_resamples=19)
    assert doc["kind"] == "two-group" and len(rows) == 1
