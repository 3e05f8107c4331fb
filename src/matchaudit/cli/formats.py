"""``--format``: which importer reads the user's files (tidy comparison tables or the formats of
:mod:`matchaudit.data.formats` and its sibling modules), and which CLI options each one needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from matchaudit.choices import FORMATS
from matchaudit.data import load_comparisons
from matchaudit.data.bob_csv import load_bob_csv
from matchaudit.data.formats import (SpeakerOf, load_bob, load_identity_embeddings, load_kaldi, load_kaldi_eer,
                                     load_voxceleb)
from matchaudit.data.nist import load_frvt, load_nist_sre
from matchaudit.data.pair_table import load_pair_table
from matchaudit.data.score_lists import load_bosaris, load_pyeer
from matchaudit.data.score_matrix import load_score_matrix
from matchaudit.data.wespeaker import load_speechbrain, load_voxsrc, load_wespeaker
from matchaudit.errors import InputError
from matchaudit.model import DuplicatePolicy, FtaPolicy, MatchData, Metric

_NEEDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tidy": (("comparisons",), ()),
    "bob": (("scores",), ()),
    "bob-csv": (("scores",), ()),
    "kaldi": (("trials", "scores"), ()),
    "kaldi-eer": (("scores",), ()),
    "pyeer": (("scores", "impostor_scores"), ()),
    "voxceleb": (("trials", "scores"), ()),
    "voxsrc": (("trials", "scores"), ()),
    "wespeaker": (("scores",), ("trials",)),
    "speechbrain": (("scores",), ()),
    "nist-sre": (("scores", "key"), ("trials",)),
    "bosaris": (("scores", "key"), ("trials",)),
    "frvt": (("scores",), ()),
    "pair-table": (("comparisons",), ()),
    "score-matrix": (("scores", "ids", "metadata"), ("column_ids", "mask")),
    "identity-embeddings": (("embeddings",), ()),
}
"""The file options of each format: (required, optional)."""
_OPTION = {"comparisons": "--comparisons", "scores": "--scores", "trials": "--trials", "embeddings": "--embeddings",
           "key": "--key", "impostor_scores": "--impostor-scores", "ids": "--ids", "column_ids": "--column-ids",
           "mask": "--mask", "metadata": "--metadata"}
_SPEAKERS = ("kaldi", "voxceleb", "voxsrc", "wespeaker", "speechbrain", "nist-sre", "bosaris", "frvt")
_FAILURES = ("tidy", "frvt")
_TIDY_DEFAULTS = {"sample_cols": ("sample_a", "sample_b"), "identity_cols": ("identity_a", "identity_b")}
"""The tidy table's default column names: given to --format pair-table they mean "not named", BFW's own apply."""


def speaker_of_option(text: str | None) -> SpeakerOf:
    """``--speaker-of``: ``prefix``, ``path``, or a file of ``<id> <speaker>`` lines (Kaldi utt2spk)."""
    if text is None or text in ("prefix", "path"):
        return text  # type: ignore[return-value]
    return Path(text)


def load_by_format(
    fmt: str,
    *,
    comparisons: Path | None = None,
    scores: Path | None = None,
    trials: Path | None = None,
    embeddings: Path | None = None,
    key: Path | None = None,
    impostor_scores: Path | None = None,
    ids: Path | None = None,
    column_ids: Path | None = None,
    mask: Path | None = None,
    metadata: Path | None = None,
    metadata_key: str | None = None,
    speaker_of: str | None = None,
    group_by: Sequence[str] = (),
    distance: bool = False,
    fta_policy: FtaPolicy = "refuse",
    duplicates: DuplicatePolicy = "keep-both",
    metric: Metric = "cosine",
    identity_col: str = "identity",
    id_col: str = "sample_id",
    embedding_cols: Sequence[str] = (),
    tidy: Mapping[str, Any] | None = None,
    template_logs: Sequence[Path] = (),
    condition_cols: Sequence[str] = (),
) -> MatchData:
    """Read the files of ``--format fmt`` into a MatchData; a missing or stray file option is an InputError.

    ``tidy``: the extra keyword arguments of :func:`matchaudit.data.load_comparisons` (score_col, sample_cols,
    identity_cols, label_col, ...) for ``--format tidy``; its ``score_col`` and ``label_col`` also pick the
    columns of ``pair-table``. ``speaker_of`` as ``--speaker-of`` (the speech formats; frvt: template ->
    subject). ``fta_policy`` for the formats that record failures (tidy, frvt). ``duplicates``: a comparison
    listed more than once, for every format of scored comparisons (see :func:`matchaudit.data.from_scores`).
    ``identity_col``, ``id_col``, ``embedding_cols`` (one name: a list column or a prefix; several: the numeric
    columns; none: the default) for ``identity-embeddings``; ``id_col`` and ``identity_col`` of the samples table
    (``metadata``) for ``score-matrix``. ``condition_cols``: trial-condition columns of the comparison table
    (tidy, pair-table) or the NIST SRE key's partition columns (nist-sre).
    """
    if fmt not in _NEEDS:
        raise InputError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}.")
    required, optional = _NEEDS[fmt]
    given = {"comparisons": comparisons, "scores": scores, "trials": trials, "embeddings": embeddings, "key": key,
             "impostor_scores": impostor_scores, "ids": ids, "column_ids": column_ids, "mask": mask}
    missing = [_OPTION[k] for k in required if (metadata if k == "metadata" else given[k]) is None]
    stray = [_OPTION[k] for k, p in given.items() if p is not None and k not in required + optional]
    if missing or stray:
        need = " and ".join(_OPTION[k] for k in required) + "".join(f" [{_OPTION[k]}]" for k in optional)
        raise InputError(
            f"--format {fmt} reads {need}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; {', '.join(stray)} not used by this format" if stray else "") + "."
        )
    if template_logs and fmt != "frvt":
        raise InputError(f"--template-log goes with --format frvt (the FRTE driver's template logs), not {fmt}.")
    if speaker_of is not None and fmt not in _SPEAKERS:
        raise InputError(f"--speaker-of applies to --format {', '.join(_SPEAKERS)}, not {fmt}.")
    if fta_policy != "refuse" and fmt not in _FAILURES:
        raise InputError(f"--fta-policy applies to --format {' or '.join(_FAILURES)}, whose files record failures; "
                         f"--format {fmt} needs a score on every line.")
    if duplicates != "keep-both" and fmt == "identity-embeddings":  # the loaders check the value itself
        raise InputError("--duplicates applies to scored comparisons; --format identity-embeddings scores every "
                         "pair of identities once.")
    if condition_cols and fmt not in ("tidy", "pair-table", "nist-sre"):
        raise InputError(f"--condition-cols reads columns of a comparison table (--format tidy, pair-table) or the "
                         f"partition columns of a NIST SRE key (nist-sre); --format {fmt} has none.")
    conditions = {"condition_cols": tuple(condition_cols)} if condition_cols else {}
    meta = dict(metadata=metadata, metadata_key=metadata_key, group_by=group_by, duplicates=duplicates)
    table = dict(tidy or {})
    who = speaker_of_option(speaker_of)
    if fmt == "tidy":
        return load_comparisons(comparisons, group_by=group_by, metadata_path=metadata,  # type: ignore[arg-type]
                                metadata_key=metadata_key, distance=distance, fta_policy=fta_policy,
                                duplicates=duplicates, **table, **conditions)
    if fmt == "bob":
        return load_bob(scores, distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "bob-csv":
        return load_bob_csv(scores, distance=distance,  # type: ignore[arg-type]
                            score_col=table.get("score_col", "score"), **meta)
    if fmt == "kaldi":
        return load_kaldi(trials, scores, speaker_of=who, distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "kaldi-eer":
        if metadata is not None or group_by:
            raise InputError("--format kaldi-eer has no ids, so no groups: drop --metadata/--group-by.")
        return load_kaldi_eer(scores, distance=distance)  # type: ignore[arg-type]
    if fmt == "pyeer":
        if metadata is not None or group_by:
            raise InputError("--format pyeer has no ids, so no groups: drop --metadata/--group-by.")
        return load_pyeer(scores, impostor_scores, distance=distance)  # type: ignore[arg-type]
    if fmt == "bosaris":
        return load_bosaris(scores, key, ndx=trials, speaker_of=who, distance=distance,  # type: ignore[arg-type]
                            **meta)
    if fmt in ("voxceleb", "voxsrc"):
        load = load_voxceleb if fmt == "voxceleb" else load_voxsrc
        return load(trials, scores, speaker_of=who or "path", distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "wespeaker":
        return load_wespeaker(scores, trials, speaker_of=who, distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "speechbrain":
        return load_speechbrain(scores, speaker_of=who or "path", distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "nist-sre":
        return load_nist_sre(scores, key, trials=trials, speaker_of=who, distance=distance,  # type: ignore[arg-type]
                             **meta, **conditions)
    if fmt == "frvt":
        if who is None:
            raise InputError("--format frvt needs the subject of each template: --subject-of FILE (lines "
                             "'<template> <subject>') or prefix.")
        return load_frvt(scores, who, fta_policy=fta_policy, distance=distance,  # type: ignore[arg-type]
                         template_logs=template_logs, **meta)
    if fmt == "pair-table":  # the tidy flags name its columns too (--sample-cols, --identity-cols were ignored)
        cols = {k: table[k] for k in ("sample_cols", "identity_cols")
                if table.get(k) is not None and table[k] != _TIDY_DEFAULTS[k]}
        return load_pair_table(comparisons, score_col=table.get("score_col", "score"),  # type: ignore[arg-type]
                               label_col=table.get("label_col") or "label", distance=distance, **cols, **meta,
                               **conditions)
    if fmt == "score-matrix":
        if metadata_key is not None:
            raise InputError("--metadata-key: with --format score-matrix the samples table (--metadata) is keyed by "
                             "--id-col.")
        return load_score_matrix(scores, ids, metadata, column_ids=column_ids, mask=mask,  # type: ignore[arg-type]
                                 id_col=id_col, identity_col=identity_col, group_by=group_by, distance=distance,
                                 duplicates=duplicates)
    if distance:
        raise InputError("--distance applies to scores; with --format identity-embeddings use --metric euclidean.")
    cols = None if not embedding_cols else embedding_cols[0] if len(embedding_cols) == 1 else list(embedding_cols)
    return load_identity_embeddings(embeddings, identity_col=identity_col, id_col=id_col,  # type: ignore[arg-type]
                                    embedding_cols=cols, metric=metric, metadata=metadata,
                                    metadata_key=metadata_key, group_by=group_by)
