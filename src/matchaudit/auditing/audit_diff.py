"""Two audits of versions of one system compared (``ma.diff``): which rows they share, whether the versions'
scores can be paired, the paired identity bootstrap (``ma.compare``'s, NEW as model A) or the audits' own standard
errors, and their DET curves; the statistics are :mod:`matchaudit.estimators.audit_diff`'s."""

from __future__ import annotations

import math
from typing import Any

from matchaudit.auditing.core import Audit
from matchaudit.auditing.model_comparison import paired_bootstrap
from matchaudit.errors import InputError
from matchaudit.estimators import audit_diff as ad
from matchaudit.estimators.compare import paired_mismatch, trials_digest
from matchaudit.model import MatchData

SIDES = ("old", "new")
_FIELD = {"FNMR": "fnmr", "FMR": "fmr"}  # the diff's metric -> the operating point's field


def _same_definitions(old: Audit, new: Audit) -> None:
    """The audits must define their thresholds alike, or their rates measure different things."""
    for name in ("rule", "threshold_impostors", "fmr_threshold"):
        a, b = getattr(old.exact.config, name), getattr(new.exact.config, name)
        if a != b:
            raise InputError(f"the audits set their thresholds differently ({name}: OLD {a!r}, NEW {b!r}), so their "
                             "rates are not comparable; audit both versions with the same settings.", param="new")


def _points(audit: Audit, targets: list[float]) -> dict[tuple[str, float, str], float]:
    """(metric, target, view) -> the audit's exact pooled rate at the FMR target (FMR per group only: overall it
    is the target by construction)."""
    out = {}
    for p in audit.exact.operating_points:
        if p["weighting"] == "pooled" and p["kind"] == "fmr_target" and p["target"] in targets:
            for metric, name in _FIELD.items():
                if metric == "FNMR" or p["group"] != "all":
                    out[(metric, float(p["target"]), p["group"])] = float(p[name])
    return out


def _estimates(audit: Audit, side: str, keys: set) -> dict[tuple[str, float, str], tuple[float, float]]:
    """(metric, target, view) -> (estimate, standard error) from the audit's pooled interval records at FMR targets
    (the first method where it used several)."""
    if audit.interval_records is None:
        raise InputError(f"{side.upper()} was audited without intervals, and an unpaired diff compares the audits' "
                         "standard errors: re-run that audit with intervals, or give both versions' scores of the "
                         "same trials for a paired diff.", param=side)
    out: dict = {}
    for r in audit.interval_records:
        if r["weighting"] != "pooled" or r["kind"] != "fmr_target":
            continue
        key = (r["metric"], float(r["target"]), r["group"])
        if key in keys and key not in out:
            se = r.get("standard_error")
            out[key] = (float(r["estimate"]), math.nan if se is None else float(se))
    return out


def _check_scores(audit: Audit, data: MatchData, side: str, records: list[dict], model: str) -> None:
    """The scores given for ``side`` must be those its audit measured: the data's counts, and each paired record's
    plug-in rate (``model``: "model_a" or "model_b") equal to the audit's own."""
    recorded = audit.exact.summary.get("data")
    if recorded is not None and recorded != data.fingerprint():
        raise InputError(f"the data given for {side.upper()} are not those its audit measured (the audit: "
                         f"{recorded}; the data: {data.fingerprint()}).", param=f"{side}_data")
    points = _points(audit, sorted({r["fmr_target"] for r in records}))
    for r in records:
        key = (ad.METRICS.get(r["metric"]), r["fmr_target"], r["view"])
        if key in points and not math.isclose(r[model], points[key], rel_tol=1e-9, abs_tol=1e-12):
            raise InputError(f"the scores given for {side.upper()} do not reproduce its audit: {key[0]} of "
                             f"{key[2]} at FMR {key[1]:g} is {r[model]:.6g} from them and {points[key]:.6g} in the "
                             "audit. Give the inputs that audit scored.", param=f"{side}_data")


def _pairing(old_data: MatchData | None, new_data: MatchData | None) -> str | None:
    """Why the two versions' scores cannot be paired, or None when they can."""
    if old_data is None or new_data is None:
        return "no scores were given for both versions, only their audits"
    if not (old_data.has_identities and new_data.has_identities):
        return "the comparisons carry no identities (the paired bootstrap resamples them)"
    why = paired_mismatch(old_data, new_data)
    return None if why is None else f"the trials differ: {why}"


def _independence(old: Audit, new: Audit, old_data: MatchData | None, new_data: MatchData | None) -> str:
    """The unpaired rows' assumption, and whether these audits make it doubtful."""
    base = ("Unpaired: se(NEW - OLD) = sqrt(se_OLD^2 + se_NEW^2) assumes the two audits' identities independent.")
    if old_data is not None and new_data is not None:
        shared = len(set(old_data.identity_names.tolist()) & set(new_data.identity_names.tolist()))
        if not shared:
            return base + " They share no identity."
        why = f"they share {shared:,} identities"
    elif old.exact.summary.get("data") is not None and old.exact.summary.get("data") == new.exact.summary.get("data"):
        why = "their data have the same counts per group, so they are probably the same identities"
    else:
        return base + " Whether they share identities is unknown (no scores given)."
    return (base + f" Doubtful here: {why}. Scored by two versions, the same identities usually err together, "
            "which makes these intervals wider than the paired ones (conservative), but that is not guaranteed; "
            "give both versions' scores of the same trials for a paired diff.")


def _source(audit: Audit, given: Any, data: MatchData | None) -> dict:
    return {"source": "in memory" if isinstance(given, Audit) else str(given), "command": audit.command,
            "version": audit.version, "trials": None if data is None or data.out_of_core else trials_digest(data)}


def diff_audits(old: Audit, new: Audit, old_data: MatchData | None = None, new_data: MatchData | None = None, *,
                level: float = 0.95, n_resamples: int = 1000, seed: int = 0, method: str = "double-or-nothing",
                progress: bool = False, sources: tuple[Any, Any] = (None, None)) -> ad.AuditDiff:
    """NEW - OLD per FMR target both audits hold, metric and view: paired when both versions' scores of the same
    trials are given (``old_data``, ``new_data``, checked against their audits), else unpaired from the audits'
    standard errors, the reason stated. ``sources``: what the caller gave (paths), recorded."""
    _same_definitions(old, new)
    t_old, t_new = (set(map(float, a.exact.config.fmr_targets)) for a in (old, new))
    targets = sorted(t_old & t_new, reverse=True)
    if not targets:
        raise InputError(f"the audits share no FMR target (OLD: {sorted(t_old)}, NEW: {sorted(t_new)}); audit both "
                         "at a common target.", param="new")
    skipped = [f"FMR target {t:g}: only in {side.upper()}" for side, ts in (("old", t_old - t_new),
                                                                             ("new", t_new - t_old)) for t in sorted(ts)]
    views_old, views_new = (set(a.groups) for a in (old, new))
    skipped += [f"group {g}: only in {side.upper()}" for side, vs in (("old", views_old - views_new),
                                                                       ("new", views_new - views_old)) for g in sorted(vs)]
    why = _pairing(old_data, new_data)
    notes: list[str] = []
    if why is None:
        records, reps = paired_bootstrap(new_data, old_data, targets, method=method, n_resamples=n_resamples,
                                         seed=seed, level=level, threshold_impostors=old.exact.config.threshold_impostors,
                                         rule=old.exact.config.rule, progress=progress, group_fmr=True)
        _check_scores(old, old_data, "old", records, "model_b")
        _check_scores(new, new_data, "new", records, "model_a")
        rows = ad.paired_rows(records, reps, level)
        pairing = (f"paired: both versions scored the same trials (fingerprint {trials_digest(old_data)[:16]}), "
                   f"paired identity bootstrap ({method}, {n_resamples} replicates, seed {seed}); verdicts by max-T "
                   "over each metric's views at each target")
        how = f"paired identity bootstrap ({method})"
    else:
        keys = set(_points(old, targets)) & set(_points(new, targets))
        est_old, est_new = _estimates(old, "old", keys), _estimates(new, "new", keys)
        shared = [k for k in keys if k in est_old and k in est_new]
        skipped += [f"{k[0]} of {k[2]} at FMR {k[1]:g}: no interval in {side.upper()}"
                    for side, est in (("old", est_old), ("new", est_new)) for k in sorted(keys - set(est))]
        rows = ad.unpaired_rows({k: est_old[k] for k in shared}, {k: est_new[k] for k in shared}, level)
        pairing = f"unpaired: {why}; each audit's own standard errors, Šidák over each metric's views at each target"
        how, n_resamples, seed = "unpaired normal (the audits' standard errors)", None, None
        notes.append(_independence(old, new, old_data, new_data))
    views = list(old.groups)
    rows.sort(key=lambda r: (list(_FIELD).index(r["metric"]), -r["fmr_target"], views.index(r["view"])))
    curves = {side: [c for c in a.exact.det if c["weighting"] == "pooled"] for side, a in zip(SIDES, (old, new))}
    notes += [f"{side.upper()} has no DET curves ({a.missing_arrays})" for side, a in zip(SIDES, (old, new))
              if a.missing_arrays]
    return ad.AuditDiff(rows, why is None, pairing, level, how, n_resamples, seed,
                        *(_source(a, s, d) for a, s, d in zip((old, new), sources, (old_data, new_data))),
                        skipped=skipped, notes=notes, curves=curves)


__all__ = ["SIDES", "diff_audits"]
