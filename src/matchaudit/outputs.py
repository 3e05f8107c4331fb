"""The one rule for everything matchaudit writes: nothing the user gave is ever modified or replaced.

A command's outputs are one set: written into a hidden folder inside the destination and moved into place only
when complete, so that an interrupted or failed run leaves the previous outputs untouched and nothing
half-written, and a re-run replaces the previous set whole.

Each command's set is recorded in ``.matchaudit-<command>`` in the destination, one line per file with its size
and SHA-256: the proof that matchaudit wrote it. A command replaces or removes only a file that its own earlier
run wrote there and that is still as written; any other existing file of a name it would write (the user's, one
edited since, another command's output) is refused by name, and so is a destination that is an input of the same
run — both before any work (:func:`check`, called by each command first and by :func:`staged` on entry) and again
as the files are moved into place. A later addition (``report.html`` to the audit's set) joins a set.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterable, Iterator

from matchaudit import interrupt
from matchaudit.errors import InputError


def _figures(*stems: str) -> tuple[str, ...]:
    return tuple(f"{stem}.{ext}" for stem in stems for ext in ("png", "svg"))


_AUDIT_TABLES = ("operating_points", "curve_summaries", "cross_group_fmr", "fairness", "tests", "equivalence",
                 "intervals", "failures", "attacks", "calibration", "score_distributions", "det", "portability")

SETS: dict[str, tuple[str, ...]] = {
    "audit": ("results.json", *(f"{t}.csv" for t in _AUDIT_TABLES), "curves.npz", "report.html",
              *_figures("det_pooled", "det_balanced", "thresholds_pooled", "thresholds_balanced", "ape",
                        "score_distributions")),
    "test": ("test.json", "comparisons.csv", *_figures("null_distribution"), "equivalence.json", "equivalence.csv"),
    "compare": ("compare.json", "differences.csv", *_figures("compare")),
    "check": ("claims.json", "claims.csv", "claims.xml"),
    "conditions": ("conditions.json", "conditions.csv"),
    "diff": ("diff.json", "diff.csv", "diff.html", *_figures("det_diff")),
    "estimate": ("estimate.json", "estimate.csv", *_figures("det_bands", "ppc")),
    "protocol": ("pairs.csv", "protocol.json"),
    "coverage": ("coverage.csv", "coverage.json", "coverage.md"),
    "simulate": ("samples.parquet", "samples.csv", "embeddings.npy"),
    "demo-data": ("samples.parquet", "embeddings.npy", "embeddings_b.npy", "comparisons.csv", "match_log.txt",
                  "templates.txt", "subjects.csv"),
}
"""The file names each command may write into its destination (``report`` writes the one file it is given): the
names :func:`check` looks for before any work. A name not declared here is a programming error."""


def manifest(out: Path, command: str) -> Path:
    """The file listing ``command``'s set of outputs in ``out``."""
    return out / f".matchaudit-{command}"


def _fingerprint(path: Path) -> str:
    """``size:sha256`` of a file's bytes: what the manifest records, so that a file changed since is not ours."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return f"{path.stat().st_size}:{digest.hexdigest()}"


def _listed(out: Path, command: str) -> dict[str, str | None]:
    """``command``'s set in ``out``: name -> fingerprint (None on a line of an earlier version, which had names
    only)."""
    path = manifest(out, command)
    if not path.is_file():
        return {}
    rows = (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {row[0]: (row[1] if len(row) > 1 else None) for row in rows}


def _ours(path: Path, listed: dict[str, str | None]) -> bool:
    """Whether the existing file ``path`` is the one the set ``listed`` recorded (same size and content)."""
    if path.name not in listed or not path.is_file() or path.is_symlink():
        return False
    recorded = listed[path.name]
    if recorded is None:
        return True
    size = recorded.split(":", 1)[0]
    return size == str(path.stat().st_size) and _fingerprint(path) == recorded


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check(out: str | Path, command: str, inputs: Iterable[str | Path | None] = (),
          names: Iterable[str] | None = None, param: str = "out", reserved: Iterable[Path] = ()) -> None:
    """Refuse, before any work, a destination where ``command`` would replace a file it did not write: an input of
    the same run (``inputs``; a file or a folder it reads), one of the audit's outputs (``reserved``), or
    any existing file of one of its output ``names`` (default :data:`SETS`) that its own earlier run in ``out``
    did not write. ``param``: the argument the message names (the CLI shows it as its flag)."""
    out = Path(out)
    refuse_file(out, param)
    listed = _listed(out, command) if out.is_dir() else {}
    given = [Path(p) for p in inputs if p is not None and str(p) != ""]
    for name in sorted(names if names is not None else SETS[command]):
        path = out / name
        exists = path.exists() or path.is_symlink()
        if exists:
            refuse_input(path, given, param)
        if any(os.path.abspath(path) == os.path.abspath(p) for p in reserved):
            raise InputError(f"{path} is one of the audit's own outputs; the report never replaces it. Give "
                             "another destination.", param=param)
        if exists:
            refuse_target(path, command, given, listed, param)


def report_destination(results_json: Path, report: Path | str | None) -> tuple[Path, str]:
    """Where the HTML report of ``results_json`` goes, and the set it joins: ``report.html`` beside results.json
    (no ``report``, or that very path) joins the audit's set; any other file is a ``report`` set of its own in its
    folder. ``report`` that is a folder, or ends in a path separator, means ``report.html`` inside it."""
    folder = results_json.parent
    if report is None or str(report) == "":
        return folder / "report.html", "audit"
    text = os.fspath(report)
    target = Path(text) / "report.html" if text.endswith(("/", os.sep)) or Path(text).is_dir() else Path(text)
    same = target.name == "report.html" and os.path.abspath(target.parent) == os.path.abspath(folder)
    return target, "audit" if same else "report"


def check_report(results_json: Path, report: Path | str | None, inputs: Iterable[str | Path | None] = (),
                 param: str = "report") -> tuple[Path, str]:
    """:func:`check` for the report of ``results_json`` (:func:`report_destination`), before any work: it never
    replaces an input (results.json, the sections, ``inputs``), a file of the audit's set, or a file that no
    earlier report wrote. Returns the destination and its set."""
    target, command = report_destination(results_json, report)
    if command == "report" and target.name == "report.html" and (target.parent / "results.json").is_file():
        raise InputError(f"{target.parent} holds another audit's results.json: a report.html of this audit there "
                         "would be read as that audit's report. Give another file or folder.", param=param)
    reserved = [] if command == "audit" else [results_json.parent / name for name in SETS["audit"]]
    check(target.parent, command, [results_json, *inputs], (target.name,), param, reserved)
    return target, command


def refuse_target(path: Path, command: str, inputs: Iterable[Path], listed: dict[str, str | None] | None = None,
                  param: str = "out") -> None:
    """An :class:`InputError` if writing ``path`` would replace an input of the run or a file that ``command``'s
    own set did not write; nothing if the path is free or ours."""
    refuse_input(path, inputs, param)
    if listed is None:
        listed = _listed(path.parent, command)
    if path.exists() and not path.is_dir() and _ours(path, listed):
        return
    if path.is_dir():
        raise InputError(f"{path} is a folder; matchaudit {command} writes a file of that name there. Give "
                         "another destination.", param=param)
    if path.exists() or path.is_symlink():
        other = [c.name.removeprefix(".matchaudit-") for c in path.parent.glob(".matchaudit-*")
                 if c.is_file() and path.name in _listed(path.parent, c.name.removeprefix(".matchaudit-"))
                 and c.name != manifest(path.parent, command).name]
        whose = (f"is one of matchaudit's {other[0]} outputs, not {command}'s" if other else
                 "was not written by matchaudit (or was changed since)")
        raise InputError(f"{path} exists and {whose}; matchaudit never replaces it. Move it away or give "
                         "another destination.", param=param)


def refuse_input(path: Path, inputs: Iterable[Path], param: str = "out") -> None:
    """An :class:`InputError` if ``path`` is one of the run's ``inputs`` (the same file, also by a link)."""
    for given in inputs:
        if given.exists() and _same(path, given):
            raise InputError(f"{path} is an input of this run; matchaudit never replaces a file you gave. "
                             "Give another destination.", param=param)


def refuse_file(out: Path, param: str = "out") -> None:
    """An :class:`InputError` when the outputs' folder ``out`` (the argument ``param``) is an existing file."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: a file of that name exists; give a directory.", param=param)


@contextmanager
def staged(out: str | Path, command: str, replace: bool = True, names: Iterable[str] | None = None,
           inputs: Iterable[str | Path | None] = (), param: str = "out") -> Iterator[Path]:
    """A temporary folder inside ``out`` (created if missing) to write into; on normal exit its files are moved
    into ``out`` as ``command``'s set. ``replace``: the new files are the whole set (files of that command's
    previous set not written again, and still as written, are removed); otherwise they join it. ``names``: the
    file names it may write (default :data:`SETS`); ``inputs``: the run's input files, never replaced. Every
    existing file in the way is checked on entry (:func:`check`; ``param`` names the destination's argument) and
    again before anything is moved."""
    out = Path(out)
    allowed = tuple(names if names is not None else SETS[command])
    given = [Path(p) for p in inputs if p is not None and str(p) != ""]
    check(out, command, given, allowed, param)  # the commands call it before any work; a library caller gets it here
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".matchaudit-partial-", dir=out))
    except OSError as e:
        raise InputError(f"{out}: cannot write the outputs there ({e.strerror or e}); give a folder that can be "
                         "written.", param=param) from None
    try:
        yield tmp
        new = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        undeclared = [n for n in new if not any(fnmatchcase(n, a) for a in allowed)]
        if undeclared:
            raise RuntimeError(f"matchaudit {command} wrote undeclared outputs {undeclared}: add them to "
                               "matchaudit.outputs.SETS")
        old = _listed(out, command)
        for name in new:  # a file that appeared during the run is refused too, before anything moves
            refuse_target(out / name, command, given, old, param)
        records = {name: _fingerprint(tmp / name) for name in new}
        with interrupt.committing():  # Ctrl-C before this: the previous set stays; during it: the new set is whole
            if replace:
                for name in sorted(set(old) - set(new)):
                    if _ours(out / name, old):
                        (out / name).unlink()
            for name in new:
                os.replace(tmp / name, out / name)
            keep = records if replace else {**{k: v for k, v in old.items() if _ours(out / k, old)}, **records}
            _write_listing(manifest(out, command), keep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_listing(path: Path, records: dict[str, str | None]) -> None:
    """The manifest, written atomically (into a hidden file beside it, then renamed over it)."""
    partial = path.with_name(f"{path.name}.partial")
    lines = [name if fp is None else f"{name}\t{fp}" for name, fp in records.items()]
    partial.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(partial, path)


__all__ = ["SETS", "check", "check_report", "manifest", "refuse_file", "refuse_target", "report_destination", "staged"]
