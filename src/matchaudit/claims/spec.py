"""A claims file: what a system promises about its error rates, read and checked for sense before any number.

Why a file: a release pipeline keeps its promises beside the code ("FNMR at FMR 1e-3 at most 2% for every group",
"max/min FMR ratio at most 1.5", "model B no worse than A by more than 0.5 points") and gates each release on the
audit's intervals (:mod:`matchaudit.claims.check`). TOML (standard library) or YAML (when PyYAML is installed):

    level = 0.95                     # the whole file's confidence: every verdict is right with this probability

    [[claim]]
    text = "FNMR at FMR 1e-3 at most 2% for every group"
    metric = "fnmr"                  # fnmr, fmr, eer, auc, or a fairness measure such as "fmr:max_min_ratio"
    at_fmr = 1e-3                    # the operating point: at_fmr, at_threshold or at_fnmr (none for eer, auc)
    groups = "each"                  # "each" group, "all" (overall), or a list of groups
    max = 0.02                       # max and/or min: both make an equivalence claim (within [min, max])

A claim on ``difference = "b - a"`` (or ``"a - b"``) reads a model comparison (``matchaudit compare``'s folder), one
on ``"new - old"`` (or ``"old - new"``) two versions' audits compared (``matchaudit diff``'s folder), instead of an
audit. Everything is checked here: unknown keys and metrics, a claim without a limit, ``min > max``,
and two claims on one quantity that cannot both hold (each names the claim by number and text).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from matchaudit.errors import InputError

RATES = ("fnmr", "fmr")
CURVE_METRICS = ("eer", "auc")
FAIRNESS = ("max_min_ratio", "max_min_difference", "max_geomean_ratio", "log_geomean_sum", "gini")
COMBINED = ("fdr", "garbe", "inequity_rate")
METRICS = RATES + CURVE_METRICS + tuple(f"{r}:{m}" for r in RATES for m in FAIRNESS) + tuple(
    f"combined:{m}" for m in COMBINED)
POINTS = ("at_fmr", "at_threshold", "at_fnmr")
DIFFERENCES = ("a - b", "b - a", "new - old", "old - new")
KEYS = frozenset({"id", "text", "metric", "groups", "min", "max", "weighting", "difference", *POINTS})
DEFAULT_LEVEL = 0.95

Point = Literal["fmr_target", "threshold", "fnmr_target", "curve"]
_POINT_KIND: dict[str, Point] = {"at_fmr": "fmr_target", "at_threshold": "threshold", "at_fnmr": "fnmr_target"}


@dataclass(frozen=True)
class Claim:
    """One promise: ``metric`` of ``groups`` at an operating point lies within [``low``, ``high``] (either may be
    infinite, not both). ``groups``: "each", "all" or a tuple of group names; ``difference``: None for an audit's
    quantity, else the direction of a paired model comparison."""

    number: int  # 1-based position in the file
    id: str
    text: str
    metric: str
    kind: Point
    point: float | None
    groups: str | tuple[str, ...]
    low: float
    high: float
    weighting: str
    difference: str | None

    @property
    def label(self) -> str:
        """How messages name the claim."""
        return f"claim {self.number} ({self.id!r})"

    @property
    def rate(self) -> str:
        """The rate a per-group claim is about (FNMR, FMR, EER, AUC) or the fairness measure's full name."""
        return self.metric.upper() if ":" not in self.metric else self.metric

    @property
    def is_fairness(self) -> bool:
        return ":" in self.metric

    @property
    def is_equivalence(self) -> bool:
        """Both limits finite: within [min, max] (two one-sided bounds must each hold)."""
        return math.isfinite(self.low) and math.isfinite(self.high)


@dataclass(frozen=True)
class Claims:
    """A claims file: its claims and the confidence ``level`` at which all verdicts together hold."""

    claims: tuple[Claim, ...]
    level: float
    source: str

    @property
    def alpha(self) -> float:
        return 1.0 - self.level


def read_claims(path: str | Path) -> Claims:
    """The claims of a TOML (``.toml``) or YAML (``.yaml``/``.yml``) file, checked (:func:`parse_claims`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {'a folder, not a' if path.is_dir() else 'no such'} claims file.", param="claims")
    text = _text(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise InputError(f"{path}: reading YAML needs PyYAML (pip install pyyaml); or write the claims in TOML.",
                             param="claims") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(f"{path}: not valid YAML ({_one_line(e)}).", param="claims") from None
    elif suffix == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise InputError(f"{path}: not valid TOML ({e}).", param="claims") from None
    else:
        raise InputError(f"{path}: a claims file ends in .toml, .yaml or .yml.", param="claims")
    return parse_claims(doc, str(path))


def parse_claims(doc: Any, source: str = "claims") -> Claims:
    """Claims from a parsed document: ``{"level": ..., "claim": [{...}, ...]}`` (YAML may say ``claims``)."""
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a table with a list of [[claim]] entries.", param="claims")
    unknown = set(doc) - {"level", "claim", "claims"}
    if unknown:
        raise InputError(f"{source}: unknown top-level key(s) {', '.join(map(repr, sorted(unknown)))}; the file holds "
                         "'level' and [[claim]] entries.", param="claims")
    entries = doc.get("claim", doc.get("claims"))
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{source}: no claims ([[claim]] entries, each a table of keys).", param="claims")
    level = doc.get("level", DEFAULT_LEVEL)
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.5 < level < 1:
        raise InputError(f"{source}: level {level!r} must be a confidence level between 0.5 and 1 (e.g. 0.95).",
                         param="claims")
    claims = tuple(_claim(e, i + 1, source) for i, e in enumerate(entries))
    ids = [c.id for c in claims]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InputError(f"{source}: claim ids must be unique; repeated: {', '.join(map(repr, twice))}.",
                         param="claims")
    _check_consistent(claims, source)
    return Claims(claims, float(level), source)


def _claim(entry: Any, number: int, source: str) -> Claim:
    where = f"{source}: claim {number}"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected a table of keys (metric, at_fmr, groups, max, ...).", param="claims")
    unknown = set(entry) - KEYS
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(map(repr, sorted(unknown)))}; a claim takes "
                         f"{', '.join(sorted(KEYS))}.", param="claims")
    if "metric" not in entry:
        raise InputError(f"{where}: no metric; give one of {', '.join(METRICS)}.", param="claims")
    metric = str(entry["metric"]).strip().lower()
    if metric not in METRICS:
        raise InputError(f"{where}: metric {entry.get('metric')!r} is not one matchaudit checks; use one of "
                         f"{', '.join(METRICS)}.", param="claims")
    given = [p for p in POINTS if p in entry]
    if metric in CURVE_METRICS:
        if given:
            raise InputError(f"{where}: {metric} is a property of the whole curve; drop {given[0]}.", param="claims")
        kind, point = "curve", None
    else:
        if len(given) != 1:
            raise InputError(f"{where}: give exactly one operating point ({', '.join(POINTS)}) for {metric}.",
                             param="claims")
        kind, point = _POINT_KIND[given[0]], _number(entry[given[0]], f"{where}: {given[0]}")
        if kind != "threshold" and not 0 < point < 1:
            raise InputError(f"{where}: {given[0]} = {point} must lie strictly between 0 and 1.", param="claims")
    low = _number(entry["min"], f"{where}: min") if "min" in entry else -math.inf
    high = _number(entry["max"], f"{where}: max") if "max" in entry else math.inf
    if not (math.isfinite(low) or math.isfinite(high)):
        raise InputError(f"{where}: no limit; give max (at most), min (at least) or both (within).", param="claims")
    if low > high:
        raise InputError(f"{where}: min {low} is above max {high}: no value can satisfy it.", param="claims")
    difference = entry.get("difference")
    if difference is not None:
        spelled = {d.replace(" ", ""): d for d in DIFFERENCES}.get(str(difference).lower().replace(" ", ""))
        if spelled is None:
            raise InputError(f"{where}: difference {difference!r}: use 'b - a' or 'a - b' (the two models of a "
                             "matchaudit compare folder), 'new - old' or 'old - new' (a matchaudit diff folder).",
                             param="claims")
        difference = spelled
        if kind != "fmr_target" or (metric != "fnmr" and not (metric == "fmr" and "new" in spelled)):
            raise InputError(f"{where}: a model comparison holds FNMR at FMR targets (a diff also each group's FMR "
                             "there); use metric = 'fnmr' with at_fmr.", param="claims")
    groups = _groups(entry.get("groups", "all" if (":" in metric or difference) else "each"), where, metric)
    weighting = str(entry.get("weighting", "pooled"))
    if weighting not in ("pooled", "balanced"):
        raise InputError(f"{where}: weighting {weighting!r}: use 'pooled' or 'balanced'.", param="claims")
    text = str(entry.get("text", "")).strip() or _describe(metric, kind, point, groups, low, high)
    return Claim(number, str(entry.get("id", number)), text, metric, kind, point, groups, low, high, weighting,
                 difference)


def _groups(value: Any, where: str, metric: str) -> str | tuple[str, ...]:
    if value in ("each", "all"):
        if ":" in metric and value == "each":
            raise InputError(f"{where}: a fairness measure is one number over the groups; use groups = 'all'.",
                             param="claims")
        return value
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(g, (str, int)) for g in value):
        raise InputError(f"{where}: groups {value!r}: use 'each', 'all' or a list of group names.", param="claims")
    if ":" in metric:
        raise InputError(f"{where}: a fairness measure is one number over the groups; use groups = 'all'.",
                         param="claims")
    names = tuple(str(g) for g in value)
    if len(set(names)) < len(names):
        raise InputError(f"{where}: groups {list(names)!r} names a group twice.", param="claims")
    return "all" if names == ("all",) else names


def _number(value: Any, where: str) -> float:
    """A finite number; a string that spells one too (YAML 1.1 reads ``1e-3``, an exponent without a dot, as text)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise InputError(f"{where} = {value!r} is not a finite number.", param="claims")
    return float(value)


def _describe(metric: str, kind: str, point: float | None, groups: Any, low: float, high: float) -> str:
    at = "" if point is None else {"fmr_target": f" at FMR {point:g}", "threshold": f" at threshold {point:g}",
                                   "fnmr_target": f" at FNMR {point:g}"}[kind]
    who = {"each": " for every group", "all": ""}.get(groups, f" for {', '.join(groups)}") if isinstance(
        groups, str) else f" for {', '.join(groups)}"
    limit = (f"within [{low:g}, {high:g}]" if math.isfinite(low) and math.isfinite(high)
             else f"at most {high:g}" if math.isfinite(high) else f"at least {low:g}")
    return f"{metric}{at}{who} {limit}"


def _check_consistent(claims: tuple[Claim, ...], source: str) -> None:
    """Two claims on the same quantity whose limits leave no value satisfying both: a contradiction in the file."""
    for i, a in enumerate(claims):
        for b in claims[i + 1:]:
            same = (a.metric, a.kind, a.point, a.weighting, a.difference) == (
                b.metric, b.kind, b.point, b.weighting, b.difference)
            if same and _overlap_groups(a.groups, b.groups) and max(a.low, b.low) > min(a.high, b.high):
                raise InputError(f"{source}: {a.label} and {b.label} contradict each other: no value of {a.metric} "
                                 f"satisfies both ({a.text!r}; {b.text!r}).", param="claims")


def _overlap_groups(a: str | tuple[str, ...], b: str | tuple[str, ...]) -> bool:
    if a == b:
        return True
    if "all" in (a, b):
        return False
    return a == "each" or b == "each" or bool(set(a) & set(b))


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (UTF-8).", param="claims") from None
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror}).", param="claims") from None


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


__all__ = ["CURVE_METRICS", "Claim", "Claims", "DEFAULT_LEVEL", "METRICS", "parse_claims", "read_claims"]
