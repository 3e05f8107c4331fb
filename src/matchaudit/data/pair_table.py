"""Face-verification pair tables (BFW, RFW-style) with one score column per model -> :class:`MatchData`."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.conditions import condition_names, table_conditions
from matchaudit.data.readers import column, read_table
from matchaudit.data.samples import normalise_group_by
from matchaudit.data.score_files import PathLike, comparisons
from matchaudit.errors import InputError, listing
from matchaudit.model import DuplicatePolicy, MatchData


def load_pair_table(
    path: PathLike, *, score_col: str = "score", sample_cols: tuple[str, str] = ("p1", "p2"),
    identity_cols: tuple[str, str] | None = ("id1", "id2"), label_col: str | None = "label",
    metadata: PathLike | None = None, metadata_key: str | None = None, group_by: str | Sequence[str] = (),
    distance: bool = False, duplicates: DuplicatePolicy = "keep-both", condition_cols: str | Sequence[str] = (),
) -> MatchData:
    """A pair table (CSV/TSV/Parquet) in BFW's layout, ``fold,p1,p2,label,id1,id2,att1,att2,<one score column
    per model>,a1,a2,g1,g2,e1,e2``: one row per pair of face images.

    ``score_col`` picks the model. Samples: ``sample_cols``; identities: ``identity_cols`` when the table has
    them (``None``: labels only); label: ``label_col`` (1/0, optional when there are identities; both must
    agree). A ``group_by`` attribute ``x`` is the per-side columns ``x1``/``x2`` (BFW's ``g``, ``e``, ``a``,
    ``att``), else it comes from ``metadata`` keyed by identity. A pair listed more than once: ``duplicates`` as
    in :func:`matchaudit.data.from_scores`. ``condition_cols``: columns of trial conditions, one value per pair
    (:func:`matchaudit.audit_conditions`).

    Example::

        data = load_pair_table("bfw-v0.1.5-datatable.csv", score_col="senet50", group_by="e")
    """
    df, where = read_table(path, "pair table")
    score = column(df, score_col, where, "the score column of the model", "score_col")
    samples = tuple(column(df, c, where, "a sample id column", "sample_cols") for c in sample_cols)
    ids = None
    if identity_cols is not None and all(c in df.columns for c in identity_cols):
        ids = tuple(v.as_str(df[c], where, c) for c in identity_cols)
    label = None
    if label_col is not None and label_col in df.columns:
        label = v.parse_labels(df[label_col], where)
    if ids is None and label is None:
        raise InputError(
            f"{where.what}: neither identity columns ({', '.join(identity_cols or ())}) nor a label column "
            f"('{label_col}'): genuine and impostor pairs cannot be told apart. Columns present: "
            f"{listing(list(df.columns), 30)}; name them with identity_cols or label_col."
        )
    own: tuple[dict[str, pd.Series], dict[str, pd.Series]] = ({}, {})
    for attr in normalise_group_by(group_by):
        if f"{attr}1" in df.columns and f"{attr}2" in df.columns:
            own[0][attr], own[1][attr] = df[f"{attr}1"], df[f"{attr}2"]
    return comparisons(score, ids, label, samples, metadata, metadata_key, group_by,  # type: ignore[arg-type]
                       distance, where, own=own, duplicates=duplicates,
                       conditions=table_conditions(df, condition_names(condition_cols), where))
