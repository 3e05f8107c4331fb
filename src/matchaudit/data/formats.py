"""Importers for score files people already have: bob 4/5-column, Kaldi trials + scores, VoxCeleb trial lists,
embeddings keyed by identity (cimat) -> :class:`matchaudit.model.MatchData`.

Each importer only parses its format and hands the columns to the shared builders (the ones behind
:func:`matchaudit.data.from_scores` and :func:`matchaudit.data.from_embeddings`), so every check lives once;
errors name the file and its 1-based line numbers. Files are only read. Whitespace-separated files may be
gzip-compressed; blank lines and lines starting with ``#`` are skipped (as bob does).
"""

from __future__ import annotations

import re

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.readers import file_head, check_embedding_array, column, list_column, read_table
from matchaudit.data.samples import build_samples, normalise_group_by
from matchaudit.data.score_files import (
    PathLike,
    SpeakerOf,
    attributes_by_identity,
    comparisons,
    join_scores,
    read_columns,
    speakers,
)
from matchaudit.errors import InputError, listing
from matchaudit.model import DuplicatePolicy, MatchData, Metric


def load_bob(
    path: PathLike, *, metadata: PathLike | None = None, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), distance: bool = False, duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """A bob score file: 4 columns ``claimed_id real_id test_label score`` or 5 columns ``claimed_id
    model_label real_id test_label score`` (as ``bob.measure.load.four_column``/``five_column``).

    Genuine iff ``claimed_id == real_id``. Side a is the model (``model_label``; in 4-column files bob has one
    model per client, named by ``claimed_id``), side b the probe (``test_label``). Groups: ``group_by``
    columns of a ``metadata`` table keyed by client id (``metadata_key``). A comparison listed more than once
    (the same model and probe): ``duplicates`` as in :func:`matchaudit.data.from_scores`.

    Example::

        data = load_bob("scores-dev", metadata="clients.csv", group_by="gender")
    """
    cols, where = read_columns(path, "bob score file", {4: "claimed_id real_id test_label score",
                                                          5: "claimed_id model_label real_id test_label score"})
    if len(cols) == 4:
        claimed, real, test, score = cols
        model = claimed
    else:
        claimed, model, real, test, score = cols
    return comparisons(v.as_scores(score, where, advice=v.NO_FAILURE_FIELD), (claimed, real), None, (model, test),
                       metadata, metadata_key, group_by, distance, where, duplicates=duplicates)


def load_kaldi(
    trials: PathLike, scores: PathLike, *, speaker_of: SpeakerOf = None, metadata: PathLike | None = None,
    metadata_key: str | None = None, group_by: str | Sequence[str] = (), distance: bool = False,
    duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """Kaldi trials (``enrol test target|nontarget``) joined with scores (``enrol test score``) on (enrol, test).

    Every trial needs exactly one score and every score a trial. Without ``speaker_of`` the labels alone say
    genuine/impostor (no identities: pooled weighting only); with it (see :data:`SpeakerOf`) identities come
    from the ids and must agree with the labels, and ``group_by`` columns come from ``metadata`` keyed by speaker.
    A trial listed more than once ((a, b) and (b, a) are one): ``duplicates`` as in
    :func:`matchaudit.data.from_scores` (default "keep-both": every line counts, with a warning).

    Example::

        data = load_kaldi("trials", "scores", speaker_of="prefix", metadata="spk_meta.csv", group_by="gender")
    """
    (enrol, test, label), t_where = read_columns(trials, "Kaldi trials file", {3: "enrol test target|nontarget"})
    s_cols, s_where = read_columns(scores, "Kaldi scores file", {3: "enrol test score"})
    score = join_scores(enrol, test, t_where, *s_cols, s_where)
    lab = v.parse_labels(label, t_where)
    ids = None
    if speaker_of is not None:
        ids = (speakers(enrol, speaker_of, t_where, "enrol"), speakers(test, speaker_of, t_where, "test"))
    return comparisons(score, ids, lab, (enrol, test), metadata, metadata_key, group_by, distance, t_where,
                       duplicates=duplicates)


def load_kaldi_eer(scores: PathLike, *, distance: bool = False) -> MatchData:
    """The input of Kaldi's ``compute-eer``: one ``score target|nontarget`` line per trial (what its recipes pipe
    in, e.g. ``paste trials scores | awk '{print $6, $3}'``). No ids: labels only, so exact rates and curves
    (pooled weighting) without intervals, which need identities.

    Example::

        data = load_kaldi_eer("eer_input.txt")
    """
    (score, label), where = read_columns(scores, "compute-eer input", {2: "score target|nontarget"})
    return comparisons(score, None, v.parse_labels(label, where), None, None, None, (), distance, where)


def load_voxceleb(
    trials: PathLike, scores: PathLike, metadata: PathLike | None = None, *, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), speaker_of: SpeakerOf = "path", distance: bool = False,
    duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """A VoxCeleb trial list (``label enrol test``, label 1/0) and its scores.

    ``scores``: one score per line aligned with the trial lines, or ``enrol test score`` lines joined on
    (enrol, test). Speakers are the first path component of ``id10270/x6uYqmx31kE/00001.wav`` (``speaker_of``
    to change that); they must agree with the labels. ``metadata``: a speaker table such as ``vox1_meta.csv``
    (tab-separated; key ``VoxCeleb1 ID``) giving the ``group_by`` columns (e.g. ``Gender``, ``Nationality``).
    A trial listed more than once ((a, b) and (b, a) are one): ``duplicates`` as in
    :func:`matchaudit.data.from_scores` (default "keep-both": every line counts, with a warning).

    Example::

        data = load_voxceleb("veri_test2.txt", "scores.txt", "vox1_meta.csv", group_by="Gender")
    """
    (label, enrol, test), t_where = read_columns(trials, "VoxCeleb trial list", {3: "label enrol test"})
    s_cols, s_where = read_columns(scores, "scores file", {1: "score, aligned with the trial lines",
                                                            3: "enrol test score"})
    if len(s_cols) == 3:
        score = join_scores(enrol, test, t_where, *s_cols, s_where)
    else:
        if len(s_cols[0]) != len(enrol):
            raise InputError(
                f"{s_where.what} has {len(s_cols[0])} scores but {t_where.what} has {len(enrol)} trials; a "
                "one-column scores file must hold one score per trial line, in order. Use 'enrol test score' "
                "lines to join by pair instead."
            )
        score = v.as_scores(s_cols[0], s_where, advice=v.NO_FAILURE_FIELD)
    ids = (speakers(enrol, speaker_of, t_where, "enrol"), speakers(test, speaker_of, t_where, "test"))
    return comparisons(score, ids, v.parse_labels(label, t_where), (enrol, test), metadata, metadata_key,
                        group_by, distance, t_where, duplicates=duplicates)


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
    (looked_up,) = attributes_by_identity(metadata, metadata_key, from_meta, [v.as_str(identities, where, "identity")],
                                           where)
    for a, vals in looked_up.items():
        attrs[a] = vals
    return build_samples(x, identities, ids=ids, attributes=attrs if group_by else None, group_by=group_by,
                         metric=metric, pairs=None, table=where, emb=where, pairs_where=v.Where("pairs"))


def _read_npz(p: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, v.Where]:
    where = v.Where(f"embeddings file '{p.name}'")
    if not file_head(p, where).startswith(b"PK"):
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
    except InputError:
        raise
    except ValueError as exc:  # object arrays need pickles, which we never load
        raise InputError(f"{where.what}: cannot read ({exc}). Save ids as strings: np.array(ids, dtype=str).") from exc
    check_embedding_array(x, where)
    for name, one, a in (("identities", "identity", identities), ("ids", "sample id", ids)):
        if a is not None and (a.ndim != 1 or a.shape[0] != x.shape[0]):
            raise InputError(f"{where.what}: '{name}' has shape {a.shape} and 'embeddings' {x.shape[0]} rows; give "
                             f"one {one} per row of the embeddings.")
    return x, identities, ids, where


def _numbered_columns(cols: list[str], where: v.Where) -> list[str]:
    """The default embedding columns: every column left, provided they are named as one numbered series (``e0``
    .. ``e127``, ``dim_1`` ..). A column outside the series (a numeric ``age`` became an embedding dimension:
    FNMR 56.4% for 0.074%) is refused by name; columns with no numbered series at all are taken as they are."""
    series: dict[str, list[str]] = {}
    for c in cols:
        m = re.fullmatch(r"(.*?)(\d+)", str(c))
        if m:
            series.setdefault(m.group(1), []).append(c)
    if not series:
        return cols
    prefix, members = max(series.items(), key=lambda kv: len(kv[1]))
    extra = [c for c in cols if c not in members]
    if extra:
        raise InputError(
            f"{where.what}: columns {listing([str(c) for c in extra])} are not part of the embedding columns "
            f"{members[0]}..{members[-1]}; an attribute read as an embedding dimension would change every score. "
            f"Name the embedding columns (embedding_cols='{prefix}', the common prefix), or give the attributes as "
            "group_by columns.")
    return cols


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
        cols = _numbered_columns([c for c in table.columns if c not in others], where)
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
