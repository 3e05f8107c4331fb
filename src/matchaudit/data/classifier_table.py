"""Classifier tables for group-fairness tests: one row per example with the true label, the prediction
and/or score, and the group. All checks live here; the user's table is only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from matchaudit.data.readers import column, read_table
from matchaudit.data.validate import BINARY_FALSE, BINARY_TRUE, Where, missing
from matchaudit.errors import InputError, listing

_TRUE, _FALSE = set(BINARY_TRUE), set(BINARY_FALSE)


@dataclass(frozen=True)
class ClassifierData:
    """Validated classifier data: labels 0/1, predictions 0/1 and/or scores, group codes ``0..G-1``."""

    y_true: np.ndarray
    group: np.ndarray
    group_names: tuple[str, ...]
    y_pred: np.ndarray | None = None
    y_score: np.ndarray | None = None
    threshold: float | None = None
    source: str = "arrays"

    @property
    def n(self) -> int:
        return int(self.y_true.size)

    def predictions(self) -> np.ndarray:
        """0/1 decisions: ``y_pred`` if given, else ``y_score >= threshold`` (scikit-learn's rule)."""
        if self.y_pred is not None:
            return self.y_pred
        if self.y_score is None or self.threshold is None:
            raise InputError(f"{self.source}: this metric needs decisions: give a prediction column (y_pred), "
                             "or a score column with a threshold (accept iff score >= threshold).")
        return (self.y_score >= self.threshold).astype(np.int8)

    def scores(self) -> np.ndarray:
        if self.y_score is None:
            raise InputError(f"{self.source}: AUC needs scores: give a score column (y_score).")
        return self.y_score


def _binary(values: object, where: Where, role: str) -> np.ndarray:
    ser = pd.Series(np.asarray(values, dtype=object).reshape(-1))
    miss = missing(ser)
    if miss.any():
        raise InputError(f"{where.what}: {role} is missing in {where.rows(np.flatnonzero(miss))}. matchaudit never "
                         "drops rows silently: remove or fill these rows, then run again.")
    text = ser.map(lambda x: str(bool(x)) if isinstance(x, (bool, np.bool_)) else str(x)).str.strip().str.lower()
    ones, zeros = text.isin(_TRUE).to_numpy(), text.isin(_FALSE).to_numpy()
    bad = ~(ones | zeros)
    if bad.any():
        vals = sorted(set(text[bad]))
        raise InputError(f"{where.what}: {role} must be binary (1/0, 1/-1, true/false or yes/no); found "
                         f"{listing(vals)} in {where.rows(np.flatnonzero(bad))}. Recode it (e.g. positive class = 1).")
    return ones.astype(np.int8)


def _scores(values: object, where: Where) -> np.ndarray:
    ser = pd.Series(np.asarray(values, dtype=object).reshape(-1))
    num = pd.to_numeric(ser, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(num)
    if bad.any():
        raise InputError(f"{where.what}: the score must be a finite number; not so in {where.rows(np.flatnonzero(bad))}"
                         f" (values {listing([str(x) for x in ser[bad].head(5)])}). Remove or fix these rows.")
    return num


def _groups(values: object, where: Where) -> tuple[np.ndarray, tuple[str, ...]]:
    ser = pd.Series(np.asarray(values, dtype=object).reshape(-1))
    miss = missing(ser)
    if miss.any():
        raise InputError(f"{where.what}: the group is missing in {where.rows(np.flatnonzero(miss))}. Give every row a "
                         "group (or a group such as 'unknown' on purpose).")
    codes, names = pd.factorize(ser.astype(str).str.strip(), sort=True)
    if len(names) < 2:
        raise InputError(f"{where.what}: only one group ({names[0]!r}); a group test needs at least two.")
    return codes.astype(np.int64), tuple(str(x) for x in names)


def classifier_data(y_true: object, group: object, *, y_pred: object = None, y_score: object = None,
                    threshold: float | None = None, where: Where | None = None) -> ClassifierData:
    """Validate in-memory arrays (copies are made; the inputs are never modified)."""
    where = where or Where("classifier data")
    if y_pred is None and y_score is None:
        raise InputError(f"{where.what}: give predictions (y_pred) and/or scores (y_score).")
    yt = _binary(y_true, where, "y_true")
    g, names = _groups(group, where)
    yp = None if y_pred is None else _binary(y_pred, where, "y_pred")
    ys = None if y_score is None else _scores(y_score, where)
    sizes = {"y_true": yt.size, "group": g.size} | ({"y_pred": yp.size} if yp is not None else {}) \
        | ({"y_score": ys.size} if ys is not None else {})
    if len(set(sizes.values())) != 1:
        raise InputError(f"{where.what}: columns differ in length ({sizes}).")
    if threshold is not None and not np.isfinite(threshold):
        raise InputError(f"threshold {threshold!r} is not a finite number.")
    return ClassifierData(yt, g, names, yp, ys, threshold, where.what)


def load_classifier_table(path: str | Path, *, y_true: str = "y_true", group: str = "group", y_pred: str | None = None,
                          y_score: str | None = None, threshold: float | None = None) -> ClassifierData:
    """Read a CSV/TSV/Parquet classifier table and validate the named columns."""
    df, where = read_table(path, "classifier table")
    role = "classifier table column"
    cols = {"y_true": column(df, y_true, where, f"{role}: true label", "y_true"),
            "group": column(df, group, where, f"{role}: group", "group")}
    if y_pred is not None:
        cols["y_pred"] = column(df, y_pred, where, f"{role}: prediction", "y_pred")
    if y_score is not None:
        cols["y_score"] = column(df, y_score, where, f"{role}: score", "y_score")
    return classifier_data(cols["y_true"], cols["group"], y_pred=cols.get("y_pred"), y_score=cols.get("y_score"),
                           threshold=threshold, where=where)


def check_support(data: ClassifierData, groups: list[int], needs: tuple[str, ...], metric: str,
                  minimum: int = 1) -> None:
    """Each group in ``groups`` must have at least ``minimum`` rows of each needed outcome ('positives'/'negatives')."""
    for need in needs:
        label = 1 if need == "positives" else 0
        counts = np.bincount(data.group[data.y_true == label], minlength=len(data.group_names))
        short = [f"{data.group_names[g]} ({counts[g]})" for g in groups if counts[g] < minimum]
        if short:
            raise InputError(f"{data.source}: {metric} needs at least {minimum} {need} per group; too few in "
                             f"{listing(short)}. Merge small groups, drop them from the comparison, or pick a metric "
                             "these groups support.")
