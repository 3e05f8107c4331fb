"""The package's layers (CONTRIBUTING.md, Architecture; #46 item 2), read from the source with ``ast``: every import
of a ``matchaudit`` module, at the top of a module or inside a function, runs down the layer order or within one
layer; the top-level units do not import each other in a cycle; no module imports another's private name; and no
estimator runs a pass (an estimator takes the passes' outputs: the engine's types, never its pass functions); a module
over 600 lines says why at its top."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "matchaudit"

# the top-level units (a package or a module directly under matchaudit/), bottom to top; a unit imports units of its
# own layer or below. ``labelfree`` is its own package beside ``report`` (its figures draw with report's plotting
# helpers); ``checks`` sits with ``model`` (it checks that an argument is a MatchData); ``studies`` (coverage, planning)
# and ``tracking`` (an audit logged to MLflow) beside ``auditing``: jobs of their own; ``__init__`` is the public
# facade, imported by no module (``__version__`` aside: a constant).
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(x.split()) for x in (
    "blocks cells choices definitions encoding errors external_sort formatting interrupt machine outputs pairings "
    "progress rng sorting",
    "checks data model scores resampling simulation protocols",
    "engine",
    "metrics",
    "estimators",
    "plots",
    "auditing api claims studies tracking",
    "report labelfree",
    "cli __main__ testing warmup __init__",
))
LEVEL = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}

# what an estimator may import from the engine: the passes' outputs and the types that describe them, and the
# resampling layout of a data set (its identities' groups and samples: what the weights are drawn over, no pass)
ENGINE_TYPES = frozenset({"Counts", "Grid", "IdentityCounts", "TailHits", "layout_of"})

@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    name: str | None  # the imported name (``from target import name``), None for ``import target``
    line: int


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    path = SRC.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a matchaudit module in the source (``from package import submodule``: the submodule)."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        source = _module(path)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out += [Import(source, a.name, None, node.lineno) for a in node.names
                        if a.name.startswith("matchaudit")]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] != "matchaudit":
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    out.append(Import(source, sub, None, node.lineno) if _is_module(sub)
                               else Import(source, base, a.name, node.lineno))
    return tuple(out)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_unit_has_a_layer():
    units = {_unit(_module(p)) for p in ROOT.rglob("*.py")}
    assert units - LEVEL.keys() == set(), "place the new unit in LAYERS"
    assert LEVEL.keys() - units == set(), "a unit in LAYERS that does not exist"


def upward() -> dict[tuple[str, str], int]:
    """(importing module, imported module) -> line, for every import that runs up the layers."""
    out = {}
    for i in imports():
        if i.target == "matchaudit" and i.name == "__version__":
            continue
        if LEVEL[_unit(i.target)] > LEVEL[_unit(i.source)]:
            out.setdefault((i.source, i.target), i.line)
    return out


def test_no_import_runs_up_the_layers():
    found = upward()
    assert not found, "imports running up the layers (importer -> imported: line):\n" + "\n".join(
        f"  {a} -> {b}: {line}" for (a, b), line in sorted(found.items()))


def test_no_import_cycle_between_units():
    graph: dict[str, set[str]] = {}
    for i in imports():
        a, b = _unit(i.source), _unit(i.target)
        version = i.target == "matchaudit" and i.name == "__version__"
        if a != b and not version:
            graph.setdefault(a, set()).add(b)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted({tuple(sorted({u, v})) for u in graph for v in graph[u] if u in reach(v)})
    assert not cycles, f"units importing each other, directly or through others: {cycles}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_name_crosses_modules():
    """Neither ``from module import _name`` nor ``module._name`` on an imported matchaudit module."""
    found = [f"{i.source}:{i.line} imports {i.target}.{i.name}" for i in imports()
             if i.name and _private(i.name) and i.target != i.source]
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        targets = _targets(path)
        modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                   if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names if f"{getattr(n, 'module', None) or ''}.{a.name}".lstrip(".") in targets}
        found += [f"{_module(path)}:{n.lineno} reads {n.value.id}.{n.attr}" for n in ast.walk(tree)
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules
                  and _private(n.attr)]
    assert not found, "private names of another module:\n" + "\n".join(sorted(found))


def _targets(path: Path) -> set[str]:
    """The matchaudit modules ``path`` imports as modules (``import m``, ``from package import m``)."""
    return {i.target for i in imports() if i.source == _module(path) and i.name is None}


def test_no_estimator_runs_a_pass():
    found = sorted(f"{i.source}:{i.line} imports {i.target}{'.' + i.name if i.name else ''}" for i in imports()
                   if _unit(i.source) == "estimators" and _unit(i.target) == "engine"
                   and (i.name is None or i.name not in ENGINE_TYPES))
    assert not found, ("an estimator takes the passes' outputs (the engine's types); the passes run in auditing/:\n"
                       + "\n".join(found))


def test_a_long_module_says_why_at_its_top():
    """A module over 600 lines holds more than one job unless its docstring says otherwise ("over 600 lines: ...")."""
    long = sorted(f"{_module(p)}: {n} lines" for p in ROOT.rglob("*.py")
                  if (n := len(p.read_text().splitlines())) > 600
                  and "over 600 lines" not in (ast.get_docstring(ast.parse(p.read_text())) or ""))
    assert not long, "split, or say at the top why not:\n" + "\n".join(long)
