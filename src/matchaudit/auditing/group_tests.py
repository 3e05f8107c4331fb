"""An audit's group tests: the identity-level all-groups permutation tests of FNMR and FMR at each operating point
(:mod:`matchaudit.auditing.matching_passes`), as tidy records with the audit's thresholds and max-T verdicts."""

from __future__ import annotations


import numpy as np

from matchaudit.auditing.options import TestOptions
from matchaudit.auditing.replicates import ExactPoints
from matchaudit.errors import InputError
from matchaudit.formatting import operating_point
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult, evaluate
from matchaudit.model import MatchData

def group_tests(data: MatchData, config: AuditConfig, options: TestOptions,
                exact: AuditResult | None = None, progress: bool = False) -> tuple[list[dict], list[str]]:
    """Tidy records of the FNMR and FMR differences of every pair of groups and/or each group against the rest
    (``options.comparisons``; ``comparison`` is ``pair`` or ``one-vs-rest``, whose ``group_b`` is ``rest``) with raw,
    Holm, max-T p-values and the Benjamini-Hochberg q-value, per FMR target and per FNMR target.

    At an FMR target, FNMR: the threshold is re-derived in every relabelling from the same impostors that set the
    audit's global threshold (``threshold_impostors``); FMR (same-group impostors): at the audit's global threshold
    of the target (``exact``'s, computed when not given), held fixed. At an FNMR target the threshold comes from
    every genuine comparison, whatever the group labels, so relabelling identities cannot move it: both rates are
    tested at the audit's threshold there, exactly the fixed-threshold tests. Studentized with the identity-clustered variance.
    ``significant`` is the max-T adjusted verdict (``pvalue_adjusted <= alpha``). Targets the test cannot run at
    are skipped with a warning; too many relabellings for the memory budget are refused, naming
    ``test_resamples``. ``progress``: a display of each test's relabellings.
    """
    from matchaudit.auditing.matching_passes import matching_all_groups_test

    if not data.has_identities or len(data.group_names) < 2:
        return [], ["group tests skipped: they need identities and at least two groups."]
    exact = evaluate(data, config) if exact is None else exact
    points = ExactPoints(exact)
    records: list[dict] = []
    warnings: list[str] = []
    common = dict(alpha=options.alpha, rule=config.rule, n_resamples=options.n_resamples, seed=options.seed,
                  studentize=True if options.studentize == "studentized" else options.studentize,
                  comparisons=options.comparisons, progress=progress,
                  resamples_param="test_resamples")
    runs = [("fmr_target", target, metric, kw) for target in config.fmr_targets
            for metric, kw in (("fnmr", dict(fmr_target=target, threshold_impostors=config.threshold_impostors)),
                               ("fmr", dict(threshold=points.op("pooled", "fmr_target", target, ALL)["threshold"])))]
    runs += [("fnmr_target", target, metric, dict(threshold=points.op("pooled", "fnmr_target", target, ALL)["threshold"]))
             for target in config.fnmr_targets for metric in ("fmr", "fnmr")]
    for kind, target, metric, kw in runs:
        name = f"{metric.upper()} group tests at {operating_point(kind, target)}"
        try:
            if "threshold" in kw and not np.isfinite(kw["threshold"]):
                raise InputError("the audit's threshold there is not finite")
            res = matching_all_groups_test(data, "fnmr_at_fmr" if "fmr_target" in kw else metric, **kw, **common)
        except (InputError, ValueError) as e:
            if getattr(e, "param", None) == "test_resamples":  # too many relabellings: the user's to change
                raise
            warnings.append(f"{name} skipped: {e}")
            continue
        for r in res.rows:
            records.append({
                "metric": metric, "kind": kind, "target": target, "weighting": "pooled", "comparison": r["kind"],
                "group_a": r["group_a"], "group_b": r["group_b"], "estimate_a": r["estimate_a"],
                "estimate_b": r["estimate_b"], "effect": r["effect"], "pvalue": r["pvalue"],
                "pvalue_holm": r["pvalue_holm"], "pvalue_maxt": r["pvalue_maxt"], "qvalue_bh": r["qvalue_bh"],
                "pvalue_adjusted": r["pvalue_maxt"], "significant": r["significant_maxt"],
                "alpha": options.alpha, "method": res.method, "unit": "identity", "n_resamples": res.n_resamples,
                "seed": options.seed, "rule": config.rule, "threshold_impostors": config.threshold_impostors,
                "reason": r.get("reason"), "caveat": r.get("caveat"), "expected_errors": r.get("expected_errors"),
                "effective_errors": r.get("effective_errors")})
    return records, warnings


__all__ = ["group_tests"]
