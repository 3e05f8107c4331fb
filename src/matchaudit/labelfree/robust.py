"""The family-robust label-free estimate: several families fitted to the same scores, the bands of those that fit
each group joined, and an alarm where they disagree (#44 items 1, 2 and 4).

Unlabelled scores show only their distribution; two families can both reproduce it and split it differently into
non-matches and matches, with different FNMR at FMR targets (docs/labelfree.md, "Fit checks"). No single family's
band carries that uncertainty, so the default estimate fits every candidate (:func:`candidates`) and, per group and
quantity, reports the **union** of the bands of the families whose fit checks pass there (:func:`fits`), the
median being the median of their medians. Where those bands do not overlap, the scores do not identify the split:
a warning names the group, the quantity and the families' bands, and says how many labelled pairs, with scores in
which range, would tell the two furthest families apart (:func:`labels_needed`).

This module sees estimates only as their ``results`` dictionaries, ``ppc`` checks and per-group draws, so that it
depends on nothing of :mod:`matchaudit.labelfree.api` but what it is handed.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from matchaudit.formatting import fmt, interval
from matchaudit.labelfree.binned import compress
from matchaudit.labelfree.model import match_probability
from matchaudit.labelfree.result import RateDraws
from matchaudit.labelfree.twopiece import BOUND_SLACK, Family

RAW = ("sas", "t", "sas-mix")  # every score: two-piece models on the raw scale (LLR-like and unbounded scores)
BOUNDED = ("sas-atanh", "t-atanh", "sas-atanh-mix")  # added when every score lies in [-1, 1] (cosine-like)
MISFIT = 0.001  # a family whose KS or tail-check p-value is below this misses the group's scores (chosen by measurement:
# docs/labelfree.md, "Real-like recovery"; at 0.05 families that split the scores right were left out)
QUANTITIES = ("fnmr_at_fmr", "threshold_at_fmr", "fmr_at_global", "fnmr_at_global")
DISPUTED = ("fnmr_at_fmr", "fmr_at_global", "fnmr_at_global")  # the rates whose disagreement raises the alarm
POWER_Z = 1.959964 + 0.841621  # two-sided 5% test with 80% power
ADVICE_DRAWS = 200  # posterior draws the match probabilities of the label advice average over
ADVICE_CELLS = 2048  # score cells they are evaluated on
MEASURED_LABELS = 500  # labelled pairs at random per group that brought the truth inside the band (docs/labelfree.md)
MEASURED = ("Measured on real-like score shapes (docs/labelfree.md, \"The allowance, measured\": deep-model cosine "
            "scores with look-alike shoulders, embedding and speaker cosines, PLDA-like LLRs; 2-8 groups of "
            "10,000-1,000,000 scores): the band held the counted truth for 92-100% of FNMR and FMR quantities on the "
            "shapes the allowance was chosen on and 81-100% on shapes and designs held out, but 23-67% on calibrated LLRs whose "
            "heavy tails every family misreads (every such miss alarmed); FNMR bands were 0.3-0.7 wide: without "
            "labels the split of overlapping scores rests on assumptions, and labelled pairs are the cure.")


EFFECTIVE_SCORES = 3000
"""Unlabelled scores per group beyond which the robust bands stop narrowing (:func:`allowance`). Chosen by measurement
on real-like shapes (docs/labelfree.md, "The allowance, measured"): every family is wrong on real scores,
its band shrinks as 1/sqrt(n) around its own split while its bias stays, and past a few thousand scores the union
of the families' bands missed the truth more often the more scores there were (2 groups x 100,000: 33-86%)."""


def allowance(unlabelled: Sequence[int], labelled: Sequence[int], effective: int | None) -> np.ndarray:
    """Per group, the factor its families' draws are spread by about their median (:func:`widened`):
    ``sqrt(n / effective)`` for a group of ``n > effective`` unlabelled scores, else 1; 1 also for a group with at
    least :data:`MEASURED_LABELS` labelled pairs.

    Why: a coarsened posterior (Miller & Dunson 2019, JASA 114: the likelihood raised to ``effective / n``) treats
    the scores as ``effective`` of them, so that a model's small misfit, which no more scores can remove, is not
    read as certainty; to first order it is the posterior spread by ``sqrt(n / effective)``. Enough labelled pairs
    anchor the split instead (500 at random brought the truth inside the unspread band, 100 did not:
    docs/labelfree.md, "Labels as the cure"), so fewer than that leave the allowance on."""
    n = np.asarray(unlabelled, float)
    spread = np.array([r == "spread" for r in allowance_reasons(unlabelled, labelled, effective)])
    return np.where(spread, np.sqrt(n / (effective or 1)), 1.0)


def allowance_reasons(unlabelled: Sequence[int], labelled: Sequence[int], effective: int | None) -> list[str]:
    """Per group, why :func:`allowance` spreads it or not: ``"spread"``, ``"labelled pairs"`` (at least
    :data:`MEASURED_LABELS`), ``"few scores"`` (at most ``effective`` unlabelled) or ``"off"`` (``effective`` None)."""
    return ["off" if effective is None else "labelled pairs" if m >= MEASURED_LABELS else
            "few scores" if u <= effective else "spread" for u, m in zip(unlabelled, labelled)]


def spread(x: np.ndarray, f: np.ndarray, rate: bool) -> np.ndarray:
    """Draws ``x`` (M, G, ...) spread by ``f[g]`` about each group's and column's median (NaN draws ignored); groups
    with ``f == 1`` are returned untouched. Rates are spread on the angle scale ``asin(sqrt(x))``, the
    variance-stabilising scale of a proportion, and clipped to its range [0, pi/2]: bounded and finite at 0 and 1,
    so no draw leaves [0, 1], a rate of 1e-27 is not flung towards 1 (as on the logit scale, where tail draws lie
    dozens of units from the median), and a column of mostly zeros spreads like any other. Thresholds are spread
    as scores."""
    wide = f > 1.0
    if not wide.any():
        return x
    out = np.array(x, dtype=float)
    sub = out[:, wide]
    fw = f[wide].reshape((1, -1) + (1,) * (x.ndim - 2))
    z = np.arcsin(np.sqrt(np.clip(sub, 0.0, 1.0))) if rate else sub
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column of NaN draws has no median: it stays NaN
        m = np.nanmedian(z, axis=0, keepdims=True)
    moved = m + fw * (z - m)
    out[:, wide] = np.sin(np.clip(moved, 0.0, np.pi / 2)) ** 2 if rate else moved
    return out


def widened(d: RateDraws, f: np.ndarray, bounds: tuple[float, float] | None = None) -> RateDraws:
    """The draws of one kind spread by the groups' :func:`allowance` ``f`` (G,): rates on the angle scale, each
    draw's DET curve kept non-increasing (its running minimum over the ascending FMR grid), per-group thresholds as
    scores and the global threshold by the largest factor, both kept within ``bounds`` (the scores' support, e.g.
    [-1, 1] for cosines); ``d`` itself where no factor exceeds 1."""
    if not (f > 1.0).any():
        return d
    lo, hi = bounds if bounds is not None else (-np.inf, np.inf)
    gt = spread(d.gt[:, None, :], np.array([f.max()]), False)[:, 0, :]
    return d._replace(fnmr=spread(d.fnmr, f, True), thr=np.clip(spread(d.thr, f, False), lo, hi),
                      gt=np.clip(gt, lo, hi), gfmr=spread(d.gfmr, f, True), gfnmr=spread(d.gfnmr, f, True),
                      curve=np.minimum.accumulate(spread(d.curve, f, True), axis=2))


def bounded(scores: np.ndarray) -> bool:
    """Whether every score lies in [-1, 1] (cosine-like; up to float32 rounding): then the families on Fisher's z
    join the candidates, and spread thresholds stay in [-1, 1]."""
    return bool(np.all(np.abs(np.asarray(scores, float)) <= 1.0 + BOUND_SLACK))


def candidates(scores: np.ndarray) -> tuple[str, ...]:
    """The families the default estimate fits: two-piece SAS and t on the raw scores, and on their Fisher z when
    every score lies in [-1, 1] (cosine-like; up to float32 rounding)."""
    return RAW + (BOUNDED if bounded(scores) else ())


def fits(check: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether one family's fit checks of one group pass (KS and tail posterior predictive p-values at least
    :data:`MISFIT`), and if not, why."""
    ks, tail = float(check["ks_pvalue"]), float(check["tail"]["pvalue"])
    why = [x for x in (ks < MISFIT and f"KS check p {ks:.3f}", tail < MISFIT and f"tail check p {tail:.3f}") if x]
    return not why, "; ".join(why)


def _union(entries: Sequence[dict]) -> dict:
    """One band from several families' bands of the same quantity: their union, the median of their medians."""
    med = [e["median"] for e in entries]
    out = {"median": float(np.nanmedian(med)) if np.isfinite(med).any() else float("nan"),
           "lower": float(np.nanmin([e["lower"] for e in entries])),
           "upper": float(np.nanmax([e["upper"] for e in entries]))}
    if "extrapolated" in entries[0]:
        out["extrapolated"] = any(e["extrapolated"] for e in entries)
    return out


def _union_arrays(bands: Sequence[dict]) -> dict:
    """:func:`_union` elementwise over arrays (curves)."""
    stack = {k: np.stack([np.asarray(b[k], float) for b in bands]) for k in ("median", "lower", "upper")}
    return {"median": np.median(stack["median"], axis=0), "lower": stack["lower"].min(axis=0),
            "upper": stack["upper"].max(axis=0)}


def combine(results: Mapping[str, dict], used: Mapping[str, Sequence[str]], everywhere: Sequence[str]) -> dict:
    """The robust results of one kind from each family's (``results[family]``): per group (its rates at its own
    thresholds and at the global one) the union over the families ``used[group]``; the global threshold itself over
    the families used for any group. Measures across groups over the families used ``everywhere``: ``p_worse``
    their mean (equal-weight model averaging), fairness measures the union of their bands."""
    first = results[everywhere[0]]
    anywhere = list(dict.fromkeys(f for fams in used.values() for f in fams))

    def joined(q: str, entry: dict) -> dict:
        fams = anywhere if entry["group"] == "all" else used[entry["group"]]
        same = [next(e for e in results[f][q] if e["target"] == entry["target"] and e["group"] == entry["group"])
                for f in fams]
        return {"target": entry["target"], "group": entry["group"], **_union(same), "families": list(fams)}

    out: dict[str, Any] = {q: [joined(q, e) for e in first[q]] for q in (*QUANTITIES, "global_threshold")}
    curve = first["curve"]
    out["curve"] = {"fmr": curve["fmr"], **{g: _union_arrays([results[f]["curve"][g] for f in used[g]])
                                            for g in curve if g != "fmr"}}
    out["p_worse"] = {k: {"groups": v["groups"], "p_row_worse_than_column": np.mean(
        [np.asarray(results[f]["p_worse"][k]["p_row_worse_than_column"]) for f in everywhere], axis=0)}
        for k, v in first["p_worse"].items()}
    out["fairness"] = {k: {m: _union([{x: float(np.asarray(results[f]["fairness"][k][m][x])) for x in
                                      ("median", "lower", "upper")} for f in everywhere]) for m in v}
                       for k, v in first["fairness"].items()}
    return out


def disagreements(results: Mapping[str, Mapping[str, dict]], used: Mapping[str, Sequence[str]], group: str,
                  rate_kind: str = "rate") -> list[dict]:
    """The quantities of ``group`` (both kinds) on which the bands of its families ``used[group]`` do not overlap:
    per quantity, the two families furthest apart and the text of each family's band."""
    fams = used[group]
    found = []
    if len(fams) < 2:
        return found
    for kind in next(iter(results.values())):
        for q in DISPUTED:
            for target in sorted({e["target"] for e in results[fams[0]][kind][q]}):
                es = {f: next(e for e in results[f][kind][q] if e["target"] == target and e["group"] == group)
                      for f in fams}
                if max(e["lower"] for e in es.values()) <= min(e["upper"] for e in es.values()):
                    continue
                low = min(es, key=lambda f: es[f]["median"])
                high = max(es, key=lambda f: es[f]["median"])
                found.append({"kind": kind, "quantity": q, "target": target, "families": (low, high),
                              "bands": {f: f"{fmt(e['median'], rate_kind)} {interval(e['lower'], e['upper'], rate_kind)}"
                                        for f, e in es.items()}})
    return found


def alarm_notes(group: str, fitting: Sequence[str], why: Mapping[str, str], split: Mapping[str, float]) -> list[str]:
    """The warnings that alarm ``group`` besides its families' disagreement (:func:`disagreements`): the chains of
    a family used there settle apart (``split``: family -> R-hat), no family fits (``why``: family -> the failed
    check, "" for those that fit), or only one does -- then nothing checks its split against a second model, and
    on real-like scores most misses of the robust band were in such groups (docs/labelfree.md, "The alarm")."""
    notes = []
    if split:
        notes.append(f"group {group}: the chains of {', '.join(f'{f} (R-hat {r:.2f})' for f, r in split.items())} "
                     "settle in different places: several splits of these scores into matches and non-matches fit "
                     "them, and the bands join the chains' (more draws will not settle it; labelled pairs will)")
    if not fitting:
        notes.append(f"group {group}: no family fits its scores ({'; '.join(f'{f}: {w}' for f, w in why.items())}); "
                     "its bands are the union over every family, all of which miss the scores: label some pairs, "
                     "and read these bands as indicative only")
    elif len(fitting) == 1:
        others = "; ".join(f"{f}: {w}" for f, w in why.items() if f != fitting[0])
        notes.append(f"group {group}: only {fitting[0]} fits its scores (the checks reject the others: {others}), so "
                     "its split into matches and non-matches is not checked against a second model; label about "
                     f"{MEASURED_LABELS} of its pairs drawn at random and give them as labels (--label-col)")
    return notes


def labels_needed(scores: np.ndarray, fams: Sequence[Family], params: Sequence[Mapping[str, np.ndarray]]) -> dict:
    """How many labelled pairs would tell two families apart: where their posterior match probabilities ``P_a(s)``
    and ``P_b(s)`` differ most (the scores with ``|P_a - P_b|`` at least half its maximum), labels drawn at random
    there are Bernoulli with mean ``P_a`` or ``P_b``; a two-sided 5% test with 80% power needs
    ``n = (z + z')^2 r (1 - r) / d^2`` of them, ``d`` the mean difference and ``r`` the mean probability there.
    Returns ``n``, the score range, how many pairs lie in it, and whether ``n`` exceeds them."""
    cells = compress(np.asarray(scores, float), ADVICE_CELLS)
    pick = [np.unique(np.linspace(0, np.asarray(p["pi"]).size - 1, ADVICE_DRAWS).astype(int)) for p in params]
    pa, pb = (match_probability(f, {k: np.asarray(v)[i, None] for k, v in p.items()}, cells.values).mean(axis=0)
              for f, p, i in zip(fams, params, pick))
    d = np.abs(pa - pb)
    where = d >= 0.5 * d.max()
    w = cells.counts[where]
    dbar = float(np.average(d[where], weights=w)) if d.max() > 0 else 0.0
    r = float(np.average(0.5 * (pa + pb)[where], weights=w))
    n = math.inf if dbar == 0 else math.ceil(POWER_Z**2 * max(r * (1.0 - r), 1e-6) / dbar**2)
    pairs = int(w.sum())
    return {"n": n, "low": float(cells.values[where].min()), "high": float(cells.values[where].max()),
            "pairs_in_range": pairs, "enough_pairs": n <= pairs, "mean_difference": dbar}


def advice_text(group: str, found: list[dict], labels: dict | None) -> str:
    """The warning for a group whose families disagree: which quantities, each family's band, and the labels."""
    worst = found[0]
    what = {"fnmr_at_fmr": "FNMR at FMR", "fmr_at_global": "FMR at the global threshold of pooled FMR",
            "fnmr_at_global": "FNMR at the global threshold of pooled FMR"}
    bands = ", ".join(f"{f} {b}" for f, b in worst["bands"].items())
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    text = (f"group {group}: the families that fit its scores disagree on {what[worst['quantity']]} "
            f"{worst['target']:g} ({worst['kind']}: {bands}){more}: these scores do not identify how they split "
            "into matches and non-matches there, and the robust band is the union of the families' bands")
    advice = (f"; label about {MEASURED_LABELS} of its pairs drawn at random and give them as labels (--label-col): "
              f"on real-like scores {MEASURED_LABELS} random labelled pairs per group brought the truth inside the "
              "band in 86-94% of quantities where 100 did not (docs/labelfree.md, \"Labels as the cure\")")
    if labels is None or not math.isfinite(labels["n"]):
        return text + advice + "."
    return text + advice + (f". The two furthest families differ most for scores between {labels['low']:.4g} and "
                            f"{labels['high']:.4g}, where at least {labels['n']:,} labelled pairs are needed to tell "
                            "them apart (5% test, 80% power); labels only there did worse than labels at random.")
