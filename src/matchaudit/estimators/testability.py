"""What a group test may say: the rules that withhold a p-value (too few errors, or errors carried by one or two
identities or identity pairs: "not testable") and the caveat a significant gap carries when a group is too small
for any test to see its hard identities. Measured in ``bench/test_level.py`` (docs/tests.md, "Sparse counts" and
"Level in unequal designs")."""

from __future__ import annotations

import math

import numpy as np

from matchaudit.estimators.permutation import benjamini_hochberg, holm, rejects

MIN_EXPECTED_ERRORS = 5
"""Errors the sparser group must show at the pair's pooled rate (the classical count rule; see below)."""
MIN_EFFECTIVE_ERRORS = 2
"""A pair of groups is tested only if the sparser one would show at least :data:`MIN_EXPECTED_ERRORS` errors at the
pair's pooled rate, and at least :data:`MIN_EFFECTIVE_ERRORS` once divided by the design effect within the groups
(:func:`sparse_counts`): with fewer, the identity-level permutation test has no valid level. The raw count is the classical
rule for a count approximation (1-2 expected independent false matches: 0.10-0.12 at 0.05; from 3: at or under).
The effective count catches errors that sit in one identity or one look-alike pair: with listed same-group impostors
and Beta propensities, 3-10 false matches of one or two pairs rejected a true null 0.16-0.25 at 0.05 while every raw
count passed. Measured over 21 designs and 6,300 data sets (``bench/test_level.py``, ``docs/tests.md``): rejection
0.258 with at most 1 effective error, 0.027-0.031 from 1 to 7, 0.05-0.08 above (groups of 25-40 identities with
hard identities, which :func:`small_group_caveat` covers). Both rules only remove rejections; a row below either is "not testable": no
p-value, never significant, left out of the family's Holm and BH."""


def sparse_counts(x: np.ndarray, v: np.ndarray, n: np.ndarray, pairs: list[tuple[int, int]]
                  ) -> tuple[list[float], list[float]]:
    """Per compared pair (a, b): the errors the sparser side would show at the pair's pooled rate ``p`` (``p`` x its
    comparisons), and the same divided by the design effect within the two groups, ``(v_a + v_b) / (x_a (1 - x_a) /
    n_a + x_b (1 - x_b) / n_b)``: the identity-clustered variance of the difference over its binomial value (from the
    side with errors when the other has none; a design effect below 1 is taken as 1, so the effective count never
    exceeds the raw one). Within groups, so that a real gap between the groups does not count as clustering.
    ``x``, ``v``, ``n``: rate, clustered variance and comparisons per side."""
    expected, effective = [], []
    for a, b in pairs:
        total = n[a] + n[b]
        p = (x[a] * n[a] + x[b] * n[b]) / total if total > 0 else 0.0
        e = float(p * min(n[a], n[b]))
        with np.errstate(divide="ignore", invalid="ignore"):
            binomial = sum(x[s] * (1 - x[s]) / n[s] for s in (a, b) if n[s] > 0)
        deff = max(1.0, float((v[a] + v[b]) / binomial)) if binomial > 0 else 1.0
        expected.append(e)
        effective.append(e / deff)
    return expected, effective


def testable(details: dict, j: int) -> str | None:
    """None when compared pair ``j`` of a test has the errors to test (:data:`MIN_EXPECTED_ERRORS` at the pooled rate,
    :data:`MIN_EFFECTIVE_ERRORS` of them effective; always when ``details["sparse_rule"]`` is off), else why it is not
    testable (pairs the rule cannot measure, AUC and EER, are testable)."""
    if "effective_errors" not in details or not details.get("sparse_rule", True):
        return None
    e, f = details["expected_errors"][j], details["effective_errors"][j]
    if e >= MIN_EXPECTED_ERRORS and f >= MIN_EFFECTIVE_ERRORS:
        return None
    why = (f"{e:.2g} errors, fewer than {MIN_EXPECTED_ERRORS}" if e < MIN_EXPECTED_ERRORS else
           f"{e:.2g} errors but {f:.2g} effective (they sit in one or two identities or identity pairs), fewer than "
           f"{MIN_EFFECTIVE_ERRORS}")
    return (f"not testable: at the pooled rate the sparser group would show {why}; no identity-level test has a "
            "valid level there")


SMALL_GROUP = 50
"""Fewer identities than this in a tested group: the test's level holds only if the group's errors are not carried
by a few identities that this sample may lack. If a tenth of a population's identities carry most of its errors,
a sample of ``k`` identities lacks all of them with probability ``0.9^k`` (25: 7%; 50: 0.5%), and then its rate and
clustered variance both look low and well behaved: no statistic can tell it from a group whose rate is that low
(``bench/test_level.py``: 150 x 3 against 25 x 15 with 10% hard identities rejects 0.084 at 0.05; 40 identities whose
genuine scores have heavy-tailed identity effects (t, 3 df) against 120 with light ones, 0.143; the same at 80
identities, 0.047)."""


def small_group_caveat(sizes: dict[str, int]) -> str | None:
    """The caveat a significant gap carries when a group has fewer than :data:`SMALL_GROUP` identities (None
    otherwise); ``sizes``: identities per tested group."""
    small = {g: k for g, k in sizes.items() if k < SMALL_GROUP}
    if not small:
        return None
    g, k = min(small.items(), key=lambda x: x[1])
    return (f"group {g} has {k} identities: if a tenth of its population's identities carry most of its errors, a "
            f"sample this size lacks them all with probability {0.9 ** k:.0%}, and no test can tell (level measured "
            f"up to 0.14 at 0.05 with 40 identities); confirm with more identities")


def group_sizes(identities: dict[str, int], a: str, b: str) -> dict[str, int]:
    """Identities per tested group from the test's identities per group (``details["groups_identities"]``;
    ``rest``: every group but the other)."""
    total = sum(identities.values())
    return {x: identities[x] if x in identities else total - identities[y] for x, y in ((a, b), (b, a))}


def not_testable(rows: list[dict], reasons: list[str | None], alpha: float) -> None:
    """Mark the rows with a reason (:func:`testable`): no p-value, never significant; the others' Holm p-values and
    BH q-values are recomputed without them (their max-T p-values, over the whole family, stay: conservative)."""
    if not any(reasons):
        return
    for r, why in zip(rows, reasons):
        if why:
            r.update(pvalue=math.nan, pvalue_holm=math.nan, pvalue_maxt=math.nan, qvalue_bh=math.nan,
                     significant=False, significant_holm=False, significant_maxt=False, significant_bh=False,
                     reason=why)
    keep = [r for r, why in zip(rows, reasons) if not why]
    if keep:
        raw = np.array([r["pvalue"] for r in keep], float)
        for r, h, q in zip(keep, holm(raw), benjamini_hochberg(raw)):
            r.update(pvalue_holm=float(h), qvalue_bh=float(q), significant_holm=rejects(h, alpha),
                     significant_bh=rejects(q, alpha))


__all__ = ["MIN_EFFECTIVE_ERRORS", "MIN_EXPECTED_ERRORS", "SMALL_GROUP", "group_sizes", "not_testable",
           "small_group_caveat", "sparse_counts", "testable"]
