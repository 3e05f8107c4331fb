"""Out-of-core comparison tables: a Parquet file read one row group at a time, never whole.

:func:`load_parquet_pairs` validates the table in streaming passes -- every check of
:func:`matchaudit.data.load_comparisons`, with the same messages naming file rows (a check of single rows
names those of the first row group that has any; the whole-table checks, e.g. duplicate comparisons, name
all) -- and builds the maps
that fit in memory: identity, sample and group names (O(K) and O(samples)). The result is a
:class:`MatchData` whose ``source`` is a :class:`ParquetPairs`: it re-reads row groups and encodes them
with those maps into the same :class:`PairBlock` codes an in-memory load gives, so every count is
identical. It is picklable and small, so Dask workers read their own row groups (the file must be
reachable from every worker under the same path).

Memory: the maps; one row group (its Arrow columns and its encoded block, ~57 bytes per row); the
duplicate-comparison check (sample-id tables) holds 8 bytes per comparison of one hash share of the table,
at most ``DUP_BYTES`` (more shares re-read the two sample columns), and the encoded rows of the comparisons of
that share listed more than once. Repeated comparisons are kept (``duplicates="keep-both"``, with the warning
an in-memory load gives) or refused; keeping the first or the mean needs the table in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from matchaudit import checks
from matchaudit.choices import DUPLICATE_POLICIES
from matchaudit.machine import physical_memory

from matchaudit.data import validate as v
from matchaudit.data.samples import normalise_group_by
from matchaudit.data.comparison_checks import check_labels_agree, check_split, missing_attribute, pair_columns, sample_identity
from matchaudit.data.readers import column, open_parquet
from matchaudit.errors import InputError
from matchaudit.model import DuplicatePolicy, MatchData, PairBlock, Samples, pair_key

DUP_BYTES = 1 << 27  # duplicate-comparison keys held at once (8 bytes each)
AUTO_SHARE = 0.25  # load_comparisons(out_of_core=None): out of core above this share of physical memory
_STR_BYTES = 64  # in-memory cost of one string cell (pandas object + text), for that estimate


# ----------------------------------------------------------------------------- column decoding (shared)

def _plain(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col


def _strings(col: pa.ChunkedArray, where: v.Where, what: str) -> pa.Array:
    """Stripped, non-missing text of each cell, exactly as :func:`validate.as_str` (the Arrow fast path is
    taken only when its stripping agrees with Python's on every distinct value; else the loader's own)."""
    col = _plain(col)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        t = pc.utf8_trim_whitespace(col).combine_chunks()
        if t.null_count == 0 and not pc.any(pc.equal(pc.utf8_length(t), 0)).as_py():
            if all(u == u.strip() for u in pc.unique(t).to_pylist()):
                return t
    return pa.array(v.as_str(col.to_pandas(), where, what), pa.string())


def _scores(col: pa.ChunkedArray, where: v.Where, distance: bool) -> np.ndarray:
    """As :func:`validate.as_scores` (numeric columns without bad values take a fast path)."""
    col = _plain(col)
    if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
        x = np.asarray(col.to_numpy(), dtype=np.float64)
        if np.isfinite(x).all():
            return -x if distance else x
    return v.as_scores(col.to_pandas(), where, distance=distance)


def _labels(col: pa.ChunkedArray, where: v.Where) -> np.ndarray:
    """As :func:`validate.parse_labels`, parsing each distinct value once."""
    col = _plain(col).combine_chunks()
    uniq = pc.unique(col)
    try:
        parsed = v.parse_labels(uniq.to_pandas(), where)
    except InputError:
        v.parse_labels(col.to_pandas(), where)  # the same error, naming the rows
        raise
    return parsed[pc.index_in(col, value_set=uniq).to_numpy(zero_copy_only=False)]


def _codes(col: pa.ChunkedArray, names: pa.Array, where: v.Where, what: str) -> np.ndarray:
    """Codes of a validated string column into the sorted ``names`` of the validation pass. Fast path: Arrow's
    stripping (every name is stable under Python's, so a value it leaves unstripped is not found and takes
    the loader's own path)."""
    col = _plain(col)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        idx = pc.index_in(pc.utf8_trim_whitespace(col), value_set=names)
        if idx.null_count == 0:
            return idx.to_numpy().astype(np.int64)
    idx = pc.index_in(pa.array(v.as_str(col.to_pandas(), where, what), pa.string()), value_set=names)
    if idx.null_count:
        raise InputError(f"{where.what} changed on disk since it was validated (unknown names); load it again.")
    return idx.to_numpy().astype(np.int64)


# ----------------------------------------------------------------------------- the lazy table

@dataclass(frozen=True, eq=False)
class ParquetPairs:
    """A validated Parquet comparison table, yielding :class:`PairBlock` s one row group at a time."""

    path: str
    what: str  # the table's name in messages
    score_col: str
    distance: bool
    identity_cols: tuple[str, str] | None
    sample_cols: tuple[str, str] | None  # None when the MatchData has no samples
    label_col: str | None  # used for genuine only when there are no identities
    group_by: tuple[str, ...]
    attr_cols: tuple[tuple[str, str], ...]  # label-only tables: the (a, b) columns of each group_by attribute
    identity_names: np.ndarray  # (K,) sorted
    identity_group: np.ndarray  # (K,)
    sample_names: np.ndarray | None  # sorted
    group_names: tuple[str, ...]
    rows: np.ndarray  # rows per row group

    @property
    def has_identities(self) -> bool:
        return self.identity_cols is not None

    def __len__(self) -> int:
        return int(self.rows.sum())

    def n_blocks(self, part: tuple[int, int] = (0, 1)) -> int:
        return len(range(part[0], self.rows.size, part[1]))

    def blocks(self, part: tuple[int, int] = (0, 1)) -> Iterator[PairBlock]:
        """Row groups ``i, i+P, ...`` of ``part=(i, P)``, encoded."""
        f = pq.ParquetFile(self.path)
        if f.metadata.num_rows != len(self) or f.num_row_groups != self.rows.size:
            raise InputError(f"{self.what} changed on disk since it was validated; load it again.")
        offsets = np.concatenate([[0], np.cumsum(self.rows)])
        for rg in range(part[0], self.rows.size, part[1]):
            yield self.encode(f.read_row_group(rg, columns=self.columns), int(offsets[rg]))

    @property
    def columns(self) -> list[str]:
        cols = [self.score_col]
        for pair in (self.identity_cols, self.sample_cols, *self.attr_cols):
            if pair is not None:
                cols += list(pair)
        if self.label_col is not None and self.identity_cols is None:
            cols.append(self.label_col)
        return list(dict.fromkeys(cols))

    def encode(self, t: pa.Table, offset: int) -> PairBlock:
        """One chunk (file rows ``offset..``) as a block with the table's codes."""
        where = v.Where(self.what, base=1 + offset)
        m = t.num_rows
        s = _scores(t[self.score_col], where, self.distance)
        none = np.full(m, -1, dtype=np.int64)
        if self.identity_cols is not None:
            ids = pa.array(self.identity_names, pa.string())
            ia, ib = (_codes(t[c], ids, where, c) for c in self.identity_cols)
            genuine = ia == ib
            ga, gb = self.identity_group[ia], self.identity_group[ib]
        else:
            genuine = _labels(t[self.label_col], where)
            ia = ib = none
            groups = pa.array(self.group_names, pa.string())
            ga, gb = (_codes(pa.chunked_array([pa.array(self.row_groups(t, side, where), pa.string())]), groups,
                             where, "group") for side in (0, 1))
        sa = sb = none
        if self.sample_cols is not None:
            names = pa.array(self.sample_names, pa.string())
            sa, sb = (_codes(t[c], names, where, c) for c in self.sample_cols)
        return PairBlock(score=s, identity_a=ia, identity_b=ib, group_a=ga, group_b=gb, genuine=genuine,
                         sample_a=sa, sample_b=sb)

    def row_groups(self, t: pa.Table, side: int, where: v.Where) -> np.ndarray:
        """Label-only tables: the group name of side ``side`` (0: a, 1: b) of each row."""
        tag = " (side a)" if side == 0 else " (side b)"
        values = {a: _strings(t[cols[side]], where, f"'{a}'{tag}").to_numpy(zero_copy_only=False).astype(str)
                  for a, cols in zip(self.group_by, self.attr_cols)}
        return v.group_names_of(values, self.group_by, t.num_rows).astype(str)


# ----------------------------------------------------------------------------- loading: validation passes

def too_big_for_memory(path: str | Path) -> bool:
    """A Parquet table whose in-memory load (pandas) would take more than ``AUTO_SHARE`` of physical memory."""
    p = Path(path)
    if p.suffix.lower() not in (".parquet", ".pq") or not p.is_file():
        return False
    try:
        meta = pq.ParquetFile(p).metadata
    except Exception:  # not readable: the in-memory loader reports it
        return False
    schema = meta.schema.to_arrow_schema()
    per_row = sum(8 if pa.types.is_floating(f.type) or pa.types.is_integer(f.type) else _STR_BYTES
                  for f in schema)
    return meta.num_rows * per_row > AUTO_SHARE * physical_memory()


def _resolve(f: pq.ParquetFile, where: v.Where, score_col: str, sample_cols, identity_cols, label_col,
             group_by: tuple[str, ...]):
    """Column names as :func:`load_comparisons` resolves them (same messages), mapped to the file's names."""

    original = {str(c).strip(): c for c in f.schema_arrow.names}
    df = pd.DataFrame(columns=list(original))
    column(df, score_col, where, "the score", "score_col")
    samples = pair_columns(df, sample_cols, ("sample_a", "sample_b"), where, "a sample id column", "sample_cols")
    ids = pair_columns(df, identity_cols, ("identity_a", "identity_b"), where, "an identity column", "identity_cols")
    if label_col is None:
        label = "label" if "label" in df.columns else None
    else:
        label = column(df, label_col, where, "the genuine/impostor label", "label_col").name
    attrs = []
    for attr in group_by:
        if f"{attr}_a" not in df.columns or f"{attr}_b" not in df.columns:
            raise InputError(missing_attribute(where, attr, list(df.columns)))
        attrs.append((original[f"{attr}_a"], original[f"{attr}_b"]))
    pair = lambda x: None if x is None else (original[x[0].name], original[x[1].name])  # noqa: E731
    return (original[score_col], pair(samples), pair(ids), None if label is None else original[label],
            tuple(attrs))


def _row_groups(f: pq.ParquetFile, columns: list[str]) -> Iterator[tuple[int, pa.Table]]:
    offset = 0
    for rg in range(f.num_row_groups):
        t = f.read_row_group(rg, columns=columns)
        yield offset, t
        offset += t.num_rows


class _Seen:
    """The distinct rows of a stream of frames, compacted as they arrive (memory: O(distinct rows))."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def add(self, **columns: np.ndarray) -> None:
        self.parts.append(pd.DataFrame(columns).drop_duplicates())
        if len(self.parts) >= 16:
            self.parts = [self.all()]

    def all(self) -> pd.DataFrame:
        return pd.concat(self.parts, ignore_index=True).drop_duplicates(ignore_index=True)


def _np(*arrays: pa.Array) -> np.ndarray:
    return np.concatenate([x.to_numpy(zero_copy_only=False) for x in arrays]).astype(str)


def load_parquet_pairs(path: str | Path, *, score_col: str = "score",
                       sample_cols: tuple[str, str] | None = ("sample_a", "sample_b"),
                       identity_cols: tuple[str, str] | None = ("identity_a", "identity_b"),
                       label_col: str | None = None, group_by: str | Sequence[str] = (),
                       distance: bool = False, duplicates: DuplicatePolicy = "keep-both") -> MatchData:
    """Validate a Parquet comparison table in streaming passes and return its out-of-core MatchData
    (arguments as :func:`matchaudit.data.load_comparisons`; ``duplicates``: "keep-both" or "refuse", as
    "first" and "mean" rewrite the table: an InputError when there are repeated comparisons)."""

    checks.choice(duplicates, DUPLICATE_POLICIES, "duplicates")
    f, where = open_parquet(path, "comparison table")
    group_by = normalise_group_by(group_by)
    score, samples, ids, label, attrs = _resolve(f, where, score_col, sample_cols, identity_cols, label_col,
                                                 group_by)
    if samples is None:
        v.duplicates_without_samples(duplicates, where)
    if ids is None and label is None:
        raise InputError(
            f"{where.what}: neither identities nor labels, so genuine and impostor comparisons cannot be told "
            "apart. Give the two identity columns, a label column, or sample ids with a sample metadata table "
            "holding each sample's identity."
        )
    proto = ParquetPairs(path=str(Path(path).resolve()), what=where.what, score_col=score, distance=distance,
                         identity_cols=ids, sample_cols=None, label_col=label, group_by=group_by,
                         attr_cols=() if ids is not None else attrs, identity_names=np.array([], str),
                         identity_group=np.array([], np.int64), sample_names=None, group_names=(),
                         rows=np.array([f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)]))
    columns = [score, *(samples or ()), *(ids or ()), *([label] if label else []), *(c for p in attrs for c in p)]
    seen_ids, seen_samples, seen_groups = _Seen(), _Seen(), _Seen()
    for offset, t in _row_groups(f, list(dict.fromkeys(columns))):
        w = v.Where(where.what, base=1 + offset)
        m = t.num_rows
        _scores(t[score], w, distance)
        if samples is not None:
            sa, sb = (_strings(t[c], w, c) for c in samples)
            if pc.any(pc.equal(sa, sb)).as_py():
                names, codes = v.encode(_np(sa, sb))
                v.check_self_pairs(codes[:m], codes[m:], names, w)
        lab = _labels(t[label], w) if label is not None else None
        if ids is not None:
            ia, ib = (_strings(t[c], w, c) for c in ids)
            if lab is not None:
                check_labels_agree(lab, pc.equal(ia, ib).to_numpy(zero_copy_only=False), w)
            values = {a: np.concatenate([_strings(t[ca], w, f"'{a}' (side a)").to_numpy(zero_copy_only=False),
                                         _strings(t[cb], w, f"'{a}' (side b)").to_numpy(zero_copy_only=False)])
                      for a, (ca, cb) in zip(group_by, attrs)}
            seen_ids.add(id=_np(ia, ib), **values)
            if samples is not None:
                seen_samples.add(s=_np(sa, sb), id=_np(ia, ib))
        else:
            na, nb = proto.row_groups(t, 0, w), proto.row_groups(t, 1, w)
            check_split(lab, na, nb, w)
            seen_groups.add(g=np.concatenate([na, nb]))
            if samples is not None:
                seen_samples.add(s=_np(sa, sb))
    sample_names = None
    if samples is not None:
        so = seen_samples.all()
        sample_names, _ = v.encode(so["s"].to_numpy(str))
    identity_of_sample = None
    if ids is not None:
        occ = seen_ids.all()
        identity_names, codes = v.encode(occ["id"].to_numpy(str))
        identity_group, group_names = v.identity_groups(codes, identity_names,
                                                        {a: occ[a].to_numpy(str) for a in group_by}, group_by)
        if sample_names is not None:
            identity_of_sample = sample_identity(
                pd.Index(sample_names).get_indexer(so["s"].to_numpy(str)).astype(np.int64), np.zeros(0, np.int64),
                pd.Index(identity_names).get_indexer(so["id"].to_numpy(str)).astype(np.int64), sample_names,
                identity_names, where)
        source = replace(proto, identity_names=identity_names, identity_group=identity_group,
                         sample_names=sample_names, sample_cols=samples, group_names=group_names)
    else:
        identity_names, identity_group = proto.identity_names, proto.identity_group
        group_names = tuple(str(g) for g in np.unique(seen_groups.all()["g"].to_numpy(str)))
        source = replace(proto, group_names=group_names)
    notes: list[str] = []
    if samples is not None:
        notes += _check_duplicates(f, replace(source, sample_cols=samples, sample_names=sample_names), where,
                                   duplicates)
    _check_coverage(source)
    samples_obj = None
    if identity_of_sample is not None:
        samples_obj = Samples(ids=sample_names, identity=identity_of_sample)
        notes += v.single_sample_warnings(identity_names, np.bincount(identity_of_sample, minlength=identity_names.size))
    return MatchData(identity_names=identity_names, identity_group=identity_group, group_names=group_names,
                     group_by=group_by, protocol="listed",
                     score_kind="negated distance" if distance else "similarity", samples=samples_obj,
                     source=source, warnings=v.emit(notes))


def _check_coverage(source: ParquetPairs) -> None:
    """:func:`matchaudit.data.samples.check_pair_coverage`, streaming (this pass also proves the encoding)."""
    k = len(source.group_names)
    gen = np.zeros(k, np.int64)
    imp = np.zeros(k, np.int64)
    for b in source.blocks():
        same = b.group_a == b.group_b
        gen += np.bincount(b.group_a[same & b.genuine], minlength=k)
        imp += np.bincount(b.group_a[same & ~b.genuine], minlength=k)
    v.check_group_coverage(source.group_names, gen, imp)


def _check_duplicates(f: pq.ParquetFile, source: ParquetPairs, where: v.Where, policy: str) -> list[str]:
    """:func:`validate.resolve_duplicates` over the whole table (``source`` with its sample columns), streaming:
    the pair keys of one hash share at a time (at most ``DUP_BYTES``), sorted in place; on a hit, the rows of
    the repeated pairs are encoded and checked as the loader does, share by share, and their counts summed.
    Returns the warning (keep-both), or raises (refuse; first and mean, which rewrite the table, need it in
    memory)."""
    cols = source.sample_cols
    assert cols is not None and source.sample_names is not None
    names = source.sample_names
    arrow_names = pa.array(names, pa.string())
    n = np.int64(names.size)
    shares = max(1, -(-8 * f.metadata.num_rows // DUP_BYTES))

    def keys() -> Iterator[tuple[int, np.ndarray]]:
        for offset, t in _row_groups(f, list(cols)):
            a, b = (_codes(t[c], arrow_names, where, c) for c in cols)
            yield offset, pair_key(a, b, n)

    repeats: v.Repeats | None = None
    for j in range(shares):
        k = np.concatenate([x[x % shares == j] for _, x in keys()])
        k.sort()
        dup = np.unique(k[1:][k[1:] == k[:-1]])
        if dup.size:
            rows, hits = [], []
            for offset, t in _row_groups(f, source.columns):
                block = source.encode(t, offset)
                x = pair_key(block.sample_a, block.sample_b, n)
                hit = np.flatnonzero(np.isin(x, dup))
                rows.append(offset + hit)
                hits.append(block.take(hit))
            b = PairBlock.concat(hits)
            found = v.resolve_duplicates(b.sample_a, b.sample_b, b.score, names, where, "keep-both",
                                         rows=np.concatenate(rows), genuine=b.genuine,
                                         groups=(b.group_a, b.group_b)).repeats
            assert found is not None
            repeats = found if repeats is None else repeats + found
    if repeats is None:
        return []
    message = v.duplicates_message(repeats, where, policy, out_of_core=True)
    if policy != "keep-both":
        raise InputError(message, param="duplicates")
    return [message]


__all__ = ["ParquetPairs", "load_parquet_pairs", "too_big_for_memory"]
