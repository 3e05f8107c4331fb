"""A similarity matrix (probes x references, or one set against itself) with an optional mask of the cells that
are trials -> a listed :class:`matchaudit.model.MatchData`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, Union

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.readers import file_head, column, read_table
from matchaudit.data.samples import normalise_group_by
from matchaudit.data.score_files import PathLike, comparisons, read_columns
from matchaudit.errors import InputError, listing
from matchaudit.model import DuplicatePolicy, MatchData

Ids = Union[PathLike, Sequence[str], np.ndarray]


@dataclass(frozen=True)
class _Cells(v.Where):
    """A :class:`Where` for matrix cells: comparison ``i`` is reported as its (row, column) cell."""

    cells: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, np.int64),) * 2,
                                                 compare=False)

    def rows(self, idx: Sequence[int] | np.ndarray) -> str:
        shown = [f"({int(self.cells[0][i])}, {int(self.cells[1][i])})" for i in idx]
        return f"cell{'s' if len(shown) > 1 else ''} {listing(shown)} (row, column; 0-based)"


def _load_array(path: PathLike, role: str) -> np.ndarray:
    """A 2-D array from a .npy file, or the array ``scores``/``mask`` of a .npz file (no pickles)."""
    p = Path(path)
    what = f"{role} '{p.name}'"
    head = file_head(p, v.Where(what))
    if not (head.startswith(b"\x93NUMPY") or head.startswith(b"PK")):
        raise InputError(f"{what} is not a NumPy .npy or .npz file. Save it with np.save or np.savez.")
    try:
        loaded = np.load(p, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                if role not in loaded.files:
                    raise InputError(f"{what} has no array '{role}' (arrays present: {listing(loaded.files)}). Save "
                                     f"it as np.savez(path, {role}=M).")
                loaded = loaded[role]
    except (ValueError, OSError) as exc:  # object arrays need pickles, which we never load; truncated files
        raise InputError(f"{what}: cannot read ({exc}). Save a numeric array with np.save.") from exc
    arr = np.asarray(loaded)
    if arr.ndim != 2:
        raise InputError(f"{what}: shape {arr.shape}; give a 2-D array (rows = probes, columns = references).")
    return arr


def _ids(ids: Ids, role: str, n: int, axis: str, matrix: str) -> np.ndarray:
    """Sample ids from a one-id-per-line file or a sequence; one per matrix ``axis``, each once."""
    if isinstance(ids, (str, Path)):
        (arr,), where = read_columns(ids, role, {1: "one sample id per line"})
    else:
        arr, where = np.asarray(ids, dtype=object), v.Where(role)
    if len(arr) != n:
        raise InputError(f"{where.what} has {len(arr)} ids but {matrix} has {n} {axis}s; give one id per {axis}, "
                         "in order.")
    v.check_unique_ids(v.as_str(arr, where, "sample id"), where)
    return v.as_str(arr, where, "sample id")


def load_score_matrix(
    matrix: PathLike, ids: Ids, samples: PathLike, *, column_ids: Ids | None = None, mask: PathLike | None = None,
    id_col: str = "sample_id", identity_col: str = "identity", group_by: str | Sequence[str] = (),
    distance: bool = False, duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """A score matrix (``.npy``, or ``.npz`` with an array ``scores``): ``scores[i, j]`` compares sample
    ``ids[i]`` with ``column_ids[j]``.

    One set against itself (no ``column_ids``; a square matrix): by default the trials are the cells above the
    diagonal (each unordered pair once, no self-comparisons). Probes x references (``column_ids`` given): by
    default every cell. ``mask``: a boolean array of the matrix's shape (``.npy``, or ``.npz`` with ``mask``)
    marking the cells that are trials; other cells may hold anything (NaN). ``ids``/``column_ids``: files with
    one sample id per line, or sequences. ``samples``: a table (CSV/TSV/Parquet) with ``id_col``,
    ``identity_col`` and the ``group_by`` columns for every id. A pair of samples in two trial cells (``[i, j]``
    and ``[j, i]`` of a mask, or probes and references sharing ids): ``duplicates`` as in
    :func:`matchaudit.data.from_scores`.

    Example::

        data = load_score_matrix("scores.npy", "ids.txt", "samples.csv", group_by="gender")
    """
    scores = _load_array(matrix, "scores")
    what = f"score matrix '{Path(matrix).name}'"
    if scores.dtype.kind not in "iuf":
        raise InputError(f"{what}: dtype {scores.dtype} is not numeric; scores must be integers or floats.")
    one_set = column_ids is None
    if one_set and scores.shape[0] != scores.shape[1]:
        raise InputError(f"{what}: shape {scores.shape} is not square; give column_ids (the ids of its "
                         "columns) for a probes x references matrix.")
    rows = _ids(ids, "row id list", scores.shape[0], "row", what)
    cols = rows if one_set else _ids(column_ids, "column id list", scores.shape[1], "column", what)  # type: ignore[arg-type]
    if mask is None:
        if one_set:  # the upper triangle stands for both orders: only if the lower one says the same
            upper = np.triu_indices(scores.shape[0], 1)
            a, b = scores[upper], scores.T[upper]
            differ = np.flatnonzero(np.isfinite(a) & np.isfinite(b) & (a != b))  # NaN cells: the checks below
            if differ.size:
                i, j = upper[0][differ[0]], upper[1][differ[0]]
                raise InputError(
                    f"{what} is not symmetric: {differ.size:,} pairs score differently in [i, j] and [j, i] (first "
                    f"[{i}, {j}] = {scores[i, j]:g}, [{j}, {i}] = {scores[j, i]:g}), and a one-set matrix is read from "
                    "its upper triangle. Symmetrise it, or give a mask marking the cells that are trials (both "
                    "orders count then).")
        trial = np.triu(np.ones(scores.shape, dtype=bool), k=1) if one_set else np.ones(scores.shape, dtype=bool)
    else:
        trial = _load_array(mask, "mask")
        if trial.dtype != bool or trial.shape != scores.shape:
            raise InputError(f"mask '{Path(mask).name}': {trial.dtype} array of shape {trial.shape}; give a boolean "
                             f"array of the matrix's shape {scores.shape} (True where a cell is a trial).")
        if not trial.any():
            raise InputError(f"mask '{Path(mask).name}' marks no cell as a trial.")
    r, c = np.nonzero(trial)
    where = _Cells(what, cells=(r, c))
    table, twhere = read_table(samples, "samples table")
    keys = v.as_str(column(table, id_col, twhere, "the sample id", "id_col"), twhere, f"'{id_col}'")
    v.check_unique_ids(keys, twhere, f"'{id_col}' value")
    index = pd.Index(keys)
    pos = [index.get_indexer(rows[r]), index.get_indexer(cols[c])]
    absent = sorted({str(x) for side, p in zip((rows[r], cols[c]), pos) for x in side[p < 0]})
    if absent:
        raise InputError(f"{twhere.what} (key '{id_col}') lacks sample ids of the matrix: {listing(absent)}. Add "
                         "them with their identity.")
    identity = v.as_str(column(table, identity_col, twhere, "the identity", "identity_col"), twhere, "identity")
    own = tuple({a: column(table, a, twhere, "a group_by attribute", "group_by").to_numpy(dtype=object)[p]
                 for a in normalise_group_by(group_by)} for p in pos)
    return comparisons(scores[r, c].astype(np.float64), (identity[pos[0]], identity[pos[1]]), None,
                       (rows[r], cols[c]), None, None, group_by, distance, where, own=own,  # type: ignore[arg-type]
                       duplicates=duplicates)
