"""An audit's tables on disk: ``results.json`` (validated against the shipped JSON Schema, :func:`write_results`;
read back by :func:`load_results`, schema-checked, non-finite numbers as floats) and the tidy CSVs beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd

from matchaudit.encoding import decoded, jsonable, schema
from matchaudit.errors import InputError
from matchaudit.plots.probit import thin_curve


def read_json(path: Path, what: str, param: str | None = None) -> dict[str, Any]:
    """The JSON object in ``path`` (``what`` names the file matchaudit writes there), or an :class:`InputError`
    naming the file and what is wrong: missing, not JSON (a truncated copy?), not an object."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; give the {what}.", param=param) from None
    except PermissionError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror}); give the {what}.", param=param) from None
    except (UnicodeDecodeError, IsADirectoryError, json.JSONDecodeError) as e:
        where = f" ({e.msg}, line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise InputError(f"{path}: not a JSON file{where}; give the {what} (is it truncated?).", param=param) from None
    except OSError as e:  # a link loop, a name too long, an I/O error
        raise InputError(f"{path}: cannot be read ({e.strerror or e}); give the {what}.", param=param) from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: holds a JSON {type(doc).__name__}, not the {what}.", param=param)
    return doc


def compare_records(doc: dict[str, Any]) -> list | None:
    """The records of a ``matchaudit compare`` compare.json (its ``result.records``), or None when ``doc`` is not
    one: the one test of that file's shape (the report's section, the claims' differences)."""
    result = doc.get("result")
    return result["records"] if isinstance(result, dict) and isinstance(result.get("records"), list) else None


def results_file(path: Path, param: str | None = None) -> Path:
    """An audit's ``results.json``: ``path`` itself, or the one inside ``path`` when it is the audit's ``--out``
    directory (the report took the directory, ``--thresholds-from`` said "not a JSON file"); an InputError for a
    folder without one (``param``: the argument that named it)."""
    path = Path(path)
    if path.is_dir():
        if not (path / "results.json").is_file():
            raise InputError(f"{path}: a folder without results.json; give the folder `matchaudit audit --out` wrote, "
                             "or its results.json.", param=param)
        return path / "results.json"
    return path


def load_results(path: Path, param: str | None = None) -> dict[str, Any]:
    """An audit's ``results.json``, checked against :func:`schema` before any of it is used (``param``: the
    parameter that named the file, for messages)."""
    doc = read_json(path, "results.json of `matchaudit audit`", param)
    other = ("a test.json of `matchaudit test`" if doc.get("kind") in ("two-group", "all-groups") else
             "a compare.json of `matchaudit compare` (the report takes it with `matchaudit report --compare`)"
             if isinstance(doc.get("result"), dict) and "records" in doc["result"] else
             "an estimate.json of `matchaudit estimate` (the report takes it with `matchaudit report --estimate`)"
             if "results" in doc and "groups" in doc and "method" in doc else None)
    if other:
        raise InputError(f"{path}: this is {other}, not an audit's results.json.", param=param)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(doc))
    if error is not None:
        at = "/".join(map(str, error.absolute_path)) or "the top level"
        raise InputError(f"{path}: not a complete results.json of `matchaudit audit` ({error.message} at {at}); "
                         "re-run the audit or give its unmodified output.", param=param)
    return decoded(doc, schema())  # "nan"/"inf" back to floats wherever a number is (matchaudit.encoding)


def det_table(det: list[dict[str, Any]]) -> pd.DataFrame:
    """Tidy DET points (exact rates at the kept thresholds; thinned to at most MAX_CURVE_POINTS per curve)."""
    frames = []
    for c in det:
        k = thin_curve(c["fmr"], c["fnmr"])
        frames.append(pd.DataFrame({"weighting": c["weighting"], "group": c["group"], "threshold": c["threshold"][k],
                                    "fmr": c["fmr"][k], "fnmr": c["fnmr"][k]}))
    return pd.concat(frames, ignore_index=True)


def intervals_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """intervals.csv: one row per interval record; nested values as JSON; counts as integers (empty if none)."""
    table = pd.DataFrame([{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
                          for r in jsonable(records)])
    for col in ("errors", "comparisons", "n_resamples", "seed"):
        if col in table:
            table[col] = table[col].astype("Int64")
    return table


def write_results(payload: dict[str, Any], det: list[dict[str, Any]], out: Path) -> dict[str, Path]:
    """Write results.json (``payload``: :meth:`Audit.document`, schema-checked) and the CSV tables into ``out``;
    return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    doc = jsonable(payload)
    jsonschema.validate(doc, schema())
    paths = {"results": out / "results.json"}
    paths["results"].write_text(json.dumps(doc, indent=2))
    for table in ("operating_points", "curve_summaries", "cross_group_fmr", "fairness", "tests", "equivalence"):
        if payload.get(table) is not None:  # lists (groups, margins) as ';'-joined text
            paths[table] = out / f"{table}.csv"
            rows = [{k: (";".join(map(str, v)) if isinstance(v, (list, tuple)) else v) for k, v in r.items()}
                    for r in payload[table]]
            pd.DataFrame(rows).to_csv(paths[table], index=False)
    if payload.get("intervals") is not None:
        paths["intervals"] = out / "intervals.csv"
        intervals_table(payload["intervals"]).to_csv(paths["intervals"], index=False)
    for table in ("failures", "attacks", "calibration", "score_distributions", "portability"):
        if payload.get(table) is not None:
            paths[table] = out / f"{table}.csv"
            pd.DataFrame(payload[table]).to_csv(paths[table], index=False)
    if det:  # none: an audit loaded without its curves.npz (Audit.missing_arrays)
        paths["det"] = out / "det.csv"
        det_table(det).to_csv(paths["det"], index=False)
    return paths


__all__ = ["det_table", "intervals_table", "load_results", "read_json", "results_file", "write_results"]
