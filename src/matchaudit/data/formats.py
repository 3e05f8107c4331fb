"""Importers for score files people already have: bob 4/5-column, Kaldi trials + scores, VoxCeleb trial lists,
embeddings keyed by identity (cimat) -> :class:`matchaudit.model.MatchData`.

Each importer only parses its format and hands the columns to the shared builders (the ones behind
:func:`matchaudit.data.from_scores` and :func:`matchaudit.data.from_embeddings`), so every check lives once;
errors name the file and its 1-based line numbers. Files are only read. Whitespace-separated files may be
gzip-compressed; blank lines and lines starting with ``#`` are skipped (as bob does).
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
from matchaudit.data.samples import build_samples, normalise_group_by
from matchaudit.data.readers import _head, check_embedding_array, column, list_column, read_table
from matchaudit.errors import InputError, listing
from matchaudit.model import MatchData, Metric

PathLike = Union[str, Path]
SpeakerOf = Union[Literal["prefix", "path"], Mapping[str, str], PathLike, None]
"""How to find the speaker (identity) of an enrol/test id: ``"prefix"`` (text before the first '-' or '/',
Kaldi's speaker-prefixed utterance ids), ``"path"`` (first path component, VoxCeleb's ``id10270/x6u.../00001.wav``),
a mapping id -> speaker, or a path to a two-column whitespace file ``<id> <speaker>`` (Kaldi ``utt2spk``)."""

_META_KEYS = ("identity", "speaker", "speaker_id", "subject", "subject_id", "VoxCeleb1 ID", "VoxCeleb2 ID", "id")


@dataclass(frozen=True)
class _Lines(v.Where):
    """A :class:`Where` for whitespace files: row ``i`` is reported as its line number in the file."""

    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), compare=False)

    def rows(self, idx: Sequence[int] | np.ndarray) -> str:
        shown = [int(self.lines[int(i)]) for i in idx]
        return f"line{'s' if len(shown) > 1 else ''} {listing(shown)}"


def _read_columns(path: PathLike, role: str, layouts: Mapping[int, str]) -> tuple[list[np.ndarray], _Lines]:
    """Whitespace-separated columns of a text file; every data line must have one of ``layouts``' column
    counts (the first data line's count, for all lines)."""
    p = Path(path)
    what = f"{role} '{p.name}'"
    head = _head(p, v.Where(what))
    raw = p.read_bytes()
    if head.startswith(b"\x1f\x8b"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"{what}: corrupt gzip file ({exc}).") from exc
    if b"\x00" in raw[:8192]:
        raise InputError(f"{what} is binary, not a whitespace-separated text file.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc
    rows: list[list[str]] = []
    numbers: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            rows.append(fields)
            numbers.append(n)
    where = _Lines(what, lines=np.asarray(numbers, dtype=np.int64))
    expected = " or ".join(f"{k} ({layout})" for k, layout in layouts.items())
    if not rows:
        raise InputError(f"{what} has no data lines (only blanks or # comments). Expected columns: {expected}.")
    counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    k = int(counts[0]) if int(counts[0]) in layouts else -1
    bad = np.flatnonzero(counts != k)
    if bad.size:
        found = listing(sorted(set(counts[bad].tolist())))
        raise InputError(
            f"{what}: wrong number of columns at {where.rows(bad)} (found {found}; expected {expected}"
            + (", as on its first data line" if k > 0 else "") + "). Columns are separated by blanks, so ids "
            "must not contain spaces; fix or remove those lines."
        )
    return [np.array(c, dtype=object) for c in zip(*rows)], where


def _keys(a: np.ndarray, b: np.ndarray) -> pd.Index:
    return pd.Index(pd.Series(a, dtype=object) + "\t" + pd.Series(b, dtype=object))


def _join_scores(
    enrol: np.ndarray, test: np.ndarray, trials: _Lines, s_cols: list[np.ndarray], scores: _Lines
) -> np.ndarray:
    """The score of each trial from an ``enrol test score`` file: one score per trial, and no others."""
    s_enrol, s_test, s_score = s_cols
    score = v.as_scores(s_score, scores)
    skeys = _keys(s_enrol, s_test)
    dup = np.flatnonzero(skeys.duplicated(keep=False))
    if dup.size:
        raise InputError(
            f"{scores.what}: more than one score for the same (enrol, test) pair at {scores.rows(dup)} "
            f"(e.g. {s_enrol[dup[0]]} {s_test[dup[0]]}). Keep one score per trial."
        )
    pos = skeys.get_indexer(_keys(enrol, test))
    missing = np.flatnonzero(pos < 0)
    if missing.size:
        raise InputError(
            f"{trials.what}: trials without a score in {scores.what} at {trials.rows(missing)} (e.g. "
            f"{enrol[missing[0]]} {test[missing[0]]}). Score them, or remove them from the trials; pairs are "
            "matched exactly on (enrol, test), in that order."
        )
    unused = np.setdiff1d(np.arange(len(skeys)), pos)
    if unused.size:
        raise InputError(
            f"{scores.what}: scores for pairs that are not in {trials.what} at {scores.rows(unused)} (e.g. "
            f"{s_enrol[unused[0]]} {s_test[unused[0]]}). Check that the two files belong together, or remove "
            "those lines."
        )
    return score[pos]


def _speakers(ids: np.ndarray, speaker_of: SpeakerOf, where: _Lines, what: str) -> np.ndarray:
    """The speaker of each enrol/test id (see :data:`SpeakerOf`)."""
    s = pd.Series(ids, dtype=object)
    if isinstance(speaker_of, str) and speaker_of in ("prefix", "path"):
        if speaker_of == "path":
            bad = np.flatnonzero(~s.str.contains("/", regex=False).to_numpy())
            if bad.size:
                raise InputError(
                    f"{where.what}: {what} ids at {where.rows(bad)} are not paths like "
                    f"'id10270/x6uYqmx31kE/00001.wav' (e.g. {s.iloc[bad[0]]!r}), so their speaker is unknown. Give "
                    "speaker_of='prefix' (text before the first '-' or '/') or a mapping id -> speaker."
                )
            return s.str.split("/", n=1).str[0].to_numpy(dtype=object)
        return s.str.split(r"[-/]", n=1, regex=True).str[0].to_numpy(dtype=object)
    if isinstance(speaker_of, Mapping):
        table, source = pd.Series(dict(speaker_of), dtype=object), "the speaker mapping"
    else:
        (utt, spk), mwhere = _read_columns(speaker_of, "speaker mapping", {2: "id speaker"})  # type: ignore[arg-type]
        dup = np.flatnonzero(pd.Index(utt).duplicated(keep=False))
        if dup.size:
            raise InputError(f"{mwhere.what}: ids listed more than once at {mwhere.rows(dup)} (e.g. {utt[dup[0]]}). "
                             "Give each id one speaker.")
        table, source = pd.Series(spk, index=utt, dtype=object), mwhere.what
    mapped = s.map(table)
    bad = np.flatnonzero(mapped.isna().to_numpy())
    if bad.size:
        absent = listing(sorted(set(s.iloc[bad].astype(str))))
        raise InputError(
            f"{where.what}: {what} ids at {where.rows(bad)} have no speaker in {source}: {absent}. Add them "
            "(an enrolment model id maps to its own speaker)."
        )
    return mapped.to_numpy(dtype=object)


def _read_metadata(path: PathLike) -> tuple[pd.DataFrame, v.Where]:
    """A metadata table (CSV/TSV/Parquet); a .csv that is really tab-separated (VoxCeleb's vox1_meta.csv) too."""
    table, where = read_table(path, "metadata table")
    if table.shape[1] == 1 and "\t" in str(table.columns[0]):
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, na_filter=False,
                            skipinitialspace=True, encoding="utf-8-sig")
        table.columns = [str(c).strip() for c in table.columns]
    return table, where


def _attributes_by_identity(
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
    table, mwhere = _read_metadata(metadata)
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


def _comparisons(
    score: np.ndarray, ids: tuple[np.ndarray, np.ndarray] | None, label: np.ndarray | None,
    samples: tuple[np.ndarray, np.ndarray], metadata: PathLike | None, metadata_key: str | None,
    group_by: str | Sequence[str], distance: bool, where: _Lines,
) -> MatchData:
    group_by = normalise_group_by(group_by)
    if group_by and ids is None:
        raise InputError(
            f"{where.what}: group_by={list(group_by)} needs identities to look up in the metadata table; give "
            "speaker_of ('prefix', 'path' or a mapping id -> speaker)."
        )
    attrs_a, attrs_b = _attributes_by_identity(metadata, metadata_key, group_by, ids or (), where) if ids else ({}, {})
    return build_comparisons(
        score, *(ids or (None, None)), label=label, sample_a=samples[0], sample_b=samples[1],
        attributes_a=attrs_a if group_by else None, attributes_b=attrs_b if group_by else None,
        group_by=group_by, distance=distance, where=where,
    )


def load_bob(
    path: PathLike, *, metadata: PathLike | None = None, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), distance: bool = False,
) -> MatchData:
    """A bob score file: 4 columns ``claimed_id real_id test_label score`` or 5 columns ``claimed_id
    model_label real_id test_label score`` (as ``bob.measure.load.four_column``/``five_column``).

    Genuine iff ``claimed_id == real_id``. Side a is the model (``model_label``; in 4-column files bob has one
    model per client, named by ``claimed_id``), side b the probe (``test_label``). Groups: ``group_by``
    columns of a ``metadata`` table keyed by client id (``metadata_key``).

    Example::

        data = load_bob("scores-dev", metadata="clients.csv", group_by="gender")
    """
    cols, where = _read_columns(path, "bob score file", {4: "claimed_id real_id test_label score",
                                                          5: "claimed_id model_label real_id test_label score"})
    if len(cols) == 4:
        claimed, real, test, score = cols
        model = claimed
    else:
        claimed, model, real, test, score = cols
    return _comparisons(v.as_scores(score, where), (claimed, real), None, (model, test), metadata, metadata_key,
                        group_by, distance, where)


def load_kaldi(
    trials: PathLike, scores: PathLike, *, speaker_of: SpeakerOf = None, metadata: PathLike | None = None,
    metadata_key: str | None = None, group_by: str | Sequence[str] = (), distance: bool = False,
) -> MatchData:
    """Kaldi trials (``enrol test target|nontarget``) joined with scores (``enrol test score``) on (enrol, test).

    Every trial needs exactly one score and every score a trial. Without ``speaker_of`` the labels alone say
    genuine/impostor (no identities: pooled weighting only); with it (see :data:`SpeakerOf`) identities come
    from the ids and must agree with the labels, and ``group_by`` columns come from ``metadata`` keyed by speaker.

    Example::

        data = load_kaldi("trials", "scores", speaker_of="prefix", metadata="spk_meta.csv", group_by="gender")
    """
    (enrol, test, label), t_where = _read_columns(trials, "Kaldi trials file", {3: "enrol test target|nontarget"})
    s_cols, s_where = _read_columns(scores, "Kaldi scores file", {3: "enrol test score"})
    score = _join_scores(enrol, test, t_where, s_cols, s_where)
    lab = v.parse_labels(label, t_where)
    ids = None
    if speaker_of is not None:
        ids = (_speakers(enrol, speaker_of, t_where, "enrol"), _speakers(test, speaker_of, t_where, "test"))
    return _comparisons(score, ids, lab, (enrol, test), metadata, metadata_key, group_by, distance, t_where)


def load_voxceleb(
    trials: PathLike, scores: PathLike, metadata: PathLike | None = None, *, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), speaker_of: SpeakerOf = "path", distance: bool = False,
) -> MatchData:
    """A VoxCeleb trial list (``label enrol test``, label 1/0) and its scores.

    ``scores``: one score per line aligned with the trial lines, or ``enrol test score`` lines joined on
    (enrol, test). Speakers are the first path component of ``id10270/x6uYqmx31kE/00001.wav`` (``speaker_of``
    to change that); they must agree with the labels. ``metadata``: a speaker table such as ``vox1_meta.csv``
    (tab-separated; key ``VoxCeleb1 ID``) giving the ``group_by`` columns (e.g. ``Gender``, ``Nationality``).

    Example::

        data = load_voxceleb("veri_test2.txt", "scores.txt", "vox1_meta.csv", group_by="Gender")
    """
    (label, enrol, test), t_where = _read_columns(trials, "VoxCeleb trial list", {3: "label enrol test"})
    s_cols, s_where = _read_columns(scores, "scores file", {1: "score, aligned with the trial lines",
                                                            3: "enrol test score"})
    if len(s_cols) == 3:
        score = _join_scores(enrol, test, t_where, s_cols, s_where)
    else:
        if len(s_cols[0]) != len(enrol):
            raise InputError(
                f"{s_where.what} has {len(s_cols[0])} scores but {t_where.what} has {len(enrol)} trials; a "
                "one-column scores file must hold one score per trial line, in order. Use 'enrol test score' "
                "lines to join by pair instead."
            )
        score = v.as_scores(s_cols[0], s_where)
    ids = (_speakers(enrol, speaker_of, t_where, "enrol"), _speakers(test, speaker_of, t_where, "test"))
    return _comparisons(score, ids, v.parse_labels(label, t_where), (enrol, test), metadata, metadata_key,
                        group_by, distance, t_where)


def load_identity_embeddings(
    path: PathLike, *, identity_col: str = "identity", id_col: str = "sample_id",
    embedding_cols: str | Sequence[str] | None = None, metadata: PathLike | None = None,
    metadata_key: str | None = None, group_by: str | Sequence[str] = (), metric: Metric = "cosine",
) -> MatchData:
    """Embeddings keyed by identity (as cimat takes them) -> all pairs of samples.

    ``path``: a ``.npz`` with arrays ``embeddings`` (n, d) and ``identities`` (n,) (optional ``ids``), or a
    CSV/TSV/Parquet table with ``identity_col``, optional ``id_col`` and the embedding: a Parquet list column
    (``embedding_cols`` naming it; default ``embedding`` if present), or numeric columns (``embedding_cols``:
    their names, or one common prefix such as ``"e"``; default: every column but the identity, id and
    ``group_by`` ones). ``group_by`` columns come from the table,
    or from a ``metadata`` table keyed by identity.

    Example::

        data = load_identity_embeddings("embeddings.npz", metadata="subjects.csv", group_by="ethnicity")
    """
    p = Path(path)
    group_by = normalise_group_by(group_by)
    if p.suffix.lower() == ".npz":
        x, identities, ids, where = _read_npz(p)
        table = pd.DataFrame(index=range(len(identities)))
    else:
        table, where = read_table(p, "embeddings table")
        identities = column(table, identity_col, where, "identity", "identity_col")
        ids = table[id_col] if id_col in table.columns else None
        x = _embedding_columns(table, embedding_cols, {identity_col, id_col, *group_by}, where)
    from_meta = [a for a in group_by if a not in table.columns]
    attrs = pd.DataFrame({a: table[a] for a in group_by if a in table.columns}, index=table.index)
    (looked_up,) = _attributes_by_identity(metadata, metadata_key, from_meta, [v.as_str(identities, where, "identity")],
                                           where)
    for a, vals in looked_up.items():
        attrs[a] = vals
    return build_samples(x, identities, ids=ids, attributes=attrs if group_by else None, group_by=group_by,
                         metric=metric, pairs=None, table=where, emb=where, pairs_where=v.Where("pairs"))


def _read_npz(p: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, v.Where]:
    where = v.Where(f"embeddings file '{p.name}'")
    if not _head(p, where).startswith(b"PK"):
        raise InputError(f"{where.what} is not a NumPy .npz archive (no zip signature). Save it with np.savez.")
    try:
        with np.load(p, allow_pickle=False) as z:
            missing = [k for k in ("embeddings", "identities") if k not in z.files]
            if missing:
                raise InputError(
                    f"{where.what} has no array {' or '.join(repr(k) for k in missing)} (arrays present: "
                    f"{listing(z.files)}). Save it as np.savez(path, embeddings=X, identities=ids[, ids=sample_ids])."
                )
            x, identities = z["embeddings"], z["identities"]
            ids = z["ids"] if "ids" in z.files else None
    except ValueError as exc:  # object arrays need pickles, which we never load
        raise InputError(f"{where.what}: cannot read ({exc}). Save ids as strings: np.array(ids, dtype=str).") from exc
    check_embedding_array(x, where)
    if identities.ndim != 1:
        raise InputError(f"{where.what}: 'identities' has shape {identities.shape}; give one identity per row.")
    return x, identities, ids, where


def _embedding_columns(
    table: pd.DataFrame, embedding_cols: str | Sequence[str] | None, others: set[str], where: v.Where
) -> np.ndarray:
    """The embedding as an (n, d) array from a list column or from numeric columns."""
    name = "embedding" if embedding_cols is None else embedding_cols
    if isinstance(name, str) and name in table.columns:
        return list_column(table[name], where)
    if isinstance(embedding_cols, str):
        cols = [c for c in table.columns if c.startswith(embedding_cols)]
        if not cols:
            raise InputError(f"{where.what}: no column starts with '{embedding_cols}' (embedding_cols). Columns "
                             f"present: {listing(list(table.columns), 30)}.")
    elif embedding_cols is not None:
        cols = [str(column(table, c, where, "an embedding column", "embedding_cols").name) for c in embedding_cols]
    else:
        cols = [c for c in table.columns if c not in others]
    values = table[cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError(
            f"{where.what}: embedding columns {listing([cols[j] for j in np.flatnonzero(bad.any(axis=0))])} hold "
            f"non-numeric, missing or infinite values at {where.rows(np.flatnonzero(bad.any(axis=1)))}. If these "
            "are attribute columns, name the embedding columns with embedding_cols (a list, or a common prefix)."
        )
    arr = values.reshape(len(table), len(cols))
    check_embedding_array(arr, where)
    return arr
