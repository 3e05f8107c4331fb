"""``--format``: which importer reads the user's files (tidy comparison tables or the formats of
:mod:`matchaudit.data.formats`), and which CLI options each one needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from matchaudit.choices import FORMATS
from matchaudit.data import load_comparisons
from matchaudit.data.formats import SpeakerOf, load_bob, load_identity_embeddings, load_kaldi, load_voxceleb
from matchaudit.errors import InputError
from matchaudit.model import MatchData, Metric

_NEEDS: dict[str, tuple[str, ...]] = {
    "tidy": ("comparisons",),
    "bob": ("scores",),
    "kaldi": ("trials", "scores"),
    "voxceleb": ("trials", "scores"),
    "identity-embeddings": ("embeddings",),
}
_OPTION = {"comparisons": "--comparisons", "scores": "--scores", "trials": "--trials", "embeddings": "--embeddings"}


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
    metadata: Path | None = None,
    metadata_key: str | None = None,
    speaker_of: str | None = None,
    group_by: Sequence[str] = (),
    distance: bool = False,
    metric: Metric = "cosine",
    identity_col: str = "identity",
    id_col: str = "sample_id",
    embedding_cols: Sequence[str] = (),
    tidy: Mapping[str, Any] | None = None,
) -> MatchData:
    """Read the files of ``--format fmt`` into a MatchData; a missing or stray file option is an InputError.

    ``tidy``: the extra keyword arguments of :func:`matchaudit.data.load_comparisons` (score_col, sample_cols,
    identity_cols, label_col) for ``--format tidy``. ``speaker_of`` as ``--speaker-of`` (kaldi, voxceleb).
    ``identity_col``, ``id_col``, ``embedding_cols`` (one name: a list column or a prefix; several: the numeric
    columns; none: the default) for ``identity-embeddings``.
    """
    if fmt not in _NEEDS:
        raise InputError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}.")
    given = {"comparisons": comparisons, "scores": scores, "trials": trials, "embeddings": embeddings}
    missing = [_OPTION[k] for k in _NEEDS[fmt] if given[k] is None]
    stray = [_OPTION[k] for k, p in given.items() if p is not None and k not in _NEEDS[fmt]]
    if missing or stray:
        need = " and ".join(_OPTION[k] for k in _NEEDS[fmt])
        raise InputError(
            f"--format {fmt} reads {need}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; {', '.join(stray)} not used by this format" if stray else "") + "."
        )
    if speaker_of is not None and fmt not in ("kaldi", "voxceleb"):
        raise InputError(f"--speaker-of applies to --format kaldi or voxceleb, not {fmt}.")
    meta = dict(metadata=metadata, metadata_key=metadata_key, group_by=group_by)
    if fmt == "tidy":
        return load_comparisons(comparisons, group_by=group_by, metadata_path=metadata,  # type: ignore[arg-type]
                                metadata_key=metadata_key, distance=distance, **dict(tidy or {}))
    if fmt == "bob":
        return load_bob(scores, distance=distance, **meta)  # type: ignore[arg-type]
    if fmt == "kaldi":
        return load_kaldi(trials, scores, speaker_of=speaker_of_option(speaker_of),  # type: ignore[arg-type]
                          distance=distance, **meta)
    if fmt == "voxceleb":
        return load_voxceleb(trials, scores, speaker_of=speaker_of_option(speaker_of) or "path",
                             distance=distance, **meta)  # type: ignore[arg-type]
    if distance:
        raise InputError("--distance applies to scores; with --format identity-embeddings use --metric euclidean.")
    cols = None if not embedding_cols else embedding_cols[0] if len(embedding_cols) == 1 else list(embedding_cols)
    return load_identity_embeddings(embeddings, identity_col=identity_col, id_col=id_col,  # type: ignore[arg-type]
                                    embedding_cols=cols, metric=metric, **meta)
