"""What the score-file importers share: reading whitespace-separated text files (gzip, comments, a header line)
with line numbers for messages, joining two files on their trial keys, the speaker (identity) of an id, group
attributes by identity from a metadata table, and the hand-over to the one comparisons builder.

Files are only read; every error names the file and its 1-based line numbers.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.comparisons import build_comparisons
from matchaudit.data.readers import file_head, column, read_table
from matchaudit.data.samples import normalise_group_by
from matchaudit.errors import InputError, listing
from matchaudit.model import DuplicatePolicy, FtaPolicy, MatchData

PathLike = Union[str, Path]
SpeakerOf = Union[Literal["prefix", "path"], Mapping[str, str], PathLike, None]
"""How to find the speaker (identity) of an enrol/test id: ``"prefix"`` (text before the first '-' or '/',
Kaldi's speaker-prefixed utterance ids), ``"path"`` (first path component, VoxCeleb's ``id10270/x6u.../00001.wav``),
a mapping id -> speaker, or a path to a two-column whitespace file ``<id> <speaker>`` (Kaldi ``utt2spk``)."""

Column = Union[np.ndarray, pd.Series]
Sides = tuple[Mapping[str, Column], Mapping[str, Column]]

_META_KEYS = ("identity", "speaker", "speaker_id", "subject", "subject_id", "VoxCeleb1 ID", "VoxCeleb2 ID", "id")


@dataclass(frozen=True)
class Lines(v.Where):
    """A :class:`Where` for text files: row ``i`` is reported as its line number in the file."""

    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), compare=False)

    def rows(self, idx: Sequence[int] | np.ndarray) -> str:
        shown = [int(self.lines[int(i)]) for i in idx]
        return f"line{'s' if len(shown) > 1 else ''} {listing(shown)}"


def read_text(path: PathLike, role: str) -> tuple[str, str]:
    """The UTF-8 text of a (possibly gzip-compressed) file, and the file's name for messages."""
    p = Path(path)
    what = f"{role} '{p.name}'"
    head = file_head(p, v.Where(what))
    raw = p.read_bytes()
    if head.startswith(b"\x1f\x8b"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"{what}: corrupt gzip file ({exc}).") from exc
    if b"\x00" in raw[:8192]:
        raise InputError(f"{what} is binary, not a whitespace-separated text file.")
    try:
        return raw.decode("utf-8-sig"), what
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc


def data_lines(path: PathLike, role: str, expected: str) -> tuple[list[list[str]], list[int], str]:
    """The blank-separated fields of each data line (blank lines and ``#`` comments skipped), with line numbers."""
    text, what = read_text(path, role)
    rows: list[list[str]] = []
    numbers: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            rows.append(fields)
            numbers.append(n)
    if not rows:
        raise InputError(f"{what} has no data lines (only blanks or # comments). Expected columns: {expected}.")
    return rows, numbers, what


def _check_counts(rows: list[list[str]], where: Lines, k: int, expected: str, first: str) -> None:
    counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(counts != k)
    if bad.size:
        found = listing(sorted(set(counts[bad].tolist())))
        raise InputError(
            f"{where.what}: wrong number of columns at {where.rows(bad)} (found {found}; expected {expected}"
            + (f", as on its {first}" if k > 0 else "") + "). Columns are separated by blanks, so ids "
            "must not contain spaces; fix or remove those lines."
        )


def read_columns(path: PathLike, role: str, layouts: Mapping[int, str]) -> tuple[list[np.ndarray], Lines]:
    """Whitespace-separated columns of a text file without a header; every data line must have one of
    ``layouts``' column counts (the first data line's count, for all lines)."""
    expected = " or ".join(f"{k} ({layout})" for k, layout in layouts.items())
    rows, numbers, what = data_lines(path, role, expected)
    where = Lines(what, lines=np.asarray(numbers, dtype=np.int64))
    k = len(rows[0]) if len(rows[0]) in layouts else -1
    # once the first line chose a layout, every line must have that one ("expected 4 or 3, as on its first data
    # line" said nothing of which: the first line had 3)
    _check_counts(rows, where, k, f"{k} ({layouts[k]})" if k > 0 else expected, "first data line")
    return [np.array(c, dtype=object) for c in zip(*rows)], where


def read_named_columns(
    path: PathLike, role: str, names: Mapping[str, Sequence[str]]
) -> tuple[dict[str, np.ndarray], Lines]:
    """Whitespace-separated columns of a text file whose first data line is a header naming them.

    ``names``: for each wanted column, the header names it may have (matched ignoring case); other columns are
    allowed and ignored. Later lines equal to the header (logs concatenated with ``cat``) are skipped.
    """
    expected = "a header line naming " + ", ".join(alts[0] for alts in names.values())
    rows, numbers, what = data_lines(path, role, expected)
    header = rows[0]
    keep = [i for i, r in enumerate(rows) if i and r != header]
    where = Lines(what, lines=np.asarray([numbers[i] for i in keep], dtype=np.int64))
    lower = [h.lower() for h in header]
    found: dict[str, int] = {}
    for key, alts in names.items():
        hit = next((lower.index(a.lower()) for a in alts if a.lower() in lower), None)
        if hit is None:
            raise InputError(
                f"{what}: no column '{alts[0]}' in its header line (line {numbers[0]}: {' '.join(header)}). The "
                f"first data line must name the columns, e.g. {' '.join(a[0] for a in names.values())}."
            )
        found[key] = hit
    if not keep:
        raise InputError(f"{what} has a header line but no data lines.")
    body = [rows[i] for i in keep]
    _check_counts(body, where, len(header), f"{len(header)} ({' '.join(header)})", "header line")
    return {key: np.array([r[i] for r in body], dtype=object) for key, i in found.items()}, where


def _keys(cols: Sequence[np.ndarray]) -> pd.Index:
    joined = pd.Series(cols[0], dtype=object)
    for c in cols[1:]:
        joined = joined + "\t" + pd.Series(c, dtype=object)
    return pd.Index(joined)


def join_rows(
    keys: Sequence[np.ndarray], where: Lines, other: Sequence[np.ndarray], owhere: Lines, *,
    fields: str = "(enrol, test)", unit: str = "pair", noun: str = "score", fix: str = "Score them",
    every_other: bool = True,
) -> np.ndarray:
    """For each trial (row of ``keys``, e.g. enrol and test ids), the row of ``other`` with the same key: one per
    trial, none missing, and (``every_other``) no row of ``other`` left over."""
    okeys = _keys(other)
    dup = np.flatnonzero(okeys.duplicated(keep=False))
    if dup.size:
        raise InputError(
            f"{owhere.what}: more than one {noun} for the same {fields} {unit} at {owhere.rows(dup)} "
            f"(e.g. {' '.join(str(c[dup[0]]) for c in other)}). Keep one {noun} per trial."
        )
    pos = okeys.get_indexer(_keys(keys))
    missing = np.flatnonzero(pos < 0)
    if missing.size:
        raise InputError(
            f"{where.what}: trials without a {noun} in {owhere.what} at {where.rows(missing)} (e.g. "
            f"{' '.join(str(c[missing[0]]) for c in keys)}). {fix}, or remove them from the trials; {unit}s are "
            f"matched exactly on {fields}, in that order."
        )
    unused = np.setdiff1d(np.arange(len(okeys)), pos) if every_other else np.zeros(0, np.int64)
    if unused.size:
        raise InputError(
            f"{owhere.what}: {noun}s for {unit}s that are not in {where.what} at {owhere.rows(unused)} (e.g. "
            f"{' '.join(str(c[unused[0]]) for c in other)}). Check that the two files belong together, or remove "
            "those lines."
        )
    return pos


def join_scores(
    enrol: np.ndarray, test: np.ndarray, trials: Lines, s_enrol: np.ndarray, s_test: np.ndarray,
    s_score: np.ndarray, scores: Lines,
) -> np.ndarray:
    """The score of each trial from ``enrol test score`` lines: one score per trial, and no others."""
    score = v.as_scores(s_score, scores, advice=v.NO_FAILURE_FIELD)
    return score[join_rows((enrol, test), trials, (s_enrol, s_test), scores)]


def speakers(ids: np.ndarray, speaker_of: SpeakerOf, where: Lines, what: str, who: str = "speaker") -> np.ndarray:
    """The speaker of each enrol/test id (see :data:`SpeakerOf`); ``who`` names it in messages (an FRTE match log's
    templates have subjects, given by ``subject_of``)."""
    s = pd.Series(ids, dtype=object)
    if isinstance(speaker_of, str) and speaker_of in ("prefix", "path"):
        if speaker_of == "path":
            bad = np.flatnonzero(~s.str.contains("/", regex=False).to_numpy())
            if bad.size:
                raise InputError(
                    f"{where.what}: {what} ids at {where.rows(bad)} are not paths like "
                    f"'id10270/x6uYqmx31kE/00001.wav' (e.g. {s.iloc[bad[0]]!r}), so their {who} is unknown. Give "
                    f"{who}_of='prefix' (text before the first '-' or '/') or a mapping id -> {who}."
                )
            return s.str.split("/", n=1).str[0].to_numpy(dtype=object)
        return s.str.split(r"[-/]", n=1, regex=True).str[0].to_numpy(dtype=object)
    if isinstance(speaker_of, Mapping):
        table, source = pd.Series(dict(speaker_of), dtype=object), f"the {who} mapping"
    else:
        (utt, spk), mwhere = read_columns(speaker_of, f"{who} mapping", {2: f"id {who}"})  # type: ignore[arg-type]
        dup = np.flatnonzero(pd.Index(utt).duplicated(keep=False))
        if dup.size:
            raise InputError(f"{mwhere.what}: ids listed more than once at {mwhere.rows(dup)} (e.g. {utt[dup[0]]}). "
                             f"Give each id one {who}.")
        table, source = pd.Series(spk, index=utt, dtype=object), mwhere.what
    mapped = s.map(table)
    bad = np.flatnonzero(mapped.isna().to_numpy())
    if bad.size:
        absent = listing(sorted(set(s.iloc[bad].astype(str))))
        raise InputError(
            f"{where.what}: {what} ids at {where.rows(bad)} have no {who} in {source}: {absent}. Add them"
            + (" (an enrolment model id maps to its own speaker)." if who == "speaker" else ".")
        )
    return mapped.to_numpy(dtype=object)


def read_metadata(path: PathLike) -> tuple[pd.DataFrame, v.Where]:
    """A metadata table (CSV/TSV/Parquet); a .csv that is really tab-separated (VoxCeleb's vox1_meta.csv) too."""
    table, where = read_table(path, "metadata table")
    if table.shape[1] == 1 and "\t" in str(table.columns[0]):
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, na_filter=False,
                            skipinitialspace=True, encoding="utf-8-sig")
        table.columns = [str(c).strip() for c in table.columns]
    return table, where


def attributes_by_identity(
    metadata: PathLike | None, key: str | None, attrs: Sequence[str], sides: Sequence[np.ndarray], where: v.Where
) -> list[dict[str, np.ndarray]]:
    """Per side, the ``attrs`` of each row's identity, looked up in a metadata table keyed by identity."""
    if not attrs:
        return [{} for _ in sides]
    if metadata is None:
        raise InputError(
            f"{where.what}: group_by={list(attrs)} needs a metadata table keyed by identity (metadata=..., e.g. "
            "VoxCeleb's vox1_meta.csv or a CSV with columns identity,gender); the score file has no attributes."
        )
    table, mwhere = read_metadata(metadata)
    key = v.pick_key(table.columns, key, _META_KEYS, mwhere, "identity")
    keys = v.as_str(column(table, key, mwhere, "the identity key", "metadata_key"), mwhere, f"'{key}'")
    v.check_unique_ids(keys, mwhere, f"'{key}' value")
    for attr in attrs:
        column(table, attr, mwhere, "a group_by attribute", "group_by")
    index = pd.Index(keys)
    sides = [v.as_str(ids, where, "identity") for ids in sides]
    rows = [index.get_indexer(ids) for ids in sides]
    bad = np.flatnonzero(np.logical_or.reduce([r < 0 for r in rows]))
    if bad.size:
        absent = listing(sorted({str(i) for ids, r in zip(sides, rows) for i in ids[r < 0]}))
        raise InputError(
            f"{where.what}: identities missing from {mwhere.what} (key '{key}'): {absent} (at {where.rows(bad)}). "
            "Add them to the metadata table or remove those comparisons."
        )
    return [{a: table[a].to_numpy(dtype=object)[r] for a in attrs} for r in rows]


def comparisons(
    score: Column, ids: tuple[np.ndarray, np.ndarray] | None, label: np.ndarray | None,
    samples: tuple[Column, Column] | None, metadata: PathLike | None, metadata_key: str | None,
    group_by: str | Sequence[str], distance: bool, where: v.Where, *, own: Sides = ({}, {}),
    failed: np.ndarray | None = None, fta_policy: FtaPolicy = "refuse", duplicates: DuplicatePolicy = "keep-both",
    conditions: Mapping[str, np.ndarray] | None = None,
) -> MatchData:
    """Hand a file's columns to :func:`matchaudit.data.comparisons.build_comparisons`: the ``group_by``
    attributes are the file's own per-side columns (``own``), the others are looked up by identity in
    ``metadata``; ``failed``/``fta_policy``, ``duplicates`` and ``conditions`` as in :func:`matchaudit.data.from_scores`."""
    group_by = normalise_group_by(group_by)
    rest = [a for a in group_by if a not in own[0]]
    if rest and ids is None:
        raise InputError(
            f"{where.what}: group_by={rest} needs identities to look up in the metadata table; give "
            "speaker_of ('prefix', 'path' or a mapping id -> speaker)."
        )
    if failed is None:  # a format that records no failures: its advice is not --fta-policy, which it refuses
        v.as_scores(score, where, advice=v.NO_FAILURE_FIELD)
    looked = attributes_by_identity(metadata, metadata_key, rest, ids, where) if ids else [{}, {}]
    attrs_a, attrs_b = {**own[0], **looked[0]}, {**own[1], **looked[1]}
    return build_comparisons(
        score, *(ids or (None, None)), label=label, sample_a=samples[0] if samples else None,
        sample_b=samples[1] if samples else None, attributes_a=attrs_a if group_by else None,
        attributes_b=attrs_b if group_by else None, group_by=group_by, distance=distance, where=where,
        failed=failed, fta_policy=fta_policy, duplicates=duplicates, conditions=conditions,
    )
