"""An audit saved and loaded back (#46 item 3): ``Audit.load(Audit.save(...))`` holds the same tables and arrays,
saves the same files byte for byte, and renders the same report; every number in results.json is typed by the
schema (so no ``"inf"`` string reaches a reader); a folder without ``curves.npz`` still loads its tables."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import matchaudit as ma
from matchaudit.errors import InputError
from matchaudit.encoding import schema
from matchaudit.simulation import DEMO_GROUPS, simulate_vmf

VIEWS = ("operating_points", "curves", "fairness", "cross_group_fmr", "intervals", "tests", "test_summary",
         "equivalence", "calibration", "score_distributions", "failures", "attacks")


@pytest.fixture(scope="module")
def rich() -> ma.Audit:
    """Every part an audit can have on embeddings: targets (one with no false match), thresholds, an FNMR target,
    four interval methods, tests both ways, equivalence, calibration."""
    data = simulate_vmf(DEMO_GROUPS, dim=32, samples_per_identity=3, seed=0).as_data()
    return ma.audit(data, fmr=(1e-2, 1e-5), thresholds=(0.5, 0.99), fnmr=(1e-2,),
                    intervals=ma.IntervalOptions(n_resamples=50, method=("wilson", "double-or-nothing", "vertex",
                                                                         "recentered")),
                    tests=ma.TestOptions(n_resamples=19, comparisons="both"), equivalence=(0.5, 2.0))


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def test_a_loaded_audit_saves_every_file_byte_for_byte_and_has_the_same_tables(rich, tmp_path):
    rich.save(tmp_path / "a", "matchaudit audit --as-given")
    loaded = ma.Audit.load(tmp_path / "a")
    assert loaded.command == "matchaudit audit --as-given" and loaded.missing_arrays is None
    loaded.save(tmp_path / "b")
    names = _files(tmp_path / "a")
    assert {"results.json", "curves.npz", "det_pooled.png", "det_pooled.svg", "ape.png", "tests.csv"} <= set(names)
    assert names == _files(tmp_path / "b")
    for name in names:  # the figures too: drawn again from the loaded arrays (SVGs without dates or random ids)
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name
    for view in VIEWS:
        pd.testing.assert_frame_equal(getattr(rich, view), getattr(loaded, view), obj=view)
    for c, d in zip(rich.exact.det, loaded.exact.det, strict=True):
        assert all(np.array_equal(c[k], d[k]) for k in ("threshold", "fmr", "fnmr"))
    assert loaded.difference("fnmr", fmr=1e-2) == rich.difference("fnmr", fmr=1e-2)
    pd.testing.assert_frame_equal(loaded.at_fmr(1e-2), rich.at_fmr(1e-2))


def test_the_report_of_an_audit_in_memory_equals_the_report_of_it_loaded(rich, tmp_path):
    from matchaudit.report.html import render

    rich.save(tmp_path, "matchaudit audit x")
    assert render(rich, tmp_path) == render(ma.Audit.load(tmp_path / "results.json"), tmp_path)


def test_every_field_of_results_json_is_declared_and_every_number_typed(rich):
    """A number the schema does not type as one stays the string "inf" or "nan" for every reader (it did for the
    intervals' ``normalized_uncertainty``, ``n_eff``, the tests' ``estimate_a`` and seven more); a field it does not
    declare is missing from the table of an audit that has no such rows (22 were)."""
    defs = schema()["$defs"]

    def declared(node: dict) -> dict:
        out = dict(node.get("properties", {}))
        for branch in node.get("allOf", []) + node.get("oneOf", []) + node.get("anyOf", []):
            out |= declared(defs[branch["$ref"].rsplit("/", 1)[-1]] if "$ref" in branch else branch)
        return out

    doc = rich.document()
    tables = [t for t, v in doc.items() if isinstance(v, list) and v and isinstance(v[0], dict)]
    assert {"intervals", "tests", "equivalence", "calibration", "cross_group_fmr"} <= set(tables)
    for table in tables:
        props = declared(schema()["properties"][table]["items"])
        assert {k for r in doc[table] for k in r} <= set(props), table
        numbers = {k for r in doc[table] for k, x in r.items() if isinstance(x, float)}
        assert all("number" in json.dumps(props[k]) or "real" in json.dumps(props[k]) for k in numbers), table
    spelled = [v for r in doc["intervals"] + doc["tests"] for v in r.values() if v in ("inf", "-inf", "nan")]
    assert not spelled
    assert any(np.isinf(r["normalized_uncertainty"]) for r in doc["intervals"] if r.get("normalized_uncertainty"))


def test_equivalence_records_hold_numbers_in_memory(rich):
    """They held "nan" strings (their ``to_dict`` encoded for JSON before the audit stored them)."""
    est = rich.equivalence["estimate"]
    assert est.dtype == float and est.isna().any()


def test_without_curves_npz_the_tables_load_and_the_figures_are_refused(rich, tmp_path):
    rich.save(tmp_path / "a", figures=False)
    (tmp_path / "a" / "curves.npz").unlink()
    loaded = ma.Audit.load(tmp_path / "a")
    pd.testing.assert_frame_equal(loaded.intervals, rich.intervals)
    assert "curves.npz is missing" in loaded.missing_arrays
    with pytest.raises(InputError, match="figures cannot be drawn") as e:
        loaded.save(tmp_path / "b")
    assert e.value.param == "figures"
    loaded.save(tmp_path / "b", figures=False)
    assert json.loads((tmp_path / "b" / "results.json").read_text()) == json.loads(
        (tmp_path / "a" / "results.json").read_text())


@pytest.mark.parametrize("damage", ["truncated", "not-ours"])
def test_a_damaged_curves_npz_or_a_missing_results_json_is_a_clear_error(rich, tmp_path, damage):
    rich.save(tmp_path, figures=False)
    npz = tmp_path / "curves.npz"
    if damage == "truncated":
        npz.write_bytes(npz.read_bytes()[:200])
    else:
        np.savez(npz, x=np.arange(3))
    with pytest.raises(InputError, match="not a curves.npz written by matchaudit"):
        ma.Audit.load(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        ma.Audit.load(tmp_path / "elsewhere")


def test_curves_of_another_audit_are_refused(rich, tmp_path):
    rich.save(tmp_path / "a", figures=False)
    ma.audit(ma.simulate(seed=1, dim=16, samples_per_identity=3).as_data(), fmr=1e-2, intervals=False).save(
        tmp_path / "b", figures=False)
    (tmp_path / "a" / "curves.npz").replace(tmp_path / "b" / "curves.npz")  # b's results.json, a's curves
    with pytest.raises(InputError, match="was not written with"):
        ma.Audit.load(tmp_path / "b")


def test_a_table_the_audit_left_empty_has_its_columns_and_filters_run(rich):
    """Fixed schemas (#46 item 3): without tests or intervals, ``a.tests`` and ``a.intervals`` are empty tables
    with every column such records have (they had none: ``a.tests.significant`` was an AttributeError), with the
    dtypes filled ones get, so that a filter runs."""
    bare = ma.audit(ma.simulate(seed=1, dim=16, samples_per_identity=3).as_data(), fmr=1e-2, intervals=False)
    for view in ("tests", "intervals", "equivalence", "calibration", "score_distributions"):
        empty, full = getattr(bare, view), getattr(rich, view)
        assert len(empty) == 0 and set(full.columns) <= set(empty.columns), view
        same = [c for c in full.columns if full[c].notna().all() and not full[c].map(type).eq(bool).all()]
        assert {c: str(empty[c].dtype) for c in same} == {c: str(full[c].dtype) for c in same}, view
    assert bare.tests[bare.tests.significant].empty and bare.tests.significant.dtype == bool
    assert bare.intervals[bare.intervals.target == 0.01].empty and bare.failures.empty and bare.attacks.empty


def _edit(folder: Path, change) -> None:
    doc = json.loads((folder / "results.json").read_text())
    change(doc)
    (folder / "results.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("change", [
    lambda d: d["config"].pop("small_groups"),
    lambda d: d["config"].__setitem__("ir_exponents", 5),
    lambda d: d["config"].__setitem__("bogus", 1),
    lambda d: d["config"]["intervals"].__setitem__("n_resamples", -1),
    lambda d: d["config"].__setitem__("tests", 5),
    lambda d: d["config"].pop("intervals"),
    lambda d: d.__setitem__("calibration", []),
], ids=["no-small-groups", "ir-exponents-int", "unknown-key", "bad-option", "tests-int", "intervals-gone",
        "empty-calibration"])
def test_an_edited_results_json_is_refused_naming_the_file(rich, tmp_path, change):
    """A hand-edited results.json gave KeyError, TypeError, IndexError tracebacks from load and `matchaudit report`
    (hostile run); or it loaded and failed on save."""
    rich.save(tmp_path, figures=False)
    (tmp_path / "curves.npz").unlink()
    _edit(tmp_path, change)
    with pytest.raises(InputError) as e:
        ma.Audit.load(tmp_path)
    assert e.value.param == "path" and "results.json" in str(e.value)


def test_loads_and_saves_refuse_what_is_not_a_path_or_a_flag(rich, tmp_path):
    for bad in ("", None, 3):
        with pytest.raises(InputError) as e:
            ma.Audit.load(bad)
        assert e.value.param == "path"
        with pytest.raises(InputError) as e:
            rich.save(bad)
        assert e.value.param == "out"
    with pytest.raises(InputError, match="a folder without results.json"):
        ma.Audit.load(tmp_path)
    for kwargs, param in (({"command": 42}, "command"), ({"command": " "}, "command"), ({"det_scale": "linear"},
                                                                                          "det_scale"),
                          ({"figures": "no"}, "figures")):
        with pytest.raises(InputError) as e:
            rich.save(tmp_path / "o", **kwargs)
        assert e.value.param == param and not (tmp_path / "o").exists()  # refused before the folder is made
    with pytest.raises(InputError) as e:
        ma.Audit.load(tmp_path, curves="no")
    assert e.value.param == "curves"


def test_a_zero_byte_curves_npz_is_refused_and_the_det_scale_round_trips(rich, tmp_path):
    rich.save(tmp_path / "a", det_scale="log")
    again = ma.Audit.load(tmp_path / "a")
    assert again.det_scale == "log"
    again.save(tmp_path / "b")  # the log axes again without being told
    assert filecmp.cmp(tmp_path / "a" / "det_pooled.png", tmp_path / "b" / "det_pooled.png", shallow=False)
    (tmp_path / "a" / "curves.npz").write_bytes(b"")
    with pytest.raises(InputError, match="not a curves.npz"):
        ma.Audit.load(tmp_path / "a")


def test_a_weighting_the_audit_skipped_is_named_as_such():
    """Data without identities: the balanced weighting is skipped, and asking for it said "not in this audit (it
    has [], weightings ['pooled', 'balanced'])"."""
    rng = np.random.default_rng(0)
    data = ma.from_scores(rng.normal(size=400), label=rng.random(400) < 0.3)
    res = ma.audit(data, fmr=0.1, intervals=False)
    with pytest.raises(InputError, match="no FMR targets with balanced weighting .it has them with pooled") as e:
        res.at_fmr(0.1, "balanced")
    assert e.value.param == "weighting"


def test_a_report_is_never_written_into_another_audits_folder(rich, tmp_path):
    """``--report other_audit/`` wrote this audit's report.html beside another audit's results.json."""
    from matchaudit.report.html import write_report

    rich.save(tmp_path / "a", figures=False)
    rich.save(tmp_path / "b", figures=False)
    with pytest.raises(InputError, match="holds another audit's results.json") as e:
        write_report(tmp_path / "a" / "results.json", tmp_path / "b")
    assert e.value.param == "report" and not (tmp_path / "b" / "report.html").exists()


@pytest.mark.parametrize("args, param", [(([], []), "scores"), ((np.zeros(5), ["g"] * 5), "groups"),
                                         ((np.r_[np.zeros(199), np.nan], ["g"] * 200), "scores")])
def test_estimate_refusals_name_their_argument(args, param):
    with pytest.raises(InputError) as e:
        ma.estimate(*args)
    assert e.value.param == param
