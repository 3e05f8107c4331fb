"""Reading user files (CSV/TSV/Parquet tables, .npy embeddings) with file-level checks; files are only read.

CSV/TSV cells are read as text (ids keep leading zeros; numbers are parsed and checked later, per column).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from matchaudit.data.validate import Where, missing_column
from matchaudit.errors import InputError, listing

_TEXT = {".csv": ",", ".tsv": "\t"}
_PARQUET = {".parquet", ".pq"}
_PARQUET_MAGIC = b"PAR1"
_NPY_MAGIC = b"\x93NUMPY"
_SNIFF = 8192


def file_path(value: object, role: str) -> Path:
    """``value`` as a path, or an :class:`InputError` saying what to give: a table or an array in memory is no file
    (``ma.load_samples(df, emb)`` ended in ``TypeError: expected str, bytes or os.PathLike``)."""
    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if path.is_dir():  # it was "unsupported file type '(no extension)'"
            raise InputError(f"{role}: {path} is a directory; give the file inside it.")
        return path
    raise InputError(f"{role}: give a file path, not a {type(value).__name__}; for tables and arrays in memory use "
                     "from_embeddings (embeddings and identities) or from_scores (scores and labels or identities).")


def file_head(path: Path, where: Where) -> bytes:
    if not path.exists():
        raise InputError(f"{where.what}: file not found ({path}).")
    if not path.is_file():
        raise InputError(f"{where.what}: {path} is not a file.")
    with path.open("rb") as fh:
        head = fh.read(_SNIFF)
    if not head:
        raise InputError(f"{where.what} is empty (0 bytes). Check the path and that the export finished.")
    return head


def read_table(path: str | Path, role: str) -> tuple[pd.DataFrame, Where]:
    """Read a CSV (.csv), TSV (.tsv) or Parquet (.parquet/.pq) table that has at least one data row."""
    p = file_path(path, role)
    where = Where(f"{role} '{p.name}'", base=1)
    suffix = p.suffix.lower()
    if suffix not in _TEXT and suffix not in _PARQUET:
        raise InputError(
            f"{where.what}: unsupported file type '{suffix or '(no extension)'}'. Expected a table as CSV (.csv), "
            "TSV (.tsv) or Parquet (.parquet); export it to one of these (with a header row)."
        )
    head = file_head(p, where)
    if suffix in _PARQUET:
        if not head.startswith(_PARQUET_MAGIC):
            raise InputError(
                f"{where.what} is not a Parquet file (no Parquet signature). If it is a CSV, rename it to .csv."
            )
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises many types for corrupt files
            raise InputError(f"{where.what}: cannot read as Parquet ({exc}). Re-export the file.") from exc
        return _with_rows(df, where.what), where
    if head.startswith(_PARQUET_MAGIC):
        raise InputError(f"{where.what} is a Parquet file, not text; rename it to .parquet.")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # it was called "binary"
        raise InputError(f"{where.what} is UTF-16 text; save it as UTF-8 (e.g. Excel: CSV UTF-8) and give it again.")
    if b"\x00" in head:
        raise InputError(f"{where.what} is binary, not a text table. Give a UTF-8 {suffix[1:].upper()} file.")
    return text_frame(p, where.what, _TEXT[suffix], skipinitialspace=True, encoding="utf-8-sig"), where


def text_frame(source: object, what: str, sep: str = ",", **options: object) -> pd.DataFrame:
    """A delimited text table (a path or a text buffer) as stripped string columns with at least one data row;
    the one place its parse errors become :class:`InputError` s naming ``what``."""
    kind = "TSV" if sep == "\t" else "CSV"
    try:
        df = pd.read_csv(source, sep=sep, dtype=str, keep_default_na=False, na_filter=False, **options)
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text ({exc.reason}). Save it as UTF-8 {kind}.") from exc
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"{what} has no header and no rows.") from exc
    except pd.errors.ParserError as exc:
        raise InputError(f"{what}: malformed {kind} ({exc}).") from exc
    return _with_rows(df, what)


def _with_rows(df: pd.DataFrame, what: str) -> pd.DataFrame:
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise InputError(f"{what} has no data rows (columns: {', '.join(df.columns) or 'none'}).")
    return df


def open_parquet(path: str | Path, role: str) -> tuple[pq.ParquetFile, Where]:
    """Open a Parquet table for reading a row group at a time (the file checks of :func:`read_table`)."""
    p = file_path(path, role)
    where = Where(f"{role} '{p.name}'", base=1)
    if p.suffix.lower() not in _PARQUET:
        raise InputError(
            f"{where.what}: out-of-core reading needs a Parquet file (.parquet), not '{p.suffix or '(none)'}'. "
            "Convert the table to Parquet (with row groups of about 1 million rows), or load it in memory."
        )
    if not file_head(p, where).startswith(_PARQUET_MAGIC):
        raise InputError(f"{where.what} is not a Parquet file (no Parquet signature). If it is a CSV, rename it to .csv.")
    try:
        f = pq.ParquetFile(p)
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise InputError(f"{where.what}: cannot read as Parquet ({exc}). Re-export the file.") from exc
    if f.metadata.num_rows == 0:
        raise InputError(f"{where.what} has no data rows (columns: {', '.join(f.schema_arrow.names) or 'none'}).")
    return f, where


def column(df: pd.DataFrame, name: str, where: Where, role: str, arg: str | None = None) -> pd.Series:
    """The named column, or an InputError listing the columns present and close matches."""
    if name not in df.columns:
        raise InputError(missing_column(where, name, list(df.columns), role, arg), param=arg)
    return df[name]


def read_npy(path: str | Path, role: str = "embeddings") -> tuple[np.ndarray, Where]:
    """A 2-D numeric (integer or float) array from a .npy file (no pickles)."""
    p = file_path(path, role)
    where = Where(f"{role} '{p.name}'", base=1)
    if p.suffix.lower() != ".npy":
        raise InputError(
            f"{where.what}: unsupported file type '{p.suffix or '(no extension)'}'. Embeddings must be a NumPy "
            ".npy file (np.save), or a Parquet list column (embedding_col=...)."
        )
    head = file_head(p, where)
    if not head.startswith(_NPY_MAGIC):
        raise InputError(f"{where.what} is not a NumPy .npy file (no .npy signature). Save it with np.save.")
    try:
        arr = np.load(p, allow_pickle=False)
    except Exception as exc:  # object arrays, truncated files
        raise InputError(f"{where.what}: cannot read ({exc}). Save a numeric 2-D array with np.save.") from exc
    check_embedding_array(arr, where)
    return arr, where


def check_embedding_array(arr: np.ndarray, where: Where) -> None:
    """Embeddings are a 2-D integer or float array with at least one column."""
    if arr.dtype.kind not in "iuf":
        raise InputError(f"{where.what}: dtype {arr.dtype} is not numeric; embeddings must be integers or floats.")
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InputError(
            f"{where.what}: shape {arr.shape}; embeddings must be 2-D (one row per sample, one column per "
            "dimension)."
        )


def list_column(values: pd.Series, where: Where) -> np.ndarray:
    """A Parquet list column (one vector per row) as an (n, d) float64 array."""
    lengths = []
    bad: list[int] = []
    for i, v in enumerate(values):
        if v is None or np.ndim(v) != 1:
            bad.append(i)
            lengths.append(-1)
        else:
            lengths.append(len(v))
    if bad:
        raise InputError(
            f"{where.what}: missing or non-list embedding at {where.rows(bad)}. Every row needs one vector "
            "(list columns need a Parquet file; with a CSV table give a .npy as embeddings_path)."
        )
    lens = np.asarray(lengths)
    common = int(np.bincount(lens).argmax())
    odd = np.flatnonzero(lens != common)
    if odd.size:
        raise InputError(
            f"{where.what}: embeddings of length {listing(sorted(set(lens[odd].tolist())))} at {where.rows(odd)}; "
            f"most rows have length {common}. All embeddings must have the same dimension."
        )
    try:
        arr = np.array([np.asarray(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where.what}: embedding values are not numeric ({exc}).") from exc
    check_embedding_array(arr, where)
    return arr
