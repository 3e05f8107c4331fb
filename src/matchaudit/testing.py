"""Claims asserted inside a test suite (pytest or any other): a release's promises fail its tests when the audit's
intervals refute them, and, unless allowed, when they cannot confirm them.

>>> import matchaudit as ma
>>> from matchaudit.testing import assert_claims
>>> audit = ma.audit(ma.simulate(seed=0).as_data(), fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=200))
>>> assert_claims({"level": 0.9, "claim": [{"metric": "fnmr", "at_fmr": 1e-2, "groups": "all", "max": 0.05}]},
...               audit).status
'pass'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matchaudit.claims import CheckResult, check


def assert_claims(claims: str | Path | dict, audit: Any = None, comparison: Any = None, *,
                  allow_inconclusive: bool = False) -> CheckResult:
    """Check ``claims`` (:func:`matchaudit.check`: a file, a parsed document) against ``audit`` (an Audit or its
    folder) and ``comparison``; raise AssertionError listing every claim that failed, or was inconclusive unless
    ``allow_inconclusive``. Returns the result for further assertions."""
    result = check(claims, audit, comparison)
    bad = {"fail"} | (set() if allow_inconclusive else {"inconclusive"})
    lines = [f"{c.id} ({c.text}): {v.status}: {v.reason}" + (f" [{v.advice}]" if v.advice else "")
             for c, v in zip(result.claims.claims, result.verdicts) if v.status in bad]
    if lines:
        raise AssertionError("claims not met:\n" + "\n".join(lines))
    return result


__all__ = ["assert_claims"]
