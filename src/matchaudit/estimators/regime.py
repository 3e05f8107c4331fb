"""Where the user's data sits on the regime grid (docs/intervals.md, "Regimes"), and the warnings that follow.

The audit's intervals are validated by simulation across samples per identity, identities per group and error
counts; outside the validated cells an interval is still computed, and the user is told why to read it with
care. One place for those rules, called by :func:`matchaudit.auditing.audit`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from matchaudit.estimators.bootstrap import RECENTRED
from matchaudit.model import MatchData

MIN_ERRORS = 5  # below this many errors (but above 0) no interval's coverage was established
MIN_IDENTITIES = 10  # identity-level resampling and tests with fewer units per group are not validated


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
        if 0 < e < MIN_ERRORS:
            at = f"FMR {r['target']:g}" if r["kind"] == "fmr_target" else f"threshold {r['target']:g}"
            few.setdefault(f"{r['metric']} of group {r['group']}", []).append(f"{at}: {int(e)}/{int(r['comparisons']):,}")
    for what, where in few.items():
        out.append(f"{what} rests on fewer than {MIN_ERRORS} errors ({'; '.join(where)}): no interval method "
                   "reaches its nominal coverage there in our studies; read these intervals as indicative.")
    recentered = any(r.get("method") in RECENTRED for r in records)
    if recentered and data.samples is not None and data.has_identities:
        sizes = data.identity_sizes
        for g, name in enumerate(data.group_names):
            in_g = data.identity_group == g
            two = int(np.sum(in_g & (sizes == 2)))
            if two:
                out.append(f"group {name}: {two:,} of {int(in_g.sum()):,} identities have 2 samples; one genuine "
                           "comparison says nothing about its own variance, so their within-identity (recentered) "
                           "variance is bounded, not estimated: those intervals are conservative.")
    if data.has_identities:
        for g, name in enumerate(data.group_names):
            k = int(np.sum(data.identity_group == g))
            if 0 < k < MIN_IDENTITIES:
                out.append(f"group {name} has {k} identities: identity-level intervals (vertex, double-or-nothing) "
                           "and group tests rest on few units and are not validated below "
                           f"{MIN_IDENTITIES} identities.")
    return out


__all__ = ["MIN_ERRORS", "MIN_IDENTITIES", "regime_warnings"]
