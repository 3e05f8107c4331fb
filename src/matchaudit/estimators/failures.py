"""Failure-to-acquire rates per group (ISO/IEC 19795-1 and -10), with identity-clustered Wilson intervals.

A failure is a comparison that produced no score (:class:`matchaudit.model.Failures`). Its rate is reported
per class, like the error rates it feeds: ``fta_genuine`` over a view's genuine attempts and ``fta_impostor``
over its impostor attempts (overall: every impostor comparison; group ``g``: same-group ones, as the group's
FMR). Attempts are the comparisons the rates are about plus, under policy ``"exclude"``, the failed ones.

Failures of one identity are dependent (one poor enrolment fails all its comparisons), so the intervals are the
closed-form ``wilson`` with the identity-clustered variance that FNMR and FMR at a fixed threshold use
(:func:`matchaudit.estimators.intervals.fnmr_interval` / :func:`~matchaudit.estimators.intervals.fmr_interval`,
zero-failure bounds included). Without identities (labels only) the comparisons are taken as independent
(``wilson-naive``), and the record says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from matchaudit.model import pair_key
from matchaudit.estimators import intervals as iv
from matchaudit.model import Failures, MatchData, PairBlock, view_names


def _impostor_totals(attempts: PairBlock, failed: PairBlock, k: int) -> iv.ImpostorTotals:
    """Per identity and identity pair: impostor attempts and failures (the cluster variance's input)."""
    pairs, m_kl = np.unique(pair_key(attempts.identity_a, attempts.identity_b, k), return_counts=True)
    e_kl = np.zeros(pairs.size)
    np.add.at(e_kl, np.searchsorted(pairs, pair_key(failed.identity_a, failed.identity_b, k)), 1.0)
    rows_m = np.bincount(attempts.identity_a, minlength=k) + np.bincount(attempts.identity_b, minlength=k)
    rows_e = np.bincount(failed.identity_a, minlength=k) + np.bincount(failed.identity_b, minlength=k)
    return iv.ImpostorTotals(rows_m.astype(float), rows_e.astype(float), m_kl.astype(float), e_kl,
                             float((m_kl.astype(float) ** 2).sum()))


def _rate(a: PairBlock, failed: PairBlock, genuine: bool, k: int, level: float) -> iv.IntervalResult:
    if k == 0:  # labels only: no identities to cluster by
        return iv.wilson(len(failed), len(a), level)
    if genuine:
        return iv.fnmr_interval("wilson", np.bincount(a.identity_a, minlength=k),
                                np.bincount(failed.identity_a, minlength=k), level)
    return iv.fmr_interval("wilson", _impostor_totals(a, failed, k), level)


def _select(p: PairBlock, genuine: bool, group: int | None) -> PairBlock:
    keep = p.genuine == genuine
    if group is not None:
        keep &= (p.group_a == group) & (p.group_b == group)
    return p.take(keep)


def fta_records(data: MatchData, level: float = 0.95) -> list[dict[str, Any]]:
    """Per view (overall, then each group) and class: attempts, failures, the failure rate and its interval.
    Empty when nothing failed (or the failures were refused)."""
    f = data.failures
    if f is None:
        return []
    pairs = data.table("failure-to-acquire rates")
    attempts = PairBlock.concat([pairs, f.failed]) if f.policy == "exclude" else pairs
    k = data.n_identities if data.has_identities else 0
    out = []
    for name, g in zip(view_names(data.group_names), [None, *range(data.n_groups)]):
        for cls, genuine in (("genuine", True), ("impostor", False)):
            a, e = _select(attempts, genuine, g), _select(f.failed, genuine, g)
            res = _rate(a, e, genuine, k, level)
            out.append({"group": name, "class": cls, "policy": f.policy, "attempts": len(a), "failures": len(e),
                        "fta": res.estimate, "low": res.confidence_interval.low,
                        "high": res.confidence_interval.high, "method": res.method, "level": level,
                        "note": res.note if k else "no identities: comparisons taken as independent"})
    return out


def failure_note(failures: Failures) -> str:
    """The one sentence every output gives about failures: how many, and what the rates mean under the policy."""
    n = len(failures.failed)
    if failures.policy == "exclude":
        return (f"{n:,} comparisons failed (no score) and were excluded: every rate is over the comparisons that "
                "produced a score; the failure rates per group are in failures.csv and the report.")
    return (f"{n:,} comparisons failed (no score) and count as errors: FNMR = FTA + FNMR (1 - FTA) and FMR = "
            "FMR (1 - FTA) per class (transaction-level rates, ISO/IEC 19795-1).")


__all__ = ["failure_note", "fta_records"]
