"""Two audits of versions of one system compared (``ma.diff``; docs/workflow.md): per FMR target, metric (FNMR at
the target's threshold overall and per group, each group's FMR there) and view, the difference NEW - OLD with a
marginal interval and a simultaneous one over the family (one metric at one target, all its views), whose
exclusion of 0 is the verdict "worse" (NEW higher) or "better" beyond noise.

Paired (the same trials scored by both versions): differences, marginal intervals and standard errors are the
paired identity bootstrap's, ``ma.compare``'s records with model A = NEW and B = OLD; the critical value is the
max-T one of the replicates' studentized deviations (:func:`maxt_critical`), the adjusted p-values
:func:`~matchaudit.estimators.permutation.maxt`'s on the same deviations.

Unpaired (different trials): each audit's own estimate and standard error; se(NEW - OLD) =
sqrt(se_old^2 + se_new^2), which assumes the two audits' identities independent; a normal marginal interval, and
the Šidák critical value over the family's m testable rows, which holds for jointly normal |Z| under any
correlation (Šidák 1967), so the overall view's overlap with the groups costs only a little power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd

from matchaudit.encoding import jsonable
from matchaudit.estimators.permutation import maxt

METRICS = {"fnmr_at_fmr": "FNMR", "fmr": "FMR"}
"""``ma.compare``'s record metrics -> the names the diff (and the audit's interval records) use."""


def maxt_critical(z: np.ndarray, level: float) -> float:
    """The two-sided max-T critical value from replicates' studentized deviations ``z`` (B, m): with the replicate
    maxima ``s_b = max_g |z_bg|`` (NaN as +inf, as :func:`~matchaudit.estimators.permutation.maxt` counts it)
    sorted ``s_(1) <= ... <= s_(B)`` and ``k = floor((1 - level)(1 + B)) - 1``, ``c = s_(B - k)``: then
    ``|T| > c`` exactly when maxt's adjusted p-value ``(1 + #{s_b >= |T|}) / (1 + B)`` is at most ``1 - level``.
    +inf when ``k < 0`` (too few replicates for that level)."""
    z = np.asarray(z, float)
    top = np.sort(np.where(np.isnan(z), np.inf, np.abs(z)).max(axis=1))
    k = math.floor((1 - level) * (1 + top.size) + 1e-9) - 1  # 1e-9: 0.05 * 1000 is 50.000000000000004 in floats
    return math.inf if k < 0 else float(top[top.size - 1 - k])


def sidak_critical(m: int, level: float) -> float:
    """The two-sided normal critical value for ``m`` studentized differences at the familywise ``level``:
    ``Phi^-1(1 - a / 2)`` with ``a = 1 - level^(1/m)``."""
    a = -math.expm1(math.log(level) / m)
    return NormalDist().inv_cdf(1 - a / 2)


def _finish(rows: list[dict], critical: float, pvalues: np.ndarray) -> None:
    """Simultaneous bounds, adjusted p-values and verdicts of one family's ``rows`` (in place)."""
    for r, p in zip(rows, pvalues):
        if r["verdict"] == "not testable":
            continue
        half = critical * r["standard_error"]
        r.update(critical=critical, simultaneous_low=r["difference"] - half,
                 simultaneous_high=r["difference"] + half, pvalue_adjusted=float(p))
        beyond = abs(r["z"]) > critical
        r["verdict"] = "within noise" if not beyond else "worse" if r["difference"] > 0 else "better"


def _row(metric: str, target: float, view: str, old: float, new: float, difference: float, se: float,
         low: float, high: float, note: str = "", untestable: str = "") -> dict:
    """One row; not testable (``untestable`` says why) without a standard error above 0."""
    testable = math.isfinite(difference) and math.isfinite(se) and se > 0
    if not testable:
        note = "; ".join(filter(None, (untestable, note)))
    return {"metric": metric, "fmr_target": target, "view": view, "old": old, "new": new, "difference": difference,
            "standard_error": se, "low": low, "high": high, "z": difference / se if testable else math.nan,
            "critical": math.nan, "simultaneous_low": math.nan, "simultaneous_high": math.nan,
            "pvalue_adjusted": math.nan, "verdict": "within noise" if testable else "not testable", "note": note}


def _families(rows: list[dict]) -> dict[tuple[str, float], list[int]]:
    fam: dict[tuple[str, float], list[int]] = {}
    for i, r in enumerate(rows):
        fam.setdefault((r["metric"], r["fmr_target"]), []).append(i)
    return fam


def paired_rows(records: list[dict], replicates: dict, level: float) -> list[dict]:
    """The diff's rows from ``ma.compare``'s paired ``records`` of NEW - OLD (model A = NEW) and their replicate
    differences ``replicates`` (keyed (metric, view, target), as :func:`~matchaudit.estimators.compare.
    paired_records` returns them): marginal intervals as recorded, max-T per family."""
    rows, reps = [], []
    for r in records:
        if r["metric"] not in METRICS:
            continue
        same = r["difference"] == 0 and r["standard_error"] == 0
        rows.append(_row(METRICS[r["metric"]], r["fmr_target"], r["view"], r["model_b"], r["model_a"],
                         r["difference"], r["standard_error"], r["low"], r["high"], r["note"] or "",
                         "no difference in any replicate" if same else "no spread in the replicates"))
        reps.append(replicates[(r["metric"], r["view"], r["fmr_target"])])
    for idx in _families(rows).values():
        fam = [rows[i] for i in idx]
        ok = np.array([r["verdict"] != "not testable" for r in fam])
        if not ok.any():
            continue
        d = np.array([r["difference"] for r in fam])
        se = np.array([r["standard_error"] if k else 1.0 for r, k in zip(fam, ok)])
        z_reps = (np.stack([reps[i] for i in idx], axis=1) - d) / se  # centred, studentized (B, m)
        stat = np.where(ok, [r["z"] for r in fam], np.nan)
        _finish(fam, maxt_critical(z_reps[:, ok], level), maxt(stat, z_reps))
    return rows


def unpaired_rows(old: dict, new: dict, level: float) -> list[dict]:
    """The diff's rows from the two audits' own estimates: ``old``, ``new`` map (metric, target, view) to
    (estimate, standard error), the keys both hold; se of the difference sqrt(se_old^2 + se_new^2) (independent
    identities), normal marginal intervals at ``level``, Šidák over each family's testable rows."""
    z = NormalDist().inv_cdf((1 + level) / 2)
    rows = []
    for key in old:
        (eo, so), (en, sn) = old[key], new[key]
        d, se = en - eo, math.hypot(so, sn)
        rows.append(_row(*key, eo, en, d, se, d - z * se, d + z * se,
                         untestable="neither audit gives a standard error above 0 (no errors in either?)"))
    for idx in _families(rows).values():
        fam = [rows[i] for i in idx]
        m = sum(r["verdict"] != "not testable" for r in fam)
        if m:
            p = [1 - (1 - 2 * NormalDist().cdf(-abs(r["z"]))) ** m if r["verdict"] != "not testable" else math.nan
                 for r in fam]
            _finish(fam, sidak_critical(m, level), np.array(p))
    return rows


@dataclass
class AuditDiff:
    """Two audits compared, NEW - OLD: one row per metric, FMR target and view, with its verdict (module doc).

    ``paired``: whether the same trials' scores were paired, ``pairing`` says why or why not; ``skipped``: what one
    audit has and the other lacks (targets, groups, rows), left out; ``notes``: the assumptions to read the rows
    by; ``old``/``new``: each audit's source, command and trial fingerprint; ``curves``: each audit's pooled DET
    curves (for the figure; not in :meth:`to_dict`)."""

    rows: list[dict]
    paired: bool
    pairing: str
    level: float
    method: str
    n_resamples: int | None
    seed: int | None
    old: dict
    new: dict
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    curves: dict = field(default_factory=dict, repr=False)

    @property
    def worse(self) -> list[dict]:
        """The rows that got worse beyond noise (NEW higher, simultaneous interval above 0)."""
        return [r for r in self.rows if r["verdict"] == "worse"]

    def to_frame(self) -> pd.DataFrame:
        """The rows as a table (diff.csv)."""
        return pd.DataFrame(self.rows, columns=list(_row("", 0.0, "", 0, 0, 0, 0, 0, 0)))

    def to_dict(self) -> dict:
        """What diff.json holds (JSON-ready): the rows, how they were computed, what was skipped and assumed."""
        return jsonable({"paired": self.paired, "pairing": self.pairing, "method": self.method, "level": self.level,
                         "n_resamples": self.n_resamples, "seed": self.seed, "old": self.old, "new": self.new,
                         "skipped": self.skipped, "notes": self.notes, "rows": self.rows})


__all__ = ["AuditDiff", "METRICS", "maxt_critical", "paired_rows", "sidak_critical", "unpaired_rows"]
