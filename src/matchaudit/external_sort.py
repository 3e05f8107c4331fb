"""Sorting beyond memory: a stream cut into runs, each sorted in memory and spilled to a file, then merged into
arrays on disk (``np.memmap``) that every array consumer reads as it reads arrays in memory; the score views
(:mod:`matchaudit.estimators.score_views`) when their comparisons do not fit in memory.

The merge (:func:`matchaudit.sorting.merge_order`) gives exactly ``np.argsort(kind="stable")``'s order of the whole
stream, so the arrays on disk equal an in-memory sort's to the bit. Files live in a temporary folder
(:class:`Spill`), their space allocated whole before they are written: a disk that cannot hold them is a
:class:`SpillError` when a file is made, never a SIGBUS inside a write. Each file is unlinked as soon as it is mapped where the
system allows it (POSIX), so its space returns when its array is dropped, even if the process is killed; the folder
goes with its :class:`Spill` (garbage collected, :meth:`Spill.close`, or at the latest when the process exits).
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from matchaudit import interrupt
from matchaudit.sorting import merge_order

CHUNK = 1 << 22
"""Entries merged per step (their positions, then one field at a time, in memory: 8 + 8 bytes each)."""


class SpillError(OSError):
    """A file of a :class:`Spill` could not be made (no room on the disk, or the folder gone)."""


class Spill:
    """A temporary folder in ``directory`` (default: :func:`tempfile.gettempdir`, which follows ``TMPDIR``) holding
    arrays on disk; removed with this object. ``OSError`` when the folder cannot be made there."""

    def __init__(self, directory: str | os.PathLike | None = None):
        root = Path(tempfile.gettempdir() if directory is None else directory)
        self.path = Path(tempfile.mkdtemp(prefix="matchaudit-", dir=root))
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)
        self._names = itertools.count()

    def free(self) -> int:
        """Bytes free on the folder's disk."""
        return shutil.disk_usage(self.path).free

    def array(self, dtype: np.dtype | type, n: int) -> np.ndarray:
        """A new writable array of ``n`` entries on disk, its file's space allocated at once (:class:`SpillError`
        where the disk lacks it) and the file unlinked where the system allows (its space returns with the array)."""
        dtype = np.dtype(dtype)
        if n == 0:
            return np.empty(0, dtype)
        path = self.path / f"{next(self._names)}.bin"
        try:
            with open(path, "wb+") as f:
                _allocate(f.fileno(), n * dtype.itemsize)
            out = np.memmap(path, dtype, "r+", shape=(n,))
        except OSError as e:
            path.unlink(missing_ok=True)
            raise SpillError(e.errno, f"{e.strerror or e} ({n * dtype.itemsize:,} bytes)", str(path)) from e
        try:
            path.unlink()
        except OSError:  # a mapped file stays until the folder goes (Windows)
            pass
        return out

    def close(self) -> None:
        """Remove the folder now (arrays still mapped keep their data until dropped, on POSIX)."""
        self._remove()


def _allocate(fd: int, size: int) -> None:
    """Reserve ``size`` bytes for the file ``fd`` (``posix_fallocate``; where the file system or platform has
    none, a sparse file of that size)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except AttributeError:
        os.ftruncate(fd, size)
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        os.ftruncate(fd, size)


def runs_of(chunks: Iterable[list[np.ndarray]], size: int) -> Iterator[tuple[int, list[np.ndarray]]]:
    """The stream of ``chunks`` (lists of equal-length arrays: fields of the same entries) cut into runs of ``size``
    entries (the last fewer): (position of its first entry in the stream, its fields). Each chunk's list is emptied
    as it is taken and a run's list is the only reference kept to the run, so a consumer that empties it frees the
    arrays as it goes (a chunk cut across runs lives until its last run is made)."""
    held: list[list[np.ndarray]] = []
    count = start = 0
    for chunk in chunks:
        rest: list[np.ndarray] | None = chunk[:]
        chunk.clear()
        while rest is not None and len(rest[0]):
            take = min(size - count, len(rest[0]))
            if take < len(rest[0]):
                held.append([x[:take] for x in rest])
                rest = [x[take:] for x in rest]
            else:
                held.append(rest)
                rest = None
            count += take
            if count == size:
                run, held = _joined(held), []
                yield start, run
                start, count = start + size, 0
    if held:
        run, held = _joined(held), []
        yield start, run


def _joined(pieces: list[list[np.ndarray]]) -> list[np.ndarray]:
    """The fields of consecutive pieces of a stream, one array each."""
    return [x[0] if len(pieces) == 1 else np.concatenate(x) for x in zip(*pieces)]


def external_sort(runs: Iterable[Sequence[np.ndarray]], n: int, spill: Spill) -> list[np.ndarray]:
    """Fields of the ``n`` entries of a stream given as its consecutive ``runs`` (tuples of equal-length arrays),
    each run already in :func:`matchaudit.sorting.stable_order`'s order of its first field (a float64 key): every
    field in that order of the whole stream, as read-only arrays on disk. Runs spilled, then merged (both on disk
    at once at the peak: twice the fields' bytes; the runs' space returns with this call)."""
    files: list[np.ndarray] = []
    ends = []
    for run in runs:
        if not files:
            files = [spill.array(x.dtype, n) for x in run]
        end = (ends[-1] if ends else 0) + len(run[0])
        for f, x in zip(files, run):
            f[end - len(x):end] = x
        ends.append(end)
        del run, x  # before the next run is made
        interrupt.check()
    assert (ends[-1] if ends else 0) == n, "the runs hold the n entries"
    out = [spill.array(f.dtype, n) for f in files]
    last = np.array(ends, np.int64)
    heads = np.concatenate([[0], last[:-1]]).astype(np.int64)
    for lo in range(0, n, CHUNK):
        interrupt.check()
        at = merge_order(files[0], heads, last, CHUNK)
        for o, f in zip(out, files):
            o[lo:lo + at.size] = f[at]
    for o in out:  # no flush: the files are read back through the same pages, and never kept
        o.flags.writeable = False
    return out


__all__ = ["CHUNK", "Spill", "SpillError", "external_sort", "runs_of"]
