"""NIST evaluation files -> :class:`matchaudit.model.MatchData`: the FRTE (formerly FRVT) 1:1 match log and
the SRE'16-'21 trial key + system output."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from matchaudit.data import validate as v
from matchaudit.data.comparisons import return_code_failures
from matchaudit.data.conditions import condition_names
from matchaudit.data.score_files import PathLike, SpeakerOf, comparisons, join_rows, read_named_columns, speakers
from matchaudit.model import DuplicatePolicy, FtaPolicy, MatchData

_FRTE = {"enrol": ("enrollTempl", "enrollTemplate"), "verif": ("verifTempl", "verifTemplate"),
         "score": ("simScore",), "code": ("returnCode",)}
_SRE_TRIAL = {"model": ("modelid",), "segment": ("segmentid", "segment"), "side": ("side",)}
_SRE_FIELDS = "(modelid, segmentid, side)"


def load_frvt(
    path: PathLike, subject_of: SpeakerOf, *, fta_policy: FtaPolicy = "refuse", metadata: PathLike | None = None,
    metadata_key: str | None = None, group_by: str | Sequence[str] = (), distance: bool = False,
    duplicates: DuplicatePolicy = "keep-both", template_logs: Sequence[PathLike] = (),
) -> MatchData:
    """A NIST FRTE/FRVT 1:1 match log: a header line ``enrollTempl verifTempl simScore returnCode`` and one
    line per comparison, as the FRVT 1:1 validation test driver writes ``match.log`` (per-process logs
    concatenated with ``cat`` are fine: repeated header lines are skipped).

    ``subject_of``: the subject of each template id (see :data:`~matchaudit.data.score_files.SpeakerOf`: a
    mapping, a two-column ``<template> <subject>`` file, ``"prefix"``...); genuine iff same subject. A non-zero
    ``returnCode`` is a failure to template or compare, handled by ``fta_policy`` ("refuse", "exclude",
    "count"; see :func:`matchaudit.data.from_scores`). ``group_by`` columns come from ``metadata`` keyed by subject.
    A template pair listed more than once: ``duplicates`` as in :func:`~matchaudit.data.from_scores`.
    ``template_logs``: the driver's template-creation logs (``id image templateSizeBytes returnCode ...``, the
    enrolment and verification ones): a template whose creation failed (non-zero ``returnCode``) is a failure to
    enrol, and every comparison with it is a failure under ``fta_policy``, although the driver still matched it
    (a score of -1 with return code 0 in the match log).

    Example::

        data = load_frvt("match.log", "template2subject.txt", fta_policy="exclude",
                         template_logs=["enroll.log", "verif.log"])
    """
    cols, where = read_named_columns(path, "FRTE match log", _FRTE)
    ids = (speakers(cols["enrol"], subject_of, where, "enrollTempl", "subject"),
           speakers(cols["verif"], subject_of, where, "verifTempl", "subject"))
    failed = return_code_failures(cols["code"], where, param=None)
    unenrolled = failed_templates(template_logs)
    if unenrolled:
        failed = failed | np.isin(cols["enrol"].astype(str), list(unenrolled)) \
            | np.isin(cols["verif"].astype(str), list(unenrolled))
    return comparisons(cols["score"], ids, None, (cols["enrol"], cols["verif"]), metadata, metadata_key, group_by,
                       distance, where, failed=failed, fta_policy=fta_policy, duplicates=duplicates)


_TEMPLATE_LOG = {"id": ("id",), "code": ("returnCode",)}


def failed_templates(logs: Sequence[PathLike]) -> set[str]:
    """The template ids whose creation failed (non-zero ``returnCode``) in FRTE template logs."""
    out: set[str] = set()
    for log in ([logs] if isinstance(logs, (str, Path)) else logs):
        cols, where = read_named_columns(log, "FRTE template log", _TEMPLATE_LOG)
        bad = return_code_failures(cols["code"], where, param=None)
        out |= set(cols["id"][bad].astype(str))
    return out


def load_nist_sre(
    scores: PathLike, key: PathLike, *, trials: PathLike | None = None, speaker_of: SpeakerOf = None,
    metadata: PathLike | None = None, metadata_key: str | None = None, group_by: str | Sequence[str] = (),
    distance: bool = False, duplicates: DuplicatePolicy = "keep-both", condition_cols: str | Sequence[str] = (),
) -> MatchData:
    """NIST SRE'16-'21 system output (``modelid segmentid side LLR``) with its trial key (``modelid segmentid
    side targettype``), tab-separated files with a header line, as the SRE scoring tools read them.

    Trials are matched on (modelid, segmentid, side); ``targettype`` target/nontarget is genuine/impostor.
    Without ``trials`` every trial of the key needs exactly one score and every score a key entry; with a trial
    list (``modelid segmentid side``) the scores must cover exactly its trials, labelled by the key (which may
    hold more trials). Identities: optional, ``speaker_of`` of the model and segment ids (as for
    :func:`~matchaudit.data.formats.load_kaldi`); ``group_by`` then comes from ``metadata`` keyed by speaker.
    A model and test segment paired on more than one line: ``duplicates`` as in :func:`~matchaudit.data.from_scores`.
    ``condition_cols``: the key's partition columns (e.g. ``gender``, ``source_type``, ``language``) read as trial
    conditions, one value per trial (:func:`matchaudit.audit_conditions`).

    Example::

        data = load_nist_sre("sre21_dev_output.tsv", "sre21_dev_trial_key.tsv")
    """
    parts = condition_names(condition_cols)
    k, kwhere = read_named_columns(key, "SRE trial key", {**_SRE_TRIAL, "label": ("targettype",),
                                                          **{f"condition {c}": (c,) for c in parts}})
    out, owhere = read_named_columns(scores, "SRE system output", {**_SRE_TRIAL, "score": ("LLR",)})
    fields = ("model", "segment", "side")
    if trials is None:
        t, where, at = k, kwhere, slice(None)
    else:
        t, where = read_named_columns(trials, "SRE trial list", _SRE_TRIAL)
        at = join_rows([t[f] for f in fields], where, [k[f] for f in fields], kwhere, fields=_SRE_FIELDS,
                       unit="trial", noun="key entry", fix="Add them to the key", every_other=False)
    label = k["label"][at]
    pos = join_rows([t[f] for f in fields], where, [out[f] for f in fields], owhere, fields=_SRE_FIELDS,
                    unit="trial")
    score = v.as_scores(out["score"], owhere, advice=v.NO_FAILURE_FIELD)[pos]
    model, segment, side = t["model"], t["segment"], t["side"]
    test = segment if np.unique(side).size == 1 else segment + ":" + side
    ids = None
    if speaker_of is not None:
        ids = (speakers(model, speaker_of, where, "modelid"), speakers(segment, speaker_of, where, "segmentid"))
    return comparisons(score, ids, v.parse_labels(label, where), (model, test), metadata, metadata_key, group_by,
                       distance, where, duplicates=duplicates,
                       conditions={c: k[f"condition {c}"][at] for c in parts} if parts else None)
