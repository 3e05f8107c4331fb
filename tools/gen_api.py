"""Generate docs/api.md, the API reference, from the package's docstrings (no dependency beyond the package).

    .venv/bin/python tools/gen_api.py            # rewrite docs/api.md
    .venv/bin/python tools/gen_api.py --check    # exit 1 if docs/api.md is stale (used by the tests)
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import matchaudit

RESULTS = (
    "matchaudit.model.MatchData",
    "matchaudit.estimators.compare.ModelComparison",
    "matchaudit.estimators.audit_diff.AuditDiff",
    "matchaudit.claims.check.CheckResult",
    "matchaudit.tracking.LoggedRun",
    "matchaudit.estimators.permutation.PermutationTestResult",
    "matchaudit.estimators.classifier.AllGroupsResult",
    "matchaudit.estimators.equivalence.EquivalenceResult",
    "matchaudit.protocols.Protocol",
    "matchaudit.labelfree.api.Estimate",
    "matchaudit.simulation.SimulatedData",
)
"""The result classes the public jobs return (documented with their public members; not constructed by users)."""


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n")[0].replace("\n", " ")


def _signature(obj: object) -> str:
    """The signature, with machine-specific reprs (module paths, addresses) made portable."""
    try:
        text = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    text = re.sub(r"<module '([\w.]+)' from '[^']*'>", r"\1", text)
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _entry(name: str, obj: object) -> list[str]:
    """One function, or one class with its public methods and properties."""
    if not inspect.isclass(obj):
        return [f"### `{name}{_signature(obj)}`", "", inspect.cleandoc(obj.__doc__ or ""), ""]
    lines = [f"### class `{name}`", "", inspect.cleandoc(obj.__doc__ or ""), ""]
    for attr, member in sorted(vars(obj).items()):
        if attr.startswith("_"):
            continue
        if isinstance(member, property):
            lines.append(f"- **`.{attr}`** — {_first_paragraph(member.__doc__)}")
        elif inspect.isfunction(member):
            lines.append(f"- **`.{attr}{_signature(member)}`** — {_first_paragraph(member.__doc__)}")
    return lines + [""]


def render() -> str:
    head = ["# API reference", "",
            "Generated from the docstrings by `tools/gen_api.py`; do not edit by hand. This is the public surface: "
            "`import matchaudit as ma` and the names of `ma.__all__`, then the result classes they return. "
            "Everything else is internal and may change between versions.", "",
            "## `matchaudit`", "", inspect.cleandoc(matchaudit.__doc__ or ""), ""]
    body = [line for name in sorted(matchaudit.__all__) for line in _entry(f"ma.{name}", getattr(matchaudit, name))]
    results = ["## Result classes", ""]
    for path in RESULTS:
        module, _, cls = path.rpartition(".")
        results += _entry(cls, getattr(importlib.import_module(module), cls))
    return "\n".join(head + body + results).rstrip() + "\n"


def main() -> int:
    out = Path(__file__).resolve().parent.parent / "docs" / "api.md"
    text = render()
    if "--check" in sys.argv:
        return 0 if out.exists() and out.read_text() == text else 1
    out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
