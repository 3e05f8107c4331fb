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
from matchaudit.model import Attacks, DuplicatePolicy, MatchData

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
    ``probe_template_id`` (2021-22 files: ``probe_key``; older ones ``*_reference_id``; optional; a ``probe_key``
without any reference template column, as ``bob vuln gen`` writes it with ``'0'`` on every row, is not read).
Presentation attacks (a non-empty ``probe_attack_type``, bob's vulnerability files) are kept apart
(:class:`~matchaudit.model.Attacks`, on the reference of ``bio_ref_subject_id``): in no FMR or FNMR; the audit
reports their IAPMR. ``score_col``:
    the score column (bob's ``--score-column``: one file may hold raw and normalised scores). Side a is the
    reference, side b the probe. A ``group_by`` attribute comes from the file's ``bio_ref_<attr>`` and ``probe_<attr>`` columns when
    both are present, else from a ``metadata`` table keyed by subject id (``metadata_key``). A comparison listed
    more than once (template ids needed to tell): ``duplicates`` as in :func:`matchaudit.data.from_scores`.

    Example::

        data = load_bob_csv("scores-dev.csv", group_by="gender")
    """
    df, where = _read_csv(path)
    df, where, attack_rows, attack_where = _split_attacks(df, where)
    ids = tuple(v.as_str(column(df, f"{side}_subject_id", where, "the subject id"), where, f"{side}_subject_id")
                for side in ("bio_ref", "probe"))
    samples = [next((df[f"{side}_{s}"] for s in _SAMPLE[side] if f"{side}_{s}" in df.columns), None)
               for side in ("bio_ref", "probe")]
    if samples[0] is None and samples[1] is not None and "probe_template_id" not in df.columns \
            and "probe_reference_id" not in df.columns:
        samples[1] = None  # bob vuln gen: probe_key '0' on every row, no reference template: identities only
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
    if attack_rows is None:
        return data
    attacks = _attacks(attack_rows, attack_where, data, score_col, distance)
    return replace(data, attacks=attacks, warnings=data.warnings + v.emit([_attack_warning(attacks, where)]))


def _split_attacks(df: pd.DataFrame, where: Lines) -> tuple[pd.DataFrame, Lines, pd.DataFrame | None, Lines]:
    """The licit rows and the presentation attacks (bob's vulnerability files: a non-empty ``probe_attack_type``,
    as ``bob.bio.base.score.load.split_csv_vuln`` splits them), each with its lines. An attack is neither a
    genuine nor a zero-effort impostor comparison: counted as an impostor it contaminated FMR silently."""
    if "probe_attack_type" not in df.columns:
        return df, where, None, where
    attack = ~v.missing(df["probe_attack_type"].to_numpy())
    if not attack.any():
        return df, where, None, where
    keep = ~attack
    return (df[keep].reset_index(drop=True), Lines(where.what, lines=where.lines[keep]),
            df[attack].reset_index(drop=True), Lines(where.what, lines=where.lines[attack]))


def _attacks(df: pd.DataFrame, where: Lines, data: MatchData, score_col: str, distance: bool) -> Attacks:
    """The attack rows as :class:`Attacks`: each on the reference of ``bio_ref_subject_id`` (the subject it
    claims), whose identity and group the licit rows give."""
    subject = v.as_str(column(df, "bio_ref_subject_id", where, "the subject id"), where, "bio_ref_subject_id")
    score = v.as_scores(column(df, score_col, where, "the score", "score_col"), where, distance=distance,
                        advice=v.NO_FAILURE_FIELD)
    code = pd.Index(data.identity_names.astype(str)).get_indexer(subject)
    bad = np.flatnonzero(code < 0)
    if bad.size:
        raise InputError(
            f"{where.what}: presentation attacks at {where.rows(bad)} claim reference subjects with no licit "
            f"comparison in the file ({', '.join(sorted(set(subject[bad].tolist()))[:5])}), so their group is "
            "unknown. Keep the attacked subjects' genuine and zero-effort impostor rows in the file, or remove those "
            "attacks.")
    return Attacks(score=np.asarray(score, np.float64), identity=code.astype(np.int64),
                   group=data.identity_group[code].astype(np.int64),
                   attack_type=df["probe_attack_type"].astype(str).to_numpy(), rows=where.lines.copy())


def _attack_warning(attacks: Attacks, where: Lines) -> str:
    return (f"{len(attacks):,} rows of {where.what} are presentation attacks (a non-empty probe_attack_type, e.g. "
            f"{str(attacks.attack_type[0])!r}): kept apart from FMR and FNMR, which count genuine and zero-effort "
            "impostor comparisons only; the audit reports their impostor-attack presentation match rate (IAPMR) "
            "per group at each threshold")
