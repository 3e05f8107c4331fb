"""Checks shared by both input kinds: ids, scores, labels, groups, comparisons. Each raises one InputError.

Every check names the rows (or identities) involved through a :class:`Where`, so the same code reports
1-based data rows for files and 0-based positions for arrays passed from Python.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from matchaudit.errors import InputError, listing

GENUINE_WORDS = frozenset({"1", "true", "genuine", "target", "match", "mated", "same"})
IMPOSTOR_WORDS = frozenset({"0", "false", "impostor", "imposter", "nontarget", "nonmatch", "nonmated", "different"})


@dataclass(frozen=True)
class Where:
    """Where values come from, for messages: ``what`` names the source; ``base`` is 1 for file rows, 0 for arrays."""

    what: str
    base: int = 0

    def rows(self, idx: Sequence[int] | np.ndarray) -> str:
        shown = [int(i) + self.base for i in idx]
        if self.base:
            return f"rows {listing(shown)} (first data row = 1)"
        return f"positions {listing(shown)} (0-based)"


def as_array(values: object) -> np.ndarray:
    """A fresh 1-D object array (never a view of the caller's data)."""
    if isinstance(values, (pd.Series, pd.Index)):
        return values.to_numpy(dtype=object, copy=True)
    return np.array(values, dtype=object, copy=True).reshape(-1)


def _missing(values: np.ndarray) -> np.ndarray:
    miss = pd.isna(values)
    text = np.array([isinstance(v, str) and not v.strip() for v in values], dtype=bool)
    return np.asarray(miss, dtype=bool) | text


def as_str(values: object, where: Where, what: str) -> np.ndarray:
    """Ids or attribute values as strings; missing or empty entries are an error naming the rows."""
    arr = as_array(values)
    bad = np.flatnonzero(_missing(arr))
    if bad.size:
        raise InputError(
            f"{where.what}: missing {what} at {where.rows(bad)}. Every row needs a {what}: fill them in "
            "(e.g. 'unknown' for an attribute) or remove those rows."
        )
    return np.array([str(v).strip() for v in arr], dtype=str)


def as_scores(values: object, where: Where, what: str = "score", distance: bool = False) -> np.ndarray:
    """Finite float64 similarities (negated when ``distance``); non-numeric, NaN or inf entries are errors."""
    arr = as_array(values)
    num = pd.to_numeric(pd.Series(arr, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    unparsable = np.flatnonzero(np.isnan(num) & ~_missing(arr) & ~_is_nan_text(arr))
    if unparsable.size:
        examples = listing(sorted({str(arr[i]) for i in unparsable}), 5)
        raise InputError(
            f"{where.what}: {what} is not a number at {where.rows(unparsable)} (values: {examples}). "
            f"Scores must be numeric; fix or remove those rows."
        )
    bad = np.flatnonzero(~np.isfinite(num))
    if bad.size:
        raise InputError(
            f"{where.what}: NaN, empty or infinite {what} at {where.rows(bad)}. A missing score is a failure to "
            "acquire or compare; matchaudit never drops it silently. Remove those rows (and report the failures "
            "separately) or give them a real score."
        )
    return -num if distance else num


def _is_nan_text(arr: np.ndarray) -> np.ndarray:
    return np.array([isinstance(v, str) and v.strip().lower() in {"nan", "inf", "-inf", "+inf"} for v in arr])


def parse_labels(values: object, where: Where) -> np.ndarray:
    """Genuine (True) / impostor (False) from 1/0, true/false, genuine/impostor, target/nontarget, match/non-match."""
    arr = as_array(values)
    out = np.zeros(arr.shape[0], dtype=bool)
    bad: list[int] = []
    for i, v in enumerate(arr):
        if isinstance(v, (bool, np.bool_)):
            out[i] = bool(v)
            continue
        word = str(v).strip().lower().replace("-", "").replace("_", "").replace(" ", "")
        if word in {"1.0"}:
            word = "1"
        elif word in {"0.0"}:
            word = "0"
        if word in GENUINE_WORDS:
            out[i] = True
        elif word not in IMPOSTOR_WORDS:
            bad.append(i)
    if bad:
        values_seen = listing(sorted({str(arr[i]) for i in bad}), 5)
        raise InputError(
            f"{where.what}: unrecognised label at {where.rows(bad)} (values: {values_seen}). Use 1/0, "
            "true/false, genuine/impostor, target/nontarget or match/non-match."
        )
    return out


def encode(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique names and int64 codes into them."""
    uniq, codes = np.unique(names, return_inverse=True)
    return uniq, codes.astype(np.int64).reshape(-1)


def n_rows(values: object) -> int:
    """Length of an array-like, a DataFrame, or a dict of equal-length columns."""
    if isinstance(values, Mapping) and not isinstance(values, pd.DataFrame):
        return len(next(iter(values.values()))) if values else 0
    return len(values)  # type: ignore[arg-type]


def check_lengths(lengths: Mapping[str, int], context: str) -> int:
    """All inputs must have the same length; returns it."""
    distinct = set(lengths.values())
    if len(distinct) > 1:
        detail = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise InputError(f"{context}: inputs have different lengths ({detail}); they must be aligned row by row.")
    n = distinct.pop()
    if n == 0:
        raise InputError(f"{context}: no rows. Give at least one comparison or sample.")
    return n


def attribute_values(
    attributes: pd.DataFrame | Mapping[str, object] | None, group_by: tuple[str, ...], n: int, where: Where, side: str = ""
) -> dict[str, np.ndarray]:
    """String values of each ``group_by`` attribute (aligned with ``n`` rows); missing columns/values are errors."""
    if not group_by:
        return {}
    if attributes is None:
        raise InputError(
            f"{where.what}: group_by={list(group_by)} but no attributes{side} were given. Pass a table with "
            "those columns, or leave group_by empty for one group 'all'."
        )
    cols = list(attributes.columns) if isinstance(attributes, pd.DataFrame) else list(attributes.keys())
    out: dict[str, np.ndarray] = {}
    for attr in group_by:
        if attr not in cols:
            raise InputError(missing_column(where, attr, cols, "a group_by attribute"))
        vals = as_str(attributes[attr], where, f"'{attr}'{side}")
        if vals.shape[0] != n:
            raise InputError(
                f"{where.what}: attribute '{attr}'{side} has {vals.shape[0]} values for {n} rows; align them."
            )
        out[attr] = vals
    return out


def missing_column(where: Where, name: str, present: Sequence[object], role: str, arg: str | None = None) -> str:
    """Message for a missing column: what exists, and close matches."""
    import difflib

    cols = [str(c) for c in present]
    close = [c for c in cols if c.lower() == name.lower()]
    close += [c for c in difflib.get_close_matches(name, cols, n=3, cutoff=0.6) if c not in close]
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    how = f" (set it with {arg}=...)" if arg else ""
    return (
        f"{where.what} has no column '{name}' ({role}){how}. Columns present: {listing(cols, 30)}.{hint}"
    )


def group_names_of(values: Mapping[str, np.ndarray], group_by: tuple[str, ...], n: int) -> np.ndarray:
    """Group name per row: the attribute values joined with '|' (e.g. 'F|asian'), or 'all'."""
    if not group_by:
        return np.full(n, "all", dtype=object)
    return np.array(["|".join(t) for t in zip(*(values[a] for a in group_by))], dtype=object)


def identity_groups(
    identity: np.ndarray, names: np.ndarray, values: Mapping[str, np.ndarray], group_by: tuple[str, ...]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Group code per identity from per-occurrence attribute values, which must be constant within an identity.

    ``identity``: identity code per occurrence (sample, or side of a comparison); ``names``: identity names.
    """
    problems: list[str] = []
    for attr in group_by:
        frame = pd.DataFrame({"k": identity, "v": values[attr]})
        seen = frame.groupby("k")["v"].unique()
        varying = seen[seen.map(len) > 1]
        if len(varying):
            items = [f"{names[k]} ({', '.join(sorted(map(str, v)))})" for k, v in varying.items()]
            noun = "identity" if len(items) == 1 else f"{len(items)} identities"
            problems.append(f"'{attr}' varies within {noun}: {listing(items)}")
    if problems:
        raise InputError(
            "Groups are defined per identity, but " + "; ".join(problems) + ". Fix the attribute so that each "
            "identity has one value, or drop it from group_by (sample-level grouping is not supported)."
        )
    per_row = group_names_of(values, group_by, identity.shape[0])
    present, first = np.unique(identity, return_index=True)
    assert present.shape[0] == names.shape[0], "every identity occurs at least once"
    group_of_identity = per_row[first]
    gnames, gcodes = encode(group_of_identity.astype(str))
    return gcodes, tuple(str(g) for g in gnames)


def check_group_coverage(group_names: tuple[str, ...], n_genuine: np.ndarray, n_impostor: np.ndarray) -> None:
    """Every group needs genuine and same-group impostor comparisons, or its error rates are undefined."""
    no_gen = [g for g, c in zip(group_names, n_genuine) if c == 0]
    no_imp = [g for g, c in zip(group_names, n_impostor) if c == 0]
    parts = []
    if no_gen:
        parts.append(f"no genuine comparisons in group(s) {listing(no_gen)} (FNMR undefined)")
    if no_imp:
        parts.append(
            f"no impostor comparisons with both sides in group(s) {listing(no_imp)} (per-group FMR undefined)"
        )
    if parts:
        text = "; ".join(parts)
        raise InputError(
            text[0].upper() + text[1:] + ". Add comparisons for these groups, merge them with another group, "
            "or choose a different group_by."
        )


def check_pairs(a: np.ndarray, b: np.ndarray, names: np.ndarray, where: Where) -> None:
    """No sample compared with itself; each unordered comparison once ((a, b) and (b, a) are the same)."""
    same = np.flatnonzero(a == b)
    if same.size:
        raise InputError(
            f"{where.what}: a sample is compared with itself at {where.rows(same)} "
            f"(samples {listing(sorted(set(names[a[same]].tolist())))}). Remove those rows."
        )
    frame = pd.DataFrame({"lo": np.minimum(a, b), "hi": np.maximum(a, b)})
    dup = frame.duplicated(keep=False).to_numpy()
    if dup.any():
        groups = frame[dup].groupby(["lo", "hi"]).groups
        items = [
            f"{names[lo]} vs {names[hi]} at {where.rows(np.asarray(rows))}"
            for (lo, hi), rows in sorted(groups.items(), key=lambda kv: min(kv[1]))
        ]
        raise InputError(
            f"{where.what}: the same comparison is listed more than once ((a, b) and (b, a) count as the same): "
            f"{listing(items, 5)}. Keep one row per comparison."
        )


def check_unique_ids(ids: np.ndarray, where: Where, what: str = "sample id") -> None:
    dup = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        raise InputError(
            f"{where.what}: duplicate {what}s {listing(sorted(set(ids[rows].tolist())))} at {where.rows(rows)}. "
            f"Each {what} must appear once."
        )


def single_sample_warnings(identity_names: np.ndarray, sizes: np.ndarray) -> list[str]:
    """Identities with one sample contribute no genuine comparisons: a warning, not an error."""
    lone = identity_names[sizes == 1]
    if lone.size == 0:
        return []
    return [
        f"{lone.size} of {identity_names.size} identities have a single sample ({listing(lone.tolist())}); "
        "they take part in impostor comparisons only."
    ]


def emit(messages: list[str]) -> tuple[str, ...]:
    for msg in messages:
        warnings.warn(msg, UserWarning, stacklevel=3)
    return tuple(messages)
