"""Where the user's data sits on the regime grid (docs/intervals.md, "Regimes"), and the warnings that follow.

The audit's intervals are validated by simulation across samples per identity, identities per group and error
counts; outside the validated cells an interval is still computed, and the user is told why to read it with
care. One place for those rules, called by :func:`matchaudit.auditing.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from matchaudit.choices import SCOPE
from matchaudit.errors import listing, short
from matchaudit.formatting import operating_point
from matchaudit.estimators.bootstrap import RECENTRED
from matchaudit.metrics.evaluate import ALL
from matchaudit.metrics.fairness import COMBINED, MEASURES
from matchaudit.metrics.small_groups import GRID_MIN_ERRORS, MIN_IDENTITIES  # also the small-group rule's defaults
from matchaudit.model import MatchData

MIN_ERRORS = 5  # below this many errors (but above 0) no interval's coverage was established
FEW_ERRORS = "no interval method reaches its nominal coverage there in our studies"  # what that means, in words


def few_errors(errors: float) -> bool:
    """Whether a rate rests on too few errors for any interval's coverage (1 to ``MIN_ERRORS - 1``: zero errors have
    their own bound)."""
    return 0 < errors < MIN_ERRORS


KIND_WORDS = {"fmr_target": "FMR targets", "fnmr_target": "FNMR targets", "threshold": "fixed thresholds"}


def regime_warnings(data: MatchData, records: list[dict[str, Any]]) -> list[str]:
    """Warnings for the regime of ``data`` and its pooled interval ``records``: FNMR/FMR resting on 1 to
    ``MIN_ERRORS - 1`` errors, identities with 2 samples (within-identity variance only bounded), and groups with
    fewer than ``MIN_IDENTITIES`` identities."""
    out = []
    few: dict[str, list[str]] = {}
    for r in records:
        e = r.get("errors")
        if r.get("weighting") != "pooled" or r.get("metric") not in ("FNMR", "FMR") or e is None:
            continue
        if few_errors(e):
            at = operating_point(r["kind"], r["target"])
            few.setdefault(f"{r['metric']} of group {short(r['group'])}", []).append(f"{at}: {int(e)}/{int(r['comparisons']):,}")
    if few:  # one warning for every group (C2: a 30-group report opened with 117 boxes, one per group and rate)
        rates = [f"{what} ({'; '.join(dict.fromkeys(where))})" for what, where in few.items()]
        out.append(f"{listing(rates, 12)} {'rests' if len(rates) == 1 else 'rest'} on fewer than {MIN_ERRORS} errors: "
                   f"{FEW_ERRORS}; read these intervals as indicative.")
    unvalidated: dict[Validity, set[str]] = {}
    for r in records:
        if r.get("weighting") == "pooled" and r.get("metric") == "FNMR" and r.get("errors") != 0:
            rule = _rule(r)
            if rule is not None and rule.unvalidated and rule.indicative_outside:
                unvalidated.setdefault(rule, set()).add(r["method"])
    for rule, methods in unvalidated.items():  # each in the words of its own rule: its question, its numbers
        at = " and ".join(KIND_WORDS[k] for k in rule.kinds)
        out.append(f"FNMR intervals by {', '.join(sorted(methods))} at {at} answer for {rule.question}; "
                   f"{rule.unvalidated} (method_reason in results.json).")
    recentered = any(r.get("method") in RECENTRED for r in records)
    if recentered and data.samples is not None and data.has_identities:
        sizes = data.identity_sizes
        two = [f"group {short(name)} {int(np.sum(in_g & (sizes == 2))):,} of {int(in_g.sum()):,}"
               for g, name in enumerate(data.group_names) for in_g in [data.identity_group == g]
               if np.any(in_g & (sizes == 2))]
        if two:
            out.append(f"identities with 2 samples: {listing(two, 12)}; one genuine comparison says nothing about its own "
                       "variance, so their within-identity (recentered) variance is bounded, not estimated: those "
                       "intervals are conservative.")
    if data.has_identities:
        small = [f"{short(name)} ({k})" for g, name in enumerate(data.group_names)
                 for k in [int(np.sum(data.identity_group == g))] if 0 < k < MIN_IDENTITIES]
        if small:
            out.append(f"{'group' if len(small) == 1 else 'groups'} {listing(small, 12)} "
                       f"{'has' if len(small) == 1 else 'have'} fewer than {MIN_IDENTITIES} identities (in "
                       "brackets): identity-level intervals (vertex, double-or-nothing) and group tests rest on few "
                       "units there and are not validated below that.")
    return out


@dataclass(frozen=True)
class Validity:
    """Where the regime grid (docs/intervals.md, "Regime grid") found ``methods`` within 1.5 points of nominal for
    ``metrics`` of ``kinds``: at least ``min_errors`` errors, ``min_identities`` identities in the view and
    ``min_samples`` samples per identity (median); ``below_samples``: what the grid found with fewer samples.
    ``unvalidated``: no cell of the grid reached nominal; the reason read instead. ``levels``: where it holds only
    at some levels, those (``other_levels`` says what the grid found elsewhere). ``indicative_outside``: whether
    an interval read by ``unvalidated`` or ``below_samples`` is indicative (False: conservative there)."""

    methods: tuple[str, ...]
    metrics: tuple[str, ...]
    kinds: tuple[str, ...]
    question: str
    min_errors: int
    min_identities: int
    min_samples: int
    below_samples: str = ""
    unvalidated: str = ""
    levels: tuple[float, ...] = ()  # the levels it holds at (empty: 0.90 and 0.95 both)
    other_levels: str = ""  # what the grid found at the other levels
    indicative_outside: bool = True


FAIRNESS = tuple(f"{rate}:{m}" for rate in ("FMR", "FNMR") for m in MEASURES) + tuple(f"combined:{m}" for m in COMBINED)
PROJECTION = ("a simultaneous projection of the groups' intervals (valid for every measure where they hold); in "
              "bench/fairness_parity.py (three generators, 2-8 groups of 30-80 identities x 3-5 samples, FMR 1e-2 and "
              "1e-3) it contained parity in 0.99-1.00 of data sets from one law and the truth in 0.95-1.00 with "
              "groups apart: conservative")
NEW, FIXED = SCOPE["double-or-nothing"], SCOPE["recentered"]  # the questions the intervals answer
VALIDITY = (
    Validity(RECENTRED, ("FNMR",), ("fmr_target", "threshold"), FIXED, GRID_MIN_ERRORS, 10, 4,
             "conservative: the within-identity variance of identities with 2-3 samples is bounded",
             indicative_outside=False),
    Validity(RECENTRED, ("FMR",), ("fmr_target", "threshold"), FIXED, GRID_MIN_ERRORS, 10, 3,
             "below nominal in the regime grid with 2 samples per identity (0.90-0.91 at 0.95): indicative"),
    Validity(RECENTRED, FAIRNESS, ("fmr_target",), FIXED, GRID_MIN_ERRORS, 20, 2, unvalidated=PROJECTION,
             indicative_outside=False),
    Validity(("vertex", "double-or-nothing"), FAIRNESS, ("fmr_target",), NEW, GRID_MIN_ERRORS, 20, 2,
             unvalidated=PROJECTION, indicative_outside=False),
    # 50 in the vMF grid; heavy-tailed impostors with per-identity effects (tscore) gave 0.917 at 100 identities
    Validity(("wilson",), ("FMR",), ("threshold",), NEW, GRID_MIN_ERRORS, 300, 2),
    Validity(("wilson",), ("FNMR",), ("threshold",), NEW, GRID_MIN_ERRORS, 1000, 2, levels=(0.95,),
             other_levels="at 0.90 the regime grid found 0.86-0.91 at 1,000 identities: indicative"),
    # bench/new_population.py (bootstrap-t; three generators, 100 x 4 and 300 x 3, 20+ errors): 0.945-0.99 at 0.95
    Validity(("vertex", "double-or-nothing"), ("FNMR",), ("fmr_target",), NEW, GRID_MIN_ERRORS, 100, 3,
             "not measured with 2 samples per identity (bench/new_population.py): indicative"),
    Validity(("vertex", "double-or-nothing"), ("FNMR",), ("threshold",), NEW, GRID_MIN_ERRORS, 100, 4,
             "0.915-0.96 at 0.95 with 3 samples per identity (bench/new_population.py): indicative"),
    Validity(("vertex", "double-or-nothing"), ("FMR", "FNMR"), ("fnmr_target",), NEW, GRID_MIN_ERRORS, 40, 2,
             unvalidated="at an FNMR target outside the regime grid; bench/dual_point_coverage.py (40-100 identities "
             "per group, 4 samples each) found 0.92-0.93 at 0.95: read it as indicative"),
    Validity(RECENTRED, ("FMR", "FNMR"), ("fnmr_target",), FIXED, GRID_MIN_ERRORS, 10, 3,
             unvalidated="at an FNMR target outside the regime grid (not checked against its fixed-identity truth); "
             "it does not cover a new population's rate (0.61-0.67 at 0.95 in bench/dual_point_coverage.py): "
             "indicative"),
)


def view_regimes(data: MatchData) -> dict[str, tuple[int, float]]:
    """Per view (``all`` and each group): (identities, median samples per identity; NaN without samples)."""
    sizes = data.identity_sizes
    masks = {ALL: np.ones(sizes.size, bool)} | {n: data.identity_group == g for g, n in enumerate(data.group_names)}
    return {v: (int(m.sum()), float(np.median(sizes[m])) if m.any() and data.samples is not None else float("nan"))
            for v, m in masks.items()}


MIN_THRESHOLD_ERRORS = 20  # FNMR@FMR: impostor errors behind the threshold (50 x 4 at FMR 1e-4, 2 errors: 0.924)


def _rule(record: dict[str, Any]) -> Validity | None:
    """The regime-grid rule of a record's method, metric and kind (pooled weighting only), or None."""
    if record.get("weighting", "pooled") != "pooled":
        return None
    method, metric, kind = record["method"], record["metric"], record["kind"]
    return next((v for v in VALIDITY if method in v.methods and metric in v.metrics and kind in v.kinds), None)


def assess(data: MatchData, record: dict[str, Any], requested: tuple[str, ...],
           views: dict[str, tuple[int, float]] | None = None, impostors: int | None = None) -> tuple[str, bool]:
    """Why ``record`` uses its method and whether the regime grid validates it in the view's regime, and whether
    the interval is therefore only indicative (``views``: :func:`view_regimes` of ``data``, computed when not
    given; ``impostors``: the impostor comparisons that set the threshold at an FMR target, whose expected errors
    there must reach ``MIN_THRESHOLD_ERRORS``)."""
    method, kind = record["method"], record["kind"]
    why = "requested (--ci-method)" if method in requested else "the default for this metric"
    rule = _rule(record)
    if rule is None:
        return f"{method}: {why}; not covered by the regime grid", False
    k, n = (views or view_regimes(data))[record["group"]]
    e = record.get("errors")
    regime = f"{k:,} identities" + ("" if np.isnan(n) else f", {n:g} samples per identity") + \
        ("" if e is None else f", {int(e):,} errors")
    head = f"{method}: {why}; answers for {rule.question}; regime {regime}: "
    if e is not None and e == 0:
        return head + "zero-error bound (conservative by construction)", False
    if rule.unvalidated:
        return head + rule.unvalidated, rule.indicative_outside
    thin = (kind == "fmr_target" and impostors is not None and record.get("target") is not None
            and record["target"] * impostors < MIN_THRESHOLD_ERRORS)
    short = [f"fewer than {rule.min_errors} errors" if e is not None and e < rule.min_errors else "",
             f"fewer than {rule.min_identities} identities" if k < rule.min_identities else "",
             f"a threshold set by fewer than {MIN_THRESHOLD_ERRORS} impostor errors" if thin else ""]
    short = [x for x in short if x]
    if short:
        return head + "below nominal coverage in the regime grid (" + ", ".join(short) + "): indicative", True
    if not np.isnan(n) and n < rule.min_samples:
        return head + (rule.below_samples or "outside the regime grid"), rule.indicative_outside
    level = record.get("level")
    if rule.levels and level is not None and not any(abs(level - x) < 1e-9 for x in rule.levels):
        return head + rule.other_levels, True
    return head + "within 1.5 points of nominal in the regime grid", False


def method_reason(data: MatchData, record: dict[str, Any], requested: tuple[str, ...],
                  views: dict[str, tuple[int, float]] | None = None, impostors: int | None = None) -> str:
    """The reason of :func:`assess`: why the method, and what the regime grid says of it in this regime."""
    return assess(data, record, requested, views, impostors)[0]


def annotate(data: MatchData, records: list[dict[str, Any]], requested: tuple[str, ...],
             impostors: int | None = None) -> None:
    """Add ``method_reason`` and ``indicative`` (:func:`assess`) to every interval record."""
    views = view_regimes(data)
    for r in records:
        r["method_reason"], r["indicative"] = assess(data, r, requested, views, impostors)


__all__ = ["FAIRNESS", "GRID_MIN_ERRORS", "MIN_ERRORS", "MIN_THRESHOLD_ERRORS", "MIN_IDENTITIES", "VALIDITY", "Validity", "annotate", "assess", "method_reason", "regime_warnings", "view_regimes"]
