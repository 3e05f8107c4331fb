"""A comparison table (one row per scored comparison) -> MatchData with protocol "listed"."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from matchaudit import checks
from matchaudit.choices import DUPLICATE_POLICIES, FTA_POLICIES
from matchaudit.data import validate as v
from matchaudit.data.conditions import carry, condition_names, condition_values, table_conditions
from matchaudit.data.comparison_checks import check_labels_agree, check_split, missing_attribute, pair_columns, sample_identity
from matchaudit.data.parquet import load_parquet_pairs, too_big_for_memory
from matchaudit.data.samples import check_pair_coverage, normalise_group_by
from matchaudit.data.readers import column, read_table
from matchaudit.errors import InputError, listing
from matchaudit.model import DuplicatePolicy, Failures, FtaPolicy, MatchData, PairBlock, Samples, pair_key

Attributes = pd.DataFrame | Mapping[str, Sequence[object]]
_META_KEYS = ("sample_id", "sample", "identity", "identity_id", "subject", "subject_id", "id")


def from_scores(
    score: Sequence[float],
    identity_a: Sequence[object] | None = None,
    identity_b: Sequence[object] | None = None,
    *,
    label: Sequence[object] | None = None,
    sample_a: Sequence[object] | None = None,
    sample_b: Sequence[object] | None = None,
    attributes_a: Attributes | None = None,
    attributes_b: Attributes | None = None,
    group_by: str | Sequence[str] = (),
    distance: bool = False,
    failed: Sequence[object] | None = None,
    fta_policy: FtaPolicy = "refuse",
    duplicates: DuplicatePolicy = "keep-both",
    conditions: Attributes | None = None,
) -> MatchData:
    """Build a MatchData from in-memory comparisons (position ``i`` = comparison ``i``); inputs are copied.

    Genuine comes from the identities (``identity_a == identity_b``) or from ``label`` when identities are
    absent (identity codes ``-1``); when both are given they must agree. ``attributes_a``/``attributes_b``:
    per-side tables (or dicts of arrays) with the ``group_by`` columns. ``distance=True`` negates the scores.
    Failures to acquire or compare (a missing score, or ``failed`` True, e.g. a non-zero return code):
    ``fta_policy`` "refuse" (an error naming the rows), "exclude" (left out of every rate, their rate reported
    per group) or "count" (counted as errors: transaction-level rates), see :class:`matchaudit.model.Failures`.

    A comparison listed more than once (the same unordered pair of ``sample_a``/``sample_b``: (a, b) and (b, a)
    are one comparison): ``duplicates`` "keep-both" (default) counts every row, as trial-list scorers count
    trial lines, with a warning giving how many and whether their scores differ; "first" keeps the first row of
    each; "mean" one row with the mean of their scores (for LLR-calibrated scores, what symmetric scoring does);
    "refuse" is an error naming them. Without sample ids a repeated comparison cannot be told from another
    comparison of the same identities: every row counts, and only "keep-both" is accepted. The same pair with
    different labels is an error whatever the policy.

    ``conditions``: a table (or dict of arrays) of trial conditions, one value per comparison and column (language
    match, channel...), for :func:`matchaudit.audit_conditions` (docs/conditions.md).
    """
    return build_comparisons(
        score, identity_a, identity_b, label=label, sample_a=sample_a, sample_b=sample_b,
        attributes_a=attributes_a, attributes_b=attributes_b, group_by=group_by, distance=distance,
        where=v.Where("comparisons"), failed=failed, fta_policy=fta_policy, duplicates=duplicates,
        conditions=conditions,
    )


def _both(a: object | None, b: object | None, what: str, where: v.Where) -> bool:
    if (a is None) != (b is None):
        raise InputError(f"{where.what}: {what} given for one side only; give both sides (a and b) or neither.")
    return a is not None


def build_comparisons(
    score: Sequence[float],
    identity_a: Sequence[object] | None,
    identity_b: Sequence[object] | None,
    *,
    label: Sequence[object] | None,
    sample_a: Sequence[object] | None,
    sample_b: Sequence[object] | None,
    attributes_a: Attributes | None,
    attributes_b: Attributes | None,
    group_by: str | Sequence[str],
    distance: bool,
    where: v.Where,
    failed: Sequence[object] | None = None,
    fta_policy: FtaPolicy = "refuse",
    duplicates: DuplicatePolicy = "keep-both",
    conditions: Attributes | None = None,
) -> MatchData:
    """Validate and assemble (shared by :func:`from_scores`, :func:`load_comparisons` and the format readers)."""
    group_by = normalise_group_by(group_by)
    checks.choice(fta_policy, FTA_POLICIES, "fta_policy")
    checks.choice(duplicates, DUPLICATE_POLICIES, "duplicates")
    has_samples = _both(sample_a, sample_b, "sample ids", where)
    if not has_samples:
        v.duplicates_without_samples(duplicates, where)
    has_ids = _both(identity_a, identity_b, "identities", where)
    given = {"score": score, "identity_a": identity_a, "identity_b": identity_b, "label": label,
             "sample_a": sample_a, "sample_b": sample_b, "attributes_a": attributes_a, "attributes_b": attributes_b,
             "failed": failed}
    m = v.check_lengths({k: v.n_rows(x, k) for k, x in given.items() if x is not None}, where.what)
    v.check_aligned(given, where)
    s = v.as_scores(score, where, distance=distance, missing_ok=fta_policy != "refuse")
    condition = condition_values(conditions, m, where)
    no_score = _failures(s, failed, fta_policy, where)

    if has_samples:
        sample_names, codes = v.encode(np.concatenate([v.as_str(sample_a, where, "sample_a"),
                                                       v.as_str(sample_b, where, "sample_b")]))
        sa, sb = codes[:m], codes[m:]
        v.check_self_pairs(sa, sb, sample_names, where)
    lab = v.parse_labels(label, where) if label is not None else None
    if not has_ids and lab is None:
        raise InputError(
            f"{where.what}: neither identities nor labels, so genuine and impostor comparisons cannot be told "
            "apart. Give the two identity columns, a label column, or sample ids with a sample metadata table "
            "holding each sample's identity."
        )

    va = v.attribute_values(attributes_a, group_by, m, where, " (side a)")
    vb = v.attribute_values(attributes_b, group_by, m, where, " (side b)")
    samples = None
    if has_ids:
        identity_names, codes = v.encode(np.concatenate([v.as_str(identity_a, where, "identity_a"),
                                                         v.as_str(identity_b, where, "identity_b")]))
        ia, ib = codes[:m], codes[m:]
        genuine = ia == ib
        if lab is not None:
            check_labels_agree(lab, genuine, where)
        occurrences = {a: np.concatenate([va[a], vb[a]]) for a in group_by}
        identity_group, group_names = v.identity_groups(codes, identity_names, occurrences, group_by)
        ga, gb = identity_group[ia], identity_group[ib]
        if has_samples:
            samples = Samples(ids=sample_names, identity=sample_identity(sa, sb, codes, sample_names,
                                                                          identity_names, where))
    else:
        assert lab is not None
        genuine = lab
        ia = ib = np.full(m, -1, dtype=np.int64)
        identity_names = np.array([], dtype=str)
        identity_group = np.array([], dtype=np.int64)
        na, nb = v.group_names_of(va, group_by, m), v.group_names_of(vb, group_by, m)
        check_split(genuine, na, nb, where)
        names, gcodes = v.encode(np.concatenate([na, nb]).astype(str))
        group_names = tuple(str(g) for g in names)
        ga, gb = gcodes[:m], gcodes[m:]

    none = np.full(m, -1, dtype=np.int64)
    block = PairBlock(
        score=s, identity_a=ia, identity_b=ib, group_a=ga, group_b=gb, genuine=np.asarray(genuine, dtype=bool),
        sample_a=sa if samples is not None else none, sample_b=sb if samples is not None else none,
    )
    positions = None
    repeated = None  # each row's pair key, where the policy merges the rows of a repeated comparison
    notes = []
    if has_samples:
        res = v.resolve_duplicates(sa, sb, s, sample_names, where, duplicates, genuine=block.genuine,
                                   groups=(ga, gb), failed=no_score)
        if res.repeats is not None:
            notes.append(v.duplicates_message(res.repeats, where, duplicates))
            positions = res.keep
            repeated = pair_key(sa, sb, max(1, sample_names.shape[0])) if duplicates != "keep-both" else None
            block = dataclasses.replace(block.take(res.keep), score=res.score)
            no_score = res.failed
    block, failures = _apply_policy(block, no_score, fta_policy, where, positions)
    kept = positions if failures is None or failures.policy != "exclude" else \
        (np.arange(m) if positions is None else positions)[~no_score]
    check_pair_coverage(block, group_names)
    if samples is not None:
        sizes = np.bincount(samples.identity, minlength=identity_names.shape[0])
        notes += v.single_sample_warnings(identity_names, sizes)
    return MatchData(
        identity_names=identity_names, identity_group=identity_group, group_names=group_names,
        group_by=group_by, protocol="listed", score_kind="negated distance" if distance else "similarity",
        samples=samples, pairs=block, warnings=v.emit(notes), failures=failures,
        conditions=carry(condition, kept, repeated, where),
    )


def _failures(score: np.ndarray, failed: Sequence[object] | None, policy: FtaPolicy, where: v.Where) -> np.ndarray:
    """Which comparisons failed: a missing score (NaN after :func:`validate.as_scores`) or ``failed`` True."""
    out = np.isnan(score)
    if failed is not None:
        flag = np.asarray(failed)
        if flag.dtype != bool:
            raise InputError(f"{where.what}: failed must be booleans (True where a comparison failed), not "
                             f"{flag.dtype}.", param="failed")
        out |= flag
        if policy == "refuse" and flag.any():
            raise InputError(
                f"{where.what}: failures to acquire or compare (a non-zero return code) at "
                f"{where.rows(np.flatnonzero(flag))}. Choose fta_policy='exclude' (drop and report them per group) "
                "or 'count' (count them as errors: transaction-level FNMR and FMR).", param="fta_policy")
    return out


def _apply_policy(block: PairBlock, failed: np.ndarray, policy: FtaPolicy, where: v.Where,
                  positions: np.ndarray | None = None) -> tuple[PairBlock, Failures | None]:
    """The comparisons the rates are about, and the failures record (``None`` when nothing failed).
    ``positions``: the input row of each comparison of ``block`` (default: its own position)."""
    if not failed.any():
        return block, None
    at = np.flatnonzero(failed)
    rows = at if positions is None else positions[at]
    kept = ~failed
    if not kept.any():
        raise InputError(f"{where.what}: every comparison failed (no score); nothing to evaluate.")
    lost = block.take(at)
    if policy == "exclude":
        return block.take(kept), Failures("exclude", lost, rows)
    observed = block.score[kept]
    floor = float(observed.min() - max(1.0, float(np.ptp(observed))))
    score = block.score.copy()
    score[at] = floor
    return dataclasses.replace(block, score=score), Failures("count", lost, rows, floor)


def load_comparisons(
    path: str | Path,
    *,
    score_col: str = "score",
    sample_cols: tuple[str, str] | None = ("sample_a", "sample_b"),
    identity_cols: tuple[str, str] | None = ("identity_a", "identity_b"),
    label_col: str | None = None,
    group_by: str | Sequence[str] = (),
    metadata_path: str | Path | None = None,
    metadata_key: str | None = None,
    metadata_identity_col: str = "identity",
    distance: bool = False,
    out_of_core: bool | None = False,
    return_code_col: str | None = None,
    fta_policy: FtaPolicy = "refuse",
    duplicates: DuplicatePolicy = "keep-both",
    condition_cols: str | Sequence[str] = (),
) -> MatchData:
    """Load a comparison table (CSV/TSV/Parquet, one row per comparison) into a MatchData.

    Columns: ``score_col`` (a similarity; with ``distance=True`` a distance, negated on load); the two sample
    ids ``sample_cols`` and/or the two identities ``identity_cols`` (the default names are used when present;
    ``None`` ignores them); a genuine/impostor label ``label_col`` (default: a column named ``label`` if
    present). Attributes for ``group_by`` come per side from the table (``<attr>_a``/``<attr>_b``) or else
    from ``metadata_path``: a table keyed by ``metadata_key`` (default: the first of sample_id, sample,
    identity, identity_id, subject, subject_id, id) whose keys are sample ids (a sample metadata table; it may
    also give each sample's identity in ``metadata_identity_col`` when the comparison table has none) or
    identities (a subject metadata table) -- whichever covers every comparison.

    ``out_of_core=True`` (Parquet only, attributes from the table's ``<attr>_a``/``<attr>_b`` columns): read
    the table a row group at a time, never whole (:mod:`matchaudit.data.parquet`; same checks, same
    counts); ``None``: out of core when the table would fill a quarter of this machine's memory.

    Failures to acquire or compare: a missing score, or a non-zero ``return_code_col`` (NIST match logs' return
    code), handled by ``fta_policy`` as in :func:`from_scores`. A comparison listed more than once (the same
    unordered pair of sample ids): ``duplicates`` as in :func:`from_scores` (out of core: "keep-both" or
    "refuse" only). ``condition_cols``: columns of trial conditions, one value per comparison (in memory only;
    :func:`matchaudit.audit_conditions`).
    """
    condition_cols = condition_names(condition_cols)
    checks.choice(duplicates, DUPLICATE_POLICIES, "duplicates")
    if out_of_core is None:
        out_of_core = too_big_for_memory(path)
    if out_of_core and (fta_policy != "refuse" or return_code_col is not None):
        raise InputError("an out-of-core comparison table has no failure policy: every row needs a score. Load "
                         "it in memory to exclude or count failures.", param="fta_policy")
    if out_of_core:
        if condition_cols:
            raise InputError("trial conditions (condition_cols) need the comparison table in memory; load it in "
                             "memory (out_of_core=False, --in-memory).", param="condition_cols")
        if metadata_path is not None:
            raise InputError("an out-of-core comparison table takes its group attributes from its own "
                             "<attr>_a/<attr>_b columns, not from a metadata table: join the metadata into the "
                             "Parquet table, or load it in memory.")
        return load_parquet_pairs(path, score_col=score_col, sample_cols=sample_cols, identity_cols=identity_cols,
                                  label_col=label_col, group_by=group_by, distance=distance, duplicates=duplicates)
    df, where = read_table(path, "comparison table")
    score = column(df, score_col, where, "the score", "score_col")
    samples = pair_columns(df, sample_cols, ("sample_a", "sample_b"), where, "a sample id column", "sample_cols")
    ids = pair_columns(df, identity_cols, ("identity_a", "identity_b"), where, "an identity column",
                        "identity_cols")
    if label_col is None:
        label = df["label"] if "label" in df.columns else None
    else:
        label = column(df, label_col, where, "the genuine/impostor label", "label_col")
    failed = None
    if return_code_col is not None:
        failed = return_code_failures(column(df, return_code_col, where, "the return code", "return_code_col"), where)
    group_by = normalise_group_by(group_by)

    meta = _Metadata.read(metadata_path, metadata_key, samples, ids, where) if metadata_path is not None else None
    if ids is None and meta is not None and meta.level == "sample" and metadata_identity_col in meta.table.columns:
        ids = meta.lookup(metadata_identity_col)
    attrs_a: dict[str, object] = {}
    attrs_b: dict[str, object] = {}
    for attr in group_by:
        if f"{attr}_a" in df.columns and f"{attr}_b" in df.columns:
            attrs_a[attr], attrs_b[attr] = df[f"{attr}_a"], df[f"{attr}_b"]
            if meta is not None and attr in meta.table.columns:  # given twice: they must agree
                for side, (col, looked) in zip("ab", zip((attrs_a[attr], attrs_b[attr]), meta.lookup(attr))):
                    what = f"'{attr}' (side {side})"
                    bad = np.flatnonzero(v.as_str(col, where, what) != v.as_str(looked, where, what))
                    if bad.size:
                        raise InputError(
                            f"{where.what}: '{attr}' is given twice, by the columns {attr}_a/{attr}_b and by the "
                            f"metadata table, and they disagree at {where.rows(bad)} (side {side}). Drop one of "
                            "them, or correct it.")
        elif meta is not None and attr in meta.table.columns:
            attrs_a[attr], attrs_b[attr] = meta.lookup(attr)
        else:
            present = list(df.columns) + (list(meta.table.columns) if meta is not None else [])
            raise InputError(missing_attribute(where, attr, present))
    return build_comparisons(
        score, *(ids if ids is not None else (None, None)), label=label,
        sample_a=samples[0] if samples is not None else None, sample_b=samples[1] if samples is not None else None,
        attributes_a=attrs_a if group_by else None, attributes_b=attrs_b if group_by else None,
        group_by=group_by, distance=distance, where=where, failed=failed, fta_policy=fta_policy,
        duplicates=duplicates, conditions=table_conditions(df, condition_cols, where),
    )


def return_code_failures(codes: object, where: v.Where, param: str | None = "return_code_col") -> np.ndarray:
    """Failed comparisons from a return-code column: any code but 0 (NIST FRTE's success code); a missing or
    non-integer code is an error naming the rows (``param``: the argument that named the column, None for a file's
    own column)."""
    num = pd.to_numeric(pd.Series(v.as_array(codes), dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(num) | (num != np.round(num)))
    if bad.size:
        raise InputError(f"{where.what}: the return code is missing or not an integer at {where.rows(bad)}; "
                         "0 means success, any other code a failure.", param=param)
    return num != 0


class _Metadata:
    """A sample- or identity-keyed metadata table joined to both sides of each comparison."""

    def __init__(self, table: pd.DataFrame, level: str, rows_a: np.ndarray, rows_b: np.ndarray) -> None:
        self.table, self.level, self.rows_a, self.rows_b = table, level, rows_a, rows_b

    def lookup(self, col: str) -> tuple[np.ndarray, np.ndarray]:
        values = self.table[col].to_numpy(dtype=object)
        return values[self.rows_a], values[self.rows_b]

    @classmethod
    def read(
        cls, path: str | Path, key: str | None, samples: tuple[pd.Series, pd.Series] | None,
        ids: tuple[pd.Series, pd.Series] | None, where: v.Where,
    ) -> _Metadata:
        table, mwhere = read_table(path, "metadata table")
        key = v.pick_key(table.columns, key, _META_KEYS, mwhere, "key")
        keys = v.as_str(column(table, key, mwhere, "the metadata key", "metadata_key"), mwhere, f"'{key}'")
        v.check_unique_ids(keys, mwhere, f"'{key}' value")
        index = pd.Index(keys)
        sides = [("sample", samples), ("identity", ids)]
        joins = []
        for level, pair in sides:
            if pair is None:
                continue
            a = index.get_indexer(v.as_str(pair[0], where, f"{level} a"))
            b = index.get_indexer(v.as_str(pair[1], where, f"{level} b"))
            if (a >= 0).all() and (b >= 0).all():
                return cls(table, level, a, b)
            joins.append((level, pair, a, b))
        if not joins:
            raise InputError(
                f"{where.what}: has neither sample ids nor identities to join {mwhere.what} on; add them."
            )
        level, pair, a, b = joins[0]
        rows = np.flatnonzero((a < 0) | (b < 0))
        absent = sorted({str(x) for x, i in zip(np.concatenate([pair[0], pair[1]]), np.concatenate([a, b])) if i < 0})
        raise InputError(
            f"{where.what}: comparisons at {where.rows(rows)} name {level}s missing from {mwhere.what} (key "
            f"'{key}'): {listing(absent)}. Add them to the metadata table or remove those comparisons."
        )
