"""Coverage study (the similarity-scoring paper's appendix B.1 protocol, at a configurable size).

Many synthetic vMF data sets (:mod:`matchaudit.simulation`), an interval per data set, method, nominal level
and FMR target; coverage = the share of intervals containing the truth, with its binomial standard error.

Two protocols (``identities``):

``shared`` (the paper's): one population of K identities, every data set a fresh draw of samples of the
  same identities. The estimand is conditional on the identities. Truth by quadrature
  (:mod:`matchaudit.studies.vmf_truth`): FNMR(t) per identity exactly from its concentration; the threshold
  at each FMR target from ``truth_samples`` draws per identity, each scored exactly against every other
  identity's vMF law (Monte Carlo in the draws only, with its standard error).
``fresh`` (the 1:1-matching CI work's): a new population per data set; the estimand is the population
  rate. Truth from the generating model: with centroids uniform on the sphere every sample is marginally
  uniform, so an impostor cosine ``s`` has ``(s+1)/2 ~ Beta((d-1)/2, (d-1)/2)`` exactly; FNMR exactly by
  Gauss-Legendre quadrature over kappa ~ U[lo, hi].

Metrics: ``ROC`` = FNMR at each data set's own threshold for the FMR target (truth: FNMR at the true
threshold); ``FMR`` and ``FNMR`` at the fixed true threshold of each target. Rule ``>=``, pooled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from matchaudit import checks
from matchaudit import resampling as rs
from matchaudit.auditing.class_passes import v_statistic
from matchaudit.data import from_embeddings
from matchaudit.engine import build_grid, identity_counts, run
from matchaudit.errors import InputError
from matchaudit.estimators import bootstrap as bs
from matchaudit.estimators import fairness_projection as fp
from matchaudit.estimators import intervals as iv
from matchaudit.estimators.bootstrap import RECENTRED
from matchaudit.estimators.closed_forms import closed_form
from matchaudit.estimators.studentized import STUDENTIZED, rate_studentization
from matchaudit.estimators.within_variance import within_variance
from matchaudit.metrics.fairness import summary_measures
from matchaudit.simulation import GroupSpec, VmfPopulation
from matchaudit.studies import vmf_truth as vt

ROC_METHODS = ("recentered", "naive", "gaussian", "vertex", "double-or-nothing")
FIXED_METHODS = ("wilson", "wilson-naive", "wald", "clopper-pearson", "jackknife", "recentered", "vertex",
                 "double-or-nothing")


@dataclass(frozen=True)
class CoverageConfig:
    n_datasets: int = 200
    n_identities: int = 200
    samples: int = 10
    dim: int = 128
    kappa: tuple[float, float] = (100.0, 800.0)
    n_resamples: int = 200
    fmr_targets: tuple[float, ...] = (1e-1, 1e-2, 1e-3)
    levels: tuple[float, ...] = (0.95, 0.9, 0.8, 0.5)
    identities: str = "shared"
    truth_samples: int = 0  # draws per identity of the shared truth's impostor Monte Carlo (0: 100 x samples)
    group_kappas: tuple[tuple[float, float], ...] = ()  # >= 2 groups (equal shares of identities) replace kappa
    n_cells: int = 1024
    seed: int = 0
    roc_methods: tuple[str, ...] = ROC_METHODS
    fixed_methods: tuple[str, ...] = FIXED_METHODS

    def __post_init__(self) -> None:
        """Enough data sets, identities and samples for FMR and FNMR to exist; FMR targets and levels in (0, 1);
        known methods; enough replicates for the highest level studied (:func:`bootstrap.check_resamples`)."""
        for param, value, least, why in (
                ("n_datasets", self.n_datasets, 1, "coverage is a share of data sets"),
                ("n_identities", self.n_identities, 2, "FMR needs impostor comparisons, between two identities"),
                ("samples", self.samples, 2, "FNMR needs genuine comparisons, between two samples of an identity"),
                ("n_resamples", self.n_resamples, 1, "the bootstrap intervals need replicates")):
            if value < least:
                raise InputError(f"{param}={value}: give at least {least} ({why}).", param=param)
        for param, given, known in (("roc_methods", self.roc_methods, ROC_METHODS),
                                    ("fixed_methods", self.fixed_methods, FIXED_METHODS)):
            bad = [m for m in given if m not in known]
            if bad:
                raise InputError(f"unknown method(s) {', '.join(map(repr, bad))}; choose from {', '.join(known)}.",
                                 param=param)
        checks.seed(self.seed)
        for param, values in (("fmr_targets", self.fmr_targets), ("levels", self.levels)):
            if not checks.numbers(values, param, low=0.0, high=1.0, low_open=True, high_open=True):
                raise InputError(f"{param} (none given): give at least one, each in (0, 1).", param=param)
        bs.check_resamples(self.n_resamples, max(self.levels))
        if self.dim < 3:
            raise InputError(f"dim={self.dim}: the exact truth needs dimension >= 3.", param="dim")
        if len(self.group_kappas) == 1 or self.n_identities < 2 * len(self.group_kappas):
            raise InputError(f"{len(self.group_kappas)} groups of {self.n_identities} identities: give at least two "
                             "groups of at least two identities each.", param="group_kappas")

    @property
    def groups(self) -> dict[str, GroupSpec]:
        """The population's groups: ``g0, g1, ...`` with equal shares of identities, or one group ``all``."""
        if not self.group_kappas:
            return {"all": GroupSpec(self.n_identities, self.kappa)}
        sizes = [len(a) for a in np.array_split(np.arange(self.n_identities), len(self.group_kappas))]
        return {f"g{i}": GroupSpec(k, tuple(r)) for i, (k, r) in enumerate(zip(sizes, self.group_kappas))}

    @property
    def truth_draws(self) -> int:
        """Draws per identity of the shared truth: 100 x samples by default, so that its threshold error is
        about sqrt(n / 4m) = 0.05 of a data set's FMR spread (:mod:`vmf_truth`)."""
        return self.truth_samples or 100 * self.samples


@dataclass
class Truth:
    thresholds: np.ndarray  # (T,) true threshold at each FMR target
    fmr: np.ndarray  # (T,) true FMR at it
    fnmr: np.ndarray  # (T,) true FNMR at it (= ROC truth), exact at the given thresholds
    fmr_se: np.ndarray  # (T,) Monte-Carlo standard error of ``fmr`` (0 when exact)
    roc_se: np.ndarray  # (T,) error of ``fnmr`` as the ROC truth, from the thresholds' error (0 when exact)
    group_fnmr: np.ndarray  # (G, T) each group's true FNMR at the thresholds (G = 0 without groups)


@dataclass
class CoverageResult:
    config: CoverageConfig
    rows: list[dict] = field(default_factory=list)
    truths: list[dict] = field(default_factory=list)

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows)


def _population(cfg: CoverageConfig, seed: int) -> VmfPopulation:
    return VmfPopulation.draw(cfg.groups, dim=cfg.dim, seed=seed)


def _data(cfg: CoverageConfig, sim):
    return from_embeddings(sim.embeddings, sim.samples.identity.to_numpy(), attributes=sim.samples[["group"]],
                           group_by="group" if cfg.group_kappas else ())


def truth_shared(cfg: CoverageConfig, pop: VmfPopulation) -> Truth:
    """Ground truth for the paper's protocol (identities fixed): thresholds from the impostor Monte Carlo of
    :class:`vmf_truth.ImpostorCosines` (``cfg.truth_draws`` per identity), FNMR there exactly."""
    imp = vt.ImpostorCosines.draw(pop, cfg.truth_draws, seed=10**6 + cfg.seed)
    st = vt.shared_thresholds(imp, np.asarray(cfg.fmr_targets, float))
    t, step = st.thresholds, 1e-4
    fnmr = vt.mean_fnmr(t, pop.kappas, cfg.dim)
    slope = (vt.mean_fnmr(t + step, pop.kappas, cfg.dim) - vt.mean_fnmr(t - step, pop.kappas, cfg.dim)) / (2 * step)
    groups = [vt.mean_fnmr(t, pop.kappas[pop.identity_groups == g], cfg.dim) for g in cfg.groups if cfg.group_kappas]
    return Truth(t, np.asarray(cfg.fmr_targets, float), fnmr, st.fmr_se, np.abs(slope) * st.threshold_se,
                 np.reshape(groups, (-1, len(t))))


def truth_fresh(cfg: CoverageConfig) -> Truth:
    """Ground truth when identities are redrawn per data set, from the generating vMF model, exactly: the
    threshold and FMR from the impostor cosine law ``(1 + s)/2 ~ Beta((d-1)/2, (d-1)/2)``; FNMR =
    E_kappa FNMR(t; kappa) by Gauss-Legendre quadrature over the kappa range. It replaces an average over
    1,000 random kappas (about 7% relative SD between seeds), then a Monte Carlo per node."""
    alphas = np.asarray(cfg.fmr_targets, float)
    t = vt.uniform_impostor_threshold(alphas, cfg.dim)
    specs = cfg.groups.values()
    laws = [vt.kappa_law(*g.kappa) for g in specs]
    per = np.array([vt.mean_fnmr(t, nodes, cfg.dim, weights) for nodes, weights in laws])
    share = np.array([g.n_identities for g in specs]) / cfg.n_identities  # genuine pairs follow identities
    zero = np.zeros_like(alphas)
    return Truth(t, alphas.copy(), share @ per, zero, zero, per if cfg.group_kappas else per[:0])


def _cover(r: iv.IntervalResult, truth: float) -> dict:
    lo, hi = r.confidence_interval
    return dict(covered=bool(lo <= truth <= hi), width=float(hi - lo), estimate=float(r.estimate),
                truth_below=bool(lo > truth))


def one_dataset(cfg: CoverageConfig, data, truth: Truth, i: int) -> list[dict]:
    """Intervals of every method / level / target on one data set; rows (method, metric, target, level,
    covered, width)."""
    out = []
    tt = truth.thresholds
    grid = build_grid(data, n_cells=cfg.n_cells, thresholds=tt)
    schemes = {m: bs.SCHEME_OF[m] for m in set(cfg.roc_methods) | (set(cfg.fixed_methods) & set(bs.BOOTSTRAP))}
    runs = {}
    for name in set(schemes.values()):
        runs[name] = run(data, rs.SCHEMES[name](cfg.seed * 100_003 + i), cfg.n_resamples, grid=grid,
                         fmr_targets=cfg.fmr_targets, thresholds=tt)
    v = wv = None
    if "within-identity" in runs:
        v = v_statistic(data, runs["within-identity"], tt)
        t_hat = runs["within-identity"].target_threshold[0]
        wv = within_variance(data, np.concatenate([tt, t_hat]), ">=")
    T = len(cfg.fmr_targets)

    def within(i: int, method: str):
        return (wv.estimate[i, 0], wv.bootstrap[i, 0]) if method in RECENTRED else None

    measures = summary_measures(truth.group_fnmr.T) if cfg.group_kappas else {}
    for method in cfg.roc_methods:
        c = runs[bs.SCHEME_OF[method]]
        fn_views = bs.fnmr_at_targets(c)
        fv_views = bs.fnmr_v_at_targets(c, v) if method in RECENTRED else None
        fn, fv = fn_views[..., 0], None if fv_views is None else fv_views[:, 0]
        fm_g, fn_g = bs.group_replicates(method, bs.fmr_at_targets(c), fn_views, fv_views,
                                         (wv.estimate[T:], wv.bootstrap[T:]) if fv is not None else None)
        plug = summary_measures(fn_views[0, :, 1:]) if measures else {}
        for level in cfg.levels:
            # FNMR fairness measures: the range over the groups' simultaneous box (fairness_projection)
            bounds = fp.projected_intervals(fm_g, fn_g, level)[0] if measures else {}
            for ti, a in enumerate(cfg.fmr_targets):
                r = bs.interval_from_replicates(method, fn[0, ti], fn[1:, ti], None if fv is None else fv[ti], level,
                                                within=within(T + ti, method))
                out.append(dict(metric="ROC", method=method, fmr_target=a, level=level, **_cover(r, truth.fnmr[ti])))
                for name, true in measures.items():
                    lo, hi = bounds[("FNMR", name)][ti]
                    r = iv.IntervalResult(float(plug[name][ti]), iv.ConfidenceInterval(float(lo), float(hi)), method,
                                          level)
                    out.append(dict(metric=f"FNMR:{name}", method=method, fmr_target=a, level=level,
                                    **_cover(r, float(true[ti]))))
    closed = [m for m in cfg.fixed_methods if m in iv.CLOSED_FORM]
    student = [m for m in cfg.fixed_methods if m in STUDENTIZED]
    ic = identity_counts(data, tt) if closed or student else None
    st = {}
    for m in student:  # every threshold's pooled FNMR in one pass over the scheme's weights
        se, t, _ = rate_studentization(rs.SCHEMES[bs.SCHEME_OF[m]](cfg.seed * 100_003 + i), data, ic.e, ic.g,
                                       cfg.n_resamples)
        st.update({(m, ti): (float(se[ti]), t[:, ti]) for ti in range(T)})
    for ti, a in enumerate(cfg.fmr_targets):
        for level in cfg.levels:
            for method in closed:
                fm, fnr = closed_form(method, ic, ti, None, level, "two-sided")
                for metric, r, tr in (("FMR", fm, truth.fmr[ti]), ("FNMR", fnr, truth.fnmr[ti])):
                    out.append(dict(metric=metric, method=method, fmr_target=a, level=level, **_cover(r, tr)))
            for method in [m for m in cfg.fixed_methods if m in bs.BOOTSTRAP]:
                c = runs[bs.SCHEME_OF[method]]
                fnmr, fmr, _, _ = bs.rates_at_threshold(c, float(tt[ti]))
                vfn = None
                if method in RECENTRED:
                    vfn = 1 - v.threshold_genuine_accepted[ti].sum() / c.genuine_total[0].sum()
                for metric, x, xv, tr, wi, sv in (("FMR", fmr[:, 0], None, truth.fmr[ti], None, None),
                                                  ("FNMR", fnmr[:, 0], vfn, truth.fnmr[ti], within(ti, method),
                                                   st.get((method, ti)))):
                    r = bs.interval_from_replicates(method, x[0], x[1:], xv, level, within=wi, studentized=sv)
                    out.append(dict(metric=metric, method=method, fmr_target=a, level=level, **_cover(r, tr)))
    return out


def run_coverage(cfg: CoverageConfig, progress: Callable[[int], None] | None = None) -> CoverageResult:
    """Run the study; rows aggregate coverage (share containing the truth), its binomial SE and mean width."""
    import pandas as pd

    if cfg.identities not in ("shared", "fresh"):
        raise ValueError("identities must be 'shared' or 'fresh'")
    result = CoverageResult(cfg)
    raw = []
    pop = _population(cfg, cfg.seed) if cfg.identities == "shared" else None
    truth = truth_shared(cfg, pop) if pop is not None else truth_fresh(cfg)
    result.truths = [dict(fmr_target=a, threshold=float(t), fmr=float(f), fnmr=float(n), fmr_se=float(e),
                          roc_se=float(r), group_fnmr=[float(x) for x in g])
                     for a, t, f, n, e, r, g in zip(cfg.fmr_targets, truth.thresholds, truth.fmr, truth.fnmr,
                                                    truth.fmr_se, truth.roc_se, truth.group_fnmr.T)]
    for i in range(cfg.n_datasets):
        p = pop if pop is not None else _population(cfg, cfg.seed * 1_000_003 + i + 1)
        data = _data(cfg, p.sample(cfg.samples, seed=cfg.seed * 1_000_003 + i + 1))
        raw += [dict(r, dataset=i) for r in one_dataset(cfg, data, truth, i)]
        if progress:
            progress(i + 1)
    df = pd.DataFrame(raw)
    g = df.groupby(["metric", "method", "fmr_target", "level"], sort=False)
    agg = g.agg(coverage=("covered", "mean"), n=("covered", "size"), mean_width=("width", "mean"),
                truth_below=("truth_below", "mean"), estimate_sd=("estimate", "std")).reset_index()
    agg["se"] = np.sqrt(agg["level"] * (1 - agg["level"]) / agg["n"])
    result.rows = agg.to_dict("records")
    return result


def coverage_tolerance(level: float, n: int, z: float = 3.0) -> float:
    """``z`` binomial standard errors of a coverage estimate from ``n`` intervals at nominal ``level``."""
    return z * float(np.sqrt(level * (1 - level) / n))


def pivot(result: CoverageResult):
    """Wide table: rows (metric, method, FMR target), columns nominal levels; the number of intervals ``n`` per row
    (the same at every level) as the last column."""
    df = result.to_frame()
    wide = df.pivot_table(index=["metric", "method", "fmr_target"], columns="level", values="coverage",
                          sort=False).sort_index(axis=1, ascending=False)
    wide["n"] = df.groupby(["metric", "method", "fmr_target"], sort=False)["n"].max().reindex(wide.index)
    return wide


def markdown(wide) -> str:
    """A pivot table as a Markdown table: coverage to 3 decimals with its Monte-Carlo SE at the nominal level
    (``± sqrt(level (1 - level) / n)``), and n (with one data set a coverage is 0 or 1: the SE says how little that
    says)."""
    levels = [c for c in wide.columns if c != "n"]
    cols = [f"{c:g}" for c in levels]
    lines = ["| metric | method | FMR target | " + " | ".join(cols) + " | n |",
             "|---|---|---:|" + "---:|" * (len(cols) + 1)]
    for (metric, method, a), row in wide.iterrows():
        n = int(row["n"])
        cells = [f"{row[c]:.3f} ± {np.sqrt(c * (1 - c) / n):.3f}" for c in levels]
        lines.append(f"| {metric} | {method} | {a:g} | " + " | ".join(cells) + f" | {n} |")
    return "\n".join(lines) + "\n"


__all__ = ["CoverageConfig", "markdown", "CoverageResult", "Truth", "coverage_tolerance", "one_dataset", "pivot",
           "run_coverage", "truth_fresh", "truth_shared"]
