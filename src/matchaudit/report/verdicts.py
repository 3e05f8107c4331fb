"""The report's verdict sections: the Reading (each gap in words, with its test, its caveat and the fairness
table's answer reconciled), the group-tests table and the equivalence table. They render what the records say
(``significant``, ``reason``, ``caveat``: the library's verdicts); nothing is recomputed here but counts and orderings
(:mod:`matchaudit.estimators.test_summary`)."""

from __future__ import annotations

import math
from pathlib import Path

from matchaudit.estimators.test_summary import family_of, strongest, summarise_tests
from matchaudit.formatting import fmt, interval, operating_point, value as _num, with_counts as rate_with_counts
from matchaudit.report.markup import esc, pct, pvalue, table


def interval_lookup(res: dict) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in res.get("intervals", []):
        key = (r.get("weighting"), r.get("group"), r.get("metric"), r.get("kind"), r.get("target"))
        out.setdefault(key, []).append(r)
    return out


def reading(res: dict, folder: Path) -> str:
    """Plain-language reading of the largest FNMR and FMR gaps at each target."""
    w = res["config"]["weightings"][0]
    pts = [p for p in res["operating_points"] if p["weighting"] == w and p["group"] != "all"
           and p["kind"] == "fmr_target"]
    if len({p["group"] for p in pts}) < 2:
        return ""
    tests = {(t.get("metric"), t.get("target"), t.get("group_a"), t.get("group_b")): t for t in res.get("tests", [])
             if t.get("weighting", w) == w}
    equivalences = {(r["metric"], r["fmr_target"], *r["groups"]): r for r in res.get("equivalence", [])}
    families = summarise_tests([t for t in res.get("tests", []) if t.get("weighting", w) == w])
    ivs = interval_lookup(res)
    ratios = {(f["rate"], f["target"]): f for f in res["fairness"] if f["measure"] == "max_min_ratio"
              and f["weighting"] == w and f["kind"] == "fmr_target"}
    lines = []
    for target in sorted({p["target"] for p in pts}, reverse=True):
        at = [p for p in pts if p["target"] == target]
        for rate in ("fnmr", "fmr"):
            hi = max(at, key=lambda p: _num(p[rate]))
            lo = min(at, key=lambda p: _num(p[rate]))
            k, n = f"{rate}_errors", f"{rate}_comparisons"
            name = rate.upper()
            if _num(hi[rate]) == _num(lo[rate]):
                lines.append(f"<li>At FMR target {target:g}, every group has the same {name}, "
                             f"{pct(hi[rate])}{' (no errors in any group)' if _num(hi[rate]) == 0 else ''}.</li>")
                continue
            record = ratios.get((name, target))
            adjusted = record is not None and record.get("adjusted_groups")
            against = (f"while group {esc(lo['group'])} has no errors ({rate_with_counts(lo[rate], lo[k], lo[n], w)}: "
                       "a ratio is undefined)" if _num(lo[rate]) == 0 and not adjusted else
                       f"{_times(record)} group {esc(lo['group'])}'s {rate_with_counts(lo[rate], lo[k], lo[n], w)}")
            text = (f"At FMR target {target:g}, group <b>{esc(hi['group'])}</b> has the highest {name}, "
                    f"{rate_with_counts(hi[rate], hi[k], hi[n], w)}, {against}.")
            t = tests.get((rate, target, hi["group"], lo["group"])) or tests.get((rate, target, lo["group"], hi["group"]))
            if t is not None and t.get("reason"):  # not testable (too few errors) or degenerate: no verdict
                text += f" No test of this gap: {esc(t['reason'])}."
            elif t is not None:
                alpha = _num(t["alpha"])
                verdict = "is" if t["significant"] else "is not"
                text += (f" The gap {verdict} distinguishable from noise at {100 * (1 - alpha):.0f}% "
                         f"(adjusted p = {pvalue(t['pvalue_adjusted'])}).")
                if t["significant"] and t.get("caveat"):
                    text += f" Caveat: {esc(t['caveat'])}."
                text += _two_questions(ivs.get((w, "all", f"{name}:max_min_difference", "fmr_target", target)),
                                       bool(t["significant"]))
            elif not res.get("tests"):
                text += " No test was run on this gap: run <code>matchaudit audit --tests</code> to tell it from noise."
            elif any(family_of(t)[3] == "pair" for t in res["tests"]):
                text += " The group tests could not run on this gap (see the warnings)."
            text += "".join(family_words(f) for f in families
                            if (f["metric"], f["kind"], f["target"]) == (rate, "fmr_target", target))
            eq = equivalences.get((rate, target, hi["group"], lo["group"])) or \
                equivalences.get((rate, target, lo["group"], hi["group"]))
            if eq is not None:
                text += f" Equivalence of the two: {_equivalence_words(eq)}."
            if hi["below_resolution"]:
                text += " (This target is below the data's resolution.)"
            lines.append(f"<li>{text}</li>")
    return "<h2>Reading</h2><div class='reading'><ul>" + "".join(lines) + "</ul></div>"


def _two_questions(records: list[dict] | None, significant: bool) -> str:
    """The one sentence that reconciles the pair test with the fairness table when they disagree (nothing when they
    agree or the table has no interval for the gap)."""
    if not records or "excludes_parity" not in records[0] or records[0]["excludes_parity"] == significant:
        return ""
    if significant:
        return (" The fairness table's max-min interval still reaches 0: it bounds every group at once (each group's "
                "interval at a stricter level), so it is the more cautious of the two answers.")
    return (" The fairness table's max-min interval excludes 0 nonetheless: it is a bootstrap of identities bounding "
            "every group at once, the test a permutation of identities between these two groups; near the boundary "
            "the two can differ, and the test is the one whose level was measured.")


def family_words(f: dict) -> str:
    """One family of group tests in a sentence: how many gaps are distinguishable from noise (and, against the
    rest, which groups, the first few of each side)."""
    level = f"{100 * (1 - f['alpha']):.0f}%"
    if f["comparison"] == "one-vs-rest":
        if not f["distinguishable"]:
            return f" No group's {f['metric'].upper()} is distinguishable from the rest's (max-T at {level})."
        sides = [f"{word} {', '.join(esc(r['group_a']) for r in rows[:5])}{', …' if len(rows) > 5 else ''}"
                 for word, rows in (("higher:", f["above"]), ("lower:", f["below"])) if rows]
        return (f" Against the pooled rest, {f['distinguishable']} of {f['tests']} groups differ beyond noise "
                f"(max-T at {level}); {'; '.join(sides)}.")
    if f["tests"] < 2:
        return ""
    tested = f["tests"] - f.get("undefined", 0)
    untested = (f" ({f['undefined']:,} more could not be tested: too few errors, errors in one or two identities, "
                "or no variance; see the group tests)") if f.get("undefined") else ""
    k, d = f["distinguishable"], f["discoveries"]
    return (f" Of the {tested:,} pairs of groups tested{untested}, {k:,} {'gap is' if k == 1 else 'gaps are'} "
            f"distinguishable from noise (max-T at {level}) and {d:,} {'is a discovery' if d == 1 else 'are discoveries'}"
            f" at a {100 * f['alpha']:.0f}% false-discovery rate (BH).")


def _times(record: dict | None) -> str:
    """The max/min ratio as the audit computed it (its zero policy applied), in words."""
    if record is None:
        return "compared with"
    ratio = _num(record["value"])
    if math.isnan(ratio):
        return "against"
    words = "infinitely many times" if math.isinf(ratio) else f"{fmt(ratio)} times"
    adjusted = record.get("adjusted_groups") or []
    return words + (f" (zero rates of {', '.join(map(esc, adjusted))} replaced by upper bounds)" if adjusted else "")


ALL_ROWS = 40
"""Up to this many group tests the report lists every one; beyond, each family's strongest (all in tests.csv)."""
FAMILY_ROWS = 10


def _compared(t: dict) -> str:
    return f"{esc(t['group_a'])} − {esc(t['group_b'])}"


def tests_section(res: dict, folder: Path) -> str:
    """The group tests (``audit --tests``): per family (metric, operating point, pairs or each group against the
    rest) how many gaps are distinguishable from noise and the largest, then the rows with raw, Holm and max-T
    p-values and BH q-values: every row up to :data:`ALL_ROWS`, else each family's strongest."""
    recs = res.get("tests", [])
    if not recs:
        return ""
    first = recs[0]
    alpha = _num(first.get("alpha", 0.05))
    summary = summarise_tests(recs)
    what = {"pair": "pairs of groups", "one-vs-rest": "groups against the rest"}
    counts = []
    for f in summary:
        big = f["largest"]
        counts.append([esc(operating_point(f["kind"], f["target"])), esc(str(f["metric"]).upper()),
                       esc(what.get(f["comparison"], f["comparison"])), f"{f['tests']:,}",
                       f"<b>{f['distinguishable']:,}</b>", f"{f['discoveries']:,}",
                       "n/a" if big is None else f"{_compared(big)}: {fmt(_num(big['effect']), 'points', sign=True)}"])
    shown = recs if len(recs) <= ALL_ROWS else strongest(recs, FAMILY_ROWS)
    rows = []
    for t in shown:
        verdict = ("n/a" if math.isnan(_num(t["pvalue_adjusted"])) else
                   "<b>distinguishable from noise</b>" if t["significant"] else "not distinguishable from noise")
        rows.append([esc(operating_point(t.get("kind", "fmr_target"), t["target"])), esc(str(t["metric"]).upper()),
                     _compared(t), fmt(_num(t["effect"]), "points", sign=True), pvalue(t["pvalue"]),
                     pvalue(t.get("pvalue_holm")), pvalue(t.get("pvalue_maxt")), pvalue(t.get("qvalue_bh")), verdict])
    versus = (res["config"].get("tests") or {}).get("comparisons", "pairs")
    design = {"pairs": "every pair of groups", "rest": "each group against the pooled rest of the groups",
              "both": "every pair of groups and each group against the pooled rest"}.get(versus, versus)
    listed = ("" if len(recs) <= ALL_ROWS else
              f"<p>{len(recs):,} tests: below, each family's {FAMILY_ROWS} strongest (smallest max-T p-value, then "
              "largest gap); every test is in <code>tests.csv</code>.</p>")
    return ("<h2>Group tests</h2>"
            f"<p>Is each gap in FNMR and FMR real or noise? Identity-level "
            f"permutation tests ({esc(first['n_resamples'])} relabellings of the groups' identities, seed "
            f"{esc(first['seed'])}; {esc(first['method'])}), {design} on the same relabellings at each "
            "operating point: FNMR with the threshold re-derived in every relabelling, same-group FMR at the audit's "
            "threshold. Holm and max-T adjust for the tests of one family (one metric at one operating point: "
            "family-wise error), the Benjamini-Hochberg q-value for the share of false discoveries among them; the "
            f"verdict uses max-T at α = {alpha:g}. Effect: the first group's rate minus the second's, in percentage "
            "points.</p>"
            + table(["operating point", "rate", "compared", "tests", "distinguishable (max-T)",
                     f"discoveries (BH q ≤ {alpha:g})", "largest gap"], counts, 3)
            + listed
            + table(["operating point", "rate", "compared", "effect", "p (raw)", "p (Holm)", "p (max-T)", "q (BH)",
                      "verdict"], rows, 3))


def _equivalence_words(r: dict) -> str:
    """The library's finding for one TOST record, in bold when it is "equivalent within the margin"."""
    finding = esc(r["finding"])
    return f"{f'<b>{finding}</b>' if r['equivalent'] else finding} ({r['scale']}; TOST p = {pvalue(r['pvalue'])})"


def equivalence_section(res: dict, folder: Path) -> str:
    """Every pair of groups' TOST verdict (``audit --equivalence``)."""
    recs = res.get("equivalence", [])
    if not recs:
        return ""
    rows = []
    for r in recs:
        unit = "plain" if r["scale"] == "ratio" else "points"
        a, b = r["groups"]
        pair = f"{esc(a)} / {esc(b)}" if r["scale"] == "ratio" else f"{esc(a)} − {esc(b)}"
        rows.append([f"FMR {_num(r['fmr_target']):g}", esc(r["metric"].upper()), pair,
                     fmt(r["estimate"], unit, sign=unit == "points"), interval(*r["confidence_interval"], unit),
                     pvalue(r["pvalue"]), _equivalence_words(r)])
    first = recs[0]
    level = 1 - 2 * _num(first["alpha"])
    return ("<h2>Equivalence</h2>"
            "<p>Is each gap small enough to call the groups equivalent? A test that fails to find a gap is not "
            "evidence that there is none; this one reverses the question. Two one-sided tests (TOST) of "
            f"H0: the {first['scale']} lies outside the margin given as fair (named in each verdict), on "
            f"{esc(first['n_resamples'])} {esc(first['method'])} identity-bootstrap replicates (the groups' "
            f"identities re-drawn, seed {esc(first['seed'])}): a pair is equivalent when both one-sided p-values are "
            f"at most α = {_num(first['alpha']):g}, which is the same as its {pct(level, 2)} interval lying inside the "
            "margin. A replicate whose ratio is undefined (no errors in either group) counts against equivalence. "
            "docs/tests.md says how the test was checked.</p>"
            + table(["operating point", "rate", "pair", "estimate", f"{pct(level, 2)} interval", "TOST p",
                      "verdict"], rows, 3))


__all__ = ["ALL_ROWS", "FAMILY_ROWS", "equivalence_section", "family_words", "interval_lookup", "reading",
           "tests_section"]
