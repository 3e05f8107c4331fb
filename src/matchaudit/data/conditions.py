"""Trial conditions read with a comparison table: one value per comparison and condition column (language match,
channel, duration bin...), checked once here and carried into :class:`matchaudit.model.Conditions` through the
same row selections as the comparisons (repeated comparisons, failures)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from matchaudit.data import validate as v
from matchaudit.errors import InputError, listing
from matchaudit.model import Conditions

Table = pd.DataFrame | Mapping[str, Sequence[object]]


def condition_names(names: str | Sequence[str] | None) -> tuple[str, ...]:
    """The condition columns as a tuple of names (a comma-separated string is split), each once."""
    if names is None:
        return ()
    out = tuple(n.strip() for n in names.split(",")) if isinstance(names, str) else tuple(str(n) for n in names)
    out = tuple(n for n in out if n)
    if len(set(out)) < len(out):
        raise InputError(f"condition columns {list(out)}: a column is named twice; name each once.",
                         param="condition_cols")
    return out


def condition_values(table: Table | None, n: int, where: v.Where) -> dict[str, np.ndarray] | None:
    """Each condition column of ``table`` (all its columns) as strings aligned with the ``n`` comparisons; a missing
    value is an error naming the rows (a comparison with no condition belongs to no subset: fill it in, e.g.
    'unknown', or drop the row)."""
    if table is None:
        return None
    if not isinstance(table, (pd.DataFrame, Mapping)):
        raise InputError(f"{where.what}: conditions must be a table (a pandas DataFrame) or a mapping of column names "
                         f"to per-comparison values; got {type(table).__name__}.", param="conditions")
    names = condition_names(list(table.columns) if isinstance(table, pd.DataFrame) else list(table.keys()))
    if not names:
        raise InputError(f"{where.what}: conditions has no column; give at least one.", param="conditions")
    out = {}
    for name in names:
        vals = v.as_str(table[name], where, f"condition '{name}'")
        if vals.shape[0] != n:
            raise InputError(f"{where.what}: condition '{name}' has {vals.shape[0]:,} values for {n:,} comparisons; "
                             "align them.", param="conditions")
        out[name] = vals
    return out


def table_conditions(df: pd.DataFrame, names: Sequence[str], where: v.Where, param: str = "condition_cols"
                     ) -> dict[str, pd.Series] | None:
    """The named condition columns of a read table (None when none is named); a column that is not there is an
    error listing those that are."""
    if not names:
        return None
    for name in names:
        if name not in df.columns:
            raise InputError(v.missing_column(where, name, list(df.columns), "a condition column", param), param=param)
    return {name: df[name] for name in names}


def carry(values: dict[str, np.ndarray] | None, keep: np.ndarray | None, repeated: np.ndarray | None,
          where: v.Where) -> Conditions | None:
    """The conditions of the comparisons kept (``keep``: positions into the rows read; None: all). ``repeated``: for
    a policy that merges a repeated comparison into one row (first, mean), each row's pair key; the rows of one
    comparison must then agree on every condition, or the merged row would have two."""
    if values is None:
        return None
    if repeated is not None:
        for name, vals in values.items():
            n = pd.Series(vals).groupby(repeated).nunique()
            bad = n.index[n.to_numpy() > 1]
            if bad.size:
                rows = np.flatnonzero(np.isin(repeated, bad))
                raise InputError(
                    f"{where.what}: a comparison listed more than once has different values of condition '{name}' "
                    f"at {where.rows(rows)}, and the duplicates policy merges its rows into one. Keep every row "
                    "(duplicates='keep-both') or correct the condition.", param="duplicates")
    return Conditions({k: (vals if keep is None else vals[keep]) for k, vals in values.items()})


def describe_values(values: np.ndarray, limit: int = 6) -> str:
    """The distinct values of a condition with their counts, for messages."""
    names, counts = np.unique(values, return_counts=True)
    return listing([f"{a!r} ({c:,})" for a, c in zip(names, counts)], limit)


__all__ = ["carry", "condition_names", "condition_values", "describe_values", "table_conditions"]
