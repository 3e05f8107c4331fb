"""Exact per-group performance and fairness of one :class:`MatchData` (no resampling).

``evaluate`` makes one pass over the comparisons (``build_tally``), collecting on the way the impostors of the
cells that the FMR targets' thresholds will fall into (predicted from a sample of rows:
:mod:`matchaudit.metrics.windows`) and of the fixed thresholds' cells; a second selective pass (``refine``) only
for a cell the prediction missed (or data too small to predict for); then reads every number off the tally. The
result is a set of tidy tables (lists of flat records) — the same records go to ``results.json`` and CSV.

Per group ``a``: genuine comparisons of identities in ``a``; impostor comparisons with both identities in
``a``. The threshold is global: set from the FMR of ``threshold_impostors`` — ``"all"`` impostor comparisons,
only ``"same-group"`` ones (NIST's demographic practice), or those sharing some grouping attributes
(``"same:sex,age"``, :mod:`matchaudit.pairings`) — and recorded in every record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

import numpy as np

from matchaudit import checks
from matchaudit.cells import cell_of
from matchaudit.definitions import Rule, ThresholdImpostors
from matchaudit.engine.driver import hold_target_thresholds
from matchaudit.errors import InputError
from matchaudit.metrics import fairness
from matchaudit.metrics.cross_groups import cross_group_counts
from matchaudit.metrics.rates import EER_METHODS, EerMethod, Rate, Rates, View, Weighting, safe_ratio
from matchaudit.metrics.small_groups import SmallGroupRule, excluded_groups, too_few_left
from matchaudit.metrics.tally import Tally, build_tally, refine
from matchaudit.metrics.windows import predicted_cells
from matchaudit.model import ALL, MatchData, view_names
from matchaudit.pairings import PairCategories, check_spec, reference_pairs

FVC_ALIASES = {1e-2: "FMR100", 1e-3: "FMR1000", 1e-4: "FMR10000", 0.0: "ZeroFMR"}
"""FVC-style names of FNMR at an FMR target (FMR100 = FNMR at FMR 1%)."""


FmrThreshold = Literal["lowest-score", "bob"]
FMR_THRESHOLDS = ("lowest-score", "bob")
THRESHOLD_WORDS = {
    "lowest-score": "lowest observed score (or +inf) whose FMR over the threshold impostors is <= target",
    "bob": "bob.measure far_threshold: the lowest impostor score whose FMR is <= target (just above the highest "
           "impostor score when none is)",
}
"""The threshold at an FMR target, by ``fmr_threshold``: the same FMR; bob's FNMR is never lower (the genuine
scores from the lowest observed score up to the next impostor score are rejected; docs/conventions.md)."""
EER_WORDS = {
    "rocch": "ROC convex hull (ROCCH-EER): where the hull of the (FMR, FNMR) points meets FMR = FNMR",
    "interpolated": "NIST SRE'16 scorer: linear interpolation between the ROC points either side of FMR = FNMR",
    "closest": "speechbrain: the mean of FMR and FNMR at the operating point where they are closest",
    "fvc2000": "pyeer (FVC2000): of the two points either side of FMR = FNMR, the mean of the rates at the one with "
               "the smaller FMR + FNMR",
}


_WORDS = ("eer_definition", "threshold_definition", "fnmr_threshold_definition")  # to_dict's, not fields


@dataclass(frozen=True)
class AuditConfig:
    """What to compute. Every field is recorded in the results."""

    fmr_targets: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4)
    thresholds: tuple[float, ...] = ()
    fnmr_targets: tuple[float, ...] = ()
    rule: Rule = ">="
    weightings: tuple[Weighting, ...] = ("pooled", "balanced")
    threshold_impostors: ThresholdImpostors = "all"
    dcf_p_target: float = 0.01
    dcf_c_miss: float = 1.0
    dcf_c_fa: float = 1.0
    zero_policy: fairness.ZeroPolicy = "report"
    zero_policy_level: float = 0.95
    fdr_weight: float = 0.5
    ir_exponents: tuple[float, float] = (1.0, 1.0)
    garbe_weight: float = 0.5
    small_groups: SmallGroupRule = SmallGroupRule()  # flags summary groups ``small`` (always; no number changes)
    exclude_small_groups: bool = False  # fairness measures over the groups that are not small only
    eer_method: EerMethod = "rocch"  # or "interpolated", the SRE'16 scorer's (:meth:`Rates.eer`)
    fmr_threshold: FmrThreshold = "lowest-score"  # or "bob": bob.measure's far_threshold (:data:`THRESHOLD_WORDS`)

    def __post_init__(self) -> None:
        """Validate and normalise every field (sequences to tuples of floats), whoever builds the config."""
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        put("fmr_targets", checks.numbers(self.fmr_targets, "fmr", low=0.0, high=1.0, high_open=True))
        put("thresholds", checks.numbers(self.thresholds, "thresholds", finite=False))
        put("fnmr_targets", checks.numbers(self.fnmr_targets, "fnmr", low=0.0, high=1.0, high_open=True))
        checks.choice(self.rule, Rule, "rule")
        checks.choice(self.eer_method, EER_METHODS, "eer")
        checks.choice(self.fmr_threshold, FMR_THRESHOLDS, "fmr_threshold")
        if self.fmr_threshold == "bob" and (self.rule != ">=" or self.threshold_impostors != "all"):
            bad = "rule" if self.rule != ">=" else "threshold_impostors"
            raise InputError(f"fmr_threshold 'bob' reproduces bob.measure's far_threshold, which accepts iff score >= "
                             "threshold and sets it on every impostor score: it goes with rule '>=' and "
                             "threshold_impostors 'all'.", param=bad)
        weightings = (self.weightings,) if isinstance(self.weightings, str) else checks.sequence(self.weightings,
                                                                                                "weightings")
        for w in weightings:
            checks.choice(w, Weighting, "weightings")
        if not weightings or len(set(weightings)) < len(weightings):
            raise InputError(f"weightings {list(weightings)}: give pooled and/or balanced, each once.",
                             param="weightings")
        put("weightings", weightings)
        check_spec(self.threshold_impostors)
        put("dcf_p_target", checks.probability(self.dcf_p_target, "dcf_p_target"))
        put("dcf_c_miss", checks.number(self.dcf_c_miss, "dcf_c_miss", low=0.0, low_open=True))
        put("dcf_c_fa", checks.number(self.dcf_c_fa, "dcf_c_fa", low=0.0, low_open=True))
        checks.choice(self.zero_policy, fairness.ZeroPolicy, "zero_policy")
        put("zero_policy_level", checks.probability(self.zero_policy_level, "zero_policy_level"))
        put("fdr_weight", checks.number(self.fdr_weight, "fdr_weight", low=0.0, high=1.0))
        put("garbe_weight", checks.number(self.garbe_weight, "garbe_weight", low=0.0, high=1.0))
        exps = tuple(self.ir_exponents)
        if len(exps) != 2:
            raise InputError(f"ir_exponents {exps}: give two exponents (FMR, FNMR).", param="ir_exponents")
        put("ir_exponents", tuple(checks.number(e, "ir_exponents", low=0.0) for e in exps))
        if not isinstance(self.small_groups, SmallGroupRule):
            raise InputError(f"small_groups {self.small_groups!r}: give a SmallGroupRule.", param="small_groups")
        if not isinstance(self.exclude_small_groups, (bool, np.bool_)):
            raise InputError(f"exclude_small_groups {self.exclude_small_groups!r}: give True or False.",
                             param="exclude_small_groups")
        put("exclude_small_groups", bool(self.exclude_small_groups))

    def to_dict(self) -> dict[str, Any]:
        """Every field, and the definitions in words (what results.json records; :meth:`from_dict` reads it)."""
        d = dict(self.__dict__)
        d["small_groups"] = self.small_groups.to_dict()
        d["eer_definition"] = EER_WORDS[self.eer_method]
        d["threshold_definition"] = THRESHOLD_WORDS[self.fmr_threshold]
        d["fnmr_threshold_definition"] = ("highest observed score (or -inf) whose FNMR over all genuine comparisons "
                                          "is <= target")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditConfig:
        """The config :meth:`to_dict` wrote (its words left out; validated as any config is); a KeyError or
        TypeError when a field is missing or unknown."""
        fields = {k: v for k, v in d.items() if k not in _WORDS}
        return cls(**{**fields, "small_groups": SmallGroupRule.from_dict(fields["small_groups"]),
                      "ir_exponents": tuple(fields["ir_exponents"])})


@dataclass
class AuditResult:
    """Tidy tables of one evaluation; ``to_dict()`` is what ``results.json`` holds."""

    config: AuditConfig
    summary: dict[str, Any]
    operating_points: list[dict[str, Any]] = field(default_factory=list)
    curve_summaries: list[dict[str, Any]] = field(default_factory=list)
    cross_group_fmr: list[dict[str, Any]] = field(default_factory=list)
    fairness: list[dict[str, Any]] = field(default_factory=list)
    det: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "summary": self.summary,
            "operating_points": self.operating_points,
            "curve_summaries": self.curve_summaries,
            "cross_group_fmr": self.cross_group_fmr,
            "fairness": self.fairness,
        }

    def __repr__(self) -> str:
        rows = [r for r in self.operating_points if r["group"] == ALL and r["weighting"] == self.config.weightings[0]]
        lines = [f"AuditResult({self.summary['protocol']}, {self.summary['n_comparisons']:,} comparisons, "
                 f"{len(self.summary['groups'])} groups, rule accept iff s {self.config.rule} t)"]
        for r in rows:
            lines.append(f"  {r['kind']}={r['target']:g}: threshold {r['threshold']:.6g}, "
                         f"FMR {r['fmr']:.3g} ({r['fmr_errors']}/{r['fmr_comparisons']}), "
                         f"FNMR {r['fnmr']:.3g} ({r['fnmr_errors']}/{r['fnmr_comparisons']})")
        return "\n".join(lines)


def group_view(cats: PairCategories, g: int, weighting: Weighting) -> View:
    """Genuine comparisons of group ``g`` and its same-group impostors."""
    gen = np.zeros(cats.n_groups, bool)
    gen[g] = True
    cat = np.zeros(cats.n, bool)
    cat[cats.slot[g, g]] = True
    return View(gen, cat, weighting)


CrossRate = Callable[[int, int, float, Weighting], "Rate | None"]


def _cross_group(data: MatchData, tally: Tally, rule: Rule, thresholds: list[float]) -> CrossRate:
    """FMR of the impostors between groups a <= b at one of ``thresholds`` (None without such impostors): from the
    tally when it counts every group pair, else from one pass of :func:`cross_group_counts` at the thresholds."""
    cats = tally.categories
    if not cats.pooled:
        views: dict[tuple[int, Weighting], Rates] = {}

        def from_tally(a: int, b: int, t: float, w: Weighting) -> Rate | None:
            c = cats.slot[a, b]
            if not tally.n_impostors[c]:
                return None
            if (c, w) not in views:  # one view per pair and weighting, queried at every threshold
                views[c, w] = Rates(tally, View(np.zeros(cats.n_groups, bool), np.arange(cats.n) == c, w))
            return views[c, w].fmr(t, rule)
        return from_tally
    cc = cross_group_counts(data, thresholds, rule)
    index = {t: i for i, t in reversed(list(enumerate(cc.thresholds.tolist())))}

    def from_pass(a: int, b: int, t: float, w: Weighting) -> Rate | None:
        c, i = cc.categories.slot[a, b], index[t]
        if not cc.comparisons[c]:
            return None
        value = safe_ratio(cc.accepted_weight[i, c], cc.units[c]) if w == "balanced" else safe_ratio(cc.accepted[i, c],
                                                                                          cc.comparisons[c])
        return Rate(float(value), int(cc.accepted[i, c]), int(cc.comparisons[c]))
    return from_pass


def _summary(data: MatchData, tally: Tally, rule: SmallGroupRule) -> dict[str, Any]:
    """Counts of the data and of each group, each group flagged ``small`` by ``rule`` with its ``small_reasons``."""
    g_count = data.n_groups
    same = tally.n_impostors[np.diag(tally.categories.slot)]
    gen = np.bincount(tally.genuine.group, minlength=g_count)
    ident = np.bincount(data.identity_group, minlength=g_count)
    sizes = data.identity_sizes
    groups = []
    for g, name in enumerate(data.group_names):
        row = {"group": name, "identities": int(ident[g]), "genuine_comparisons": int(gen[g]),
               "impostor_comparisons_same_group": int(same[g])}
        if data.samples is not None:
            row["samples"] = int(sizes[data.identity_group == g].sum())
        reasons = rule.reasons(row["identities"] if data.has_identities else None, row["genuine_comparisons"],
                               row["impostor_comparisons_same_group"])
        row.update(small=bool(reasons), small_reasons=reasons)
        groups.append(row)
    fp = data.fingerprint()
    return {
        "protocol": data.protocol,
        "score_kind": data.score_kind,
        "group_by": list(data.group_by),
        "n_samples": fp["n_samples"],
        "n_identities": fp["n_identities"],
        "n_comparisons": int(gen.sum() + tally.n_impostors.sum()),
        "n_genuine": int(gen.sum()),
        "n_impostor": int(tally.n_impostors.sum()),
        "groups": groups,
        "warnings": list(data.warnings),
        "data": fp,  # what another output of the same data records too (the report checks a compare.json by it)
    }


def evaluate(data: MatchData, config: AuditConfig = AuditConfig(), also_fmr: Sequence[float] = ()) -> AuditResult:
    """Exact operating points, curve summaries, cross-group FMR and fairness measures (see module doc).
    ``also_fmr``: FMR targets whose pooled plug-in thresholds a later step asks for (the group tests' twice and half
    of each target): found in the same passes and held for :func:`matchaudit.engine.target_thresholds` (inside
    :func:`matchaudit.scores.tile_cache`), which then makes no pass of its own."""
    weightings = [w for w in config.weightings if w == "pooled" or data.has_identities]
    gen_all = np.ones(data.n_groups, bool)
    reference = reference_pairs(config.threshold_impostors, data.group_names, data.group_by)
    tally = build_tally(data, reference=reference, collect=lambda edges: predicted_cells(
        data, edges, config.fmr_targets, reference, weightings, config.thresholds, also_fmr))
    thr_cats = tally.categories.reference
    result = AuditResult(config, _summary(data, tally, config.small_groups))
    if len(weightings) < len(config.weightings):
        result.summary["warnings"].append("identity-balanced weighting skipped: the input has no identities")
    g_count = data.n_groups

    # cells that need the exact impostors: FMR targets (per weighting) and fixed thresholds off the edges
    overall = {w: Rates(tally, View(gen_all, thr_cats, w)) for w in weightings}
    cells = [r.target_cell(a, config.rule) for r in overall.values() for a in config.fmr_targets]
    cells += [int(cell_of(tally.edges, t)) for t in config.thresholds if np.isfinite(t)]
    cells += [c for r in overall.values() for b in config.fnmr_targets
              if (c := r.target_cell_fnmr(b, config.rule)) is not None]
    if len(also_fmr):
        pooled = overall.get("pooled") or Rates(tally, View(gen_all, thr_cats, "pooled"))
        cells += [pooled.target_cell(a, config.rule) for a in also_fmr]
    tally = refine(tally, data, np.array(cells, dtype=np.int64))

    global_rates = {w: Rates(tally, View(gen_all, thr_cats, w)) for w in weightings}
    if len(also_fmr):  # the same pooled rates as the audit's own thresholds (built again only without them)
        pooled = global_rates.get("pooled") or Rates(tally, View(gen_all, thr_cats, "pooled"))
        hold_target_thresholds(data, also_fmr, [pooled.threshold_at_fmr(a, config.rule) for a in also_fmr],
                               config.rule, config.threshold_impostors)
    at_fmr = {w: [r.threshold_at_fmr(a, config.rule) for a in config.fmr_targets] for w, r in global_rates.items()}
    if config.fmr_threshold == "bob":  # the lowest impostor score at or above each (one more pass over the cells)
        tally = refine(tally, data, np.array([c for w, r in global_rates.items() for t in at_fmr[w]
                                              for c in r.impostor_cells_from(t)], dtype=np.int64))
        global_rates = {w: Rates(tally, View(gen_all, thr_cats, w)) for w in weightings}
        at_fmr = {w: [r.lowest_impostor_from(t) for t in at_fmr[w]] for w, r in global_rates.items()}
    points = {w: [("fmr_target", a, t) for a, t in zip(config.fmr_targets, at_fmr[w])]
              + [("fnmr_target", b, r.threshold_at_fnmr(b, config.rule)) for b in config.fnmr_targets]
              + [("threshold", t, float(t)) for t in config.thresholds] for w, r in global_rates.items()}
    cross = _cross_group(data, tally, config.rule, [t for p in points.values() for *_, t in p])
    for w in weightings:
        # the impostors whose FMR sets the global threshold (as ``below_resolution``; the regime check reads it)
        result.summary.setdefault("threshold_impostor_comparisons", global_rates[w].n_impostor)
        per_group = [Rates(tally, group_view(tally.categories, g, w)) for g in range(g_count)]
        for kind, target, t in points[w]:
            _operating_point(result, config, w, kind, target, t, global_rates[w], per_group, data, cross)
        if config.eer_method in ("closest", "fvc2000"):  # the impostor steps where each view's FMR - FNMR turns
            turn = "<" if config.eer_method == "closest" else "<="
            cells = [c for r in [global_rates[w], *per_group] if (c := r.closest_cell(turn)) is not None]
            tally = refine(tally, data, np.array(cells, dtype=np.int64))
            global_rates[w] = Rates(tally, View(gen_all, thr_cats, w))
            per_group = [Rates(tally, group_view(tally.categories, g, w)) for g in range(g_count)]
        costs = (config.dcf_p_target, config.dcf_c_miss, config.dcf_c_fa)
        global_t = global_rates[w].min_dcf(*costs)[1]
        for name, r in zip(view_names(data.group_names), [global_rates[w]] + per_group):
            dcf, dcf_t = r.min_dcf(*costs)
            result.curve_summaries.append({
                "weighting": w, "group": name, "rule": config.rule, "auc": r.auc(), "eer": r.eer(config.eer_method),
                "eer_method": config.eer_method,
                "min_dcf": dcf, "min_dcf_threshold": dcf_t,
                # a group's minDCF takes its own best threshold (optimistic for a small group); this is what it
                # pays at the threshold minimising the overall cost
                "dcf_at_global_threshold": r.dcf_at(global_t, *costs), "dcf_p_target": config.dcf_p_target,
                "dcf_c_miss": config.dcf_c_miss, "dcf_c_fa": config.dcf_c_fa,
                "genuine_comparisons": r.n_genuine, "impostor_comparisons": r.n_impostor,
            })
            t, fmr, fnmr = r.vertices()
            result.det.append({"weighting": w, "group": name, "threshold": t, "fmr": fmr, "fnmr": fnmr})
    return result


def _operating_point(result: AuditResult, config: AuditConfig, w: Weighting, kind: str, target: float, t: float,
                     global_rates: Rates, per_group: list[Rates], data: MatchData, cross: CrossRate) -> None:
    base = {"weighting": w, "kind": kind, "target": target, "threshold": t, "rule": config.rule,
            "threshold_impostors": config.threshold_impostors,
            "alias": FVC_ALIASES.get(target) if kind == "fmr_target" else None}
    n_thr = global_rates.n_impostor
    below = bool(kind == "fmr_target" and target * n_thr < 1)
    for name, r in zip(view_names(data.group_names), [global_rates] + per_group):
        fm, fn = r.fmr(t, config.rule), r.fnmr(t, config.rule)
        result.operating_points.append({
            **base, "group": name, "fmr": fm.value, "fmr_errors": fm.errors, "fmr_comparisons": fm.comparisons,
            "fnmr": fn.value, "fnmr_errors": fn.errors, "fnmr_comparisons": fn.comparisons,
            "below_resolution": below,
        })
    g_count = data.n_groups
    for a in range(g_count):
        for b in range(a, g_count):
            fm = cross(a, b, t, w)
            result.cross_group_fmr.append({
                **base, "group_a": data.group_names[a], "group_b": data.group_names[b],
                "fmr": None if fm is None else fm.value, "errors": 0 if fm is None else fm.errors,
                "comparisons": 0 if fm is None else fm.comparisons,
            })
    if g_count < 2:
        return
    # the across-group measures: over the groups that are not small when the config excludes small groups
    excluded = excluded_groups(result.summary["groups"], config.exclude_small_groups)
    keep = [g for g, name in enumerate(data.group_names) if name not in excluded]
    names = [data.group_names[g] for g in keep]
    scope = {"excluded_groups": excluded,
             "exclusion_rule": config.small_groups.describe() if config.exclude_small_groups else None}
    rates = {"FMR": np.array([per_group[g].fmr(t, config.rule) for g in keep], dtype=object),
             "FNMR": np.array([per_group[g].fnmr(t, config.rule) for g in keep], dtype=object)}
    if len(keep) < 2:  # every group but one (or all) excluded: nothing to compare
        why = too_few_left(len(keep), excluded, config.small_groups)
        for which, measures in (("FMR", fairness.MEASURES), ("FNMR", fairness.MEASURES),
                                ("combined", fairness.COMBINED)):
            for measure in measures:
                result.fairness.append({**base, "rate": which, "measure": measure, "value": float("nan"),
                                        "reason": why, "adjusted_groups": [], "zero_policy": config.zero_policy,
                                        **scope})
        return
    adjusted_values = {}
    for which, rs in rates.items():
        values = np.array([x.value for x in rs])
        n = np.array([x.comparisons for x in rs])
        values, adjusted = fairness.apply_zero_policy(values, n, config.zero_policy, config.zero_policy_level)
        adjusted_values[which] = values
        reason = fairness.zero_rate_reason(values, names)
        for measure, value in fairness.summary_measures(values).items():
            result.fairness.append({
                **base, "rate": which, "measure": measure, "value": float(value),
                "reason": reason if not np.isfinite(value) else None,
                "adjusted_groups": [g for g, m in zip(names, adjusted) if m],
                "zero_policy": config.zero_policy, **scope,
            })
    combined = fairness.combined_measures(adjusted_values["FMR"], adjusted_values["FNMR"],
                                          fdr_weight=config.fdr_weight, ir_exponents=config.ir_exponents,
                                          garbe_weight=config.garbe_weight)
    for measure, value in combined.items():
        result.fairness.append({**base, "rate": "combined", "measure": measure, "value": float(value),
                                "reason": None if np.isfinite(value) else "undefined with zero rates",
                                "adjusted_groups": [], "zero_policy": config.zero_policy, **scope})
