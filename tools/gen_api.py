"""Generate docs/api.md, the API reference, from the package's docstrings (no dependency beyond the package).

    .venv/bin/python tools/gen_api.py            # rewrite docs/api.md
    .venv/bin/python tools/gen_api.py --check    # exit 1 if docs/api.md is stale (used by the tests)
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import matchaudit

SKIP = ("matchaudit.cli",)


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


def module_section(name: str) -> str:
    mod = importlib.import_module(name)
    lines = [f"## `{name}`", "", inspect.cleandoc(mod.__doc__ or "(no module docstring)"), ""]
    for attr, obj in sorted(vars(mod).items()):
        if attr.startswith("_") or getattr(obj, "__module__", None) != name:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            kind = "class" if inspect.isclass(obj) else "def"
            lines.append(f"- **{kind} `{attr}{_signature(obj)}`** — {_first_paragraph(obj.__doc__)}")
    return "\n".join(lines) + "\n"


def render() -> str:
    names = sorted(m.name for m in pkgutil.walk_packages(matchaudit.__path__, "matchaudit.")
                   if not m.name.startswith(SKIP))
    head = ("# API reference\n\nGenerated from the docstrings by `tools/gen_api.py`; do not edit by hand. "
            "Public functions and classes of each module, with their signatures and first docstring paragraph.\n\n")
    return head + "\n".join(module_section(n) for n in ["matchaudit", *names])


def main() -> int:
    out = Path(__file__).resolve().parent.parent / "docs" / "api.md"
    text = render()
    if "--check" in sys.argv:
        return 0 if out.exists() and out.read_text() == text else 1
    out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
