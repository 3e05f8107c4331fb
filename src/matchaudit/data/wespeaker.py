"""Speaker-verification score files of wespeaker and the VoxSRC challenge -> :class:`matchaudit.model.MatchData`."""

from __future__ import annotations

from typing import Sequence

from matchaudit.data import validate as v
from matchaudit.data.formats import load_kaldi
from matchaudit.data.score_files import PathLike, SpeakerOf, comparisons, join_scores, read_columns, speakers
from matchaudit.errors import InputError
from matchaudit.model import DuplicatePolicy, MatchData


def load_wespeaker(
    scores: PathLike, trials: PathLike | None = None, *, speaker_of: SpeakerOf = None,
    metadata: PathLike | None = None, metadata_key: str | None = None, group_by: str | Sequence[str] = (),
    distance: bool = False, duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """A wespeaker score file (``wespeaker/bin/score.py``): ``enrol test score target|nontarget`` lines when
    its trial list had labels, else ``enrol test score`` lines, which need that ``trials`` list (``enrol test
    target|nontarget``, joined on (enrol, test) as for :func:`~matchaudit.data.formats.load_kaldi`); or the
    normalised scores of ``wespeaker/bin/score_norm.py`` (AS-norm, S-norm: the file its VoxCeleb recipe reports
    from), 8 columns, ``enrol test normed_score target|nontarget`` then 4 cohort statistics, which are ignored.

    Identities: optional, ``speaker_of`` (``"path"`` for VoxCeleb ids ``id10270/x6uYqmx31kE/00001.wav``,
    ``"prefix"``, or a mapping); without them the labels alone say genuine/impostor. ``group_by`` columns come
    from ``metadata`` keyed by speaker. A trial listed more than once ((a, b) and (b, a) are one): ``duplicates`` as in
    :func:`matchaudit.data.from_scores` (default "keep-both": every line counts, with a warning).

    Example::

        data = load_wespeaker("vox1_O_cleaned.kaldi.score", speaker_of="path", metadata="vox1_meta.csv",
                              group_by="Gender")
    """
    cols, where = read_columns(scores, "wespeaker score file", {4: "enrol test score target|nontarget",
                                                               3: "enrol test score", 8: NORMALISED})
    cols = cols[:4]  # score_norm.py's 4 cohort statistics after the label are not needed here
    if len(cols) == 3:
        if trials is None:
            raise InputError(f"{where.what} has no labels (3 columns: enrol test score); give the trial list it "
                             "was scored from (trials=..., lines 'enrol test target|nontarget').")
        return load_kaldi(trials, scores, speaker_of=speaker_of, metadata=metadata, metadata_key=metadata_key,
                          group_by=group_by, distance=distance, duplicates=duplicates)
    if trials is not None:
        raise InputError(f"{where.what} carries its labels (4 columns: enrol test score target|nontarget); drop "
                         "the trial list.")
    enrol, test, score, label = cols
    ids = None
    if speaker_of is not None:
        ids = (speakers(enrol, speaker_of, where, "enrol"), speakers(test, speaker_of, where, "test"))
    return comparisons(score, ids, v.parse_labels(label, where), (enrol, test), metadata, metadata_key, group_by,
                       distance, where, duplicates=duplicates)


NORMALISED = "enrol test score target|nontarget enroll_mag test_mag enroll_cohort_mean test_cohort_mean"
"""The 8 columns of wespeaker's ``score_norm.py`` output."""


def load_speechbrain(
    scores: PathLike, *, speaker_of: SpeakerOf = "path", metadata: PathLike | None = None,
    metadata_key: str | None = None, group_by: str | Sequence[str] = (), distance: bool = False,
    duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """speechbrain's ``scores.txt`` (its VoxCeleb speaker-verification recipes): ``enrol test label score``
    lines, the 0/1 label *before* the score, ids being the trial list's paths without ``.wav``
    (``id10270/x6uYqmx31kE/00001``). Speakers: the first path component (``speaker_of`` to change that; they must
    agree with the labels); ``group_by`` columns from a ``metadata`` speaker table such as ``vox1_meta.csv``.

    Example::

        data = load_speechbrain("results/scores.txt", metadata="vox1_meta.csv", group_by="Gender")
    """
    (enrol, test, label, score), where = read_columns(scores, "speechbrain score file", {4: "enrol test label score"})
    ids = None
    if speaker_of is not None:
        ids = (speakers(enrol, speaker_of, where, "enrol"), speakers(test, speaker_of, where, "test"))
    return comparisons(score, ids, v.parse_labels(label, where), (enrol, test), metadata, metadata_key, group_by,
                       distance, where, duplicates=duplicates)


def load_voxsrc(
    trials: PathLike, scores: PathLike, metadata: PathLike | None = None, *, metadata_key: str | None = None,
    group_by: str | Sequence[str] = (), speaker_of: SpeakerOf = "path", distance: bool = False,
    duplicates: DuplicatePolicy = "keep-both",
) -> MatchData:
    """A VoxSRC trial list (``label enrol test``, label 1/0) and the challenge's score file (``score enrol
    test`` lines, as its ``compute_min_dcf.py`` reads them), joined on (enrol, test).

    Speakers are the first path component of the VoxCeleb ids (``speaker_of`` to change that) and must agree
    with the labels; ``metadata``: a speaker table such as ``vox1_meta.csv`` giving the ``group_by`` columns.
    A trial listed more than once ((a, b) and (b, a) are one): ``duplicates`` as in
    :func:`matchaudit.data.from_scores` (default "keep-both": every line counts, with a warning).

    Example::

        data = load_voxsrc("voxsrc2021_val.txt", "scores.txt", "vox1_meta.csv", group_by="Gender")
    """
    (label, enrol, test), t_where = read_columns(trials, "VoxSRC trial list", {3: "label enrol test"})
    (s_score, s_enrol, s_test), s_where = read_columns(scores, "VoxSRC score file", {3: "score enrol test"})
    score = join_scores(enrol, test, t_where, s_enrol, s_test, s_score, s_where)
    ids = (speakers(enrol, speaker_of, t_where, "enrol"), speakers(test, speaker_of, t_where, "test"))
    return comparisons(score, ids, v.parse_labels(label, t_where), (enrol, test), metadata, metadata_key, group_by,
                       distance, t_where, duplicates=duplicates)
