"""Experiment tracking: an audit logged to one MLflow run (#45 item 5), from which its numbers can be read back.

The run holds the audit's configuration, version and data fingerprint as params; every number of its operating points,
curve summaries, fairness measures and intervals as a metric (float64, as MLflow stores them: the audit's own values,
bit for bit); and the files of its saved folder as artefacts (results.json, the CSVs, curves.npz, the figures,
conditions.json/.csv and claims.json/.csv/.xml where ``--condition-cols`` and ``--claims`` wrote them,
report.html when present), with ``mlflow_keys.json``: which record and field each metric key is, and each group's
name in the keys. MLflow is the optional extra ``tracking`` (``pip install 'matchaudit[tracking]'``), imported only
here; the runs are made with ``MlflowClient``, so a user's active run and global tracking settings are left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from matchaudit.auditing import Audit
from matchaudit.auditing.results_json import load_results, results_file
from matchaudit.errors import InputError
from matchaudit.model import view_names
from matchaudit.outputs import SETS

INSTALL = "pip install 'matchaudit[tracking]'"
KEYS_FILE = "mlflow_keys.json"
_CLEAN = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a group name used as it is in a metric key
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KIND = {"fmr_target": "fmr", "fnmr_target": "fnmr", "threshold": "threshold"}
_TAG_CHARS = 5000  # MLflow 2's longest tag value

# what is logged of each table of results.json: the fields that name a record (in its key, in this order) and the
# numbers logged; a record's key is its quantity (name, kind, target), then the other naming fields, then the field
METRICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "operating_points": (("kind", "target", "weighting", "group"),
                         ("threshold", "fmr", "fmr_errors", "fmr_comparisons", "fnmr", "fnmr_errors",
                          "fnmr_comparisons")),
    "curve_summaries": (("weighting", "group"), ("auc", "eer", "min_dcf", "min_dcf_threshold",
                                                 "dcf_at_global_threshold")),
    "fairness": (("rate", "measure", "kind", "target", "weighting"), ("value",)),
    "intervals": (("metric", "kind", "target", "weighting", "group", "method"), ("low", "high")),
}


@dataclass(frozen=True)
class LoggedRun:
    """The MLflow run an audit was logged to (:func:`log_mlflow`): where it is, what it holds, and what the audit
    did not have to log (``absent``: one line each, e.g. an audit without intervals)."""

    run_id: str
    experiment_id: str
    tracking_uri: str
    n_metrics: int
    n_params: int
    artifacts: tuple[str, ...]
    absent: tuple[str, ...]


def resolve_uri(given: str | None = None) -> str:
    """Where runs are logged: ``given``, else the environment's ``MLFLOW_TRACKING_URI``, else the file store
    ``./mlruns`` (as an absolute ``file:`` URI)."""
    return given or os.environ.get("MLFLOW_TRACKING_URI") or Path("mlruns").resolve().as_uri()


def group_keys(groups: Sequence[str]) -> dict[str, str]:
    """Each view's name as a metric key's component: itself when it is one already (1 to 64 letters, digits, ``_``
    and ``-``), else those characters with ``_`` for any other, cut to 64, then ``-`` and 8 hex digits of the name's
    SHA-256 (so a name's component does not depend on the other groups); a component still taken (names crafted to
    collide) gets ``-2``, ``-3``, ... in the order given. Distinct names, distinct components."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in groups:
        key = name if _CLEAN.fullmatch(name) else \
            f"{_UNSAFE.sub('_', name)[:64]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        base, i = key, 1
        while key in taken:
            i += 1
            key = f"{base}-{i}"
        taken.add(key)
        out[name] = key
    return out


def _number(x: float) -> str:
    """A target or threshold in a key: ``1e-03`` where that is the number exactly, else its shortest repr (distinct
    numbers, distinct text; MLflow refuses ``+``)."""
    short = f"{x:.0e}"
    return (short if float(short) == x else repr(float(x))).replace("+", "")


def _quantity(name: str, kind: str | None = None, target: float | None = None) -> str:
    """``fnmr_at_fmr_1e-03``, ``fmr_max_min_ratio_at_fmr_1e-02`` (a fairness measure's), ``eer`` (no target)."""
    base = _UNSAFE.sub("_", name.lower())
    return base if target is None else f"{base}_at_{_KIND.get(kind, kind)}_{_number(target)}"


def metrics(doc: dict[str, Any]) -> dict[str, tuple[dict[str, Any], float]]:
    """Every number of ``doc`` (a results.json) that is logged as a metric: key -> ({table, field, the record's
    naming fields}, value). Keys are ``quantity.weighting[.group][.method.low|high]``, the group as :func:`group_keys`
    has it: ``fnmr_at_fmr_1e-03.pooled.A``, ``fnmr_max_min_ratio_at_fmr_1e-03.pooled``,
    ``fnmr_at_fmr_1e-03.pooled.A.recentered.low``, ``eer.balanced.all``. A missing (None) number is not logged."""
    groups = group_keys(_views(doc))
    out: dict[str, tuple[dict[str, Any], float]] = {}
    for table, (naming, fields) in METRICS.items():
        for record in doc.get(table) or ():
            row = {k: record[k] for k in naming}
            rest = [groups[row[k]] if k == "group" else row[k] for k in naming
                    if k not in ("rate", "measure", "metric", "kind", "target")]
            name = f"{row['rate']}_{row['measure']}" if table == "fairness" else row.get("metric")
            for field in fields:
                if record.get(field) is None:
                    continue
                if name is None:  # operating points, curve summaries: the field is the quantity
                    key = [_quantity(field, row.get("kind"), row.get("target")), *rest]
                else:
                    key = [_quantity(name, row["kind"], row["target"]), *rest, *([field] if len(fields) > 1 else [])]
                out[".".join(key)] = ({"table": table, "field": field, **row}, float(record[field]))
    return out


def _views(doc: dict[str, Any]) -> tuple[str, ...]:
    return view_names(tuple(g["group"] for g in doc["summary"]["groups"]))


def _params(doc: dict[str, Any]) -> dict[str, str]:
    """The audit's configuration (nested settings as ``intervals.level``...), its version and its data's fingerprint
    (counts, and the SHA-256 of the whole: identities per group too), each as text (JSON but for text itself)."""
    flat = {"matchaudit_version": doc["matchaudit_version"]}
    for k, v in doc["config"].items():
        flat.update({f"{k}.{s}": w for s, w in v.items()} if isinstance(v, dict) else {k: v})
    data = doc["summary"]["data"]
    flat.update({f"data.{k}": v for k, v in data.items() if not isinstance(v, dict)})
    flat["data.n_groups"] = len(doc["summary"]["groups"])
    flat["data.fingerprint"] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in flat.items()}


def _absent(doc: dict[str, Any], folder: Path) -> tuple[str, ...]:
    """What the audit does not hold, so the run has none of it."""
    notes = [f"{what}: the audit ran without them ({how})" for key, what, how in (
        ("intervals", "intervals", "no .low/.high metrics"), ("tests", "group tests", "no tests.csv"))
        if doc.get(key) is None]
    if not doc.get("fairness"):
        notes.append("fairness measures: the audit has one group (they compare groups)")
    if not (folder / "report.html").is_file():
        notes.append("report.html: not in the audit's folder (`matchaudit report FOLDER` writes it there)")
    return tuple(notes)


@contextmanager
def _saved(audit: Audit | str | Path) -> Iterator[Path]:
    """The audit's results.json, in the folder given (or given itself), or in a temporary folder an in-memory
    :class:`Audit` is saved into."""
    if isinstance(audit, Audit):
        with tempfile.TemporaryDirectory(prefix="matchaudit-mlflow-") as tmp:
            audit.save(Path(tmp) / "audit", figures=not audit.missing_arrays)
            yield Path(tmp) / "audit" / "results.json"
    elif isinstance(audit, (str, Path)) and str(audit).strip():
        yield results_file(Path(audit), "audit")
    else:
        raise InputError(f"audit {audit!r}: give an Audit (ma.audit's result) or the folder `matchaudit audit --out` "
                         "wrote.", param="audit")


@contextmanager
def _file_store_allowed(uri: str) -> Iterator[None]:
    """MLflow 3 keeps the file store (``./mlruns``, ``file:``) in maintenance mode and refuses it unless
    ``MLFLOW_ALLOW_FILE_STORE`` is set: set for this call where the user has not set it, for a local URI only."""
    local = "://" not in uri or uri.startswith("file:")
    if not local or "MLFLOW_ALLOW_FILE_STORE" in os.environ:
        yield
        return
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


def _first(error: Exception) -> str:
    """MLflow's message, its first line (at most 500 characters)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:500]


def _text(value: Any, name: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InputError(f"{name} {value!r}: give a name (text), or leave it out.", param=name)
    return value


def log_mlflow(audit: Audit | str | Path, *, experiment: str | None = None, run_name: str | None = None,
               tracking_uri: str | None = None) -> LoggedRun:
    """Log an audit to a new MLflow run: its configuration as params, its numbers as metrics, its files as
    artefacts (module doc); the run reproduces the audit's numbers.

    ``audit``: an :class:`Audit` (saved into a temporary folder first, figures included) or the folder
    ``matchaudit audit --out`` wrote (or its results.json). ``experiment``: its name (created if missing; default
    ``MLFLOW_EXPERIMENT_NAME``, else ``"matchaudit"``). ``run_name``: default MLflow's. ``tracking_uri``: default
    ``MLFLOW_TRACKING_URI``, else a file store in ``./mlruns`` (:func:`resolve_uri`). Needs MLflow
    (``pip install 'matchaudit[tracking]'``); an unreachable tracking server is an InputError (after MLflow's own
    retries: ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``).
    """
    experiment = _text(experiment, "experiment") or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "matchaudit"
    run_name = _text(run_name, "run_name")
    uri = resolve_uri(_text(tracking_uri, "tracking_uri"))
    where = "tracking_uri" if tracking_uri else None  # the flag to blame, where one was given
    try:
        from mlflow import MlflowClient
        from mlflow.entities import Metric, Param
        from mlflow.exceptions import MlflowException
    except ImportError as e:
        raise InputError(f"experiment tracking needs MLflow, which cannot be imported here ({e}): {INSTALL}.") \
            from None
    with _saved(audit) as results, _file_store_allowed(uri):
        doc, folder = load_results(results, "audit"), results.parent
        logged = metrics(doc)
        params = _params(doc)
        files = tuple(name for kind in ("audit", "conditions", "check") for name in SETS[kind]
                      if (folder / name).is_file())  # with the trial conditions and claims written beside it
        absent = _absent(doc, folder)
        tags = {"matchaudit.command": str(doc["command"])[:_TAG_CHARS],
                "matchaudit.absent": "; ".join(absent)[:_TAG_CHARS] or "nothing"}
        try:
            client = MlflowClient(uri)
            found = client.get_experiment_by_name(experiment)
            experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
            run_id = client.create_run(experiment_id, run_name=run_name, tags=tags).info.run_id
        except MlflowException as e:
            raise InputError(f"tracking URI {uri} (experiment {experiment!r}): MLflow failed: {_first(e)}.",
                             param=where) from None
        status = "FAILED"
        try:
            now = int(time.time() * 1000)
            client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, (_, v) in logged.items()],
                             params=[Param(k, v) for k, v in params.items()])
            for name in files:
                client.log_artifact(run_id, str(folder / name))
            client.log_dict(run_id, {"groups": group_keys(_views(doc)),
                                     "metrics": {k: spec for k, (spec, _) in logged.items()}}, KEYS_FILE)
            status = "FINISHED"
        except MlflowException as e:
            raise InputError(f"tracking URI {uri}: MLflow failed to log the run's data ({_first(e)}); run {run_id} is "
                             "marked FAILED.", param=where) from None
        finally:
            client.set_terminated(run_id, status)
    return LoggedRun(run_id, experiment_id, uri, len(logged), len(params), (*files, KEYS_FILE), absent)


__all__ = ["INSTALL", "KEYS_FILE", "METRICS", "LoggedRun", "group_keys", "log_mlflow", "metrics", "resolve_uri"]
