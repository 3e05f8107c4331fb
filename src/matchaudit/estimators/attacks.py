"""The impostor-attack presentation match rate (IAPMR) per group, with identity-clustered Wilson intervals.

A presentation attack (bob's vulnerability score files: a non-empty ``probe_attack_type``,
:class:`matchaudit.model.Attacks`) is compared with the reference of the subject it claims. It is neither a
genuine nor a zero-effort impostor comparison, so it never enters FMR or FNMR; bob.bio.base's ``bob vuln metrics``
(``bob/bio/base/script/vuln_figure.py``, ``_numbers``) reports it apart, as the IAPMR at the threshold chosen on
the licit scores: ``iapmr, _ = farfrr(spoof, [0.0], threshold)``, the share of attack scores ``>= threshold``.

Here: at every threshold the audit reports (each FMR target, FNMR target and given threshold, per weighting: the
overall view's threshold), the share of attacks accepted under the audit's rule, overall and per group (the
group of the attacked subject). Attacks on one subject share its reference (one weak enrolment is accepted by
all), so the interval is the closed-form ``wilson`` with the variance clustered by attacked subject: the same
one-way identity-clustered construction as FNMR's (:func:`matchaudit.estimators.intervals.fnmr_interval`, its
zero-error bound included), with attacks per subject in place of genuine comparisons.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from matchaudit.definitions import Rule, accepts
from matchaudit.metrics.small_groups import MIN_IDENTITIES
from matchaudit.estimators import intervals as iv
from matchaudit.model import ALL, Attacks, MatchData, view_names


def iapmr_interval(attacks: Attacks, accepted: np.ndarray, keep: np.ndarray, n_identities: int,
                   level: float = 0.95) -> iv.IntervalResult:
    """The IAPMR of the attacks ``keep`` (a mask) that ``accepted`` marks, with the identity-clustered Wilson
    interval (clusters: the attacked subjects; ``n_identities`` 0: none known, ``wilson-naive``)."""
    if n_identities == 0:
        return iv.wilson(int((accepted & keep).sum()), int(keep.sum()), level)
    per_subject = np.bincount(attacks.identity[keep], minlength=n_identities)
    hits = np.bincount(attacks.identity[keep & accepted], minlength=n_identities)
    return iv.fnmr_interval("wilson", per_subject, hits, level)


def iapmr_records(data: MatchData, operating_points: Sequence[dict[str, Any]], rule: Rule, level: float = 0.95
                  ) -> list[dict[str, Any]]:
    """Per operating point of the audit (its overall view's threshold) and view (overall, then each group of the
    attacked subjects): attacks, attacks accepted, the IAPMR and its interval. Empty without attacks."""
    a = data.attacks
    if a is None or not len(a):
        return []
    k = data.n_identities if data.has_identities else 0
    views = list(zip(view_names(data.group_names), [None, *range(data.n_groups)]))
    out = []
    for p in operating_points:
        if p["group"] != ALL:
            continue
        ok = accepts(a.score, p["threshold"], rule)
        for name, g in views:
            keep = np.ones(len(a), bool) if g is None else a.group == g
            res = iapmr_interval(a, ok, keep, k, level)
            subjects = int(np.unique(a.identity[keep]).size)
            few = bool(k and subjects < MIN_IDENTITIES)  # the clustered variance from a handful of subjects
            out.append({"weighting": p["weighting"], "kind": p["kind"], "target": p["target"],
                        "threshold": p["threshold"], "rule": rule, "group": name, "attacks": int(keep.sum()),
                        "accepted": int((ok & keep).sum()), "iapmr": res.estimate,
                        "low": res.confidence_interval.low, "high": res.confidence_interval.high,
                        "method": res.method, "level": level,
                        "subjects": subjects, "indicative": few,
                        "note": (f"{subjects} attacked subjects: the clustered variance rests on fewer than "
                                 f"{MIN_IDENTITIES}, so the interval is indicative (it can be narrower than if the "
                                 "attacks were independent)") if few else
                                (res.note if k else "no identities: attacks taken as independent")})
    return out


__all__ = ["iapmr_interval", "iapmr_records"]
