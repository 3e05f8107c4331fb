"""Samples + embeddings (all-pairs or a listed protocol) -> MatchData."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.data.readers import check_embedding_array, column, list_column, read_npy, read_table
from matchaudit.errors import InputError, listing
from matchaudit.model import MatchData, Metric, PairBlock, Samples
from matchaudit.scores import pair_scores

_SCORE_KIND = {"cosine": "cosine", "euclidean": "negated euclidean"}


def from_embeddings(
    embeddings: np.ndarray,
    identities: Sequence[object],
    *,
    ids: Sequence[object] | None = None,
    attributes: pd.DataFrame | None = None,
    group_by: str | Sequence[str] = (),
    metric: Metric = "cosine",
    pairs: object | None = None,
) -> MatchData:
    """Build a MatchData from in-memory embeddings (row ``i`` = sample ``i``); inputs are copied, never changed.

    ``identities``: identity per sample. ``ids``: sample ids (default ``"0".."n-1"``). ``attributes``: a table
    aligned with the samples holding the ``group_by`` columns (constant within an identity). ``pairs``: an
    ``(m, 2)`` array-like of sample ids for a listed protocol; ``None`` means all pairs ``i < j``.
    """
    here = v.Where("samples")
    return build_samples(
        embeddings, identities, ids=ids, attributes=attributes, group_by=group_by,
        metric=metric, pairs=pairs, table=here, emb=v.Where("embeddings"), pairs_where=v.Where("pairs"),
    )


def build_samples(
    embeddings: np.ndarray,
    identities: Sequence[object],
    *,
    ids: Sequence[object] | None,
    attributes: pd.DataFrame | None,
    group_by: str | Sequence[str],
    metric: Metric,
    pairs: object | None,
    table: v.Where,
    emb: v.Where,
    pairs_where: v.Where,
) -> MatchData:
    """Validate and assemble (shared by :func:`from_embeddings` and :func:`load_samples`)."""
    if metric not in _SCORE_KIND:
        raise InputError(f"unknown metric {metric!r}; use 'cosine' or 'euclidean'.")
    group_by = normalise_group_by(group_by)
    x = _embeddings(embeddings, metric, emb)
    names = v.as_str(identities, table, "identity")
    n = names.shape[0]
    if x.shape[0] != n:
        raise InputError(
            f"{emb.what} has {x.shape[0]} rows but {table.what} has {n}: row i of the embeddings must be "
            "sample i of the table. Re-export them together."
        )
    sample_ids = np.arange(n).astype(str) if ids is None else v.as_str(ids, table, "sample id")
    v.check_lengths({"identities": n, "sample ids": sample_ids.shape[0]}, table.what)
    v.check_unique_ids(sample_ids, table)
    if isinstance(attributes, pd.DataFrame) and len(attributes) != n:  # a mapping: each column checked below
        raise InputError(f"attributes have {len(attributes)} rows for {n} samples; align them with the samples.")
    values = v.attribute_values(attributes, group_by, n, table)
    identity_names, identity = v.encode(names)
    identity_group, group_names = v.identity_groups(identity, identity_names, values, group_by)
    sizes = np.bincount(identity, minlength=identity_names.shape[0])
    samples = Samples(ids=sample_ids, identity=identity, embeddings=x)
    common = dict(
        identity_names=identity_names, identity_group=identity_group, group_names=group_names,
        group_by=group_by, score_kind=_SCORE_KIND[metric], samples=samples, metric=metric,
    )
    if pairs is None:
        if n < 2:
            raise InputError(f"{table.what}: one sample only; all-pairs needs at least two.")
        g = identity_group
        gen = np.bincount(g, weights=sizes * (sizes - 1) / 2, minlength=len(group_names))
        imp = (np.bincount(g, weights=sizes, minlength=len(group_names)) ** 2
               - np.bincount(g, weights=sizes**2, minlength=len(group_names))) / 2
        v.check_group_coverage(group_names, gen, imp)
        return MatchData(protocol="all-pairs", warnings=v.emit(v.single_sample_warnings(identity_names, sizes)),
                         **common)
    a, b = _pair_indices(pairs, sample_ids, pairs_where, table)
    v.check_pairs(a, b, sample_ids, pairs_where)
    ia, ib = identity[a], identity[b]
    genuine = ia == ib
    block = PairBlock(
        score=pair_scores(x, a, b, metric), identity_a=ia, identity_b=ib,
        group_a=identity_group[ia], group_b=identity_group[ib], genuine=genuine, sample_a=a, sample_b=b,
    )
    check_pair_coverage(block, group_names)
    return MatchData(protocol="listed", pairs=block,
                     warnings=v.emit(v.single_sample_warnings(identity_names, sizes)), **common)


def normalise_group_by(group_by: str | Sequence[str] | None) -> tuple[str, ...]:
    """``group_by`` as a tuple of attribute names (a string is one attribute; None is none); an attribute named
    twice is refused (``group,group`` made groups 'A|A', 'B|B')."""
    if group_by is None:
        return ()
    out = (group_by,) if isinstance(group_by, str) else tuple(str(g) for g in group_by)
    twice = sorted({g for g in out if out.count(g) > 1})
    if twice:
        raise InputError(f"group_by names {', '.join(repr(g) for g in twice)} more than once; name each attribute "
                         "once.", param="group_by")
    return out


def check_pair_coverage(block: PairBlock, group_names: tuple[str, ...]) -> None:
    """Every group needs genuine and same-group impostor comparisons (per-group FNMR and FMR); else InputError."""
    same = block.group_a == block.group_b
    k = len(group_names)
    gen = np.bincount(block.group_a[same & block.genuine], minlength=k)
    imp = np.bincount(block.group_a[same & ~block.genuine], minlength=k)
    v.check_group_coverage(group_names, gen, imp)


def _embeddings(embeddings: np.ndarray, metric: Metric, where: v.Where) -> np.ndarray:
    """Finite float32 rows; unit-norm for cosine (zero rows are an error there)."""
    arr = np.asarray(embeddings)
    check_embedding_array(arr, where)
    x = arr.astype(np.float64)  # a copy
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if bad.size:
        raise InputError(f"{where.what}: NaN or infinite values at {where.rows(bad)}. Recompute or drop those samples.")
    if metric == "cosine":
        # cosine is scale-free: each row is first divided by its largest magnitude, so that its norm neither
        # overflows (rows of 1e155 and more scored as a perfect system) nor underflows (1e-200: "all zero")
        scale = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(x.shape[0])
        zero = np.flatnonzero(scale == 0)
        if zero.size:
            raise InputError(
                f"{where.what}: all-zero embeddings at {where.rows(zero)}; cosine similarity is undefined for "
                "them. Drop those samples (often failed extractions) or use metric='euclidean'."
            )
        x /= scale[:, None]
        x /= np.linalg.norm(x, axis=1)[:, None]
    return x.astype(np.float32)


def _pair_indices(pairs: object, ids: np.ndarray, where: v.Where, table: v.Where) -> tuple[np.ndarray, np.ndarray]:
    arr = pairs.to_numpy(dtype=object) if isinstance(pairs, pd.DataFrame) else np.array(pairs, dtype=object)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0:
        raise InputError(f"{where.what}: expected one (sample_a, sample_b) pair per row, got shape {arr.shape}.")
    a_ids = v.as_str(arr[:, 0], where, "sample_a")
    b_ids = v.as_str(arr[:, 1], where, "sample_b")
    index = pd.Index(ids)
    a = index.get_indexer(a_ids).astype(np.int64)
    b = index.get_indexer(b_ids).astype(np.int64)
    unknown = np.flatnonzero((a < 0) | (b < 0))
    if unknown.size:
        names = sorted({s for s, i in zip(np.concatenate([a_ids, b_ids]), np.concatenate([a, b])) if i < 0})
        raise InputError(
            f"{where.what}: comparisons at {where.rows(unknown)} name samples not in {table.what}: "
            f"{listing(names)}. Add those samples or remove the comparisons."
        )
    return a, b


def load_samples(
    samples_path: str | Path,
    embeddings_path: str | Path | None = None,
    *,
    id_col: str = "sample_id",
    identity_col: str = "identity",
    embedding_col: str | None = None,
    group_by: str | Sequence[str] = (),
    metric: Metric = "cosine",
    pairs_path: str | Path | None = None,
) -> MatchData:
    """Load a samples table (CSV/TSV/Parquet) and its embeddings into a MatchData.

    The table has one row per sample: ``id_col``, ``identity_col`` and any attribute columns (``group_by``).
    Embeddings come from ``embeddings_path`` (a 2-D ``.npy``, row i = table row i) or from a Parquet list
    column ``embedding_col`` (default: a column named ``embedding`` when there is no ``embeddings_path``).
    Without ``pairs_path`` every unordered pair is compared (protocol ``"all-pairs"``); with it, only the pairs
    listed there (CSV/Parquet with columns ``sample_a``, ``sample_b``, or exactly two columns), scored with
    the same exact kernel (protocol ``"listed"``).
    """
    df, where = read_table(samples_path, "samples table")
    ids = column(df, id_col, where, "sample id", "id_col")
    identities = column(df, identity_col, where, "identity", "identity_col")
    if embeddings_path is not None and embedding_col is not None:
        raise InputError("give either embeddings_path (a .npy file) or embedding_col (a Parquet list column), not both.")
    if embeddings_path is not None:
        x, emb_where = read_npy(embeddings_path)
    else:
        name = embedding_col or "embedding"
        if embedding_col is None and name not in df.columns:
            raise InputError(
                f"no embeddings: give embeddings_path (a .npy aligned with {where.what}) or embedding_col (a "
                f"Parquet list column). Columns present: {listing(list(df.columns), 30)}."
            )
        emb_where = v.Where(f"embedding column '{name}' of {where.what}", base=1)
        x = list_column(column(df, name, where, "embeddings", "embedding_col"), emb_where)
    group_by = normalise_group_by(group_by)
    for attr in group_by:
        column(df, attr, where, "a group_by attribute", "group_by")
    pairs = None
    pairs_where = v.Where("pairs")
    if pairs_path is not None:
        pdf, pairs_where = read_table(pairs_path, "comparison list")
        if {"sample_a", "sample_b"} <= set(pdf.columns):
            pairs = pdf[["sample_a", "sample_b"]]
        elif pdf.shape[1] == 2:
            pairs = pdf
        else:
            raise InputError(v.missing_column(pairs_where, "sample_a", list(pdf.columns),
                                              "with 'sample_b': the two sample ids of each comparison"))
    return build_samples(
        x, identities, ids=ids, attributes=df if group_by else None, group_by=group_by, metric=metric,
        pairs=pairs, table=where, emb=emb_where, pairs_where=pairs_where,
    )
