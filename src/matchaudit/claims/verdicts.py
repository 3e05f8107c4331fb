"""A claim's verdict from confidence bounds: pass, fail or inconclusive, with the whole file's error controlled.

The rule (docs/claims.md). A claim bounds one or more quantities (a rate per group, a fairness measure, a
difference of two models) to ``[low, high]``. With ``k`` claims in the file and family confidence ``1 - alpha``:

- **pass** when every quantity's one-sided bounds at ``1 - alpha / k`` lie inside the limits (an intersection-union
  test: a false claim has one quantity outside, whose bound then lies inside with probability at most ``alpha / k``);
- **fail** when some quantity's bound at ``1 - alpha / (k m)`` lies beyond a limit, ``m`` the claim's quantities
  times its finite limits (Bonferroni over the ways a true claim could be declared failed);
- **inconclusive** otherwise: the data cannot tell, and the verdict says how many identities would settle it if the
  estimate held (:func:`matchaudit.estimators.planning.identities_to_settle`).

So every verdict in the file is right with probability at least ``1 - alpha``. A stored interval at two-sided level
``L`` gives each end at one-sided ``(1 + L) / 2``: usable for any verdict that needs at most that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from matchaudit.estimators.planning import identities_to_settle

Status = Literal["pass", "fail", "inconclusive"]
EXIT = {"pass": 0, "fail": 1, "inconclusive": 3}
TAIL_REPLICATES = 10  # bootstrap replicates beyond a percentile bound below which the bound is called rough


@dataclass(frozen=True)
class Quantity:
    """One number a claim bounds: its estimate and its one-sided bounds (each at ``confidence``; an absent end is
    infinite), with what the advice needs (``identities`` behind it) and where it came from."""

    name: str  # the group, "all", or the fairness measure's name
    estimate: float
    lower: float
    upper: float
    lower_confidence: float  # 1 where the bound holds by definition (a rate's 0) or is absent (-inf)
    upper_confidence: float
    identities: int | None
    source: str  # method and scope of the interval, for the reader
    n_resamples: int | None = None  # bootstrap replicates behind a percentile bound (None: not one)

    @property
    def confidence(self) -> float:
        """The lower of the two ends' confidences (what the reader is told)."""
        return min(self.lower_confidence, self.upper_confidence)


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, the reason in one sentence, the advice when inconclusive, and the confidence it needed."""

    status: Status
    reason: str
    advice: str | None
    pass_confidence: float
    fail_confidence: float
    quantities: tuple[Quantity, ...]
    notes: tuple[str, ...] = ()


def needed(alpha: float, n_claims: int, n_fail: int) -> tuple[float, float]:
    """One-sided confidences a claim's pass and fail bounds need (``n_fail``: its quantities times finite limits)."""
    return 1.0 - alpha / n_claims, 1.0 - alpha / (n_claims * max(n_fail, 1))


def two_sided_level(confidence: float) -> float:
    """The two-sided interval level whose ends are one-sided bounds at ``confidence``."""
    return 2.0 * confidence - 1.0


def decide(quantities: tuple[Quantity, ...], low: float, high: float, alpha: float, n_claims: int,
           notes: tuple[str, ...] = ()) -> Verdict:
    """The verdict of one claim ``low <= quantity <= high`` on every one of ``quantities`` (``notes``: what the
    caller knows of the bounds, kept with the verdict)."""
    n_fail = len(quantities) * (math.isfinite(low) + math.isfinite(high))
    pass_conf, fail_conf = needed(alpha, n_claims, n_fail)
    notes = notes + _rough(quantities)
    undefined = [q.name for q in quantities if math.isnan(q.estimate) or math.isnan(q.lower) or math.isnan(q.upper)]
    if undefined:
        return Verdict("inconclusive", f"undefined for {', '.join(undefined)} (no errors to form the quantity, or "
                       "an interval the audit could not give)", None, pass_conf, fail_conf, quantities, notes)
    failed = [(q, side) for q in quantities for side in _beyond(q, low, high)]
    if failed:
        q, side = failed[0]
        bound, limit = (q.lower, high) if side == "above" else (q.upper, low)
        return Verdict("fail", f"{q.name}: {_fmt(q.estimate)}, {'lower' if side == 'above' else 'upper'} bound "
                       f"{_fmt(bound)} is {side} {_fmt(limit)}", None, pass_conf, fail_conf, quantities, notes)
    open_ = [q for q in quantities if (math.isfinite(high) and not q.upper <= high)
             or (math.isfinite(low) and not q.lower >= low)]
    if not open_:
        worst = max(quantities, key=lambda q: q.upper if math.isfinite(high) else -q.lower)
        bound = worst.upper if math.isfinite(high) else worst.lower
        return Verdict("pass", f"every bound inside the limits (tightest: {worst.name}, {_fmt(worst.estimate)}, bound "
                       f"{_fmt(bound)})", None, pass_conf, fail_conf, quantities, notes)
    q = open_[0]
    side_high = math.isfinite(high) and not q.upper <= high
    bound, limit = (q.upper, high) if side_high else (q.lower, low)
    if not math.isfinite(bound):
        return Verdict("inconclusive", f"{q.name}: the audit gives no {'upper' if side_high else 'lower'} bound "
                       "(one-sided intervals)", "re-run the audit without --one-sided", pass_conf, fail_conf,
                       quantities, notes)
    more = len(open_) - 1
    reason = (f"{q.name}: {_fmt(q.estimate)}, {'upper' if side_high else 'lower'} bound {_fmt(bound)} not "
              f"{'below' if side_high else 'above'} {_fmt(limit)}" + (
                  f" (and {more} more {'quantity' if more == 1 else 'quantities'}: "
                  f"{', '.join(x.name for x in open_[1:])})" if more else ""))
    return Verdict("inconclusive", reason, _advice(open_, low, high), pass_conf, fail_conf, quantities, notes)


def _beyond(q: Quantity, low: float, high: float) -> list[str]:
    """How ``q`` surely breaks a limit: its lower bound above ``high``, its upper bound below ``low``."""
    return (["above"] if math.isfinite(high) and q.lower > high else []) + (
        ["below"] if math.isfinite(low) and q.upper < low else [])


def _advice(open_: list[Quantity], low: float, high: float) -> str:
    """What would settle an inconclusive claim: identities to bring each open bound to its limit, if the estimate
    held; or that more data would rather show a failure (the estimate already breaks the limit)."""
    parts, against = [], []
    for q in open_:
        side_high = math.isfinite(high) and not q.upper <= high
        bound, limit = (q.upper, high) if side_high else (q.lower, low)
        inside = q.estimate <= high if side_high else q.estimate >= low
        if not inside:
            against.append(q.name)
            continue
        k = identities_to_settle(q.identities, q.estimate, bound, limit) if q.identities else None
        if k is not None and q.identities:
            parts.append(f"{q.name}: about {k:,} identities (now {q.identities:,})")
    text = []
    if parts:
        text.append("to pass if the estimates hold, " + "; ".join(parts)
                    + " at today's comparisons per identity (interval width ~ 1/sqrt(identities))")
    if against:
        text.append(f"the estimate of {', '.join(against)} already breaks the limit: more identities would more "
                    "likely settle a fail")
    return "; ".join(text) or "more identities (the interval width falls as 1/sqrt(identities))"


def replicates_for(confidence: float) -> int:
    """Bootstrap replicates that leave ``TAIL_REPLICATES`` beyond a one-sided percentile bound at ``confidence``
    (the 1e-9: 10 / 0.00833... is 1200.00000000004 in floats)."""
    return math.ceil(TAIL_REPLICATES / (1.0 - confidence) - 1e-9)


def _rough(quantities: tuple[Quantity, ...]) -> tuple[str, ...]:
    """A note when percentile bounds rest on fewer than ``TAIL_REPLICATES`` bootstrap replicates beyond them: valid
    in the limit, but a bound that far out moves with the seed."""
    rough = [q for q in quantities if q.n_resamples is not None and q.confidence < 1
             and q.n_resamples * (1.0 - q.confidence) < TAIL_REPLICATES - 1e-6]  # 1,800 x 0.00556 is 9.9999999
    if not rough:
        return ()
    q = min(rough, key=lambda x: x.n_resamples * (1.0 - x.confidence))
    want = replicates_for(q.confidence)
    return (f"bounds at {q.confidence:.2%} rest on {q.n_resamples * (1.0 - q.confidence):.1f} bootstrap replicates "
            f"beyond them ({', '.join(x.name for x in rough)}): they move with the seed; n_resamples {want:,} would "
            f"give {TAIL_REPLICATES}",)


def _fmt(x: float) -> str:
    """A value as the claims file writes its limits (a fraction, 1e-6 included: ``formatting.fmt``'s plain unit
    floors at 0.0001)."""
    return f"{x:.4g}"


__all__ = ["EXIT", "Quantity", "Status", "Verdict", "decide", "needed", "two_sided_level"]
