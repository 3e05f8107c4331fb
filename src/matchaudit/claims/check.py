"""Claims checked against an audit (and a model comparison): each claim's quantities read from the audit's interval
records, its verdict (:mod:`matchaudit.claims.verdicts`), and the result as a table, JSON and JUnit XML for CI.

Why from the records: the audit's intervals are the project's identity-aware inference (docs/intervals.md); a claim
adds only the decision rule and the file-wide error control, never a second way of computing a bound.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from matchaudit.auditing.core import Audit
from matchaudit.auditing.results_json import compare_records, read_json
from matchaudit.checks import same_point
from matchaudit.claims.spec import Claim, Claims, parse_claims, read_claims
from matchaudit.claims.verdicts import EXIT, Quantity, Verdict, decide, needed, replicates_for, two_sided_level
from matchaudit.encoding import jsonable
from matchaudit.errors import InputError
from matchaudit.outputs import staged



@dataclass
class CheckResult:
    """Every claim's verdict. ``status``: fail if any claim fails, else inconclusive if any is, else pass;
    :attr:`exit_code` 0 / 1 / 3 for CI."""

    claims: Claims
    verdicts: list[Verdict]
    sources: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        kinds = {v.status for v in self.verdicts}
        return "fail" if "fail" in kinds else "inconclusive" if "inconclusive" in kinds else "pass"

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def rows(self) -> list[dict[str, Any]]:
        """One record per claim: its words, verdict, reason, advice and the confidences its bounds needed."""
        return [{"claim": c.id, "text": c.text, "verdict": v.status, "reason": v.reason, "advice": v.advice,
                 "pass_confidence": v.pass_confidence, "fail_confidence": v.fail_confidence,
                 "notes": "; ".join(v.notes) or None} for c, v in zip(self.claims.claims, self.verdicts)]

    def quantity_rows(self) -> list[dict[str, Any]]:
        """One record per bounded quantity of every claim: estimate, bounds, their one-sided confidence, source."""
        return [{"claim": c.id, "quantity": q.name, "estimate": q.estimate, "lower": q.lower, "upper": q.upper,
                 "lower_confidence": q.lower_confidence, "upper_confidence": q.upper_confidence,
                 "identities": q.identities, "source": q.source}
                for c, v in zip(self.claims.claims, self.verdicts) for q in v.quantities]

    def to_frame(self) -> pd.DataFrame:
        """:meth:`rows` as a table."""
        return pd.DataFrame(self.rows())

    def to_dict(self) -> dict[str, Any]:
        """What claims.json holds (JSON-ready)."""
        return jsonable({"status": self.status, "exit_code": self.exit_code, "level": self.claims.level,
                         "claims_file": self.claims.source, "sources": self.sources,
                         "rule": "pass: every bound at 1 - alpha/k inside the limits; fail: a bound at "
                                 "1 - alpha/(k m) beyond one; k claims, m a claim's quantities x limits "
                                 "(docs/claims.md)",
                         "claims": self.rows(), "quantities": self.quantity_rows()})

    def save(self, out: str | Path, inputs: Sequence[str | Path | None] = ()) -> Path:
        """Write claims.json, claims.csv (one row per claim) and claims.xml (JUnit) into the folder ``out`` as one
        set (:func:`matchaudit.outputs.staged`: nothing the user gave is replaced; ``inputs``: the run's files)."""
        with staged(out, "check", inputs=(self.claims.source, *inputs)) as tmp:
            (tmp / "claims.json").write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n",
                                             encoding="utf-8")
            self.to_frame().to_csv(tmp / "claims.csv", index=False)
            (tmp / "claims.xml").write_text(self.junit(), encoding="utf-8")
        return Path(out)

    def junit(self) -> str:
        """JUnit XML: a test case per claim; fail -> ``<failure>``, inconclusive -> ``<skipped>`` (with the advice)."""
        counts = {s: sum(v.status == s for v in self.verdicts) for s in ("fail", "inconclusive")}
        suite = ET.Element("testsuite", name="matchaudit claims", tests=str(len(self.verdicts)),
                           failures=str(counts["fail"]), skipped=str(counts["inconclusive"]), errors="0")
        for c, v in zip(self.claims.claims, self.verdicts):
            case = ET.SubElement(suite, "testcase", classname=f"claims.{Path(self.claims.source).stem}",
                                 name=f"{c.id}: {c.text}")
            if v.status == "fail":
                ET.SubElement(case, "failure", message=v.reason, type="fail").text = v.reason
            elif v.status == "inconclusive":
                ET.SubElement(case, "skipped", message=f"inconclusive: {v.reason}").text = v.advice or v.reason
            out = ET.SubElement(case, "system-out")
            out.text = f"{v.status}: {v.reason}" + (f"\n{v.advice}" if v.advice else "")
        ET.indent(suite)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def required_level(claims: Claims | str | Path, groups: Sequence[str]) -> float:
    """The two-sided interval level an audit of ``groups`` needs for every verdict of ``claims``: each end of a
    two-sided interval is a one-sided bound at ``(1 + level) / 2``, and the fail bounds are the most demanding; a
    rate with zero errors has the one-sided ``[0, U]`` with ``U`` at ``level`` itself, so a claim on a rate also
    needs ``level`` at the confidence of the bound ``U`` serves (pass for ``max``, fail for ``min``).
    ``matchaudit audit --claims`` sets it."""
    claims = _claims(claims)
    k = len(claims.claims)
    out = []
    for c in claims.claims:
        pass_conf, fail_conf = needed(claims.alpha, k, _n_fail(c, len(groups)))
        out.append(two_sided_level(fail_conf))
        if c.metric in ("fnmr", "fmr") and c.difference is None:  # a zero-error U at level
            out.append(max(pass_conf if math.isfinite(c.high) else 0.0, fail_conf if math.isfinite(c.low) else 0.0))
    return max(out)


MAX_REPLICATES = 20_000  # what required_replicates asks at most (beyond, the verdicts note rough bounds)


def required_replicates(level: float) -> int:
    """Bootstrap replicates for intervals at ``level`` whose ends (one-sided bounds at ``(1 + level) / 2``) each
    leave ``TAIL_REPLICATES`` replicates beyond them, at most :data:`MAX_REPLICATES`: ``audit --claims`` raises
    the default ``--n-resamples`` to it."""
    return min(MAX_REPLICATES, replicates_for((1.0 + level) / 2.0))


def preflight(claims: Claims | str | Path | dict, groups: Sequence[str], points: dict[str, Sequence[float]],
              weightings: Sequence[str]) -> None:
    """Refuse, before an audit runs, the claims it could not answer: groups its data lack, operating points
    (``points``: kind -> the FMR targets, thresholds, FNMR targets it will have) and weightings it will not compute.
    Claims on a model difference are answered by a comparison, not checked here."""
    claims = _claims(claims)
    named = [g for g in groups if g != "all"]
    for c in claims.claims:
        if c.difference is not None:
            continue
        if c.weighting not in weightings:
            raise InputError(f"{c.label}: the audit computes the {', '.join(weightings)} weighting only; add "
                             f"{c.weighting} to --weighting.", param="claims")
        if (c.groups == "each" or c.is_fairness) and len(named) < (2 if c.is_fairness else 1):
            raise InputError(f"{c.label}: the data have {'no groups' if not named else 'one group'} (--group-by); "
                             f"claim it for groups = 'all'.", param="claims")
        missing = [g for g in (c.groups if isinstance(c.groups, tuple) else ()) if g not in named]
        if missing:
            raise InputError(f"{c.label}: group(s) {', '.join(map(repr, missing))} not in the data; its groups: "
                             f"{', '.join(named) or 'none'}.", param="claims")
        if c.kind != "curve" and same_point(points.get(c.kind, ()), c.point) is None:
            flag = {"fmr_target": "--fmr", "threshold": "--threshold", "fnmr_target": "--fnmr"}[c.kind]
            have = ", ".join(f"{x:.12g}" for x in points.get(c.kind, ())) or "none"
            raise InputError(f"{c.label}: at {c.point:.12g}, which the audit will not have ({flag}: {have}); add it "
                             f"to {flag}.", param="claims")


def check(claims: Claims | str | Path | dict, audit: Audit | str | Path | None = None,
          comparison: str | Path | dict | None = None) -> CheckResult:
    """Verdicts of ``claims`` (a file, a parsed document or :class:`Claims`) from ``audit`` (an :class:`Audit` or
    its folder) and, for claims on a ``difference``, ``comparison`` (a ``matchaudit compare`` folder or its
    compare.json). Refused, naming the claim: a quantity the audit does not hold (a group, an FMR target, intervals
    not computed) or intervals too narrow for the file's level (the level to re-run the audit at is named)."""
    claims = _claims(claims)
    if audit is not None and not isinstance(audit, Audit):
        audit = Audit.load(audit, curves=False)
    doc = _comparison(comparison) if comparison is not None else None
    k = len(claims.claims)
    file_level = required_level(claims, audit.groups[1:] or ("all",)) if audit is not None else None
    verdicts = []
    for c in claims.claims:
        if c.difference is not None:
            if doc is None:
                raise InputError(f"{c.label}: a claim on a model difference needs a comparison (matchaudit compare's "
                                 "or matchaudit diff's folder).", param="comparison")
            quantities = _from_comparison(c, doc)
        else:
            if audit is None:
                raise InputError(f"{c.label}: needs an audit.", param="audit")
            quantities = _from_audit(c, audit)
        _enough(c, quantities, claims, k, file_level)
        verdicts.append(decide(quantities, c.low, c.high, claims.alpha, k, _scope_note(quantities)))
    return CheckResult(claims, verdicts, _sources(audit, comparison))


def _sources(audit: Audit | None, comparison: Any) -> dict[str, Any]:
    """What the verdicts were read from: the audit's command, data fingerprint and configuration (the report checks
    a claims.json against the audit beside it by them), the comparison's file."""
    out: dict[str, Any] = {}
    if audit is not None:
        doc = audit.document()
        out.update(audit_command=doc.get("command"), data=doc["summary"].get("data"), config=doc["config"])
    if comparison is not None and not isinstance(comparison, dict):
        out["comparison"] = str(comparison)
    return out


def _scope_note(quantities: tuple[Quantity, ...]) -> tuple[str, ...]:
    """A claim about a system is about a new population of identities: bounds that answer for these identities
    only (``recentered``) are narrower than that question needs, and the verdict says so."""
    these = [q.name for q in quantities if "these identities" in q.source and "new population" not in q.source]
    return (f"the bounds of {', '.join(these)} answer for these identities, not a new population (docs/intervals.md); "
            "--ci-method double-or-nothing answers for a new population",) if these else ()


def _claims(claims: Claims | str | Path | dict) -> Claims:
    if isinstance(claims, Claims):
        return claims
    if isinstance(claims, dict):
        return parse_claims(claims)
    return read_claims(claims)


def _n_fail(c: Claim, n_groups: int) -> int:
    n = n_groups if c.groups == "each" else 1 if c.groups == "all" else len(c.groups)
    return n * (math.isfinite(c.low) + math.isfinite(c.high))


def _enough(c: Claim, quantities: tuple[Quantity, ...], claims: Claims, k: int, file_level: float | None) -> None:
    """Each end a verdict reads must hold at the confidence it needs (the upper end: pass for ``max``, fail for
    ``min``; the lower end the other way round); if not, the level to re-run at: the whole file's for the audit."""
    pass_conf, fail_conf = needed(claims.alpha, k, len(quantities) * (math.isfinite(c.low) + math.isfinite(c.high)))
    want = []
    for q in quantities:
        if math.isfinite(c.high):
            want += [(q.upper_confidence, pass_conf), (q.lower_confidence, fail_conf)]
        if math.isfinite(c.low):
            want += [(q.lower_confidence, pass_conf), (q.upper_confidence, fail_conf)]
    short = [(have, need) for have, need in want if have + 1e-12 < need]
    if not short:
        return
    have, need = min(short, key=lambda x: x[0] - x[1])
    level = file_level if file_level is not None else two_sided_level(need)
    raise InputError(
        f"{c.label}: its bounds need one-sided confidence {need:.4%} ({k} claim{'s' * (k != 1)} at level "
        f"{claims.level:g}), the {'comparison' if c.difference else 'audit'}'s give {have:.4%}; re-run it with "
        f"--level {_ceil(level)}" + ("" if c.difference else " (what the whole file needs; `matchaudit audit --claims "
                                     "FILE` sets it)") + ".", param="claims")


def _ceil(level: float) -> str:
    """A level for the advice, rounded up so that it suffices (all its digits where rounding would reach 1)."""
    for digits in range(3, 13):
        x = math.ceil(level * 10**digits - 1e-9) / 10**digits
        if x < 1:
            return f"{x:.{digits}f}".rstrip("0")
    return repr(level)


def _from_audit(c: Claim, audit: Audit) -> tuple[Quantity, ...]:
    rec = audit.intervals
    if rec.empty:
        raise InputError(f"{c.label}: the audit has no intervals (it ran with --no-intervals); re-run it with "
                         "intervals.", param="audit")
    metric = c.metric if c.metric.startswith("combined:") else c.rate if not c.is_fairness else (
        c.metric.split(":")[0].upper() + ":" + c.metric.split(":")[1])
    rows = rec[(rec.metric == metric) & (rec.weighting == c.weighting) & (rec.kind == c.kind)]
    if rows.empty:
        why = " (fairness measures compare groups: the data have none)" if c.is_fairness and len(audit.groups) < 3 \
            else ""
        at = {"fmr_target": " at FMR targets", "threshold": " at fixed thresholds (--threshold)",
              "fnmr_target": " at FNMR targets (--fnmr)", "curve": ""}[c.kind]
        raise InputError(f"{c.label}: the audit has no {c.weighting} {metric} intervals{at}{why}.", param="claims")
    if c.kind != "curve":
        col = "threshold" if c.kind == "threshold" else "target"
        have = sorted({float(x) for x in rows[col].dropna()})
        named = same_point(rows[col].dropna(), c.point)
        rows = rows[rows[col] == named]
        if rows.empty:
            what = {"fmr_target": "FMR targets", "fnmr_target": "FNMR targets", "threshold": "thresholds"}[c.kind]
            raise InputError(f"{c.label}: the audit has no {c.weighting} {metric} intervals at {c.point:.12g}; its "
                             f"{what}: {', '.join(f'{x:.12g}' for x in have) or 'none'}.", param="claims")
    groups = list(audit.groups[1:]) if c.groups == "each" else ["all"] if c.groups == "all" else list(c.groups)
    if not groups:
        raise InputError(f"{c.label}: the audit's data have no groups (audited without --group-by); claim it for "
                         "groups = 'all'.", param="claims")
    missing = [g for g in groups if g not in set(rows.group)]
    if missing:
        raise InputError(f"{c.label}: group(s) {', '.join(map(repr, missing))} not in the audit; its groups: "
                         f"{', '.join(audit.groups[1:]) or 'none (ungrouped data)'}.", param="claims")
    sizes = {g["group"]: g["identities"] for g in audit.exact.summary["groups"]}
    sizes["all"] = audit.exact.summary.get("n_identities")
    name = c.metric if c.is_fairness else None
    return tuple(_quantity(name or g, rows[rows.group == g], sizes.get(g) if not c.is_fairness else
                           min(sizes[x] for x in audit.groups[1:])) for g in groups)


def _quantity(name: str, rows: pd.DataFrame, identities: int | None) -> Quantity:
    """One quantity's bounds; where the audit holds several methods' intervals, the widest (each is valid, so the
    widest is too, at the highest of their confidences)."""
    ends = [_ends(r) for r in rows.itertuples()]
    lower, lower_conf = min(e[0] for e in ends), max(e[2] for e in ends)
    upper, upper_conf = max(e[1] for e in ends), max(e[3] for e in ends)
    scopes = rows["scope"] if "scope" in rows else [None] * len(rows)
    source = "; ".join(sorted({f"{m} ({sc})" if isinstance(sc, str) else str(m) for m, sc in zip(rows.method, scopes)}))
    resampled = [e[4] for e in ends if e[4] is not None]
    return Quantity(name, float(rows.iloc[0].estimate), lower, upper, lower_conf, upper_conf,
                    int(identities) if identities is not None else None, source, max(resampled) if resampled else None)


def _ends(r: Any) -> tuple[float, float, float, float, int | None]:
    """(lower, upper, their one-sided confidences, bootstrap replicates behind them) of one interval record: a
    two-sided interval at level L has each end at (1 + L) / 2; a one-sided one its bound at L and the other end
    absent; a rate with zero errors is ``[0, U]``, 0 holding by definition and U a one-sided bound at L (not a
    bootstrap percentile)."""
    low, high = _end(r.low, r.alternative, "low"), _end(r.high, r.alternative, "high")
    two = r.alternative == "two-sided"
    lo_conf = 1.0 if not math.isfinite(low) else (1.0 + r.level) / 2.0 if two else r.level
    hi_conf = 1.0 if not math.isfinite(high) else (1.0 + r.level) / 2.0 if two else r.level
    zero = getattr(r, "errors", None) is not None and not pd.isna(r.errors) and r.errors == 0 and low == 0
    if zero:
        lo_conf, hi_conf = 1.0, r.level
    n = r.n_resamples
    boot = not zero and r.method not in ("wilson", "gaussian", "clopper-pearson") and n is not None and not pd.isna(n)
    return low, high, lo_conf, hi_conf, int(n) if boot else None


def _end(value: Any, alternative: str, end: str) -> float:
    """A record's interval end as a bound; the side a one-sided interval leaves open is infinite."""
    if alternative == "less" and end == "low":
        return -math.inf
    if alternative == "greater" and end == "high":
        return math.inf
    return float("nan") if value is None else float(value)


WHAT = "compare.json of `matchaudit compare` or diff.json of `matchaudit diff`"


def _comparison(path: str | Path | dict) -> dict[str, Any]:
    """A compare.json or diff.json (or the folder holding one), as ``{"kind", "records"}`` with records of
    ``metric`` (FNMR, FMR), ``view``, ``fmr_target``, ``difference`` (A - B, or NEW - OLD), ``low``, ``high``,
    ``level``, ``method``, ``n_resamples``."""
    if isinstance(path, dict):
        doc = path
    else:
        path = Path(path)
        if path.is_dir():
            found = [path / n for n in ("compare.json", "diff.json") if (path / n).is_file()]
            if len(found) != 1:
                raise InputError(f"{path}: a folder with {'both compare.json and' if found else 'neither compare.json nor'} diff.json; "
                                 "name the file.", param="comparison")
            path = found[0]
        doc = read_json(path, WHAT, "comparison")
    records = compare_records(doc)
    if records is not None:
        return {"kind": "compare", "records": [{**r, "metric": "FNMR"} for r in records if r.get("metric") == "fnmr_at_fmr"]}
    if isinstance(doc.get("result"), dict) and "rows" in doc["result"]:  # diff.json as `matchaudit diff` writes it
        doc = doc["result"]
    if isinstance(doc.get("rows"), list) and "paired" in doc:
        return {"kind": "diff", "records": [{**r, "level": doc["level"], "method": (
            f"paired {doc['method']}" if doc["paired"] else "unpaired (normal)"), "n_resamples": doc.get(
            "n_resamples") if doc["paired"] else None} for r in doc["rows"]]}
    raise InputError(f"{path}: not a {WHAT}.", param="comparison")


def _from_comparison(c: Claim, doc: dict[str, Any]) -> tuple[Quantity, ...]:
    kind = "diff" if "new" in c.difference else "compare"
    if doc["kind"] != kind:
        raise InputError(f"{c.label}: difference {c.difference!r} reads a {kind}.json, the comparison given is a "
                         f"{doc['kind']}.json.", param="claims")
    recs = [r for r in doc["records"] if r.get("metric") == c.rate]
    have = sorted({float(r["fmr_target"]) for r in recs})
    named = same_point([r["fmr_target"] for r in recs], c.point)
    recs = [r for r in recs if r["fmr_target"] == named]
    if not recs:
        raise InputError(f"{c.label}: the comparison has no FNMR at FMR {c.point:g}; its targets: "
                         f"{', '.join(f'{x:g}' for x in have)}.", param="claims")
    views = [r["view"] for r in recs]
    groups = [v for v in views if v != "all"] if c.groups == "each" else ["all"] if c.groups == "all" else list(
        c.groups)
    missing = [g for g in groups if g not in views]
    if missing:
        raise InputError(f"{c.label}: group(s) {', '.join(map(repr, missing))} not in the comparison; its groups: "
                         f"{', '.join(v for v in views if v != 'all') or 'none'}.", param="claims")
    sign = 1.0 if c.difference in ("a - b", "new - old") else -1.0
    out = []
    for g in groups:
        r = next(x for x in recs if x["view"] == g)
        lo, hi = (_num(r["low"]), _num(r["high"])) if sign > 0 else (-_num(r["high"]), -_num(r["low"]))
        conf = (1.0 + r["level"]) / 2.0
        out.append(Quantity(f"{g} ({c.difference})", sign * _num(r["difference"]), lo, hi, conf, conf, None,
                            r["method"] if kind == "diff" else f"paired {r['method']}", r.get("n_resamples")))
    return tuple(out)


def _num(x: Any) -> float:
    return float("nan") if x is None or isinstance(x, str) and x.lower() == "nan" else float(x)


__all__ = ["CheckResult", "check", "preflight", "required_level"]
