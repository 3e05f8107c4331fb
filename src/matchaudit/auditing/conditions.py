"""Trial conditions as groups (``ma.audit_conditions``, docs/conditions.md): the passes. A condition is a property of
a comparison, not of an identity, so the data are relabelled twice, each comparison's group becoming its condition
(then its condition x identity group, per side), with the identities and their codes unchanged; both relabellings
run through the engine's identity bootstrap with the same scheme and seed, so each identity has the same weight in
every condition and cell of a replicate, and the deployed threshold (over all impostors, every condition) is the
same in both runs, re-set in every replicate. The records are :mod:`matchaudit.estimators.conditions`'."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from matchaudit import checks
from matchaudit import resampling as rs
from matchaudit.auditing.identity_replicates import IdentityReplicates
from matchaudit.choices import PAIRED_SCHEMES
from matchaudit.definitions import Rule
from matchaudit.engine import Counts
from matchaudit.errors import InputError, listing
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators.conditions import ConditionAudit, Layout, Rates, condition_records, zero_bounds
from matchaudit.model import IDENTITY_SOURCES, MatchData, PairBlock
from matchaudit.progress import PASS_UNIT, Meter

MAX_CONDITIONS = 64
"""The most condition values (or value combinations) one analysis takes: each is a view of every replicate, and
beyond this the per-condition rates rest on too few comparisons to say anything (bin a continuous condition)."""


def condition_codes(data: MatchData, conditions: str | Sequence[str] | None, reference: str | None
                    ) -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray]:
    """The condition columns used, the condition values (the reference first, then sorted) and each comparison's
    value code; InputError for data without conditions or identities, an unknown column, one value only, more than
    :data:`MAX_CONDITIONS`, or a value without genuine or impostor comparisons."""
    if data.conditions is None:
        if data.protocol == "all-pairs":
            raise InputError("trial conditions are attributes of each comparison (language match, channel...), and "
                             "all pairs of samples have none: give a comparison table with a condition column "
                             "(load_comparisons(..., condition_cols=...), --condition-cols).", param="conditions")
        raise InputError("these comparisons carry no trial conditions: load them with condition_cols=... "
                         "(--condition-cols), a column of the comparison table or the NIST SRE key.",
                         param="conditions")
    if not data.has_identities:
        raise InputError("the conditions' intervals resample identities (comparisons of one identity are dependent "
                         f"in every condition), and these comparisons carry none. Give them ({IDENTITY_SOURCES}).")
    have = data.conditions.names
    cols = have if conditions is None else (
        (conditions,) if isinstance(conditions, str) else tuple(conditions))
    unknown = [c for c in cols if c not in have]
    if unknown or not cols:
        raise InputError(f"condition {listing([repr(c) for c in unknown] or ['(none)'])} is not among the data's "
                         f"condition columns ({listing([repr(c) for c in have])}).", param="conditions")
    values = data.conditions.columns[cols[0]].astype(object)
    for c in cols[1:]:
        values = values + "|" + data.conditions.columns[c].astype(object)
    names, counts = np.unique(values.astype(str), return_counts=True)
    what = " x ".join(cols)
    if names.size < 2:
        raise InputError(f"condition {what} has one value only ({names[0]!r}): there is nothing to compare, and its "
                         "rates are the audit's own.", param="conditions")
    if names.size > MAX_CONDITIONS:
        raise InputError(f"condition {what} has {names.size:,} values, more than {MAX_CONDITIONS} (the limit, "
                         "MAX_CONDITIONS): bin it (e.g. duration in a few bins) or pick fewer columns.",
                         param="conditions")
    if reference is not None and reference not in names:
        raise InputError(f"reference {reference!r} is not a value of condition {what} ({listing(list(names))}).",
                         param="reference")
    ref = names[0] if reference is None else reference
    order = (str(ref), *[str(n) for n in names if n != ref])
    code = np.array([order.index(n) for n in names])[np.searchsorted(names, values.astype(str))]
    genuine = np.bincount(code, weights=data.pairs.genuine, minlength=len(order))
    total = np.bincount(code, minlength=len(order))
    empty = [f"{order[c]!r} ({int(genuine[c]):,} genuine, {int(total[c] - genuine[c]):,} impostor)"
             for c in range(len(order)) if genuine[c] == 0 or genuine[c] == total[c]]
    if empty:
        raise InputError(f"condition {what}: {listing(empty)} lack genuine or impostor comparisons, so FNMR or FMR is "
                         "undefined there (and so is the equalised rate). Drop those comparisons or merge the value "
                         "with another.", param="conditions")
    return cols, order, code.astype(np.int64)


def _relabelled(data: MatchData, code_a: np.ndarray, code_b: np.ndarray, names: tuple[str, ...],
                group_by: tuple[str, ...]) -> MatchData:
    """``data`` with each comparison's side groups replaced by ``code_a``/``code_b`` (groups ``names``); the
    identities, their codes and the scores unchanged (the engine's identity weights depend on them only)."""
    p: PairBlock = data.pairs
    return dataclasses.replace(data, pairs=dataclasses.replace(p, group_a=code_a, group_b=code_b), group_names=names,
                               group_by=group_by, identity_group=np.zeros(data.n_identities, np.int64),
                               conditions=None, attacks=None)


def _rates(counts: Counts, fnmr: np.ndarray, fmr: np.ndarray, data: MatchData, level: float, n_conditions: int
           ) -> Rates:
    """The replicates of one relabelled run with the plug-in's counts and each view's zero-error bounds."""
    plug = counts.plug_in()
    gen_total = bs.views_gen(plug.genuine_total)[0]  # (1 + V,)
    gen_err = gen_total[None, :] - bs.views_gen(plug.target_genuine_accepted)[0]
    imp_total = bs.views_imp(plug.impostor_total, plug)[0]
    imp_acc = bs.views_imp(plug.target_impostor_accepted, plug)[0]
    p = data.pairs
    V = len(data.group_names)
    K = data.n_identities
    same = p.group_a == p.group_b
    sizes, ids = [], []
    for v in range(-1, V):  # -1: every comparison
        gen = p.genuine & ((p.group_a == v) if v >= 0 else True)
        imp = ~p.genuine & ((same & (p.group_a == v)) if v >= 0 else True)
        sizes.append(np.bincount(p.identity_a[gen], minlength=K))
        ids.append(int(np.unique(np.concatenate([p.identity_a[imp], p.identity_b[imp]])).size))
    bound = zero_bounds(sizes, ids, level)
    joint = zero_bounds(sizes, ids, 1 - (1 - level) / n_conditions)
    T = fnmr.shape[1]
    fnmr = fnmr.copy()  # the plug-in as errors / comparisons (1 - accepted / comparisons can differ in the last bit)
    with np.errstate(invalid="ignore", divide="ignore"):
        fnmr[0] = np.where(gen_total > 0, gen_err / np.maximum(gen_total, 1), np.nan)
    return Rates({"fnmr": fnmr, "fmr": fmr}, {"fnmr": gen_err, "fmr": imp_acc},
                 {"fnmr": np.broadcast_to(gen_total, (T, V + 1)), "fmr": np.broadcast_to(imp_total, (T, V + 1))},
                 {m: np.broadcast_to(b, (T, V + 1)) for m, b in bound.items()},
                 {m: np.broadcast_to(b, (T, V + 1)) for m, b in joint.items()})


def audit_conditions(data: MatchData, conditions: str | Sequence[str] | None = None, fmr=(1e-3,), *,
                     reference: str | None = None, by_group: bool = True, method: str = "double-or-nothing",
                     n_resamples: int = 1000, seed: int = 0, level: float = 0.95, rule: Rule = ">=",
                     progress: bool = False) -> ConditionAudit:
    """FNMR and FMR per trial condition (and per condition x group when the data are grouped and ``by_group``) at
    the deployed threshold of each FMR target (set on all impostor comparisons, every condition), the equalised
    rates (the unweighted mean over conditions, as NIST SRE's partitions), each condition minus the ``reference``
    (default: the first value) and the condition x group interactions ((B - A) under a condition minus (B - A) under
    the reference, A the first group), with intervals and p-values from one joint identity bootstrap (``method``:
    double-or-nothing or vertex; identities keep their weight across conditions) and Wald tests of "no condition
    effect" and "no interaction".

    ``conditions``: the condition column(s) to use, carried by the data (``load_comparisons(...,
    condition_cols=...)``, ``from_scores(..., conditions=...)``, the NIST SRE key's partition columns); several
    columns: their intersections. Default: every condition column the data carry.
    """
    targets = np.asarray(checks.numbers(fmr, "fmr", low=0.0, high=1.0, high_open=True), float)
    if not targets.size:
        raise InputError("no FMR target given.", param="fmr")
    checks.choice(method, PAIRED_SCHEMES, "method")
    level = checks.confidence(level, "level")
    n_resamples = bs.check_resamples(checks.integer(n_resamples, "n_resamples", low=1), level)
    seed = checks.seed(seed)
    by_group = checks.flag(by_group, "by_group")
    cols, conds, code = condition_codes(data, conditions, reference)
    p = data.pairs
    C = len(conds)
    cond_data = _relabelled(data, code, code, conds, (" x ".join(cols),))
    grouped = by_group and tuple(data.group_names) != ("all",)
    runs = [cond_data]
    groups: tuple[str, ...] = ()
    cell = np.full((C, 0), -1)
    if grouped:
        groups = tuple(data.group_names)
        G = len(groups)
        raw_a, raw_b = code * G + p.group_a, code * G + p.group_b
        used, inv = np.unique(np.concatenate([raw_a, raw_b]), return_inverse=True)
        cell = np.full(C * G, -1)
        cell[used] = np.arange(used.size)
        cell = cell.reshape(C, G)
        names = tuple(f"{conds[u // G]}|{groups[u % G]}" for u in used)
        runs.append(_relabelled(data, inv[:p.score.size], inv[p.score.size:], names,
                                (" x ".join(cols), *data.group_by)))
    scheme = rs.SCHEMES[method](seed)
    planned = [IdentityReplicates(d, n_resamples, rule, targets.size) for d in runs]
    with Meter(progress, "conditions bootstrap", sum(r.work for r in planned), PASS_UNIT) as meter:
        out = [r.run(scheme, targets, "all", meter) for r in planned]
    thresholds = out[0][0].target_threshold
    for _, fn, fm in out[1:]:  # the overall view is the same comparisons at the same replicate thresholds in each run
        if not (np.array_equal(fn[..., 0], out[0][1][..., 0], equal_nan=True)
                and np.array_equal(fm[..., 0], out[0][2][..., 0], equal_nan=True)):
            raise RuntimeError("the relabelled runs disagree on the overall view: their replicates are not joint")
    rates = [_rates(c, fn, fm, d, level, C) for (c, fn, fm), d in zip(out, runs)]
    records, tests = condition_records(targets, thresholds[0], Layout(conds, groups, cell), rates[0],
                                       rates[1] if grouped else None, method=method, level=level, seed=seed)
    details = {"rule": rule, "threshold_impostors": "all", "protocol": data.protocol, "data": data.fingerprint(),
               "comparisons_per_condition": {c: int(n) for c, n in zip(conds, np.bincount(code, minlength=C))}}
    reps = {name: {"fnmr": fn, "fmr": fm} for name, (_, fn, fm) in zip(("conditions", "cells"), out)}
    return ConditionAudit(records, tests, conds, groups, cols, targets, method, n_resamples, seed, level, details,
                          reps)


__all__ = ["MAX_CONDITIONS", "audit_conditions", "condition_codes"]
