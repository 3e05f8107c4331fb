"""The one JSON encoding of every file matchaudit writes (results.json, test.json, compare.json, estimate.json,
protocol.json): plain JSON values, with non-finite floats as the strings ``"inf"``, ``"-inf"`` and ``"nan"``
(JSON has no infinity; the results schema documents the strings as ``$defs/real``). Reading is the mirror image,
at the same boundary: :func:`decoded` turns those strings back into floats wherever the schema says a number is,
so no code past the reader ever meets a number spelled as a string (the report sorted p-values "nan" and 0.01
together and crashed), and a group named "nan" stays a name."""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

import numpy as np


def jsonable(x: Any) -> Any:
    """Nested dicts/lists/tuples/arrays as plain JSON values: NumPy scalars unwrapped, keys as strings,
    non-finite floats as ``"inf"``, ``"-inf"``, ``"nan"``."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    return x


REAL = "#/$defs/real"


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema every ``results.json`` satisfies (read once; not to be modified)."""
    return json.loads(resources.files("matchaudit").joinpath("schema/results.schema.json").read_text())


def _resolved(node: dict[str, Any]) -> dict[str, Any]:
    """``node``, or the schema definition its ``$ref`` names."""
    return schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node


def columns(table: str) -> dict[str, str]:
    """Every field the records of results.json's ``table`` may have (the schema's ``required`` first, then the rest
    it declares) with the pandas dtype filled records get: the columns of that table when it has no rows."""
    items = schema()["properties"][table]["items"]
    props: dict[str, Any] = {}
    for node in [*items.get("allOf", []), items]:
        props |= _resolved(node).get("properties", {})

    def kinds(node: dict[str, Any]) -> set[str]:
        if node.get("$ref") == REAL:
            return {"number"}
        node = _resolved(node)
        if "enum" in node:
            return {"string"}
        kind = node.get("type")
        out = set(kind) if isinstance(kind, list) else {kind} if kind else set()
        for branch in node.get("oneOf", []) + node.get("anyOf", []):
            out |= kinds(branch)
        return out

    def dtype(k: set[str]) -> str:
        """As pandas infers it from filled records: None makes a number column float64 and leaves text str."""
        rest, nullable = k - {"null"}, "null" in k
        if rest == {"boolean"} and not nullable:
            return "bool"
        if rest == {"integer"} and not nullable:
            return "int64"
        if rest and rest <= {"integer", "number"}:
            return "float64"
        return "str" if rest == {"string"} else "object"

    names = [*items.get("required", []), *(k for k in props if k not in items.get("required", []))]
    return {name: dtype(kinds(props.get(name, {}))) for name in names}


def decoded(doc: Any, schema: dict[str, Any]) -> Any:
    """``doc`` with every value the JSON ``schema`` types as ``$defs/real`` a float (``"nan"``, ``"inf"``,
    ``"-inf"`` back to floats); everything else as it is."""
    defs = schema.get("$defs", {})

    def walk(x: Any, node: dict[str, Any]) -> Any:
        ref = node.get("$ref")
        if ref == REAL:
            return float(x) if isinstance(x, str) else x
        if ref is not None:
            return walk(x, defs[ref.rsplit("/", 1)[-1]])
        for key in ("oneOf", "anyOf", "allOf"):
            for branch in node.get(key, ()):
                x = walk(x, branch)
        if isinstance(x, dict):
            props, extra = node.get("properties", {}), node.get("additionalProperties")
            return {k: walk(v, props[k]) if k in props else walk(v, extra) if isinstance(extra, dict) else v
                    for k, v in x.items()}
        if isinstance(x, list) and isinstance(node.get("items"), dict):
            return [walk(v, node["items"]) for v in x]
        return x

    return walk(doc, schema)


def as_document(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (what results.json holds) as :func:`matchaudit.auditing.results_json.load_results` returns it: plain JSON values, non-finite numbers
    as floats wherever the schema has a number (so a document made in memory and one read back are equal)."""
    return decoded(jsonable(doc), schema())
