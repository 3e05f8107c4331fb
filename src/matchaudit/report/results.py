"""The other commands' documents the report adds as sections: a ``matchaudit compare`` compare.json, a
``matchaudit estimate`` estimate.json and a ``matchaudit check`` claims.json, and whether they describe the audit's
data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matchaudit.auditing.results_json import compare_records, read_json
from matchaudit.errors import InputError

def load_section(path: Path, kind: str) -> dict[str, Any]:
    """A ``compare.json`` (``kind="compare"``), ``estimate.json`` (``"estimate"``) or ``claims.json``
    (``"claims"``) for the report, with the parts the report reads."""
    what = {"claims": "claims.json of `matchaudit check`",
            "conditions": "conditions.json of `matchaudit audit --condition-cols`"}.get(
        kind, f"{kind}.json of `matchaudit {kind}`")
    doc = read_json(path, what, kind)
    if kind == "compare":
        ok = compare_records(doc) is not None
    elif kind == "claims":
        ok = isinstance(doc.get("claims"), list) and isinstance(doc.get("sources"), dict) and "status" in doc
    elif kind == "conditions":
        ok = all(isinstance(doc.get(k), list) for k in ("records", "tests", "condition_cols", "conditions")) and (
            isinstance(doc.get("details"), dict))
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
    if kind == "claims":  # checked against this audit: the same data and the same configuration
        src = doc["sources"]
        if "data" not in src:
            return "its claims were checked against a model comparison only, not against this audit"
        mine = {"data": s.get("data"), "config": results["config"]}
        diff = [k for k in mine if src.get(k) != mine[k]]
        return (f"it was checked against another audit (its {' and '.join(diff)} differ from this one's)"
                if diff else None)
    if kind in ("compare", "conditions"):
        fp = (doc["result"] if kind == "compare" else doc).get("details", {}).get("data")
        mine = s.get("data")
        if not isinstance(fp, dict) or not isinstance(mine, dict):
            return "it or the audit does not record its data set (written by an older matchaudit), so it cannot be checked"
    else:
        fp = {"pairs_per_group": {str(g.get("name")): g.get("n_pairs") for g in doc.get("groups", [])}}
        mine = {"pairs_per_group": {g["group"]: g["genuine_comparisons"] + g["impostor_comparisons_same_group"]
                                    for g in s["groups"]}}
    diff = [f"{k} {fp.get(k)!r} (the audit: {v!r})" for k, v in mine.items() if fp.get(k) != v]
    return f"it describes other data than this audit: {'; '.join(diff)}" if diff else None


__all__ = ["load_section", "section_mismatch"]
