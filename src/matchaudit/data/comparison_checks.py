"""Checks of comparison tables shared by the in-memory loader (``comparisons``) and the out-of-core one
(``parquet``): per-side columns, labels against identities, one identity per sample, attributes of genuine
comparisons."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from matchaudit import checks
from matchaudit.data import validate as v
from matchaudit.errors import InputError, listing


def check_split(genuine: np.ndarray, na: np.ndarray, nb: np.ndarray, where: v.Where) -> None:
    """Label-only tables: both sides of a genuine comparison have the same attribute values (group)."""
    split = np.flatnonzero(genuine & (na != nb))
    if split.size:
        raise InputError(
            f"{where.what}: genuine comparisons (by label) whose two sides have different attribute values at "
            f"{where.rows(split)}. Both sides of a genuine comparison are one identity, so its attributes "
            "must agree: fix the attributes or the labels."
        )


def missing_attribute(where: v.Where, attr: str, present: list) -> str:
    """Message for a group_by attribute found neither in the table nor in the metadata."""
    return (v.missing_column(where, f"{attr}_a", present, f"group_by attribute '{attr}'")
            + f" Give '{attr}_a' and '{attr}_b' columns, or a metadata table (metadata_path) with a '{attr}' column.")


def check_labels_agree(lab: np.ndarray, genuine: np.ndarray, where: v.Where) -> None:
    bad = np.flatnonzero(lab != genuine)
    if bad.size:
        raise InputError(
            f"{where.what}: the label disagrees with the identities at {where.rows(bad)} (a comparison is genuine "
            "iff both identities are the same). Fix the labels or the identities, or drop one of the two."
        )


def sample_identity(
    sa: np.ndarray, sb: np.ndarray, identity: np.ndarray, sample_names: np.ndarray, identity_names: np.ndarray,
    where: v.Where,
) -> np.ndarray:
    """Identity code per sample; a sample id must always carry the same identity."""
    occurrences = np.concatenate([sa, sb])
    varying = v.values_per_key(occurrences, identity_names[identity])
    if varying:
        items = [f"{sample_names[s]} ({', '.join(k)})" for s, k in varying.items()]
        raise InputError(
            f"{where.what}: samples listed with more than one identity: {listing(items)}. A sample belongs to "
            "one identity; fix the identity columns."
        )
    out = np.empty(sample_names.shape[0], dtype=np.int64)
    out[occurrences] = identity
    return out


def pair_columns(
    df: pd.DataFrame, cols: Sequence[str] | None, default: tuple[str, str], where: v.Where, role: str, arg: str
) -> tuple[pd.Series, pd.Series] | None:
    """The two per-side columns; the default names are optional (skipped when both are absent)."""
    if cols is None:
        return None
    a, b = checks.pair(cols, arg)
    if a in df.columns and b in df.columns:
        return df[a], df[b]
    if (a, b) == default and a not in df.columns and b not in df.columns:
        return None
    missing = a if a not in df.columns else b
    raise InputError(v.missing_column(where, missing, list(df.columns), role, arg))
