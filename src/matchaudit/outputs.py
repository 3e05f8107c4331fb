"""A command's outputs as one set: written into a hidden folder inside the destination and moved into place
only when complete, so that an interrupted or failed run leaves the previous outputs untouched and nothing
half-written, and a re-run replaces the previous set whole.

The set is recorded in ``.matchaudit-outputs`` in the destination: a re-run removes the files listed there that
it does not write again (never a file matchaudit did not write), and a later addition (``report.html``) joins it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

MANIFEST = ".matchaudit-outputs"


def _listed(out: Path) -> list[str]:
    manifest = out / MANIFEST
    return manifest.read_text(encoding="utf-8").splitlines() if manifest.is_file() else []


@contextmanager
def staged(out: str | Path, replace: bool = True) -> Iterator[Path]:
    """A temporary folder inside ``out`` (created if missing) to write into; on normal exit its files are moved
    into ``out``. ``replace``: the new files are the whole set (files of the previous set not written again are
    removed); otherwise they join it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".matchaudit-partial-", dir=out))
    try:
        yield tmp
        new = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        old = _listed(out)
        if replace:
            for name in sorted(set(old) - set(new)):
                (out / name).unlink(missing_ok=True)
        for name in new:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, out / name)
        keep = new if replace else list(dict.fromkeys(old + new))
        (out / MANIFEST).write_text("\n".join(keep) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_text(path: str | Path, text: str) -> Path:
    """Write one file atomically: into a hidden file beside it, then renamed over it (never half-written)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path


__all__ = ["MANIFEST", "staged", "write_text"]
