"""Model comparison: two score sets on the same comparisons (model A vs model B).

Paired identity bootstrap: both models are run through the engine with the *same* scheme and seed, so every
replicate gives both the same identity weights (double-or-nothing ``w_k in {0, 2}`` or vertex counts); the
replicate difference ``theta*_A - theta*_B`` keeps the pairing, and its percentile interval is the interval
for the difference. Each model's threshold at an FMR target is re-derived in every replicate from its own
reference impostors. Measures: FNMR@FMR overall and per group, and every fairness measure.

Paired test (``H0: FNMR@FMR(A) = FNMR@FMR(B)``): model labels are swapped per identity (identity ``k``
flipped: all comparisons it owns -- its genuine comparisons and the impostor comparisons listed with it on
side a -- take the other model's score), each relabelled data set gets its own thresholds, and the statistic
is studentized by the paper's fast variant: ``T / se(T)`` with ``se`` from the paired bootstrap, against
``T_pi / sd(T_pi)``. Identical models give ``T = 0`` and a degenerate (never significant) test.

The passes (both models' engine runs, the scores listed per comparison) are made by
:mod:`matchaudit.auditing.model_comparison`; the functions here take their outputs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from matchaudit.choices import PAIRED_SCHEMES as SCHEMES

from matchaudit import resampling as rs
from matchaudit.engine import Counts
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.encoding import jsonable
from matchaudit.estimators.permutation import PermutationTestResult, permutation_test
from matchaudit.definitions import ThresholdImpostors, max_accepted
from matchaudit.pairings import reference_pairs
from matchaudit.model import IDENTITY_SOURCES, DenseBlock, MatchData
from matchaudit.progress import Meter

def check_paired(a: MatchData, b: MatchData) -> None:
    """Both data sets must hold the same comparisons of the same identities and groups (scores may differ), and
    identities: the paired intervals and the swap test resample them (without, every scheme crashed in the engine)."""
    if not a.has_identities or not b.has_identities:
        raise InputError("model comparison resamples identities (its paired intervals and swap test), and the "
                         f"comparisons carry none. Give them ({IDENTITY_SOURCES}).")
    why = paired_mismatch(a, b)
    if why:
        raise InputError(f"model comparison needs both models scored on the same comparisons, but {why}. "
                         "Give two tables with the same (sample_a, sample_b) rows in the same order, or two "
                         "embedding sets for the same samples table.")


def paired_mismatch(a: MatchData, b: MatchData) -> str | None:
    """How the trials of ``a`` and ``b`` differ (protocol, identities, groups, comparison rows or samples), or None
    when they are the same trials, whatever their scores: the condition for pairing two models' scores."""
    why = None
    if a.protocol != b.protocol:
        why = f"one is {a.protocol}, the other {b.protocol}"
    elif not np.array_equal(a.identity_names, b.identity_names) or a.group_names != b.group_names \
            or not np.array_equal(a.identity_group, b.identity_group):
        why = "their identities or groups differ"
    elif a.protocol == "listed":
        pa, pb = a.table("model comparison"), b.table("model comparison")
        for f in ("identity_a", "identity_b", "sample_a", "sample_b", "genuine"):
            x, y = _named(a, pa, f), _named(b, pb, f)  # names, not codes: one changed id shifted every later code
            if len(x) != len(y):
                why = f"their comparison rows differ: {len(x):,} rows and {len(y):,}"
                break
            if not np.array_equal(x, y):
                rows = np.flatnonzero(x != y)
                shown = ", ".join(str(r + 1) for r in rows[:5]) + (f" and {rows.size - 5:,} more" if rows.size > 5 else "")
                why = f"their comparison rows differ in {f} at rows {shown} (the first comparison = 1)"
                break
    elif not np.array_equal(a.samples.ids, b.samples.ids) or not np.array_equal(a.samples.identity, b.samples.identity):
        why = "their samples differ"
    return why


def trials_digest(data: MatchData) -> str:
    """SHA-256 of what :func:`paired_mismatch` compares (protocol, identities and their groups, and the comparison
    rows' identities, sample ids and labels, or the samples and their identities): equal digests, the same trials.
    Recorded so that a reader of a saved result can check which trials it paired."""
    h = hashlib.sha256()

    def add(x: object) -> None:
        arr = np.asarray(x)
        h.update(repr((arr.dtype.kind, arr.shape)).encode())
        h.update("\x1f".join(map(str, arr.ravel().tolist())).encode() if arr.dtype.kind in "OUS" else arr.tobytes())

    add(data.protocol)
    add(data.identity_names)
    add(np.asarray(data.group_names, dtype=object)[data.identity_group])
    if data.protocol == "listed":
        p = data.table("trial fingerprint")
        for f in ("identity_a", "identity_b", "sample_a", "sample_b", "genuine"):
            add(_named(data, p, f))
    else:
        add(data.samples.ids)
        add(data.samples.identity)
    return h.hexdigest()


def _named(data: MatchData, pairs, field: str) -> np.ndarray:
    """A comparison column of ``pairs`` as names (identity or sample ids) where it holds codes."""
    codes = getattr(pairs, field)
    if field.startswith("identity"):
        return data.identity_names[codes]
    if field.startswith("sample") and data.samples is not None:
        return data.samples.ids[codes]
    return codes


@dataclass
class ModelComparison:
    """Paired comparison of two models: interval records, the test per FMR target, and the replicates."""

    records: list[dict]
    tests: list[PermutationTestResult]
    fmr_targets: np.ndarray
    method: str
    n_resamples: int
    seed: int
    details: dict = field(default_factory=dict)
    replicates: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # the data's own (duplicated comparisons, failures...)

    def to_frame(self) -> pd.DataFrame:
        """The interval records (one row per metric, view and FMR target: A, B and A - B with its interval)."""
        return pd.DataFrame(self.records)

    def to_dict(self) -> dict:
        """What compare.json holds (JSON-ready): the records, the tests, the settings."""
        return jsonable({"records": self.records, "tests": [t.to_dict() for t in self.tests],
                         "fmr_targets": self.fmr_targets, "method": self.method, "n_resamples": self.n_resamples,
                         "seed": self.seed, "details": self.details, "warnings": self.warnings})


def check_method(method: str) -> None:
    """A paired identity bootstrap (:data:`SCHEMES`), refused otherwise."""
    if method not in SCHEMES:
        raise InputError(f"method {method!r}: use one of {', '.join(SCHEMES)}.")


Replicates = tuple[Counts, np.ndarray, np.ndarray]
"""One model's identity bootstrap: plug-in counts, FNMR (R, T, 1+G), achieved FMR (R, T, 1+G)."""


def paired_records(targets: np.ndarray, a: Replicates, b: Replicates, *, method: str, n_resamples: int, seed: int,
                   level: float, group_fmr: bool = False) -> tuple[list[dict], dict]:
    """Percentile intervals of model A - model B from the two models' paired identity-bootstrap replicates at the
    FMR ``targets``: ``a``, ``b`` each :data:`Replicates` at each replicate's own thresholds, drawn with the same
    scheme and seed.

    Records: FNMR@FMR per target for ``all`` and each group, with ``group_fmr`` each group's FMR (same-group
    impostors) at that threshold (metric ``"fmr"``; the overall FMR is the target by construction), and (two or
    more groups) each fairness measure of the groups' (FMR, FNMR) at the target. Returns the records and the
    replicate differences (R-1, ...).
    """
    (ca, fa, ma), (cb, fb, mb) = a, b
    views = bs.view_names(ca)
    records, reps = [], {}

    def add(metric: str, view: str, ti: int, xa: np.ndarray, xb: np.ndarray) -> None:
        with np.errstate(invalid="ignore"):  # inf - inf (a ratio undefined in both models): NaN, and the note says so
            d = xa - xb
        r = bs.interval_from_replicates(method, d[0], d[1:], level=level, seed=seed)
        reps[(metric, view, float(targets[ti]))] = d[1:]
        records.append({"metric": metric, "view": view, "fmr_target": float(targets[ti]), "model_a": float(xa[0]),
                        "model_b": float(xb[0]), "difference": float(d[0]), "low": r.confidence_interval.low,
                        "high": r.confidence_interval.high, "standard_error": r.standard_error, "method": method,
                        "level": level, "n_resamples": n_resamples, "seed": seed, "note": r.note,
                        "threshold_a": float(ca.target_threshold[0, ti]),
                        "threshold_b": float(cb.target_threshold[0, ti])})

    for ti in range(targets.size):
        for vi, view in enumerate(views):
            add("fnmr_at_fmr", view, ti, fa[:, ti, vi], fb[:, ti, vi])
        for vi, view in enumerate(views[1:] if group_fmr else (), start=1):
            add("fmr", view, ti, ma[:, ti, vi], mb[:, ti, vi])
        if len(views) > 2:
            meas_a = bs.measure_replicates(ma[:, ti, 1:], fa[:, ti, 1:])
            meas_b = bs.measure_replicates(mb[:, ti, 1:], fb[:, ti, 1:])
            for key in meas_a:
                add(f"{key[0]}:{key[1]}", "groups", ti, meas_a[key], meas_b[key])
    return records, reps


# ----------------------------------------------------------------------------- paired swap test

def comparison_arrays(data: MatchData, threshold_impostors: ThresholdImpostors = "all"
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(score, genuine, owner identity, threshold impostor under ``threshold_impostors``) per comparison, in block
    order.

    All-pairs data is listed out (meant for data sets small enough to hold every score)."""
    g = data.identity_group
    pairs = reference_pairs(threshold_impostors, data.group_names, data.group_by)
    if data.protocol == "listed":
        p = data.table("model comparison")
        return (p.score.astype(float), p.genuine.copy(), p.identity_a.astype(np.int64),
                (~p.genuine) & pairs[g[p.identity_a], g[p.identity_b]])
    ident = data.samples.identity.astype(np.int64)
    s, i_all, j_all = [], [], []
    for blk in data.blocks():
        assert isinstance(blk, DenseBlock)
        r, c = blk.scores.shape
        ii, jj = np.meshgrid(np.arange(r) + blk.row0, np.arange(c) + blk.col0, indexing="ij")
        keep = ii < jj
        s.append(blk.scores[keep].astype(float))
        i_all.append(ii[keep])
        j_all.append(jj[keep])
    s, i_all, j_all = np.concatenate(s), np.concatenate(i_all), np.concatenate(j_all)
    ki, kj = ident[i_all], ident[j_all]
    return s, ki == kj, ki, (ki != kj) & pairs[g[ki], g[kj]]


def fnmr_at_fmr_scores(score: np.ndarray, genuine: np.ndarray, reference: np.ndarray, target: float,
                       n_reference: int | None = None) -> np.ndarray:
    """FNMR at the threshold for FMR ``target`` (:mod:`matchaudit.definitions`), for rows of ``score`` (B, m).

    With ``k`` = :func:`~matchaudit.definitions.max_accepted` of the N reference impostors and ``q`` their
    (k+1)-th largest score, the threshold is the lowest score above ``q`` (rule ``>=``) or ``q`` itself (rule
    ``>``): under either rule a genuine comparison is rejected iff its score is ``<= q``. No reference
    impostors: the threshold is +inf and every genuine comparison is rejected. ``n_reference``: N when
    ``reference`` marks only the impostors that can be among the k+1 largest (:func:`contenders`); default
    the number marked."""
    imp = score[:, reference]
    n = imp.shape[1] if n_reference is None else n_reference
    k = max_accepted(n, target)
    if k < 0:
        return np.ones(score.shape[0])
    if k >= n:
        return np.zeros(score.shape[0])
    q = -np.partition(-imp, k, axis=1)[:, k]
    return (score[:, genuine] <= q[:, None]).mean(axis=1)


def contenders(sa: np.ndarray, sb: np.ndarray, reference: np.ndarray, target: float) -> np.ndarray:
    """The reference impostors that can be among the k+1 largest (:func:`fnmr_at_fmr_scores`) when each
    comparison takes its score from model A or model B: those whose larger score reaches the (k+1)-th largest
    of the smaller scores (that many comparisons are at least that high whatever the swap, so no other can
    rank above them). Restricting the swap test to them gives the same thresholds at a fraction of the work."""
    n = int(reference.sum())
    k = max_accepted(n, target)
    if not 0 <= k < n:
        return reference
    low = np.minimum(sa[reference], sb[reference])
    floor = np.partition(low, n - k - 1)[n - k - 1]
    return reference & (np.maximum(sa, sb) >= floor)


def swap_test(arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], sb: np.ndarray,
              identity_group: np.ndarray, fmr_target: float, *, se: float, n_resamples: int = 999, seed: int = 0,
              threshold_impostors: ThresholdImpostors = "all", level: float = 0.95, progress: bool = False
              ) -> PermutationTestResult:
    """Paired test of FNMR@FMR(A) = FNMR@FMR(B): model labels swapped per identity (see module doc), from model A's
    :func:`comparison_arrays` (under ``threshold_impostors``) and model B's scores ``sb`` of the same comparisons.
    ``progress``: a display in comparisons x swaps."""
    sa, gen, owner, ref = arrays
    t = float(fnmr_at_fmr_scores(sa[None], gen, ref, fmr_target)[0] - fnmr_at_fmr_scores(sb[None], gen, ref, fmr_target)[0])
    n_ref = int(ref.sum())
    keep = contenders(sa, sb, ref, fmr_target)
    cols = np.flatnonzero(gen | keep)  # genuine comparisons and the impostors that can set a threshold
    sa, sb, gen, keep, owner = sa[cols], sb[cols], gen[cols], keep[cols], owner[cols]
    lay = rs.Layout(identity_group=identity_group.astype(np.int64))
    coins = rs.DoubleOrNothing(seed)  # {0, 2}: fair coins, drawn per batch (keyed by swap number)
    diffs = []
    batch = max(1, (1 << 24) // max(sa.size, 1))
    with Meter(progress, f"swap test at FMR {fmr_target:g}", sa.size * n_resamples, "comparisons x swaps") as meter:
        for r0 in range(0, n_resamples, batch):
            flips, _ = coins.identity_weights(np.arange(r0 + 1, min(r0 + batch, n_resamples) + 1), lay)
            sw = flips[:, owner] > 0
            xa = np.where(sw, sb, sa)
            xb = np.where(sw, sa, sb)
            diffs.append(fnmr_at_fmr_scores(xa, gen, keep, fmr_target, n_ref)
                         - fnmr_at_fmr_scores(xb, gen, keep, fmr_target, n_ref))
            meter.advance(sw.size)
    t_perm = np.concatenate(diffs)
    return permutation_test(t, se**2, t_perm, studentize="permutation-sd", level=level,
                            labels=("model A", "model B"),
                            details={"metric": "fnmr_at_fmr", "fmr_target": fmr_target, "threshold_impostors": threshold_impostors,
                                     "relabelling": "model labels swapped per identity (owner: side a)",
                                     "seed": seed, "se_from": "paired identity bootstrap"})


__all__ = ["ModelComparison", "Replicates", "SCHEMES", "check_method", "check_paired", "comparison_arrays",
           "contenders", "fnmr_at_fmr_scores", "paired_mismatch", "paired_records", "swap_test", "trials_digest"]
