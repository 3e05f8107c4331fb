"""The result of a label-free estimate (:class:`Estimate`): per-group fits, rates with credible bands in two kinds,
the fit checks, limits and warnings; its printed summary, table and JSON. For ``family="auto"`` it also holds each
family's own estimate and which of them were joined per group (:mod:`matchaudit.labelfree.robust`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from matchaudit.encoding import jsonable
from matchaudit.formatting import fmt, interval
from matchaudit.labelfree.curves import band

KINDS = ("population", "finite-sample")
KIND_NOTE = {
    "population": "parametric: rates of the fitted score distributions (what the system does on this population)",
    "finite-sample": "counted on the actual pairs, labels of unlabelled pairs drawn per posterior draw",
}


class RateDraws(NamedTuple):
    """One kind's rates per posterior draw, what its bands summarise: fnmr / thr (M, G, A), gt (M, A), gfmr / gfnmr
    (M, G, A) for M draws, G groups and A FMR targets; the DET curve (M, G, K) on ``grid``; which targets are
    extrapolated (G, A)."""

    fnmr: np.ndarray
    thr: np.ndarray
    gt: np.ndarray
    gfmr: np.ndarray
    gfnmr: np.ndarray
    grid: np.ndarray
    curve: np.ndarray
    extrapolated: np.ndarray


@dataclass
class GroupFit:
    """One group's data, start, draws and diagnostics (scores in the user's units)."""

    name: str
    scores: np.ndarray
    labels: np.ndarray  # float, NaN = unlabelled
    init: dict
    params: dict  # natural parameters, arrays over the kept draws (user's units)
    diagnostics: dict
    sampler_info: dict
    likelihood: dict = field(default_factory=dict)  # how the unlabelled likelihood was computed (binned.Compressed)
    counted_on: dict = field(default_factory=dict)  # the cells finite-sample rates and the PPC count on

    @property
    def n_labelled(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.labels)))


@dataclass
class Estimate:
    """Result of :func:`estimate`. ``print(result)`` for a summary, ``to_dict()`` for JSON, ``to_frame()`` for the
    table (CSV)."""

    family: str
    family_description: str
    rule: str
    level: float
    sampler: str
    chains: int
    warmup: int
    draws: int
    seed: int
    fmr_targets: tuple[float, ...]
    groups: list[GroupFit]
    results: dict  # kind -> outputs (see _outputs)
    ppc: dict  # group -> check
    limits: list[str]
    warnings: list[str] = field(default_factory=list)
    by_family: dict[str, "Estimate"] = field(default_factory=dict)  # family="auto": each family's own estimate
    selection: dict = field(default_factory=dict)  # family="auto": per group, which families fit and were joined
    reference: str | None = None  # family="auto": the family whose fit (groups, ppc) is shown
    rate_draws: dict[str, RateDraws] = field(default_factory=dict, repr=False)  # kind -> the draws ``results`` summarise

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.groups]

    def table(self) -> pd.DataFrame:
        """The old name of :meth:`to_frame` (a FutureWarning; removed in 1.0)."""
        warnings.warn("Estimate.table() is now to_frame() (removed in 1.0).", FutureWarning, stacklevel=2)
        return self.to_frame()

    def to_frame(self) -> pd.DataFrame:
        """Long table: one row per (family, kind, quantity, FMR target, group) with median and band (``to_frame``,
        the verb of every result's table: :class:`Protocol`, :class:`AllGroupsResult`, :class:`ModelComparison`).
        ``family``: the estimate's own (``"robust"`` for ``family="auto"``, followed by each family's rows);
        ``spread`` (``family="auto"``): the misspecification allowance's factor behind each row's band (1: none;
        each family's own rows are not spread)."""
        spread = {g: sel.get("allowance", {}).get("spread", 1.0) for g, sel in self.selection.items()}
        rows = []
        for fam, est in (("robust" if self.by_family else self.family, self), *self.by_family.items()):
            for kind, res in est.results.items():
                for q in ("fnmr_at_fmr", "threshold_at_fmr", "global_threshold", "fmr_at_global", "fnmr_at_global"):
                    for entry in res[q]:
                        row = {"family": fam, "kind": kind, "quantity": q,
                               **{k: v for k, v in entry.items() if k != "families"}}
                        if self.by_family:
                            row["spread"] = 1.0 if est is not self else spread.get(
                                entry["group"], max(spread.values(), default=1.0))
                        rows.append(row)
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        """What estimate.json holds (JSON-ready)."""
        return jsonable({
            "method": "SPE-FR (Chouldechova et al., ECCV 2022), matchaudit re-implementation",
            "family": self.family, "family_description": self.family_description,
            "decision_rule": f"accept iff score {self.rule} threshold", "level": self.level,
            "sampler": self.sampler, "chains": self.chains, "warmup": self.warmup, "draws": self.draws,
            "seed": self.seed, "fmr_targets": list(self.fmr_targets),
            "groups": [{
                "name": g.name, "n_pairs": int(g.scores.size), "n_labelled": g.n_labelled,
                "init": g.init, "posterior": {k: band(v, self.level) for k, v in g.params.items()},
                "diagnostics": g.diagnostics, "sampler_info": g.sampler_info,
                "likelihood": g.likelihood, "counted_on": g.counted_on,
            } for g in self.groups],
            "results": {k: {"note": KIND_NOTE[k], **v} for k, v in self.results.items()},
            "ppc": {g: {k: v for k, v in c.items() if k in ("ks", "ks_pvalue", "bandwidth", "tail")}
                    for g, c in self.ppc.items()},
            "limits": self.limits, "warnings": self.warnings,
            **({"reference_family": self.reference, "selection": self.selection,
                "families": {f: e.to_dict() for f, e in self.by_family.items()}} if self.by_family else {}),
        })

    def __str__(self) -> str:
        lines = [
            f"Label-free estimate (SPE-FR), family {self.family_description}",
            f"sampler {self.sampler}: {self.chains} chains x {self.draws} draws (+{self.warmup} warm-up), seed {self.seed}; "
            f"accept iff score {self.rule} t; {100 * self.level:g}% equal-tailed credible bands",
        ]
        if self.by_family:
            lines += self._selection_lines()
        else:
            lines += [self._group_line(g) for g in self.groups]
        for kind, res in self.results.items():
            lines.append(f"{kind} ({KIND_NOTE[kind]}){', robust' if self.by_family else ''}:")
            lines += _result_lines(res)
        for fam, est in self.by_family.items():
            lines.append(f"{fam}, population (per family):")
            lines += _result_lines(est.results["population"], globals_too=False)
        lines.append("Limits:")
        lines += [f"  - {x}" for x in self.limits]
        lines += [f"Warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _group_line(self, g: GroupFit) -> str:
        pi = band(g.params["pi"], self.level)
        d = g.diagnostics["max"]
        return (f"  {g.name}: {g.scores.size} pairs ({g.n_labelled} labelled), share of matches {pi['median']:.3f} "
                f"[{pi['lower']:.3f}, {pi['upper']:.3f}], max R-hat {d['rhat']:.3f}, min ESS {d['ess']:.0f}, PPC KS p "
                f"{self.ppc[g.name]['ks_pvalue']:.2f}, tail check p {self.ppc[g.name]['tail']['pvalue']:.2f}; "
                f"{_likelihood_text(g)}")

    def _selection_lines(self) -> list[str]:
        """Per group of a robust estimate: each family's checks, and which were joined."""
        lines = []
        for g in self.groups:
            sel = self.selection[g.name]
            each = []
            for fam, est in self.by_family.items():
                c = est.ppc[g.name]
                each.append(f"{fam} {'fits' if fam in sel['fitting'] else 'left out'} (KS p {c['ks_pvalue']:.2f}, "
                            f"tail p {c['tail']['pvalue']:.2f})")
            alarm = "  ALARM: see the warnings" if sel["alarm"] else ""
            f = sel.get("allowance", {}).get("spread", 1.0)
            wide = f", spread x{f:.2g} (as {sel['allowance']['effective_scores']:,} scores)" if f > 1 else ""
            lines.append(f"  {g.name}: {g.scores.size} pairs ({g.n_labelled} labelled); {'; '.join(each)}; bands "
                         f"joined over {', '.join(sel['used'])}{wide}{alarm}")
        return lines


def _result_lines(res: dict, globals_too: bool = True) -> list[str]:
    """Printed lines of one kind's results: FNMR at each FMR target per group, then the rates at the global threshold."""
    lines = []
    for e in res["fnmr_at_fmr"]:
        flag = "  [tail extrapolation]" if e["extrapolated"] else ""
        lines.append(f"  FNMR @ FMR {e['target']:g}  {e['group']}: {fmt(e['median'], 'rate')} "
                     f"{interval(e['lower'], e['upper'], 'rate')}{flag}")
    for e in res["fmr_at_global"] if globals_too else ():
        f = next(x for x in res["fnmr_at_global"] if x["target"] == e["target"] and x["group"] == e["group"])
        lines.append(f"  global threshold (pooled FMR {e['target']:g}) {e['group']}: FMR {fmt(e['median'], 'rate')} "
                     f"{interval(e['lower'], e['upper'], 'rate')}, FNMR {fmt(f['median'], 'rate')} "
                     f"{interval(f['lower'], f['upper'], 'rate')}")
    return lines


def _likelihood_text(g: GroupFit) -> str:
    lik = g.likelihood
    if not lik:
        return "likelihood per score"
    n_u = lik["scores"]
    if lik["method"].startswith("exact"):
        return f"likelihood exact over {lik['cells']} distinct values of {n_u} unlabelled scores"
    return (f"likelihood binned: {n_u} unlabelled scores in {lik['cells']} bins (2 points each, within-bin RMS "
            f"{lik['within_bin_rms']:.2g} standardised)")
