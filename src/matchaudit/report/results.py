"""Write an audit's results: ``results.json`` (validated against the shipped JSON Schema) and tidy CSVs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd

from matchaudit.encoding import decoded, jsonable, schema
from matchaudit.errors import InputError

MAX_CURVE_POINTS = 4000


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


def load_section(path: Path, kind: str) -> dict[str, Any]:
    """A ``compare.json`` (``kind="compare"``) or ``estimate.json`` (``"estimate"``) for the report, with the
    parts the report reads."""
    what = f"{kind}.json of `matchaudit {kind}`"
    doc = read_json(path, what, kind)
    if kind == "compare":
        ok = isinstance(doc.get("result"), dict) and isinstance(doc["result"].get("records"), list)
    else:
        ok = isinstance(doc.get("results"), dict) and all(k in doc for k in ("level", "method"))
    if not ok:
        raise InputError(f"{path}: not {'an' if kind[0] in 'aeiou' else 'a'} {what} (its parts are missing).",
                         param=kind)
    return doc


def section_mismatch(results: dict[str, Any], kind: str, doc: dict[str, Any]) -> str | None:
    """How a compare.json (``kind="compare"``) or estimate.json describes other data than the audit's results.json,
    or None when it describes the same: a compare.json by the data fingerprint both record
    (:meth:`matchaudit.model.MatchData.fingerprint`), an estimate.json by its pairs per group, which are the
    audit's genuine and same-group impostor comparisons when it scored the audit's comparison table."""
    s = results["summary"]
    if kind == "compare":
        fp, mine = doc["result"].get("details", {}).get("data"), s.get("data")
        if not isinstance(fp, dict) or not isinstance(mine, dict):
            return "it or the audit does not record its data set (written by an older matchaudit), so it cannot be checked"
    else:
        fp = {"pairs_per_group": {str(g.get("name")): g.get("n_pairs") for g in doc.get("groups", [])}}
        mine = {"pairs_per_group": {g["group"]: g["genuine_comparisons"] + g["impostor_comparisons_same_group"]
                                    for g in s["groups"]}}
    diff = [f"{k} {fp.get(k)!r} (the audit: {v!r})" for k, v in mine.items() if fp.get(k) != v]
    return f"it describes other data than this audit: {'; '.join(diff)}" if diff else None


def thin_curve(fmr: np.ndarray, fnmr: np.ndarray, max_points: int = MAX_CURVE_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` curve points, spread evenly along the DET (probit) arc length."""
    if fmr.size <= max_points:
        return np.arange(fmr.size)
    from matchaudit.report.probit import probit  # the figures' axis (scipy's ndtri, without norm.ppf's 0.4 s import)

    x, y = probit(fmr), probit(fnmr)
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    keep = np.searchsorted(arc, np.linspace(0, arc[-1], max_points))
    return np.unique(np.concatenate([[0, fmr.size - 1], np.minimum(keep, fmr.size - 1)]))


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


def as_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (what results.json holds) as :func:`load_results` returns it: plain JSON values, non-finite numbers
    as floats wherever the schema has a number (so a document made in memory and one read back are equal)."""
    return decoded(jsonable(doc), schema())


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
    for table in ("failures", "attacks", "calibration", "score_distributions"):
        if payload.get(table) is not None:
            paths[table] = out / f"{table}.csv"
            pd.DataFrame(payload[table]).to_csv(paths[table], index=False)
    if det:  # none: an audit loaded without its curves.npz (Audit.missing_arrays)
        paths["det"] = out / "det.csv"
        det_table(det).to_csv(paths["det"], index=False)
    return paths
