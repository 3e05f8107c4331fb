"""Report sections for what evaluators compute every day beside the error rates: failures to acquire, calibration
and cost metrics, score distributions.

Presentation only, like :mod:`matchaudit.report.html`: every number and verdict comes from ``results.json``.
"""

from __future__ import annotations

from pathlib import Path

from matchaudit.formatting import fmt, interval, operating_point, threshold
from matchaudit.metrics.small_groups import MIN_IDENTITIES
from matchaudit.report.markup import esc, figure, pct, table


def failures(res: dict, folder: Path) -> str:
    """Failure-to-acquire rates per group and class (``--fta-policy exclude|count``)."""
    recs = res.get("failures") or []
    if not recs:
        return ""
    rows = [[esc(r["group"]), esc(r["class"]), f"{r['failures']:,} / {r['attempts']:,}", pct(r["fta"]),
             interval(r["low"], r["high"], "rate")] for r in recs]
    first = recs[0]
    meaning = ("They are left out of every other rate in this report, which are therefore over the comparisons "
               "that produced a score." if first["policy"] == "exclude" else
               "They count as errors in every other rate of this report: a failed genuine comparison as a false "
               "non-match, a failed impostor comparison as a correct rejection, so FNMR = FTA + FNMR (1 − FTA) and "
               "FMR = FMR (1 − FTA) per class (transaction-level rates).")
    return ("<h2>Failures to acquire</h2>"
            f"<p>Comparisons that produced no score (a missing score or a non-zero return code; ISO/IEC 19795-1). "
            f"Policy <code>{esc(first['policy'])}</code>: {meaning} Per group: its genuine comparisons and its "
            f"same-group impostor comparisons. Intervals: {esc(first['method'])} at {pct(first['level'], 2)}, with "
            "the variance clustered by identity (one poor enrolment fails all its comparisons).</p>"
            + table(["group", "class", "failures / attempts", "FTA", f"{pct(first['level'], 2)} interval"], rows, 2))


def attacks(res: dict, folder: Path) -> str:
    """The impostor-attack presentation match rate (IAPMR) per operating point and group (bob vulnerability files)."""
    recs = [r for r in res.get("attacks") or [] if r["weighting"] == "pooled"] or res.get("attacks") or []
    if not recs:
        return ""
    rows = [[esc(operating_point(r["kind"], r["target"])), esc(r["group"]), threshold(r["threshold"]),
             f"{r['accepted']:,} / {r['attacks']:,}", pct(r["iapmr"]),
             interval(r["low"], r["high"], "rate")
             + (f" <span class='warn' title='{esc(r.get('note') or '')}'>†</span>" if r.get("indicative") else "")]
            for r in recs]
    first = recs[0]
    return ("<h2>Presentation attacks</h2>"
            "<p>Presentation attacks (rows with a non-empty <code>probe_attack_type</code>) are compared with the "
            "reference of the subject they claim. They are neither genuine nor zero-effort impostor comparisons, so "
            "no FMR or FNMR in this report counts them. The IAPMR is the share of attacks accepted at each threshold "
            f"set on the licit comparisons ({esc(first['weighting'])} weighting; accept iff s {esc(first['rule'])} "
            "t), as bob's <code>vuln metrics</code> reports it; per group: attacks on that group's subjects. "
            f"Intervals: {esc(first['method'])} at {pct(first['level'], 2)}, with the variance clustered by "
            "attacked subject (attacks on one subject share its reference).</p>"
            + table(["operating point", "group", "threshold", "accepted / attacks", "IAPMR",
                     f"{pct(first['level'], 2)} interval"], rows, 2)
            + (f"<p class='muted'>† indicative: fewer than {MIN_IDENTITIES} attacked subjects behind the clustered "
               "variance (the "
               "interval can be narrower than if the attacks were independent); hover for the note.</p>"
               if any(r.get("indicative") for r in recs) else ""))


def portability(res: dict, folder: Path) -> str:
    """Carried thresholds (``--thresholds-from``, ``--threshold-fmr``): per threshold and group, FMR against the target
    it was set for, FNMR, and the threshold the group would need."""
    recs = res.get("portability") or []
    if not recs:
        return ""
    first = recs[0]
    level = pct(first["level"], 2)
    words = {"above target": "<b>above</b>", "at or below target": "holds", "undetermined": "undetermined",
             "no interval": "—"}
    rows = [[threshold(r["threshold"]) + f" <span class='muted'>(FMR {pct(r['target'])})</span>", esc(r["group"]),
             f"{pct(r['fmr'])} <span class='muted'>{r['fmr_errors']:,}/{r['fmr_comparisons']:,}</span><br>"
             + interval(r["fmr_low"], r["fmr_high"], "rate"),
             f"{fmt(r['fmr_ratio'], digits=3)}× " + words[r["status"]] + "<br>" + interval(r["ratio_low"],
                                                                                       r["ratio_high"]),
             f"{pct(r['fnmr'])} <span class='muted'>{r['fnmr_errors']:,}/{r['fnmr_comparisons']:,}</span><br>"
             + interval(r["fnmr_low"], r["fnmr_high"], "rate"),
             (threshold(r["required_threshold"]) + "<br>" + interval(r["required_low"], r["required_high"], digits=5)
              + (f" <span class='warn' title='{esc(r['note'] or '')}'>†</span>" if r["indicative"] else ""))
             if r["required_threshold"] == r["required_threshold"] else f"<span class='muted'>{esc(r['note'])}</span>"]
            for r in recs]
    boot = next((r["threshold_method"] for r in recs if r["threshold_method"]), None)
    return ("<h2>Carried thresholds on this population</h2>"
            f"<p>Thresholds set elsewhere ({esc(first['source'] or 'given')}) for an FMR target, applied to these "
            f"comparisons (pooled; accept iff s {esc(res['config']['rule'])} t). Per group: its FMR over its "
            "same-group impostors and its FNMR at the carried threshold, FMR / target (above: the whole interval "
            "lies above the target; holds: at or below it), and the group's own threshold, the one that gives it "
            "the target FMR on its same-group impostors (the overall row: on the threshold impostors, "
            f"<code>{esc(first['impostors'])}</code>). Intervals at {level}: the rates' "
            f"{esc(first['rate_method'] or 'none (--no-intervals)')}, conditional on the carried threshold (the "
            "number deployed); the own threshold: "
            + (f"the percentile interval of {esc(boot)}'s {first['n_resamples']:,} replicate thresholds "
               "(identities redrawn)" if boot else "none (no bootstrap)")
            + " (docs/intervals.md, \"Thresholds carried to a new population\").</p>"
            + table(["carried threshold", "group", f"FMR, {level} interval", "FMR / target", f"FNMR, {level} interval",
                     "own threshold for the target"], rows, 2)
            + ("<p class='muted'>† indicative: fewer than 20 false matches expected behind the group's own threshold "
               "(target × its impostor comparisons).</p>" if any(r["indicative"] for r in recs) else ""))


_CAL_NAMES = {"cllr": "Cllr", "min_cllr": "minCllr", "act_dcf": "actDCF", "min_dcf": "minDCF"}


def calibration(res: dict, folder: Path) -> str:
    """Cllr, minCllr, actual and minimum DCF per group with their intervals, and the APE figure."""
    recs = res.get("calibration") or []
    if not recs:
        return ""
    rows = []
    for r in recs:
        at = "" if r["p_target"] is None else f" (P_tar {r['p_target']:g}, C_miss {r['c_miss']:g}, C_fa {r['c_fa']:g})"
        value = "—" if r["estimate"] is None else fmt(r["estimate"], digits=4)
        span = esc(r["reason"]) if r["estimate"] is None else interval(r["low"], r["high"], digits=4)
        rows.append([esc(r["group"]), esc(_CAL_NAMES[r["metric"]] + at), value, span])
    first = recs[0]
    llr = ("The scores were declared log-likelihood ratios (<code>--llr</code>): Cllr and the actual DCF at the "
           "Bayes threshold measure their calibration; the gap to minCllr / minDCF is the calibration loss."
           if first["llr"] else
           "The scores were not declared log-likelihood ratios, so Cllr and the actual DCF (which read a score as "
           "an LLR and set the Bayes threshold from it) are not reported: only minCllr (after the optimal monotone "
           "PAV calibration) and minDCF, which any score supports. Give <code>--llr</code> for scores that are LLRs.")
    return ("<h2>Calibration and cost</h2>"
            "<p>The speaker-verification summaries of BOSARIS, bob and the NIST SRE scorers, per group (its genuine "
            f"and same-group impostor comparisons). {llr} Intervals: {esc(first['method'])}, "
            f"{esc(first['n_resamples'])} replicates, {pct(first['level'], 2)}, each replicate computed exactly "
            "(docs/calibration.md).</p>"
            + table(["group", "metric", "estimate", f"{pct(first['level'], 2)} interval"], rows, 2)
            + figure(folder / "ape.png", "Applied probability of error (APE): normalised Bayes error against the "
                     "prior log-odds, per group (minimum, and actual with --llr)."))


def distributions(res: dict, folder: Path) -> str:
    """Score means, SDs, d' and each group's shift from the overall with intervals, and the density figure."""
    recs = res.get("score_distributions") or []
    if not recs:
        return ""
    metrics = list(dict.fromkeys(r["metric"] for r in recs))
    groups = list(dict.fromkeys(r["group"] for r in recs))
    cell = {(r["group"], r["metric"]): r for r in recs}
    rows = [[esc(g)] + [(fmt(cell[g, m]["estimate"], digits=4) + "<br><span class='muted'>"
                         + interval(cell[g, m]["low"], cell[g, m]["high"], digits=4) + "</span>")
                        if (g, m) in cell else "" for m in metrics] for g in groups]
    first = recs[0]
    return ("<h2>Score distributions</h2>"
            "<p>Where each group's genuine and impostor scores lie: means and SDs, d′ = (μ<sub>gen</sub> − "
            "μ<sub>imp</sub>) / √((σ²<sub>gen</sub> + σ²<sub>imp</sub>) / 2), and the shift of each group's genuine "
            "and impostor means from the overall ones (ISO/IEC 19795-10's shift in comparison scores: a group whose "
            "impostor scores sit higher meets more false matches at one threshold). Under each value its "
            f"{pct(first['level'], 2)} interval ({esc(first['method'])}, {esc(first['n_resamples'])} replicates).</p>"
            + table(["group"] + [esc(m.replace("_", " ")) for m in metrics], rows, 1)
            + figure(folder / "score_distributions.png", "Genuine (solid) and impostor (dashed) score densities "
                     "per group."))


__all__ = ["attacks", "calibration", "distributions", "failures", "portability"]
