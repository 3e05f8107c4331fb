"""A command's outputs as one set: written into a hidden folder inside the destination and moved into place
only when complete, so that an interrupted or failed run leaves the previous outputs untouched and nothing
half-written, and a re-run replaces the previous set whole.

Each command's set is recorded in ``.matchaudit-<command>`` in the destination: a re-run removes the files listed
there that it does not write again (never a file matchaudit did not write, nor another command's: an audit and a
compare may share a folder), and a later addition (``report.html`` to the audit's) joins a set.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from matchaudit.errors import InputError


def manifest(out: Path, command: str) -> Path:
    """The file listing ``command``'s set of outputs in ``out``."""
    return out / f".matchaudit-{command}"


def _listed(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def refuse_file(out: Path, name: str) -> None:
    """An :class:`InputError` when the outputs' folder ``out`` (called ``name`` in the message) is an existing
    file."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{name}: a file of that name exists; give a directory.", param="out")


@contextmanager
def staged(out: str | Path, command: str, replace: bool = True) -> Iterator[Path]:
    """A temporary folder inside ``out`` (created if missing) to write into; on normal exit its files are moved
    into ``out`` as ``command``'s set. ``replace``: the new files are the whole set (files of that command's
    previous set not written again are removed); otherwise they join it."""
    out = Path(out)
    listing = manifest(out, command)
    refuse_file(out, str(out))  # the commands check their --out before any work; a library caller's here
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".matchaudit-partial-", dir=out))
    except OSError as e:
        raise InputError(f"{out}: cannot write the outputs there ({e.strerror or e}); give a folder that can be "
                         "written.", param="out") from None
    try:
        yield tmp
        new = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        old = _listed(listing)
        if replace:
            for name in sorted(set(old) - set(new)):
                (out / name).unlink(missing_ok=True)
        for name in new:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, out / name)
        keep = new if replace else list(dict.fromkeys(old + new))
        listing.write_text("\n".join(keep) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str) -> Path:
    """Write one file atomically: into a hidden file beside it, then renamed over it (never half-written)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path


__all__ = ["manifest", "staged", "write_text"]
