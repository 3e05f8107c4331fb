"""Score files of two more toolkits -> :class:`matchaudit.model.MatchData`: pyeer's genuine and impostor score
files, and BOSARIS (SIDEKIT) text keys and score files."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from matchaudit.data import validate as v
from matchaudit.data.score_files import (Lines, PathLike, SpeakerOf, data_lines, comparisons, join_rows,
                                         read_columns, speakers)
from matchaudit.errors import InputError
from matchaudit.model import DuplicatePolicy, MatchData

_BOSARIS_FIELDS = "(model, test segment)"


def _last_column(path: PathLike, role: str) -> tuple[np.ndarray, Lines]:
    """The last blank-separated field of every data line (pyeer's ``float(line.strip().split(' ')[-1])``),
    checked as scores, with the lines for messages."""
    rows, numbers, what = data_lines(path, role, "one score per line (the last column)")
    where = Lines(what, lines=np.asarray(numbers, dtype=np.int64))
    return np.array([r[-1] for r in rows], dtype=object), where


def load_pyeer(genuine: PathLike, impostor: PathLike, *, distance: bool = False) -> MatchData:
    """pyeer's input (``geteerinf -g genuine -i impostor``): a genuine and an impostor score file, one score per
    line in its last column (any columns before it are ignored, as pyeer does). ``distance``: dissimilarity
    scores (pyeer's ``-ds``). No ids: labels only, so exact rates and curves (pooled weighting) without intervals
    or groups, which need identities. pyeer's histogram impostor files (``-ht``: line i holds the count of score
    i) are not read.

    Example::

        data = load_pyeer("exp1_true.txt", "exp1_false.txt")
    """
    gen, gwhere = _last_column(genuine, "pyeer genuine score file")
    imp, iwhere = _last_column(impostor, "pyeer impostor score file")
    for s, w in ((gen, gwhere), (imp, iwhere)):
        v.as_scores(s, w, advice=v.NO_FAILURE_FIELD)  # errors name the file and its lines
    where = Lines(f"{gwhere.what} and {iwhere.what}", lines=np.concatenate([gwhere.lines, iwhere.lines]))
    label = np.concatenate([np.ones(len(gen), bool), np.zeros(len(imp), bool)])
    return comparisons(np.concatenate([gen, imp]), None, label, None, None, None, (), distance, where)


def load_bosaris(
    scores: PathLike, key: PathLike, *, ndx: PathLike | None = None, speaker_of: SpeakerOf = None,
    metadata: PathLike | None = None, metadata_key: str | None = None, group_by: str | Sequence[str] = (),
    distance: bool = False, duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """BOSARIS text files as SIDEKIT's ``sidekit.bosaris`` writes and reads them: a key (``Key.write_txt``: one
    ``model testseg target|nontarget`` line per labelled trial) and scores (``Scores.write_txt``: ``model testseg
    score``), blank-separated, no header.

    Trials are matched on (model, test segment). Without ``ndx`` every trial of the key needs exactly one score
    and every score a key entry (SIDEKIT drops unscored key trials with a log line; here that is an error naming
    them); with an index (``Ndx.read_txt``'s ``model testseg`` lines) the scores must cover exactly its trials,
    labelled by the key (which may hold more). Identities: optional, ``speaker_of`` of the model and segment ids
    (as for :func:`~matchaudit.data.formats.load_kaldi`); ``group_by`` then comes from ``metadata`` keyed by speaker.

    Example::

        data = load_bosaris("scores.txt", "key.txt", speaker_of="spk2utt_map.txt")
    """
    (kmodel, kseg, klabel), kwhere = read_columns(key, "BOSARIS key", {3: "model testseg target|nontarget"})
    (smodel, sseg, sscore), swhere = read_columns(scores, "BOSARIS score file", {3: "model testseg score"})
    words = np.char.lower(klabel.astype(str))
    bad = np.flatnonzero(~np.isin(words, ["target", "nontarget"]))
    if bad.size:
        raise InputError(f"{kwhere.what}: the third column must be 'target' or 'nontarget' (as BOSARIS keys are "
                         f"written) at {kwhere.rows(bad)} (e.g. {klabel[bad[0]]!r}).")
    if ndx is None:
        model, seg, where, label = kmodel, kseg, kwhere, words
    else:
        (model, seg), where = read_columns(ndx, "BOSARIS index (ndx)", {2: "model testseg"})
        label = words[join_rows((model, seg), where, (kmodel, kseg), kwhere, fields=_BOSARIS_FIELDS, unit="trial",
                                noun="key entry", fix="Add them to the key", every_other=False)]
    pos = join_rows((model, seg), where, (smodel, sseg), swhere, fields=_BOSARIS_FIELDS, unit="trial")
    score = v.as_scores(sscore, swhere, advice=v.NO_FAILURE_FIELD)[pos]
    ids = None
    if speaker_of is not None:
        ids = (speakers(model, speaker_of, where, "model"), speakers(seg, speaker_of, where, "test segment"))
    return comparisons(score, ids, v.parse_labels(label, where), (model, seg), metadata, metadata_key, group_by,
                       distance, where, duplicates=duplicates)


__all__ = ["load_bosaris", "load_pyeer"]
