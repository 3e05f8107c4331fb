"""One self-contained HTML report (no network needed to open it) of an :class:`~matchaudit.auditing.core.Audit`,
in memory (``matchaudit audit --report``, the demo) or loaded from its folder (``matchaudit report``): the same page.

Presentation only: every number comes from the audit's document (:meth:`Audit.document`, numbers as numbers);
figures are read from the results folder (written by the audit) and embedded as base64 PNG. Sections appear when their results exist (intervals, group tests,
model comparison, label-free estimates), each with a plain-language reading.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from matchaudit.auditing.core import Audit
from matchaudit.metrics.cross_groups import (LOW_COUNT_RULE, aggregate_cross_group, heatmap_options, low_count,
                                             low_count_limit)
from matchaudit.pairings import describe
from matchaudit.formatting import fmt, interval, operating_point, threshold, value as _num, with_counts as rate_with_counts
from matchaudit.plots.figures import TEXT_MAX_GROUPS, label_key, order_groups, plot_cross_group
from matchaudit.choices import SCOPE
from matchaudit.plots.det import BANDS_MAX
from matchaudit.report.claims_section import claims_section
from matchaudit.report.conditions_section import conditions_section
from matchaudit.report.evaluator_sections import attacks, calibration, distributions, failures, portability
from matchaudit.report.markup import esc, figure, pct, table
from matchaudit.report.verdicts import equivalence_section, interval_lookup, reading, tests_section
from matchaudit.outputs import check_report, staged
from matchaudit.report.results import load_section, section_mismatch

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,"Noto Sans","Noto Sans CJK SC","PingFang SC",
"Hiragino Sans","Microsoft YaHei","Malgun Gothic",sans-serif;max-width:1100px;margin:2em auto;color:#222;
line-height:1.45;padding:0 1em}.scroll{overflow-x:auto;max-width:100%}pre{white-space:pre-wrap;word-break:break-all}
@media (max-width:600px){body{margin:1em auto;padding:0 .5em}table{font-size:.8em}}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ddd;padding:.25em .6em;
text-align:right}th{background:#f4f4f4}td.l,th.l{text-align:left}td.l{overflow-wrap:anywhere;max-width:24em}.reading{background:#f5f9ff;border-left:4px solid
#5b8def;padding:.5em 1em;margin:.8em 0}.warn{background:#fff8e6;border-left:4px solid #e0a800;padding:.4em 1em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
code,pre{background:#f4f4f4;padding:.1em .3em;font-size:.9em}.muted{color:#777;font-size:.9em}
"""


EER_LABEL = {"rocch": "ROCCH", "interpolated": "interpolated, SRE'16", "closest": "closest, speechbrain",
             "fvc2000": "FVC2000, pyeer"}
"""The EER column's definition by ``eer_method`` (results.json config; docs/conventions.md)."""


def _summary(res: dict, folder: Path) -> str:
    s = res["summary"]
    rows = [[esc(g["group"]), f"{g.get('samples', '—'):,}" if isinstance(g.get("samples"), int) else "—",
             f"{g['identities']:,}", f"{g['genuine_comparisons']:,}", f"{g['impostor_comparisons_same_group']:,}"]
            for g in s["groups"]]
    warn = "".join(f"<p class='warn'>{esc(w)}</p>" for w in s["warnings"])
    cfg = res["config"]
    return (
        "<h2>Data</h2>"
        f"<p>Protocol <b>{esc(s['protocol'])}</b>, scores: {esc(s['score_kind'])}; "
        f"{s['n_identities']:,} identities, {s['n_genuine']:,} genuine and {s['n_impostor']:,} impostor comparisons"
        f"{' (groups by ' + ', '.join(map(esc, s['group_by'])) + ')' if s['group_by'] else ''}. "
        f"Decision rule: accept iff score {esc(cfg['rule'])} threshold. Global thresholds set by "
        f"<b>{esc(describe(cfg['threshold_impostors']))}</b>.</p>" + _questions(res)
        + table(["group", "samples", "identities", "genuine", "same-group impostor"], rows) + warn
    )


def _questions(res: dict) -> str:
    """The question each kind of number on the page answers, in one sentence (#43: the defaults answer two, side by
    side): from the records' methods (:data:`matchaudit.choices.SCOPE`)."""
    kinds = (("rates at the FMR targets", lambda r: ":" not in r["metric"] and r["kind"] == "fmr_target"),
             ("rates at fixed thresholds", lambda r: ":" not in r["metric"] and r["kind"] == "threshold"),
             ("curves (DET, AUC, EER)", lambda r: r["kind"] == "curve"),
             ("fairness measures", lambda r: ":" in r["metric"]))
    recs = [r for r in res.get("intervals", []) if r.get("weighting", "pooled") == "pooled"]
    parts = []
    for name, pick in kinds:
        methods = list(dict.fromkeys(r["method"] for r in recs if pick(r)))
        if methods:
            parts.append(f"{name}: {'; '.join(f'{SCOPE.get(m, m)} ({m})' for m in methods)}")
    if res.get("tests"):
        parts.append("group tests: a new population of identities (identities relabelled between groups)")
    if not parts:
        return ""
    scopes = {SCOPE.get(r["method"], r["method"]) for r in recs} | ({SCOPE["double-or-nothing"]} if res.get("tests")
                                                                    else set())
    if len(scopes) == 1:  # the defaults: one question for every number (#43 item 4)
        (scope,) = scopes
        return (f"<p><b>The question every interval and test on this page answers: {esc(scope)}</b> — "
                f"{'other people like these' if scope == SCOPE['double-or-nothing'] else 'other samples of the same people'}"
                f" ({esc(', '.join(parts))}).</p>")
    return (f"<p>The question each number answers — {esc(', '.join(parts))}. <i>These identities</i>: other "
            "samples of the same people; <i>a new population</i>: other people like these.</p>")


def _key(names: list[str]) -> str:
    """The caption's key to the short labels a figure used for names its fonts cannot draw."""
    key = label_key(names)
    return f" Labels: {key}." if key else ""


def _det(res: dict, folder: Path) -> str:
    views = list(dict.fromkeys(["all"] + [g["group"] for g in res["summary"]["groups"]]))
    key = _key(views)
    banded = {r.get("weighting") for r in res.get("intervals", [])} if len(views) > BANDS_MAX else set()
    shaded = f" Shaded: the interval band of all only (bands of {len(views)} curves would overlap)."
    figs = "".join(figure(folder / f"det_{w}.png", f"DET per group, {w} weighting (dots: FMR targets; x: EER)."
                          f"{shaded if w in banded else ''}{key}") for w in res["config"]["weightings"])
    rows = [[esc(c["group"]), esc(c["weighting"]), pct(c["eer"]), fmt(c["auc"], digits=5), fmt(c["min_dcf"]),
             fmt(c.get("dcf_at_global_threshold"))] for c in res["curve_summaries"]]
    cfg = res["config"]
    by_threshold = "".join(figure(folder / f"thresholds_{w}.png", f"FMR (dashed) and FNMR (solid) of each group "
                                  f"against the threshold, {w} weighting; dotted lines: the thresholds at the FMR "
                                  f"targets.{key}") for w in res["config"]["weightings"][:1])
    return ("<h2>DET curves</h2>" + figs
            + table(["group", "weighting", f"EER ({EER_LABEL.get(cfg.get('eer_method', 'rocch'), 'ROCCH')})", "AUC", f"minDCF (P_tar={cfg['dcf_p_target']})",
                     "DCF at the overall minDCF threshold"], rows, 2)
            + "<p class='muted'>A group's minDCF is taken at that group's own best threshold, chosen on its own "
              "scores: optimistic, the more so the fewer its comparisons (a small group can show a minDCF below the "
              "overall one while its EER is higher). The last column is what each group pays at the one threshold "
              "that minimises the overall cost, as a deployed system would.</p>"
            + ("<h3>Error rates against the threshold</h3><p>Where each group's FMR and FNMR sit at one threshold: a "
               "group whose curves lie right of the others needs a higher threshold for the same rate (NIST report "
               "card view).</p>" + by_threshold if by_threshold else ""))


def _span(r: dict) -> str:
    """An interval; marked † with its reason when the audit calls it indicative (``indicative``, ``method_reason``)."""
    mark = f" <span class='warn' title='{esc(r.get('method_reason', ''))}'>†</span>" if r.get("indicative") else ""
    if math.isnan(_num(r["low"])) or math.isnan(_num(r["high"])):
        return f"<span title='{esc(r.get('note') or '')}'>undefined</span>{mark}"
    tight = r.get("bound_if_pairs_independent")
    if tight is not None:  # zero false matches: an upper bound only (M8: "[0%, 33.3%]" read as a rate that could
        # exceed another group's), then the tighter one under its assumption
        return (f"≤ {pct(r['high'], 2)} <span class='muted'>(none seen; assumption-free)</span>{mark} "
                f"<span class='muted' title='{esc('if ' + r.get('bound_assumption', ''))}'>(≤ {pct(tight, 2)} if "
                "identity pairs are independent‡)</span>")
    return f"{interval(r['low'], r['high'], 'rate')}{mark}"


def _operating(res: dict, folder: Path) -> str:
    ivs = interval_lookup(res)
    methods = sorted({r["method"] for r in res.get("intervals", [])
                      if (r.get("metric"), r.get("kind")) in (("FNMR", "fmr_target"), ("FNMR", "threshold"),
                                                              ("FMR", "fnmr_target"))})
    level = next((r.get("level") for r in res.get("intervals", [])), None)
    parts = ["<h2>Operating points</h2>"]
    if methods:
        parts.append(f"<p>Intervals at {pct(level, 4)} by method, side by side, of the rate each point leaves free: "
                     "FNMR at FMR targets and thresholds, FMR at FNMR targets, and at FMR targets each group's FMR at "
                     "the global threshold too (each replicate re-derives its own threshold; see the reproducibility "
                     "block for replicates and seed).</p>" + _scopes(methods))
    for w in res["config"]["weightings"]:
        rows = []
        for p in res["operating_points"]:
            if p["weighting"] != w:
                continue
            label = operating_point(p["kind"], p["target"])
            if p.get("alias"):
                label += f" ({p['alias']})"
            if p["below_resolution"]:
                label += " ⚠ below resolution"
            row = [esc(label), esc(p["group"]), threshold(p["threshold"]),
                   rate_with_counts(p["fmr"], p["fmr_errors"], p["fmr_comparisons"], p["weighting"]),
                   rate_with_counts(p["fnmr"], p["fnmr_errors"], p["fnmr_comparisons"], p["weighting"])]
            free = "FMR" if p["kind"] == "fnmr_target" else "FNMR"
            # at an FMR target the groups' FMR at the global threshold varies too: its interval under the free rate's
            rates = (free, "FMR") if p["kind"] == "fmr_target" else (free,)
            for m in methods:
                cell = [f"{rate} {_span(iv[0])}" for rate in rates
                        if (iv := [r for r in ivs.get((w, p["group"], rate, p["kind"], p["target"]), [])
                                   if r["method"] == m])]
                row.append("<br>".join(cell) or "—")
            rows.append(row)
        if not rows:  # a weighting the audit skipped (identity-balanced without identities: the warnings say why)
            continue
        head = ["operating point", "group", "threshold", "FMR (k/n)", "FNMR (k/n)"] + [f"interval, {m}" for m in methods]
        parts.append(f"<h3>{esc(w)} weighting</h3>" + table(head, rows, 2))
    if any("†" in part for part in parts):
        parts.append("<p class='muted'>† indicative: the regime grid (docs/intervals.md) does not validate this "
                     "interval here (few errors, few identities, or a new population's FNMR); hover for the reason, "
                     "or read <code>method_reason</code> in results.json.</p>")
    if any("‡" in part for part in parts):
        parts.append("<p class='muted'>‡ No false match observed: the interval's upper end holds whatever the "
                     "dependence between comparisons (floor(K/2) disjoint identity pairs); the smaller bound beside "
                     "it assumes the K(K-1)/2 identity pairs independent, which they are not exactly (they share "
                     "identities).</p>")
    return "".join(parts)


def _scopes(methods: Sequence[str]) -> str:
    """Which question each interval method answers (:data:`matchaudit.choices.SCOPE`), and why two groups' intervals
    can be apart while the identity-level test calls their gap noise."""
    scopes = {m: SCOPE.get(m) for m in methods}
    said = "; ".join(f"<b>{esc(m)}</b>: {esc(q)}" for m, q in scopes.items() if q)
    text = f"<p>The question each interval answers — {said}.</p>" if said else ""
    if SCOPE["recentered"] in scopes.values():
        text += ("<p class='muted'>An interval for <i>these identities</i> holds the people fixed and redraws their "
                 "samples: it says how much the rate would move with other images or recordings of the same people. "
                 "The group tests (and the identity-level intervals) ask whether the gap would persist with other "
                 "people of each group, which for a group of few identities is much less certain; so two groups' "
                 "<i>these identities</i> intervals can be apart while the test finds the gap indistinguishable from "
                 "noise. Between groups, read the test, or intervals for a new population: the fairness measures' "
                 "default (double-or-nothing), or any interval with <code>--ci-method double-or-nothing</code>.</p>")
    return text


def _uncertainty(res: dict, folder: Path) -> str:
    """Normalized uncertainty (the similarity-scoring paper's eq. 11): bootstrap SD relative to the estimate."""
    rows = [r for r in res.get("intervals", []) if r.get("normalized_uncertainty") is not None
            and r.get("kind") == "fmr_target" and r.get("weighting", "pooled") == "pooled"]
    if not rows:
        return ""
    targets = sorted({r["target"] for r in rows}, reverse=True)
    keys = list(dict.fromkeys((r["metric"], r["group"]) for r in rows))
    rows_ = []
    for metric, group in keys:
        cells = []
        for t in targets:
            r = next((x for x in rows if x["metric"] == metric and x["group"] == group and x["target"] == t), None)
            v = None if r is None else _num(r["normalized_uncertainty"])
            cells.append("—" if v is None or not math.isfinite(v) else fmt(v, digits=2))
        rows_.append([esc(metric), esc(group)] + cells)
    return ("<h2>Normalized uncertainty</h2><p>Bootstrap standard deviation divided by the estimate (eq. 11 of the "
            "similarity-scoring paper): how much of a number is noise. Above about 0.5, the estimate is mostly "
            "noise at this data size.</p>" + table(["metric", "group"] + [f"FMR {t:g}" for t in targets], rows_, 2))


HEATMAP_TOP = 5
"""Rows of the table of the highest off-diagonal cells under the cross-group heat map."""


def _cross(res: dict, folder: Path) -> str:
    """The cross-group FMR heat map at the middle FMR target, its options (``res["_heatmap"]``: ordering, coarser
    groups; :func:`heatmap_options`) and the low-count rule stated in the text, with the highest off-diagonal cells
    in a table (at many groups nobody reads values off colours)."""
    opts = res.get("_heatmap") or heatmap_options(res["summary"]["group_by"])
    group_by = list(res["summary"]["group_by"])
    weightings = res["config"]["weightings"]
    weighting, attrs, notes = weightings[0], opts.get("aggregate"), []
    if attrs and weighting != "pooled":
        if "pooled" in weightings:
            weighting = "pooled"
        else:
            notes.append(f"Not aggregated to {', '.join(map(esc, attrs))}: pooling cells needs the pooled "
                         "weighting, and this audit has the identity-balanced one only.")
            attrs = None
    recs = [r for r in res["cross_group_fmr"] if r["weighting"] == weighting]
    if len({r["group_a"] for r in recs}) < 2:
        return ""
    targets = sorted({r["target"] for r in recs if r["kind"] == "fmr_target"})
    if not targets:
        return ""
    target = targets[len(targets) // 2]
    recs = [r for r in recs if r["kind"] == "fmr_target" and r["target"] == target]
    shown_by = group_by
    if attrs:
        recs, shown_by = aggregate_cross_group(recs, group_by, attrs), attrs
        notes.append(f"Groups aggregated to <b>{esc(', '.join(attrs))}</b>: each cell pools the impostor "
                     f"comparisons of its {esc(', '.join(group_by))} cells (FMR = false matches / comparisons summed "
                     "over them; pooled weighting, since identity-balanced rates cannot be pooled from the cells; "
                     "no intervals).")
    order = opts.get("order") or (shown_by[0] if shown_by else None)
    if order is not None and order not in shown_by:
        notes.append(f"Not ordered by {esc(order)}: the groups are aggregated to {esc(', '.join(shown_by))}.")
        order = shown_by[0]
    groups = list(dict.fromkeys(g for r in recs for g in (r["group_a"], r["group_b"])))
    ordered, blocks = order_groups(groups, shown_by, order)
    if len(shown_by) > 1 and any(end - start > 1 for _, start, end in blocks):
        others = [a for a in shown_by if a != order]
        notes.append(f"Groups ordered by <b>{esc(order)}</b>, then {esc(', '.join(others))}; lines separate the "
                     f"{esc(order)} values, named on the top and right edges.")
    low = [r for r in recs if low_count(r["comparisons"], target)]
    limit = low_count_limit(target)
    note = (f"fewer than {limit:,} impostor comparisons (3/target): too few to resolve FMR {target:g}" if limit
            else "no number of impostor comparisons resolves FMR 0")
    cells = sum(1 for r in recs if r["comparisons"])
    here = f"{limit:,} comparisons for FMR {target:g}" if limit else "every cell at FMR 0"
    notes.append(f"Low-count cells: a cell with {esc(LOW_COUNT_RULE)} gets a dot; here {here}: "
                 f"{f'{len(low):,} of the {cells:,} cells with comparisons' if low else 'none'}. "
                 "Blank: no impostor comparisons.")
    if len(ordered) > TEXT_MAX_GROUPS:
        notes.append(f"At {len(ordered)} groups the cells carry no numbers: the table below gives the highest.")
    title = f"Cross-group FMR at the threshold for FMR {target:g}" + (f", by {', '.join(attrs)}" if attrs else "")
    with tempfile.TemporaryDirectory() as tmp:  # drawn for the page only: the results folder is never written
        path = plot_cross_group(recs, target, Path(tmp) / "cross_group_fmr.png", group_by=shown_by, order_by=order,
                                marked=[(r["group_a"], r["group_b"]) for r in low], mark_note=note, title=title,
                                svg=False)  # the page embeds the PNG
        names = groups if attrs else [g["group"] for g in res["summary"]["groups"]]
        fig = figure(path, "cross-group FMR." + _key(names))
    return ("<h2>Cross-group FMR</h2><p>FMR between every pair of groups at the global threshold for FMR target "
            f"{fmt(target)}, {esc(weighting)} weighting (colours on a log scale; diagonal: same-group impostors; "
            f"grey: no false matches).</p><p class='muted'>{' '.join(notes)}</p>" + fig + _extreme_cells(recs, target))


def _extreme_cells(recs: list[dict], target: float) -> str:
    """The :data:`HEATMAP_TOP` off-diagonal cells of highest FMR (the low-count ones after the others), with their
    counts and, where the records carry one, their interval."""
    off = [r for r in recs if r["group_a"] != r["group_b"] and r["comparisons"] and r["fmr"] is not None]
    if not off:
        return ""
    # a single false match among a handful of comparisons tops any ranking by FMR: low-count cells come last
    top = sorted(off, key=lambda r: (bool(low_count(r["comparisons"], target)), -_num(r["fmr"]),
                                     -r["comparisons"]))[:HEATMAP_TOP]
    with_iv = [r for r in recs if r.get("fmr_lower") is not None and r.get("fmr_upper") is not None]
    head = ["pair", "FMR (false matches / comparisons)"]
    if with_iv:
        level, method = with_iv[0].get("level"), with_iv[0].get("interval_method")
        head.append(f"{pct(level, 2) + ' ' if level is not None else ''}interval"
                    + (f" ({method})" if method else ""))
    head.append("note")
    rows = []
    for r in top:
        row = [f"{esc(r['group_a'])} × {esc(r['group_b'])}",
               rate_with_counts(r["fmr"], r["errors"], r["comparisons"], r["weighting"])]
        if with_iv:
            row.append(interval(r["fmr_lower"], r["fmr_upper"], "rate") if r.get("fmr_lower") is not None else "—")
        row.append("too few comparisons to resolve the target" if low_count(r["comparisons"], target) else "")
        rows.append(row)
    return (f"<p>Highest FMR between two different groups at FMR target {fmt(target)} (cells with too few "
            "comparisons to resolve the target, which one false match puts on top, only after the others):</p>"
            + table(head, rows, 1))


def _small_groups_note(res: dict, rows: list[dict]) -> str:
    """Under the fairness table: the small groups the measures left out and the rule, or, when the audit kept
    them, which groups are small and that ``--exclude-small-groups`` leaves them out of the ratios."""
    rule = next((r.get("exclusion_rule") for r in rows if r.get("exclusion_rule")), None)
    if rule is not None:
        out = next((r.get("excluded_groups") or [] for r in rows), [])
        which = f"{len(out)} excluded: {', '.join(map(esc, out))}" if out else "none is small here"
        return (f"<p>Computed over the groups that are not small (--exclude-small-groups): {esc(rule)} are left "
                f"out of every measure above and of its interval ({which}); their own rates stay in the "
                "operating-point tables.</p>")
    small = [g["group"] for g in res["summary"]["groups"] if g.get("small")]
    if not small:
        return ""
    shown = ", ".join(map(esc, small[:5])) + (f" and {len(small) - 5:,} more" if len(small) > 5 else "")
    words = (res["config"].get("small_groups") or {}).get("rule", "too few identities or comparisons")
    return (f"<p class='muted'>{len(small):,} group{'s are' if len(small) > 1 else ' is'} small ({esc(words)}): "
            f"{shown}. {'They enter' if len(small) > 1 else 'It enters'} the measures above, where a rate resting "
            "on a handful of comparisons can set a ratio; <code>--exclude-small-groups</code> leaves small groups "
            "out of the ratios.</p>")


def _fairness(res: dict, folder: Path) -> str:
    """Every fairness measure per FMR target with its interval; differences in percentage points, ratios and
    indices as plain numbers; a value or interval that is not a number is marked and its reason given below."""
    w = res["config"]["weightings"][0]
    rows = [r for r in res["fairness"] if r["weighting"] == w and r["kind"] == "fmr_target"]
    if not rows:
        return ""
    targets = sorted({r["target"] for r in rows}, reverse=True)
    measures = list(dict.fromkeys((r["rate"], r["measure"]) for r in rows))
    ivs = interval_lookup(res)
    notes: list[str] = []

    def mark(reason: str) -> str:
        if reason not in notes:
            notes.append(reason)
        return f"<sup>{notes.index(reason) + 1}</sup>"

    rows_ = []
    for rate, m in measures:
        unit = "points" if "difference" in m else "plain"
        cells = []
        for t in targets:
            r = next(x for x in rows if x["rate"] == rate and x["measure"] == m and x["target"] == t)
            v = _num(r["value"])
            cell = fmt(v, unit) if math.isfinite(v) else ("∞" if math.isinf(v) else "undefined") + mark(r["reason"])
            iv = ivs.get((w, "all", f"{rate}:{m}", "fmr_target", t)) or ivs.get((w, None, f"{rate}:{m}", "fmr_target", t))
            if iv and not math.isnan(v):  # an infinite ratio has an interval too ([40.5, inf])
                span = interval(iv[0]["low"], iv[0]["high"], unit)
                cell += f" <span class='muted'>{span}{mark(iv[0]['note']) if span == 'undefined' else ''}</span>"
            cells.append(cell)
        rows_.append([esc(rate), esc(m.replace("_", " "))] + cells)
    foot = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return (f"<h2>Fairness measures ({esc(w)} weighting)</h2><p>Per FMR target, at the global threshold. "
            "Ratios equal 1 and differences 0 when all groups are equal; differences in percentage points; brackets: "
            "interval when computed: each measure's range over the groups' rate intervals that hold together at the "
            "level, so an interval reaches parity exactly when no two groups are told apart (docs/intervals.md).</p>" + table(["rate", "measure"] + [f"FMR {t:g}" for t in targets], rows_, 2)
            + (f"<ol class='muted'>{foot}</ol>" if foot else "") + _small_groups_note(res, rows))


def _model_comparison(res: dict, folder: Path) -> str:
    """``matchaudit compare``'s compare.json: FNMR@FMR of model A minus model B with its paired interval."""
    doc = res.get("_compare")
    if not doc:
        return ""
    recs = [r for r in doc["result"]["records"] if r["metric"] == "fnmr_at_fmr"]
    if not recs:
        return ""
    rows, lines = [], []
    for r in recs:
        d, lo, hi = _num(r["difference"]), _num(r["low"]), _num(r["high"])
        rows.append([f"FMR {fmt(r['fmr_target'])}", esc(r["view"]), pct(r["model_a"]), pct(r["model_b"]),
                     fmt(d, "points", sign=True), interval(lo, hi, "points")])
        if r["view"] != "all" or not all(map(math.isfinite, (d, lo, hi))):
            continue
        noise = ("distinguishable from noise" if lo > 0 or hi < 0
                 else "not distinguishable from noise (the interval includes 0)")
        by = f" by {fmt(abs(d), 'points')}" if d != 0 else ""
        lines.append(f"<li>Model A's FNMR at FMR {fmt(r['fmr_target'])} is "
                     f"{'lower' if d < 0 else 'higher' if d > 0 else 'equal to model B’s'}{by}, "
                     f"{fmt(r['level'], 'rate')} interval {interval(lo, hi, 'points')}: {noise}.</li>")
    first = recs[0]
    return ("<h2>Model comparison</h2><p>Two models on the same comparisons (<code>matchaudit compare</code>): "
            f"FNMR at each FMR target, each model at its own threshold; paired identity bootstrap "
            f"({esc(first['method'])}, {esc(first['n_resamples'])} replicates, seed {esc(first['seed'])}). "
            "Differences A − B in percentage points.</p>" + _mismatch(doc)
            + table(["operating point", "view", "FNMR model A", "FNMR model B", "A − B (points)", "interval"], rows, 2)
            + (f"<div class='reading'><ul>{''.join(lines)}</ul></div>" if lines else ""))


def _mismatch(doc: dict) -> str:
    """The warning of a section whose file describes other data than the audit (see :func:`write_report`)."""
    return f"<p class='warn'><b>Other data:</b> {esc(doc['_mismatch'])}</p>" if doc.get("_mismatch") else ""


def _labelfree(res: dict, folder: Path) -> str:
    """``matchaudit estimate``'s estimate.json: per-group FNMR@FMR with credible bands, without labels."""
    doc = res.get("_estimate")
    if not doc:
        return ""
    level = _num(doc["level"])
    parts = [(f"<h2>Label-free estimates</h2><p class='warn'>These numbers are <b>label-free estimates</b> "
             f"({esc(doc['method'])}; family {esc(doc.get('family_description', doc.get('family')))}): inferred "
             "from the score distributions, not counted from identity labels. They are only as good as the fitted "
             "model; they are not measurements, and the audit's counted numbers above take precedence where labels "
             f"exist. Bands: {100 * level:.0f}% equal-tailed credible intervals.</p>" + _mismatch(doc))]
    if doc.get("selection"):
        rows = [[esc(g), esc(", ".join(sel["used"])), "yes: see the warnings" if sel["alarm"] else "no",
                 _allowance(sel.get("allowance")),
                 "" if not sel.get("labels_needed") else
                 esc(f"about {sel['labels_needed']['n']:,} pairs with scores in [{sel['labels_needed']['low']:.4g}, "
                     f"{sel['labels_needed']['high']:.4g}]")]
                for g, sel in doc["selection"].items()]
        parts.append("<p>Family-robust bands: per group the union of the bands of the families whose fit checks "
                     "pass, each spread as if the group had at most the allowance's number of unlabelled scores "
                     "(no family fits real scores exactly, and more scores would only narrow each around its own "
                     "split). An alarm means the families disagree, or their chains settle apart: these scores do not "
                     "identify how they split into matches and non-matches, and labelled pairs would decide.</p>"
                     + table(["group", "families joined", "alarm", "allowance", "labels that would decide"], rows))
    for kind, out in doc["results"].items():
        rows = [[esc(e["group"]), f"FMR {fmt(e['target'])}", pct(e["median"]), interval(e["lower"], e["upper"], "rate"),
                 "tail extrapolation" if e.get("extrapolated") else ""]
                for e in out["fnmr_at_fmr"]]
        parts.append(f"<h3>{esc(kind)}</h3><p class='muted'>{esc(out.get('note', ''))}</p>"
                     + table(["group", "operating point", "FNMR (median)", f"{100 * level:.0f}% band", "note"], rows))
    limits = doc.get("limits", []) + doc.get("warnings", [])
    if limits:
        parts.append("<p>Limits:</p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in limits) + "</ul>")
    return "".join(parts)


def _allowance(a: dict | None) -> str:
    """A group's misspecification allowance as the label-free table shows it."""
    reason = (a or {}).get("reason", "off")
    if reason == "spread":
        return esc(f"x{a['spread']:.2g}: as {a['effective_scores']:,} of {a['unlabelled_scores']:,} scores")
    if reason == "labelled pairs":
        return esc(f"none: {a['labelled_pairs']:,} labelled pairs")
    if reason == "few scores":
        return esc(f"none needed: {a['unlabelled_scores']:,} scores")
    return "none"


def _reproducibility(res: dict, folder: Path) -> str:
    cfg = {k: v for k, v in res["config"].items()}
    extra = {k: res[k] for k in ("intervals_config", "tests_config") if k in res}
    return ("<h2>Reproducibility</h2>"
            f"<p>matchaudit {esc(res['matchaudit_version'])}. Command:</p><pre>{esc(res['command'])}</pre>"
            f"<p>Configuration:</p><pre>{esc(json.dumps({**cfg, **extra}, indent=1))}</pre>")


SECTIONS: list[Callable[[dict, Path], str]] = [_summary, reading, claims_section, _operating, portability, conditions_section, failures, attacks, tests_section,
                                               equivalence_section, _det, calibration, distributions, _fairness,
                                               _uncertainty,
                                               _cross, _model_comparison, _labelfree, _reproducibility]


def render(audit: Audit, folder: Path, title: str = "matchaudit report", *, heatmap: dict | None = None,
           compare: dict | None = None, estimate: dict | None = None, claims: dict | None = None,
           conditions: dict | None = None) -> str:
    """The whole page of ``audit`` (in memory or :meth:`Audit.load`-ed: the same page) as one string; its figures
    are read from ``folder``. ``heatmap``: :func:`heatmap_options` (default: the first grouping attribute, no
    pooling); ``compare``/``estimate``/``claims``/``conditions``: a compare.json, an estimate.json, a claims.json
    and a conditions.json to add as sections."""
    res = audit.document()
    res["_heatmap"] = heatmap or heatmap_options(res["summary"]["group_by"], None, None)
    res.update({f"_{kind}": doc for kind, doc in (("compare", compare), ("estimate", estimate), ("claims", claims),
                                                  ("conditions", conditions)) if doc is not None})
    body = "".join(section(res, folder) for section in SECTIONS)
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1>"
            f"<p class='muted'>Per-group performance and fairness of a 1:1 matching system.</p>{body}</body></html>")


def write_report(results_json: Path, report: Path | str | None = None, compare: Path | None = None,
                 estimate: Path | None = None, warn: Callable[[str], None] | None = None, *,
                 heatmap_order: str | None = None, heatmap_aggregate: str | Sequence[str] | None = None,
                 audit: Audit | None = None, claims: Path | None = None, conditions: Path | None = None) -> Path:
    """Write the HTML report of the audit saved as ``results_json`` (figures are taken from the same folder;
    ``audit``: that audit when it is in memory, else its tables are loaded, :meth:`Audit.load`) to ``report``: a file,
    or report.html inside a folder (:func:`matchaudit.outputs.report_destination`); default report.html beside
    results.json. An existing file there is replaced only if it is an earlier report of matchaudit's, and never an
    input (:mod:`matchaudit.outputs`: checked before any work).

    ``heatmap_order``: the grouping attribute the cross-group FMR heat map sorts its groups by (default: the first
    of ``group_by``); ``heatmap_aggregate``: coarser groups to pool its cells into (``"region"``, ``"region,sex"``;
    default: none). Both are checked against the audit's grouping attributes (:func:`heatmap_options`).

    ``compare``/``estimate``/``claims``/``conditions``: a ``matchaudit compare`` compare.json, a ``matchaudit
    estimate`` estimate.json, a ``matchaudit check`` claims.json and an ``audit --condition-cols`` conditions.json to
    add as sections; by default those lying beside results.json are used when present. One that describes
    other data than the audit (:func:`section_mismatch`) is left out when picked up by default (a stale file),
    and included with the mismatch stated in its section when named; either way ``warn`` is told.
    """
    folder = results_json.parent
    target, command = check_report(results_json, report, (compare, estimate, claims, conditions))
    audit = audit or Audit.load(results_json, curves=False)  # the figures are the folder's
    res = audit.document()
    heatmap = heatmap_options(res["summary"]["group_by"], heatmap_order, heatmap_aggregate)
    sections: dict[str, dict] = {}
    for kind, given in (("compare", compare), ("estimate", estimate), ("claims", claims), ("conditions", conditions)):
        path = given or folder / f"{kind}.json"
        if given is None and not path.is_file():
            continue
        doc = load_section(path, kind)
        mismatch = section_mismatch(res, kind, doc)
        if mismatch and given is None:
            if warn:
                warn(f"{path} left out of the report: {mismatch}. Name it with --{kind} to include it anyway.")
            continue
        if mismatch:
            doc["_mismatch"] = f"{path.name}: {mismatch}."
            if warn:
                warn(f"{path}: {mismatch}; its section says so.")
        sections[kind] = doc
    html = render(audit, folder, heatmap=heatmap, **sections)
    with staged(target.parent, command, replace=False, names=(target.name,),
                inputs=(results_json, compare, estimate, claims, conditions),
                param="report") as tmp:
        (tmp / target.name).write_text(html, encoding="utf-8")
    return target

