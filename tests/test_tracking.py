"""Experiment tracking (#45 item 5): ``ma.log_mlflow`` and ``matchaudit log-mlflow``.

The logged run must reproduce the audit's numbers: every metric is read back and compared, exactly, with the
audit's own value looked up through its public views (not through the module's lookup); the params with its
configuration, the artefacts' bytes with the folder's files. A fake ``mlflow`` module (put in ``sys.modules``)
records the calls, so the code path runs in every CI; the same checks run against a real MLflow file store where
MLflow is installed (the ``tracking`` extra), else that test skips.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit.cli import app
from matchaudit.tracking import INSTALL, KEYS_FILE, METRICS, group_keys, metrics, resolve_uri

runner = CliRunner()
VIEWS = {"curve_summaries": "curves"}  # the Audit's view of each results.json table, where the names differ
KEY = re.compile(r"[A-Za-z0-9_\-. /]{1,250}")  # what MLflow accepts as a metric key


def _data(names: dict[str, str] | None = None, grouped: bool = True):
    sim = ma.simulate(samples_per_identity=4, dim=32, seed=1)
    samples = sim.samples.assign(group=sim.samples["group"].map(names) if names else sim.samples["group"])
    return ma.from_embeddings(sim.embeddings, samples["identity"], ids=samples["sample_id"], attributes=samples,
                              group_by="group" if grouped else ())


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[ma.Audit, Path]:
    """An audit with two interval methods, a fixed threshold and an FNMR target, saved without figures."""
    result = ma.audit(_data(), fmr=(1e-2, 1e-3), thresholds=0.5, fnmr=0.05,
                      intervals=ma.IntervalOptions(method=("recentered", "double-or-nothing"), n_resamples=40))
    out = tmp_path_factory.mktemp("tracking") / "audit"
    result.save(out, figures=False)
    return ma.Audit.load(out), out


class _Run:
    def __init__(self, run_id: str) -> None:
        self.info = types.SimpleNamespace(run_id=run_id)


@pytest.fixture
def fake_mlflow(monkeypatch) -> dict:
    """An ``mlflow`` module whose client records every call; ``log["fail"]``: the method that raises."""
    log: dict = {"metrics": [], "params": [], "artifacts": {}, "dicts": {}, "terminated": [], "fail": None}

    class MlflowException(Exception):
        pass

    class MlflowClient:
        def __init__(self, uri: str) -> None:
            log.update(uri=uri, allow_file_store=__import__("os").environ.get("MLFLOW_ALLOW_FILE_STORE"))

        def _maybe_fail(self, name: str) -> None:
            if log["fail"] == name:
                raise MlflowException(f"{name} refused\nsecond line")

        def get_experiment_by_name(self, name):
            self._maybe_fail("get_experiment_by_name")
            log["experiment"] = name

        def create_experiment(self, name):
            return "7"

        def create_run(self, experiment_id, run_name=None, tags=None):
            log.update(run_name=run_name, tags=tags)
            return _Run("run-1")

        def log_batch(self, run_id, metrics=(), params=(), tags=()):
            self._maybe_fail("log_batch")
            log["metrics"] += list(metrics)
            log["params"] += list(params)

        def log_artifact(self, run_id, local_path, artifact_path=None):
            log["artifacts"][Path(local_path).name] = Path(local_path).read_bytes()

        def log_dict(self, run_id, dictionary, artifact_file):
            log["dicts"][artifact_file] = json.loads(json.dumps(dictionary))

        def set_terminated(self, run_id, status=None):
            log["terminated"].append((run_id, status))

    entities = types.ModuleType("mlflow.entities")
    entities.Metric = lambda key, value, timestamp, step: types.SimpleNamespace(key=key, value=value, step=step)
    entities.Param = lambda key, value: types.SimpleNamespace(key=key, value=value)
    exceptions = types.ModuleType("mlflow.exceptions")
    exceptions.MlflowException = MlflowException
    module = types.ModuleType("mlflow")
    module.MlflowClient, module.entities, module.exceptions = MlflowClient, entities, exceptions
    for name, m in (("mlflow", module), ("mlflow.entities", entities), ("mlflow.exceptions", exceptions)):
        monkeypatch.setitem(sys.modules, name, m)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    return log


def _audit_value(audit: ma.Audit, spec: dict) -> float:
    """The audit's number that a key's spec names, through the audit's public DataFrame views."""
    table = getattr(audit, VIEWS.get(spec["table"], spec["table"]))
    naming = METRICS[spec["table"]][0]
    rows = table[np.logical_and.reduce([(table[k] == spec[k]) | (table[k].isna() & (spec[k] is None))
                                        for k in naming])]
    assert len(rows) == 1, spec
    return float(rows[spec["field"]].iloc[0])


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _numbers(audit: ma.Audit) -> int:
    """How many numbers of the audit's tables are logged: every non-missing field METRICS names."""
    doc = audit.to_dict()
    return sum(r.get(k) is not None for t, (_, f) in METRICS.items() for r in doc.get(t) or () for k in f)


def _check_params(params: dict[str, str], audit: ma.Audit) -> None:
    doc = audit.document()
    config = {**doc["config"], **doc["config"]["intervals"]}
    assert json.loads(params["fmr_targets"]) == list(audit.config.fmr_targets)
    assert params["rule"] == audit.config.rule and params["threshold_impostors"] == audit.config.threshold_impostors
    for name in ("method", "level", "n_resamples", "seed"):
        assert json.loads(params[f"intervals.{name}"]) == config[name]
    assert params["matchaudit_version"] == ma.__version__
    data = doc["summary"]["data"]
    assert params["data.fingerprint"] == hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    assert int(params["data.n_comparisons"]) == data["n_comparisons"]


def test_logged_calls_reproduce_the_audit(saved, fake_mlflow):
    audit, folder = saved
    run = ma.log_mlflow(folder, experiment="exp", run_name="nightly", tracking_uri="file:/somewhere")
    log = fake_mlflow
    assert (run.run_id, run.experiment_id, log["uri"], log["experiment"], log["run_name"]) == \
        ("run-1", "7", "file:/somewhere", "exp", "nightly")
    assert log["terminated"] == [("run-1", "FINISHED")] and log["allow_file_store"] == "true"
    keys = [m.key for m in log["metrics"]]
    assert len(keys) == len(set(keys)) == run.n_metrics == _numbers(audit) > 200  # every number once
    assert all(KEY.fullmatch(k) for k in keys)
    specs = log["dicts"][KEYS_FILE]["metrics"]
    assert set(specs) == set(keys)
    for m in log["metrics"]:
        assert _same(m.value, _audit_value(audit, specs[m.key])), m.key
    values = {m.key: m.value for m in log["metrics"]}
    # keys as the docs name them, against the audit's public reducers
    point = audit.at_fmr(1e-3)
    assert values["fnmr_at_fmr_1e-03.pooled.B"] == point.loc["B", "fnmr"]
    assert values["fnmr_errors_at_fmr_1e-03.pooled.all"] == point.loc["all", "fnmr_errors"]
    assert values["fnmr_at_fmr_1e-03.pooled.B.recentered.low"] == point.loc["B", "fnmr_low"]
    assert values["fnmr_max_min_difference_at_fmr_1e-03.pooled"] == audit.difference("fnmr", fmr=1e-3)
    assert values["fmr_at_threshold_5e-01.pooled.A"] == audit.at_threshold(0.5).loc["A", "fmr"]
    assert "fmr_at_fnmr_5e-02.pooled.C" in values and "eer.balanced.A" in values
    assert {"fnmr_at_fmr_1e-03.pooled.B.double-or-nothing.high", "auc.pooled.all.recentered.low"} <= set(values)
    _check_params({p.key: p.value for p in log["params"]}, audit)
    files = {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}
    assert set(log["artifacts"]) == files and {"results.json", "intervals.csv", "fairness.csv"} <= files
    assert all(log["artifacts"][n] == (folder / n).read_bytes() for n in files)
    assert run.artifacts == (*log["artifacts"], KEYS_FILE)
    assert run.absent == ("group tests: the audit ran without them (no tests.csv)",
                          "report.html: not in the audit's folder (`matchaudit report FOLDER` writes it there)")
    assert "group tests" in log["tags"]["matchaudit.absent"]


def test_a_run_that_fails_midway_is_marked_failed(saved, fake_mlflow):
    fake_mlflow["fail"] = "log_batch"
    with pytest.raises(ma.InputError, match=r"log_batch refused\); run run-1 is marked FAILED"):
        ma.log_mlflow(saved[1], tracking_uri="http://server")
    assert fake_mlflow["terminated"] == [("run-1", "FAILED")]
    assert fake_mlflow["allow_file_store"] is None  # a server: the file store's switch is left alone


def test_default_uri_is_a_file_store_in_the_working_folder(saved, fake_mlflow, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert resolve_uri() == (tmp_path / "mlruns").resolve().as_uri()
    ma.log_mlflow(saved[1])
    assert fake_mlflow["uri"] == (tmp_path / "mlruns").resolve().as_uri()
    assert fake_mlflow["experiment"] == "matchaudit"
    assert "MLFLOW_ALLOW_FILE_STORE" not in __import__("os").environ  # set for the call only
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://elsewhere")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
    ma.log_mlflow(saved[1])
    assert (fake_mlflow["uri"], fake_mlflow["experiment"]) == ("http://elsewhere", "from-env")


def test_in_memory_audit_logs_the_same_numbers(saved, fake_mlflow):
    audit, folder = saved
    ma.log_mlflow(folder)
    from_folder = [(m.key, m.value) for m in fake_mlflow["metrics"]]
    fake_mlflow["metrics"].clear()
    run = ma.log_mlflow(audit)  # saved into a temporary folder: figures too
    again = [(m.key, m.value) for m in fake_mlflow["metrics"]]
    assert [k for k, _ in again] == [k for k, _ in from_folder]
    assert all(_same(a, b) for (_, a), (_, b) in zip(again, from_folder))
    assert "det_pooled.png" in run.artifacts


def test_group_keys_hostile_names():
    crafted = "a_b-" + hashlib.sha256(b"a b").hexdigest()[:8]  # what "a b" becomes: taken first by this name
    names = ["A", crafted, "a b", "a/b", "a:b", "é", "", "x" * 5000, "all", "a.b", "a_b"]
    keys = group_keys(names)
    assert len(set(keys.values())) == len(keys) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,80}", k) for k in keys.values())
    assert keys["A"] == "A" and keys["a_b"] == "a_b" and keys["all"] == "all" and keys[crafted] == crafted
    assert keys["a b"] == crafted + "-2"  # crafted collision: the order given decides
    assert group_keys(["a/b"]) == {"a/b": keys["a/b"]}  # a name's component does not depend on the others
    assert group_keys(["a b", "a/b"]) == group_keys(["a/b", "a b"])


def test_refused_characters_and_colliding_names_in_an_audit(fake_mlflow, tmp_path):
    names = {"A": "a b", "B": "a/b", "C": "a:b"}  # all three sanitise to a_b
    result = ma.audit(_data(names), fmr=1e-2, intervals=False)
    run = ma.log_mlflow(result, run_name="odd groups")
    keys = [m.key for m in fake_mlflow["metrics"]]
    assert len(keys) == len(set(keys)) == run.n_metrics and all(KEY.fullmatch(k) for k in keys)
    groups = fake_mlflow["dicts"][KEYS_FILE]["groups"]
    assert set(groups) == {"all", *names.values()} and len(set(groups.values())) == 4
    specs = fake_mlflow["dicts"][KEYS_FILE]["metrics"]
    for m in fake_mlflow["metrics"]:
        assert _same(m.value, _audit_value(result, specs[m.key]))
    assert run.absent[0] == "intervals: the audit ran without them (no .low/.high metrics)"
    assert not any(k.endswith((".low", ".high")) for k in keys)


def test_ungrouped_audit(fake_mlflow):
    result = ma.audit(_data(grouped=False), fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=40))
    run = ma.log_mlflow(result)
    keys = {m.key for m in fake_mlflow["metrics"]}
    assert "fnmr_at_fmr_1e-02.pooled.all" in keys and not any("max_min" in k for k in keys)
    assert "fairness measures: the audit has one group (they compare groups)" in run.absent
    assert fake_mlflow["dicts"][KEYS_FILE]["groups"] == {"all": "all"}


def test_hostile_arguments(fake_mlflow, tmp_path):
    with pytest.raises(ma.InputError, match="a folder without results.json"):
        ma.log_mlflow(tmp_path)
    (tmp_path / "results.json").write_text('{"kind": "two-group"}')
    with pytest.raises(ma.InputError, match="not an audit's results.json"):
        ma.log_mlflow(tmp_path)
    with pytest.raises(ma.InputError, match="give an Audit"):
        ma.log_mlflow(3)  # type: ignore[arg-type]
    with pytest.raises(ma.InputError, match="experiment ''"):
        ma.log_mlflow(tmp_path, experiment="")
    assert fake_mlflow["terminated"] == []  # nothing was started


def test_unreachable_server_is_an_input_error(saved, fake_mlflow):
    fake_mlflow["fail"] = "get_experiment_by_name"
    with pytest.raises(ma.InputError, match=r"tracking URI http://nowhere:1 \(experiment 'matchaudit'\): MLflow "
                                            r"failed: get_experiment_by_name refused\.$"):
        ma.log_mlflow(saved[1], tracking_uri="http://nowhere:1")
    res = runner.invoke(app, ["log-mlflow", str(saved[1]), "--tracking-uri", "http://nowhere:1"])
    assert res.exit_code == 2 and "--tracking-uri: tracking URI http://nowhere:1" in res.output
    assert "Traceback" not in res.output


def test_without_mlflow_says_how_to_install(saved, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(ma.InputError, match=re.escape(INSTALL)):
        ma.log_mlflow(saved[1])
    res = runner.invoke(app, ["log-mlflow", str(saved[1])])
    assert res.exit_code == 2 and "pip install 'matchaudit[tracking]'" in res.output and "Traceback" not in res.output


def test_command(saved, fake_mlflow, tmp_path):
    res = runner.invoke(app, ["log-mlflow", str(saved[1]), "--experiment", "e", "--run-name", "r",
                              "--tracking-uri", "file:/x"])
    assert res.exit_code == 0, res.output
    assert "Logged run run-1 (experiment 7) to file:/x" in res.output and "Not logged: group tests" in res.output
    assert (fake_mlflow["experiment"], fake_mlflow["run_name"]) == ("e", "r")
    res = runner.invoke(app, ["log-mlflow", str(tmp_path)])
    assert res.exit_code == 2 and "a folder without results.json" in res.output


def test_metric_keys_are_the_tables_numbers(saved):
    """Without any MLflow: the keys' values are the results.json numbers, and intervals of two methods do not
    overwrite each other."""
    doc = json.loads((saved[1] / "results.json").read_text())
    logged = metrics(doc)
    methods = {spec["method"] for spec, _ in logged.values() if spec["table"] == "intervals"}
    assert methods == {"recentered", "double-or-nothing"}
    assert len(logged) == _numbers(saved[0])


def test_real_mlflow_file_store_reproduces_the_audit(saved, tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    audit, folder = saved
    uri = f"file:{tmp_path}/mlruns"
    run = ma.log_mlflow(folder, experiment="audits", tracking_uri=uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses to read a file store otherwise
    client = mlflow.MlflowClient(uri)
    got = client.get_run(run.run_id)
    assert got.info.status == "FINISHED"
    where = Path(client.download_artifacts(run.run_id, "", str(tmp_path / "down")))
    specs = json.loads((where / KEYS_FILE).read_text())["metrics"]
    assert set(got.data.metrics) == set(specs) and len(specs) == _numbers(audit)
    for key, value in got.data.metrics.items():
        assert _same(value, _audit_value(audit, specs[key])), key
    _check_params(got.data.params, audit)
    for path in folder.iterdir():
        if path.is_file() and not path.name.startswith("."):
            assert (where / path.name).read_bytes() == path.read_bytes(), path.name
    back = ma.Audit.load(where, curves=False)
    pd.testing.assert_frame_equal(back.intervals, audit.intervals)
    pd.testing.assert_frame_equal(back.at_fmr(1e-3), audit.at_fmr(1e-3))
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(ma.InputError, match="tracking URI http://127.0.0.1:9 .*MLflow failed"):
        ma.log_mlflow(folder, tracking_uri="http://127.0.0.1:9")
