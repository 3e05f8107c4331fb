"""bob.bio.base's CSV score files (``CSVScoreWriter``) -> :class:`matchaudit.model.MatchData`."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Sequence

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.readers import column, text_frame
from matchaudit.data.samples import normalise_group_by
from matchaudit.data.score_files import Lines, PathLike, comparisons, read_text
from matchaudit.errors import InputError
from matchaudit.model import DuplicatePolicy, MatchData

_SAMPLE = {"bio_ref": ("template_id", "reference_id"), "probe": ("template_id", "key", "reference_id")}
"""The sample id column of each side, first present wins: ``*_template_id`` (current bob), else the probe's
``probe_key`` (2021-22 files, whose ``probe_reference_id`` is the probe's *subject*: read as a sample, every genuine
row was "a sample compared with itself"), else ``*_reference_id`` (older files)."""


def _read_csv(path: PathLike) -> tuple[pd.DataFrame, Lines]:
    """The CSV (possibly gzip-compressed) as text columns; row ``i`` is reported as its line in the file."""
    text, what = read_text(path, "bob CSV score file")
    df = text_frame(io.StringIO(text), what)
    filled = [n for n, line in enumerate(text.splitlines(), 1) if line.strip()][1:]
    lines = filled if len(filled) == len(df) else list(range(2, len(df) + 2))  # quoted line breaks: row order
    return df, Lines(what, lines=np.asarray(lines, dtype=np.int64))


def load_bob_csv(
    path: PathLike, *, metadata: PathLike | None = None, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), distance: bool = False, duplicates: DuplicatePolicy = "keep-both",
    score_col: str = "score",
) -> MatchData:
    """A bob.bio.base CSV score file: a header with ``probe_*`` and ``bio_ref_*`` columns and ``score``, one
    row per (probe, biometric reference) comparison, as ``bob.bio.base``'s ``CSVScoreWriter`` writes it.

    Identities: ``bio_ref_subject_id`` and ``probe_subject_id``; samples: ``bio_ref_template_id`` and
    ``probe_template_id`` (2021-22 files: ``probe_key``; older ones ``*_reference_id``; optional). ``score_col``:
    the score column (bob's ``--score-column``: one file may hold raw and normalised scores). Side a is the
    reference, side b the probe. A ``group_by`` attribute comes from the file's ``bio_ref_<attr>`` and ``probe_<attr>`` columns when
    both are present, else from a ``metadata`` table keyed by subject id (``metadata_key``). A comparison listed
    more than once (template ids needed to tell): ``duplicates`` as in :func:`matchaudit.data.from_scores`.

    Example::

        data = load_bob_csv("scores-dev.csv", group_by="gender")
    """
    df, where = _read_csv(path)
    df, where, attacks = _without_attacks(df, where)
    ids = tuple(v.as_str(column(df, f"{side}_subject_id", where, "the subject id"), where, f"{side}_subject_id")
                for side in ("bio_ref", "probe"))
    samples = [next((df[f"{side}_{s}"] for s in _SAMPLE[side] if f"{side}_{s}" in df.columns), None)
               for side in ("bio_ref", "probe")]
    if (samples[0] is None) != (samples[1] is None):
        raise InputError(f"{where.what}: a template id column for one side only (bio_ref_template_id and "
                         "probe_template_id go together); give both or neither.")
    own: tuple[dict[str, pd.Series], dict[str, pd.Series]] = ({}, {})
    for attr in normalise_group_by(group_by):
        if f"bio_ref_{attr}" in df.columns and f"probe_{attr}" in df.columns:
            own[0][attr], own[1][attr] = df[f"bio_ref_{attr}"], df[f"probe_{attr}"]
    data = comparisons(
        column(df, score_col, where, "the score", "score_col"), ids, None,  # type: ignore[arg-type]
        None if samples[0] is None else (samples[0], samples[1]), metadata, metadata_key, group_by, distance,
        where, own=own, duplicates=duplicates,
    )
    return data if not attacks else replace(data, warnings=data.warnings + v.emit([attacks]))


def _without_attacks(df: pd.DataFrame, where: Lines) -> tuple[pd.DataFrame, Lines, str | None]:
    """The rows that are not presentation attacks (bob's vulnerability files: a non-empty ``probe_attack_type``),
    and the warning saying how many were left out: an attack is neither a genuine nor a zero-effort impostor
    comparison, and counted as an impostor it contaminated FMR silently."""
    if "probe_attack_type" not in df.columns:
        return df, where, None
    attack = ~v.missing(df["probe_attack_type"].to_numpy())
    if not attack.any():
        return df, where, None
    keep = ~attack
    note = (f"{int(attack.sum()):,} rows of {where.what} are presentation attacks (a non-empty probe_attack_type, "
            f"e.g. {str(df['probe_attack_type'][attack].iloc[0])!r}): left out of FMR and FNMR, which count genuine "
            "and zero-effort impostor comparisons only; their match rate (IAPMR) is not reported yet")
    return df[keep].reset_index(drop=True), Lines(where.what, lines=where.lines[keep]), note
