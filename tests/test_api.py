"""The public API: ``import matchaudit as ma`` gives a small surface whose jobs validate their arguments the same
way, whose results are the audit's exact numbers, and whose docstring examples run."""

from __future__ import annotations

from matchaudit.auditing.intervals import DEFAULT_BOOTSTRAP
import doctest
import json

import numpy as np
import pytest

import matchaudit as ma
from matchaudit import api, testing
from matchaudit.auditing import core as audit_core
from matchaudit.auditing.options import IntervalOptions
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.encoding import jsonable

SURFACE = {"Audit", "CarriedThresholds", "EquivalenceOptions", "InputError", "IntervalOptions", "MeasureOptions",
           "TestOptions", "audit", "audit_conditions", "ConditionAudit", "check", "compare", "diff", "estimate",
           "log_mlflow", "from_embeddings", "from_scores", "load_comparisons", "load_samples", "plan",
           "simulate", "test_equivalence", "test_gap", "test_gaps"}


@pytest.fixture(scope="module")
def data():
    return ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()


@pytest.fixture(scope="module")
def result(data):
    return ma.audit(data, fmr=(1e-2, 1e-3), thresholds=0.3, intervals=ma.IntervalOptions(n_resamples=40),
                    tests=ma.TestOptions(n_resamples=49))


def test_the_surface_is_curated_and_documented():
    assert set(ma.__all__) == SURFACE
    for name in ma.__all__:
        assert (getattr(ma, name).__doc__ or "").strip(), name


def test_public_names_are_not_shadowed_by_submodules():
    """The public names load lazily (`import matchaudit` is instant); none may share its name with a submodule,
    which would replace the function by the module once that submodule is imported."""
    import importlib
    import pkgutil
    from types import ModuleType

    for m in pkgutil.iter_modules(ma.__path__):
        if m.name != "__main__":
            importlib.import_module(f"matchaudit.{m.name}")
    assert not [n for n in ma.__all__ if isinstance(getattr(ma, n), ModuleType)]


@pytest.mark.parametrize("module", [ma, audit_core, api, testing])
@pytest.mark.slow
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert attempted > 0 and failed == 0


@pytest.mark.parametrize("kwargs, param", [
    (dict(rule="=>"), "rule"), (dict(fmr_targets=(2.0,)), "fmr"), (dict(fmr_targets=(-1e-3,)), "fmr"),
    (dict(threshold_impostors="same"), "threshold_impostors"), (dict(weightings=("pooled", "weighted")), "weightings"),
    (dict(thresholds=(float("nan"),)), "thresholds"), (dict(fmr_targets=(1e-3, 1e-3)), "fmr"),
    (dict(zero_policy="ignore"), "zero_policy"), (dict(dcf_p_target=0.0), "dcf_p_target"),
])
def test_config_is_validated_where_it_is_built(kwargs, param):
    with pytest.raises(ma.InputError) as e:
        AuditConfig(**kwargs)
    assert e.value.param == param and "--" not in str(e.value)


@pytest.mark.parametrize("kwargs, param", [
    (dict(level=1.5), "level"), (dict(n_resamples=0), "n_resamples"), (dict(method="bca"), "ci_method"),
    (dict(band="wide"), "band"), (dict(seed=-1), "seed"), (dict(n_resamples=2.5), "n_resamples"),
])
def test_interval_options_are_validated(kwargs, param):
    with pytest.raises(ma.InputError) as e:
        IntervalOptions(**kwargs)
    assert e.value.param == param


def test_every_job_validates_the_same_arguments_the_same_way(data):
    for call in (lambda: ma.audit(data, fmr=-1), lambda: ma.compare(data, data, fmr=-1),
                 lambda: ma.test_gap(data, fmr=-1)):
        with pytest.raises(ma.InputError) as e:
            call()
        assert e.value.param == "fmr"
    for call in (lambda: ma.audit(data,
                                  intervals=ma.IntervalOptions(level=1.5)), lambda: ma.compare(data, data, level=1.5)):
        with pytest.raises(ma.InputError) as e:
            call()
        assert e.value.param == "level"


def test_audit_views_are_the_exact_numbers(data, result):
    exact = evaluate(data, AuditConfig(fmr_targets=(1e-2, 1e-3), thresholds=(0.3,)))
    view = result.at_fmr(1e-3)
    assert list(view.index) == ["all", "A", "B", "C"]
    for p in exact.operating_points:
        if p["weighting"] == "pooled" and p["kind"] == "fmr_target" and p["target"] == 1e-3:
            row = view.loc[p["group"]]
            assert (row["threshold"], row["fnmr"], row["fnmr_errors"], row["fmr_comparisons"]) == (
                p["threshold"], p["fnmr"], p["fnmr_errors"], p["fmr_comparisons"])
    at_t = result.at_threshold(0.3)
    assert at_t["fmr_method"].eq("wilson").all() and (at_t["fmr_low"] <= at_t["fmr"]).all()
    assert view["fnmr_method"].eq(DEFAULT_BOOTSTRAP).all()
    assert result.group_max(fmr=1e-3) == view.loc[["A", "B", "C"], "fnmr"].max()
    assert result.difference(fmr=1e-3) == pytest.approx(result.group_max(fmr=1e-3) - result.group_min(fmr=1e-3))
    rec = next(r for r in exact.fairness if (r["rate"], r["measure"], r["target"], r["weighting"])
               == ("FNMR", "max_min_ratio", 1e-3, "pooled"))
    assert result.ratio(fmr=1e-3) == rec["value"] or np.isnan(rec["value"])
    with pytest.raises(ma.InputError, match="not in this audit"):
        result.at_fmr(1e-4)


def test_group_test_records_carry_their_verdict(result):
    assert len(result.tests) == 2 * 2 * 3  # FNMR and FMR, 2 targets, 3 pairs
    for r in result.test_records:
        assert r["significant"] == (r["pvalue_adjusted"] <= r["alpha"])


def test_save_writes_what_to_dict_holds(result, tmp_path):
    paths = result.save(tmp_path, "test")
    doc = json.loads(paths["results"].read_text())
    assert doc["command"] == "test"
    assert {k: v for k, v in doc.items() if k not in ("command", "matchaudit_version")} == jsonable(result.to_dict())
    assert paths["det_pooled"].exists() and paths["det_balanced"].exists()


def test_test_gap_two_groups_and_all_pairs(data):
    two = ma.test_gap(data, "fnmr_at_fmr", ("A", "B"), fmr=1e-2, n_resamples=49)
    assert two.null_distribution.shape == (49,)
    effective = two.details["effective_errors"][0]  # a p-value exactly when the pair has the errors to test
    assert (effective >= 5) == (0 < two.pvalue <= 1) == (two.reason is None), (effective, two.pvalue, two.reason)
    every = ma.test_gaps(data, "fnmr_at_fmr", fmr=1e-2, n_resamples=49)
    assert len(every.rows) == 3
    with pytest.raises(ma.InputError, match="ma.test_gaps") as e:  # one function, one result type
        ma.test_gap(data, "fnmr_at_fmr", fmr=1e-2)
    assert e.value.param == "groups"
    from matchaudit.simulation import GroupSpec

    two_groups = ma.simulate({"A": GroupSpec(30, (20.0, 60.0)), "B": GroupSpec(30, (10.0, 40.0))}, dim=16,
                             samples_per_identity=4, seed=1).as_data()
    assert ma.test_gap(two_groups, "fnmr", threshold=0.5, n_resamples=19).details["groups"] == ["A", "B"]
    pair = ma.test_gaps(two_groups, "fnmr", threshold=0.5, n_resamples=19)
    assert isinstance(pair, type(every)) and len(pair.rows) == 1  # two groups: still the table


def test_one_json_encoding_of_non_finite_numbers():
    """Every file we write encodes infinity and NaN the same way (strings; JSON has none), as results.json's
    schema documents; test.json and estimate.json used to write null."""
    from matchaudit.estimators.permutation import permutation_test

    doc = {"a": np.inf, "b": -np.inf, "c": np.nan, 1: np.int64(2), "d": (np.float32(0.5), np.bool_(True))}
    assert jsonable(doc) == {"a": "inf", "b": "-inf", "c": "nan", "1": 2, "d": [0.5, True]}
    degenerate = permutation_test(0.5, 0.0, np.array([0.5, -0.5, 0.5]), np.zeros(3)).to_dict()
    assert degenerate["pvalue"] == "nan" and json.loads(json.dumps(degenerate, allow_nan=False)) == degenerate


def _keyed(records):
    return {str((r["method"], r["weighting"], r["metric"], r["kind"], r["target"], r["group"])): r for r in records}


def test_several_interval_methods_in_one_run_equal_separate_runs(data):
    """`ci_method="wilson,double-or-nothing,recentered"`: each method's intervals are exactly those of a run of
    that method alone (a closed form at the fixed thresholds; each bootstrap everywhere), in the order given, the
    bands from the first bootstrap; the views show the first method given."""
    kw = dict(fmr=(1e-2, 1e-3), thresholds=0.3)
    iv = dict(n_resamples=40, seed=3)
    several = ma.audit(data, intervals=ma.IntervalOptions("wilson,double-or-nothing,recentered", **iv), **kw)
    got = _keyed(several.interval_records)
    assert [m for m in dict.fromkeys(r["method"] for r in several.interval_records)] == [
        "wilson", "double-or-nothing", "recentered"]
    for method in ("wilson", "double-or-nothing", "recentered"):
        alone = _keyed(ma.audit(data, intervals=ma.IntervalOptions(method, **iv), **kw).interval_records)
        mine = {k: r for k, r in got.items() if r["method"] == method}
        if method == "wilson":
            alone = {k: r for k, r in alone.items() if r["method"] == "wilson"}  # not its recentered fallback
        assert mine and json.dumps(mine, sort_keys=True, default=str) == json.dumps(alone, sort_keys=True, default=str)
    bands = ma.audit(data, intervals=ma.IntervalOptions("double-or-nothing", **iv), **kw).bands
    assert json.dumps(jsonable(several.bands)) == json.dumps(jsonable(bands)) and bands
    assert set(several.at_threshold(0.3)["fnmr_method"]) == {"wilson"}
    assert set(ma.audit(data, intervals=ma.IntervalOptions(("recentered", "wilson"), **iv), **kw).at_threshold(0.3)[
        "fnmr_method"]) == {
        "recentered"}


def test_several_closed_forms_alone_keep_the_default_bootstrap_for_the_rest(data):
    kw = dict(fmr=1e-2, thresholds=0.3, measures=ma.MeasureOptions(weightings=("pooled",)))
    res = ma.audit(data, intervals=ma.IntervalOptions("wilson,clopper-pearson", n_resamples=40), **kw)
    iv = res.intervals
    methods = iv.groupby("kind")["method"].agg(lambda m: sorted(set(m))).to_dict()
    assert methods["threshold"] == ["clopper-pearson", "wilson"]
    rates = iv[(iv.kind == "fmr_target") & ~iv.metric.str.contains(":")]
    assert sorted(set(rates.method)) == methods["curve"] == [DEFAULT_BOOTSTRAP]
    assert set(iv[iv.metric.str.contains(":")].method) == {"double-or-nothing"}  # the measures' own default
    no_threshold = ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(method="wilson,recentered", n_resamples=40))
    assert any("wilson: closed forms apply at fixed thresholds only" in w for w in no_threshold.warnings)


@pytest.mark.parametrize("bad, message", [("wilson,bogus", "choose from"), ("wilson,wilson", "repeated"),
                                          ("wilson,", "one or more names"), ([], "one or more names")])
def test_bad_method_lists_are_refused_naming_the_argument(data, bad, message):
    with pytest.raises(ma.InputError, match=message) as e:
        ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(method=bad, n_resamples=40))
    assert e.value.param == "ci_method"


def test_the_jobs_and_loaders_name_what_they_take_when_given_something_else(data, tmp_path):
    """A DataFrame or a path where a loaded data set belongs ended in an AttributeError deep inside (``audit``,
    ``compare``, ``test_gap``); a DataFrame or an array where a file belongs in ``TypeError: expected str, bytes or
    os.PathLike``; and ``fmr="1e-3"`` was read as the characters '1', 'e', ... ("fmr '1': give a number")."""
    import pandas as pd

    frame = pd.DataFrame({"score": [0.1, 0.9], "label": [0, 1]})
    for call, param in ((lambda: ma.audit(frame, fmr=1e-2), "data"), (lambda: ma.audit("scores.csv"), "data"),
                        (lambda: ma.compare(data, frame), "b"), (lambda: ma.test_gap(frame), "data"),
                        (lambda: ma.test_equivalence(frame, ("A", "B"), fmr=1e-2, margin=(0.8, 1.25)), "data")):
        with pytest.raises(ma.InputError, match="give the comparisons as loaded by load_samples") as e:
            call()
        assert e.value.param == param
    pd.DataFrame({"sample_id": ["a", "b"], "identity": ["x", "y"]}).to_csv(tmp_path / "t.csv", index=False)
    for call, what in ((lambda: ma.load_comparisons(frame), "comparison table: give a file path, not a DataFrame"),
                       (lambda: ma.load_samples(tmp_path / "t.csv", np.zeros((2, 3))),
                        "embeddings: give a file path, not a ndarray")):
        with pytest.raises(ma.InputError, match=what):
            call()
    assert ma.audit(data, fmr="1e-2, 1e-3", intervals=False).config.fmr_targets == (1e-2, 1e-3)


@pytest.mark.skipif(not __import__("pathlib").Path("/proc/self").is_dir(), reason="needs /proc")
def test_saving_where_nothing_can_be_written_says_so_and_views_take_a_target_as_text(result, tmp_path):
    """``result.save("/proc/x")`` ended in FileNotFoundError, ``save`` onto a file in FileExistsError (the commands
    check their --out before any work; a library caller is told at the write); ``at_fmr("1e-2")`` said the target
    was not in the audit."""
    (tmp_path / "f").write_text("keep")
    for out, says in (("/proc/x", "cannot write the outputs there"), (tmp_path / "f", "a file of that name exists")):
        with pytest.raises(ma.InputError, match=says) as e:
            result.save(out, figures=False)
        assert e.value.param == "out"
    assert (tmp_path / "f").read_text() == "keep"
    assert result.at_fmr("1e-2").equals(result.at_fmr(1e-2))


def test_library_entry_points_take_what_a_user_passes(tmp_path):
    """#42 item 5 / hostile T1-T5: each raised a raw TypeError/ValueError/AttributeError."""
    data = ma.simulate(samples_per_identity=3, dim=16, seed=4).as_data()
    # T1: NumPy scalars (a threshold read from float32 scores is one)
    a = ma.audit(data, fmr=np.float32(0.01), thresholds=np.float32(0.5), intervals=False)
    b = ma.audit(data, fmr=0.01, thresholds=float(np.float32(0.5)), intervals=False)
    assert a.at_fmr(0.01)["fnmr_errors"].tolist() == b.at_fmr(0.01)["fnmr_errors"].tolist()
    # T3 and M12: groups as three names, or as the CLI's "A,B"
    with pytest.raises(ma.InputError, match="give exactly two names") as e:
        ma.test_gap(data, "fnmr_at_fmr", groups=("A", "B", "C"), fmr=1e-2)
    assert e.value.param == "groups"
    assert ma.test_gap(data, "fnmr", groups="A,B", threshold=0.5, n_resamples=99).details["groups"] == ["A", "B"]
    # T4: the CLI spelling of two columns
    trials = data_trials = ma.simulate(samples_per_identity=3, dim=16, seed=4).trial_list(50, 200, seed=0)
    trials.to_csv(tmp_path / "t.csv", index=False)
    got = ma.load_comparisons(tmp_path / "t.csv", sample_cols="sample_a,sample_b")
    assert got.n_comparisons() == len(data_trials)
    # a backend by name
    x = ma.audit(data, fmr=0.01, measures=ma.MeasureOptions(calibration=False),
                 intervals=ma.IntervalOptions(n_resamples=50), backend="cpu")
    y = ma.audit(data, fmr=0.01, measures=ma.MeasureOptions(calibration=False),
                 intervals=ma.IntervalOptions(n_resamples=50))
    assert x.intervals.equals(y.intervals)
    # T5: the label vocabulary of the comparison tables
    rng = np.random.default_rng(0)
    s = np.r_[rng.normal(0, 1, 300), rng.normal(3, 1, 100)]
    with pytest.raises(ma.InputError, match="unrecognised label"):
        ma.estimate(s, np.zeros(400), labels=["maybe"] * 400)
    from matchaudit.labelfree.api import validate
    words = ["genuine", "impostor", "", None, "target", "nontarget"] * 67
    assert np.array_equal(validate(np.arange(402.0), np.zeros(402), words[:402])[2][:6], [1, 0, np.nan, np.nan, 1, 0],
                          equal_nan=True)


def test_result_views_blame_the_right_parameter():
    """Hostile M12: ratio('auc') said group_by needed two groups; a weighting typo was blamed on the target."""
    res = ma.audit(ma.simulate(samples_per_identity=3, dim=16, seed=4).as_data(), fmr=1e-2, intervals=False)
    for call, param in ((lambda: res.ratio("auc", fmr=1e-2), "metric"),
                        (lambda: res.at_fmr(1e-2, weighting="pooledd"), "weighting"),
                        (lambda: res.at_fmr(0.5), "fmr")):
        with pytest.raises(ma.InputError) as e:
            call()
        assert e.value.param == param
