"""``estimate``: per-group error rates from unlabelled (or partly labelled) scores, SPE-FR style.

Per group, a Bayesian two-component mixture of two-piece distributions is fitted to the scores (labels,
where given, enter the likelihood); posterior draws give FNMR-vs-FMR curves, FNMR at FMR targets and FMR /
FNMR at one global threshold, each with an equal-tailed credible band, in two versions: ``population``
(the fitted distributions) and ``finite-sample`` (the actual pairs, unknown labels drawn per draw).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from matchaudit import checks
from matchaudit.errors import InputError, listing
from matchaudit.labelfree import curves, diagnostics, ppc, robust, samplers
from matchaudit.labelfree.result import KINDS, Estimate, GroupFit, RateDraws
from matchaudit.labelfree.binned import COUNT_BINS, LIKELIHOOD_POINTS, Compressed, compress
from matchaudit.definitions import Rule
from matchaudit.labelfree.curves import band
from matchaudit.labelfree.starting_values import Init, initialise
from matchaudit.labelfree.model import (SHAPE_PRIORS, GroupModel, LabelSampling, Priors, ShapePrior, constrain,
                                        distribution, match_probability)
from matchaudit.labelfree.twopiece import FAMILIES, SHOULDER_TEXT, Family, base, fitted_scale, parse
from matchaudit.data.validate import Where, partial_labels
from matchaudit.progress import Meter

RHAT_REFUSE = 1.2  # the paper's criterion
RHAT_WARN = 1.01
ESS_WARN = 400.0
DEFAULTS = {"numpy": (3000, 5000), "numpyro": (500, 500)}  # (warm-up, kept draws) per chain
DEFAULT_SHAPE_PRIOR: ShapePrior = "jeffreys"  # deviation from supplement E.2: docs/labelfree.md, "Recovery"


class NotConverged(InputError, RuntimeError):
    """The chains disagree (R-hat >= 1.2): no curves are reported. ``diagnostics`` holds the numbers. An
    :class:`InputError` (the CLI exits 2 with the advice): what cures it is a setting the user chooses (more
    warm-up and draws, a few labels, another family); a ``RuntimeError`` as documented before."""

    def __init__(self, message: str, diagnostics: dict):
        super().__init__(message, param="draws")
        self.diagnostics = diagnostics


def validate(scores, groups, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores (finite floats), group names (str) and labels (0/1/NaN: any vocabulary of
    :func:`matchaudit.data.validate.parse_labels`, missing = unlabelled) as arrays, or an InputError."""
    s = np.asarray(scores, dtype=float)
    g = np.asarray(groups).astype(str)
    if s.ndim != 1 or g.shape != s.shape:
        raise InputError(f"scores and groups must be 1-D and equally long (got {s.shape} and {g.shape})",
                         param="groups")
    if not s.size:
        raise InputError("no scores: a label-free estimate needs at least 100 pairs per group.", param="scores")
    bad = np.flatnonzero(~np.isfinite(s))
    if bad.size:
        raise InputError(f"{bad.size} scores are missing or not finite (rows {listing(bad.tolist())}); "
                         "failures to acquire must be handled before a label-free estimate", param="scores")
    y = np.full(s.shape, np.nan) if labels is None else partial_labels(labels, Where("labels"))
    if y.shape != s.shape:
        raise InputError(f"labels must be as long as scores ({y.shape} vs {s.shape})", param="labels")
    odd = np.flatnonzero(~np.isnan(y) & (y != 0) & (y != 1))
    if odd.size:
        raise InputError(f"labels must be 0, 1 or missing; rows {listing(odd.tolist())} are not", param="labels")
    names, counts = np.unique(g, return_counts=True)
    small = names[counts < 100]
    if small.size:
        raise InputError(f"groups with fewer than 100 pairs cannot support a mixture fit: {listing(small.tolist())}",
                         param="groups")
    flat = [str(n) for n in names if np.ptp(s[g == n]) == 0]
    if flat:
        raise InputError(f"every score is identical within group(s) {listing(flat)}: two score distributions cannot "
                         "be told apart. Check the score column (a constant or a copied column?).", param="scores")
    one_class = [f"{n} (all {int(m.sum()):,} labelled {'matches' if y[m][0] == 1 else 'non-matches'})"
                 for n in names for m in [g == n] if not np.isnan(y[m]).any() and np.ptp(y[m]) == 0]
    if one_class:
        raise InputError(f"every pair of group(s) {listing(one_class)} is labelled, all one class: the other score "
                         "distribution has no pair, so FMR and FNMR cannot both be estimated there. Give that group's "
                         "pairs of the other class, or leave some pairs unlabelled.")
    return s, g, y


def _thin(n_total: int, n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n_total - 1, min(n, n_total)).astype(np.int64))


def _fit_group(z: np.ndarray, y: np.ndarray, fam: Family, lam: float, label_sampling: LabelSampling,
               sampler: str, chains: int, warmup: int, draws: int, rng: np.random.Generator, seed: int,
               shape_prior: ShapePrior = DEFAULT_SHAPE_PRIOR, tick: samplers.Tick | None = None,
               likelihood_points: int | None = LIKELIHOOD_POINTS, shoulder: bool = False,
               targets: Sequence[float] = ()):
    """Start, draws and diagnostics of one group (``z``: its scores on ``fam``'s scale, standardised), and how its
    likelihood was computed (the unlabelled scores compressed by :func:`binned.likelihood_cells`); ``shoulder``:
    non-matches a mixture of two components, whose convergence is judged on what is reported (:func:`_estimands`)."""
    lab = ~np.isnan(y)
    init = initialise(z, lam, labelled_matches=int((y[lab] == 1).sum()) if (~lab).any() else None)
    model, cells = GroupModel.compressed(base(fam), Priors.from_init(init), z[~lab], z[lab], y[lab], label_sampling,
                                         shape_prior, likelihood_points, shoulder)
    mode, cov = samplers.laplace(model.log_density, model.start(init))
    starts = samplers.dispersed_starts(mode, cov, chains, rng)
    if sampler == "numpyro":
        import jax.numpy as jnp

        d = samplers.sample_numpyro(lambda th: model.log_density(th, jnp), starts, warmup, draws, seed, tick)
    else:
        d = samplers.sample_numpy(model.log_density, starts, cov, warmup, draws, rng, tick)
    diag = {"per_parameter": diagnostics.summarise(d.theta, model.names)}
    if shoulder:
        diag["per_estimand"] = _estimands(base(fam), d.theta, targets)
    return init, d, diag, cells.describe()


def _estimands(fam: Family, theta: np.ndarray, targets: Sequence[float]) -> dict:
    """R-hat and ESS of what a fit reports, per chain: the share of matches, the threshold and FNMR at each FMR
    target. For a model with a shoulder they, not the parameters, judge convergence: a shoulder the data lack
    empties (its share near 0) and its place and scale then wander over their prior without moving any rate
    (an overfitted mixture, Rousseau & Mengersen 2011)."""
    p = constrain(theta)
    a = np.asarray(targets, float)
    t = distribution(fam, p, 0).column().isf(a)
    fnmr = distribution(fam, p, 1).column().cdf(t)
    arr = np.concatenate([p["pi"][..., None], t, fnmr], axis=-1)
    names = ("pi", *(f"threshold@{x:g}" for x in a), *(f"fnmr@{x:g}" for x in a))
    return diagnostics.summarise(arr, names)

def _group_fit(name, s: np.ndarray, y: np.ndarray, init: Init, d: samplers.Draws, diag: dict, loc: float,
               scale: float, likelihood: dict | None = None) -> GroupFit:
    """One group's fit in the units of its family's scale (the scores, or their Fisher z; the model runs on them
    standardised)."""
    p = constrain(d.theta.reshape(-1, d.theta.shape[-1]))
    for k in ("mu0", "mu1", "mub"):
        if k in p:
            p[k] = loc + scale * p[k]
    for k in ("s0L", "s0R", "s1L", "s1R", "sbL", "sbR"):
        if k in p:
            p[k] = scale * p[k]
    watched = diag.get("per_estimand", diag["per_parameter"]).values()
    worst = {"rhat": max(v["rhat"] for v in watched), "ess": min(v["ess"] for v in watched)}
    return GroupFit(name, s, y, _init_report(init, loc, scale), p, {**diag, "max": worst}, d.info,
                    dict(likelihood or {}))


def _init_report(init: Init, loc: float, scale: float) -> dict:
    """Start values in the user's score units."""
    g = init.gmm
    return {
        "gmm": {"weight_match": g.weight1, "means": [loc + scale * m for m in g.means], "sds": [scale * s for s in g.sds]},
        "kde_modes": [loc + scale * m for m in init.modes], "critical_bandwidth": scale * init.critical_bandwidth,
        "match_mode": loc + scale * init.match_mode, "match_sd": scale * init.match_sd,
        "pi_storey": init.pi_storey, "warnings": list(init.warnings),
    }


def _entries(arr: np.ndarray, level: float, targets: Sequence[float], names: Sequence[str], extra=None) -> list[dict]:
    """Band entries for an array (draws, groups, targets)."""
    b = band(arr, level)
    out = []
    for a, t in enumerate(targets):
        for gi, nm in enumerate(names):
            e = {"target": t, "group": nm, **{k: float(v[gi, a]) for k, v in b.items()}}
            if extra is not None:
                e.update(extra(gi, a))
            out.append(e)
    return out


def _outputs(d: RateDraws, level, targets, names) -> dict:
    """Summaries of one kind's draws (:class:`RateDraws`)."""
    fnmr, thr, gt, gfmr, gfnmr, grid, curve, extrapolated = d
    cb = band(curve, level)
    out = {
        "curve": {"fmr": grid, **{nm: {k: v[gi] for k, v in cb.items()} for gi, nm in enumerate(names)}},
        "fnmr_at_fmr": _entries(fnmr, level, targets, names, lambda g, a: {"extrapolated": bool(extrapolated[g, a])}),
        "threshold_at_fmr": _entries(thr, level, targets, names),
        "global_threshold": [{"target": t, "group": "all", **{k: float(v) for k, v in band(gt[:, a], level).items()}}
                             for a, t in enumerate(targets)],
        "fmr_at_global": _entries(gfmr, level, targets, names),
        "fnmr_at_global": _entries(gfnmr, level, targets, names),
        "p_worse": {},
        "fairness": {},
    }
    for a, t in enumerate(targets if len(names) > 1 else ()):
        for q, arr in (("fnmr_at_fmr", fnmr), ("fmr_at_global", gfmr), ("fnmr_at_global", gfnmr)):
            x = arr[:, :, a]
            p = (x[:, :, None] > x[:, None, :]).mean(axis=0)
            out["p_worse"][f"{q}@{t:g}"] = {"groups": list(names), "p_row_worse_than_column": p}
            fm = _fairness(x, level)
            if fm is not None:
                out["fairness"][f"{q}@{t:g}"] = fm
    return out


def _fairness(rates: np.ndarray, level: float) -> dict | None:
    """Fairness summary measures per draw, from ``matchaudit.metrics.fairness`` (None until it is installed)."""
    try:
        from matchaudit.metrics.fairness import summary_measures
    except ImportError:
        return None
    return {k: band(np.asarray(v, dtype=float), level) for k, v in summary_measures(rates).items()}


def estimate(
    scores: Sequence[float] | np.ndarray,
    groups: Sequence | np.ndarray,
    labels: Sequence[float] | np.ndarray | None = None,
    *,
    family: str = "auto",
    fmr: Sequence[float] = (1e-1, 1e-2, 1e-3),
    level: float = 0.89,
    rule: Rule = ">=",
    sampler: samplers.SamplerName = "auto",
    chains: int = 4,
    warmup: int | None = None,
    draws: int | None = None,
    seed: int = 0,
    label_sampling: LabelSampling = "random",
    storey_lambda: float = 0.05,
    finite_draws: int = 400,
    curve_points: int = 60,
    ppc_replicates: int = 50,
    shape_prior: ShapePrior | None = None,
    progress: bool = False,
    likelihood_points: int | None = LIKELIHOOD_POINTS,
    effective_scores: int | None = robust.EFFECTIVE_SCORES,
) -> Estimate:
    """Per-group FNMR-vs-FMR curves, FNMR@FMR and rates at a global threshold from similarity scores.

    ``family``: ``"auto"`` (default) fits every candidate family (:func:`robust.candidates`: two-piece SAS and t on
    the scores, and on their Fisher z when the scores are cosine-like) and reports per group the union of the bands
    of those whose fit checks pass, warning where they disagree (``by_family`` holds each family's estimate,
    ``selection`` which fitted where); or one family of :data:`twopiece.FAMILIES`, whose bands are then conditional
    on it. ``labels``: 1 match, 0 non-match, NaN unknown (``None``: none known). ``label_sampling="stratified"``
    when the labelled pairs were sampled per class. ``shape_prior``: ``"jeffreys"`` (default; TP-T d.o.f.
    independence Jeffreys prior, TP-SAS ``log delta ~ N(0, 0.5^2)``), ``"weak"`` (TP-T ``Gamma(2, rate 0.1)``,
    TP-SAS as before) or ``"supplement"`` (E.2: ``Gamma(5, 0.25)`` / ``Gamma(50, 50)``); the latter two pull
    heavy non-match tails towards normal (docs/labelfree.md, "Recovery"). ``progress``: one display over every
    group's chains, in MCMC iterations (warm-up and draws), with rate and time left. ``likelihood_points``:
    the unlabelled likelihood of a group is evaluated over its distinct scores with their counts (exact) when
    it has at most this many, else over this many points: half as many bins, two quadrature points each
    (docs/labelfree.md, "Likelihood"); ``None``: distinct scores however many. Finite-sample rates and the
    posterior predictive check count on at most ``binned.COUNT_BINS`` cells per group (distinct scores, or bins).
    ``effective_scores`` (``family="auto"``): the robust bands of a group with more unlabelled scores (and fewer than
    500 labelled pairs) are those of this many (:func:`robust.allowance`: every family's draws spread by
    ``sqrt(n / effective_scores)``, a misspecification allowance; ``None``: none); each family's own bands
    (``by_family``), and a single family's, are not spread.
    Raises :class:`NotConverged` when any R-hat >= 1.2.
    """
    s, g, y = validate(scores, groups, labels)
    targets = tuple(sorted(checks.numbers(fmr, "fmr", low=0.0, high=1.0, low_open=True, high_open=True)))
    if not targets:
        raise InputError("no FMR target given.", param="fmr")
    level = checks.probability(level, "level")
    checks.choice(rule, Rule, "rule")
    seed = checks.seed(seed)
    if checks.integer(chains, "chains") < 2:
        raise InputError(f"chains {chains}: at least 2 are needed to check convergence (R-hat).", param="chains")
    if draws is not None:  # split R-hat halves each chain: fewer than 4 draws leave halves without a variance
        checks.integer(draws, "draws", low=4)
    if warmup is not None:
        checks.integer(warmup, "warmup", low=1)
    if likelihood_points is not None:
        checks.integer(likelihood_points, "likelihood_points", low=8)
    if effective_scores is not None:
        effective_scores = int(checks.integer(effective_scores, "effective_scores", low=100))
    shape_prior = DEFAULT_SHAPE_PRIOR if shape_prior is None else shape_prior
    if shape_prior not in SHAPE_PRIORS:
        raise InputError(f"unknown shape prior {shape_prior!r}; choose one of {', '.join(SHAPE_PRIORS)}")
    if family != "auto" and family not in FAMILIES:
        raise InputError(f"unknown score family {family!r}; choose auto (default: every family that fits) or one of "
                         f"{', '.join(FAMILIES)}", param="family")
    names = robust.candidates(s) if family == "auto" else (family,)
    models = [parse(x) for x in names]
    on_scale = [fitted_scale(f, s) for f, _ in models]  # refuses scores outside [-1, 1] for the *-atanh families
    name = samplers.resolve(sampler)
    warmup = DEFAULTS[name][0] if warmup is None else int(warmup)
    draws = DEFAULTS[name][1] if draws is None else int(draws)
    run = dict(targets=targets, level=level, rule=rule, sampler=name, chains=chains, warmup=warmup, draws=draws,
               seed=seed, label_sampling=label_sampling, storey_lambda=storey_lambda, finite_draws=finite_draws,
               curve_points=curve_points, ppc_replicates=ppc_replicates, shape_prior=shape_prior, progress=progress,
               likelihood_points=likelihood_points)
    if family != "auto":
        return _one(family, on_scale[0], s, g, y, **run)
    return _robust(names, on_scale, s, g, y, run, effective_scores)


def _one(model: str, z_all: np.ndarray, s: np.ndarray, g: np.ndarray, y: np.ndarray, *, targets: tuple[float, ...],
         level: float, rule: Rule, sampler: str, chains: int, warmup: int, draws: int, seed: int,
         label_sampling: LabelSampling, storey_lambda: float, finite_draws: int, curve_points: int,
         ppc_replicates: int, shape_prior: ShapePrior, progress: bool, likelihood_points: int | None,
         refuse: bool = True) -> Estimate:
    """The estimate of one model (a name of :data:`twopiece.FAMILIES`; ``z_all``: the scores on its family's
    scale), warnings issued as they arise. ``refuse``: chains that disagree (R-hat >= 1.2) are
    :class:`NotConverged`; without, their draws are pooled (the robust estimate reads that as several splits)."""
    fam, shoulder = parse(model)
    name = sampler
    rng = np.random.default_rng(seed)
    loc, scale = float(np.median(z_all)), float(np.std(z_all)) or 1.0  # fit on standardised scores, report unscaled

    fits: list[GroupFit] = []
    names, code = np.unique(g, return_inverse=True)
    with Meter(progress, f"MCMC ({model}, {name}, {chains} chains)", names.size * chains * (warmup + draws),
               "iterations") as meter:
        for gi, nm in enumerate(names):
            idx = code == gi
            init, d, diag, lik = _fit_group((z_all[idx] - loc) / scale, y[idx], fam, storey_lambda, label_sampling,
                                            name, chains, warmup, draws, rng, seed + gi, shape_prior, meter.advance,
                                            likelihood_points, shoulder, targets)
            fits.append(_group_fit(nm, s[idx], y[idx], init, d, diag, loc, scale, lik))

    bad = [f"{f.name} (R-hat {f.diagnostics['max']['rhat']:.3f})" for f in fits if not f.diagnostics["max"]["rhat"] < RHAT_REFUSE]
    if bad and refuse:
        raise NotConverged(
            f"chains did not converge for {', '.join(bad)}: R-hat must be below {RHAT_REFUSE} before curves are reported. "
            f"Give more warm-up and draws (now {warmup} and {draws} per chain), label a few pairs, or use family auto "
            "(the default: every family, chains that settle apart read as several splits of the scores).",
            {f.name: f.diagnostics for f in fits})
    notes = []
    for f in fits:
        m = f.diagnostics["max"]
        if m["rhat"] > RHAT_WARN:
            notes.append(f"group {f.name}: max R-hat {m['rhat']:.3f} > {RHAT_WARN}; more draws would make the bands more reliable")
        if m["ess"] < ESS_WARN:
            notes.append(f"group {f.name}: min ESS {m['ess']:.0f} < {ESS_WARN:.0f}; band ends are imprecise, run more draws")
        if f.sampler_info.get("divergences"):
            notes.append(f"group {f.name}: {f.sampler_info['divergences']} divergent NUTS transitions")
        notes += [f"group {f.name}: {w}" for w in f.init["warnings"]]
    for w in notes:
        warnings.warn(w, stacklevel=2)

    names = [f.name for f in fits]
    grid = np.logspace(np.log10(min(1e-5, targets[0])), 0.0, curve_points)[:-1]
    total = fits[0].params["pi"].size
    cells = [compress(f.scores[np.isnan(f.labels)], COUNT_BINS) for f in fits]  # unlabelled pairs
    every = [c if f.n_labelled == 0 else compress(f.scores, COUNT_BINS) for f, c in zip(fits, cells)]  # all pairs
    for f, c in zip(fits, cells):
        f.counted_on = c.describe()
    rate_draws = {
        "population": _population(fam, fits, _thin(total, 4000), targets, grid),
        "finite-sample": _finite(fam, fits, _thin(total, finite_draws), targets, grid, rule, rng, cells),
    }
    results = {kind: _outputs(d, level, targets, names) for kind, d in rate_draws.items()}
    flags = _extrapolated(fits, targets)
    extrapolated = [f"{nm} at FMR {a:g}" for gi, nm in enumerate(names) for ai, a in enumerate(targets) if flags[gi, ai]]
    description = fam.description + (SHOULDER_TEXT if shoulder else "")
    limits = [
        f"parametric family: {description}; bands are conditional on it (family auto, the default, joins every "
        "family that fits)"
        + (f"; shape prior {shape_prior!r}: {_shape_prior_text(shape_prior, base(fam).name)}" if fam.has_shape else ""),
        "pairs that share identities or images are not independent; the model treats them as independent, "
        "so the bands are optimistic (too narrow)",
        "population rates describe the fitted distributions; finite-sample rates the pairs at hand",
    ]
    if extrapolated:
        limits.append("FMR targets below about 10 / (estimated non-match pairs) rely on tail extrapolation of the "
                      f"parametric family: {', '.join(extrapolated)}")
    if any(f.n_labelled for f in fits):
        limits.append(f"labelled pairs are assumed missing at random ({label_sampling} sampling of labels)")
    binned = [f.name for f in fits if f.likelihood and not f.likelihood["method"].startswith("exact")]
    if binned:
        limits.append(f"the unlabelled likelihood is binned for {', '.join(binned)} (more than {likelihood_points} distinct "
                      "scores; a two-point rule per bin, measured error below 0.01 posterior SD: docs/labelfree.md, \"Likelihood\")")
    coarse = [f.name for f in fits if not f.counted_on["method"].startswith("exact")]
    if coarse:
        limits.append(f"finite-sample rates are counted on up to {COUNT_BINS} bins of the scores for {', '.join(coarse)} "
                      "(thresholds fall between bins)")
    thinned = [{k: v[_thin(total, 200)] for k, v in f.params.items()} for f in fits]  # the draws both checks use
    fit_checks = {f.name: ppc.check(fam, f.scores, p, rng, level, ppc_replicates, cells=c)
                  for f, p, c in zip(fits, thinned, every)}
    for gi, (f, p, c) in enumerate(zip(fits, thinned, every)):  # own generator: the checks above keep their numbers
        known = f.labels[~np.isnan(f.labels)]
        tail = fit_checks[f.name]["tail"] = ppc.tail_check(
            fam, c, p, targets, np.random.default_rng([seed, gi, 1]), level,
            labelled=(int(np.count_nonzero(known == 0)), int(np.count_nonzero(known == 1))))
        if tail["alarm"]:
            notes.append(_tail_warning(f.name, tail))
            warnings.warn(notes[-1], stacklevel=2)
    limits.append("the fit checks (KS, and the tail check near the operating points) compare the distribution of all "
                  "scores with the model's; two components can split the same distribution differently, which no "
                  "check without labels can see: label some pairs to test the split (docs/labelfree.md, \"Fit checks\")")
    return Estimate(model, description, rule, level, name, chains, warmup, draws, seed, targets, fits, results,
                    fit_checks, limits, notes, rate_draws=rate_draws)


def _robust(models: Sequence[str], on_scale: Sequence[np.ndarray], s: np.ndarray, g: np.ndarray, y: np.ndarray,
            run: dict, effective_scores: int | None) -> Estimate:
    """The family-robust estimate (:mod:`matchaudit.labelfree.robust`): every family fitted with the same seed (so
    each equals its own ``estimate(family=...)``), per group the union of the bands of those that fit there, a
    warning with the labels that would decide where they disagree. A family whose chains disagree on a group
    (R-hat >= 1.2: the posterior has several modes, several splits of the scores) keeps its pooled draws, whose
    band joins the modes, and the group is alarmed."""
    ests: dict[str, Estimate] = {}
    for model, z in zip(models, on_scale):
        with warnings.catch_warnings():  # each family's warnings stay in its estimate; the robust ones follow
            warnings.simplefilter("ignore")
            ests[model] = _one(model, z, s, g, y, **run, refuse=False)
    names = [grp.name for grp in next(iter(ests.values())).groups]
    verdict = {f: {n: robust.fits(e.ppc[n]) for n in names} for f, e in ests.items()}
    fitting = {n: [f for f in ests if verdict[f][n][0]] for n in names}
    used = {n: fitting[n] or list(ests) for n in names}
    everywhere = [f for f in ests if all(f in used[n] for n in names)] or list(ests)
    ref = ests[everywhere[0]]
    unlabelled = [int(np.isnan(grp.labels).sum()) for grp in ref.groups]
    labelled = [grp.n_labelled for grp in ref.groups]
    spread = robust.allowance(unlabelled, labelled, effective_scores)
    why = robust.allowance_reasons(unlabelled, labelled, effective_scores)
    bounds = (-1.0, 1.0) if robust.bounded(s) else None
    allowed = {f: e.results if (spread == 1).all() else
               {k: _outputs(robust.widened(d, spread, bounds), ref.level, ref.fmr_targets, names)
                for k, d in e.rate_draws.items()} for f, e in ests.items()}
    results = {kind: robust.combine({f: r[kind] for f, r in allowed.items()}, used, everywhere) for kind in KINDS}
    notes, selection = [], {}
    by_results = {f: e.results for f, e in ests.items()}
    for gi, n in enumerate(names):
        found = robust.disagreements(by_results, used, n)
        labels = None
        if found:
            pair = found[0]["families"]
            labels = robust.labels_needed(s[g == n], [parse(f)[0] for f in pair],
                                          [ests[f].groups[gi].params for f in pair])
            notes.append(robust.advice_text(n, found, labels))
        rhat = {f: ests[f].groups[gi].diagnostics["max"]["rhat"] for f in used[n]}
        split = {f: r for f, r in rhat.items() if not r < RHAT_REFUSE}
        alarms = robust.alarm_notes(n, fitting[n], {f: verdict[f][n][1] for f in ests}, split)
        notes += alarms
        selection[n] = {"fitting": fitting[n], "used": used[n],
                        "excluded": {f: verdict[f][n][1] for f in ests if not verdict[f][n][0]},
                        "chains_disagree": split, "disagreements": found, "labels_needed": labels,
                        "alarm": bool(found) or bool(alarms),
                        "allowance": {"unlabelled_scores": unlabelled[gi], "labelled_pairs": labelled[gi],
                                      "effective_scores": effective_scores, "spread": float(spread[gi]),
                                      "reason": why[gi]}}
    notes += [f"{f}: {w}" for f, e in ests.items() for w in e.warnings  # a family's own warnings where it is used
              if not w.startswith("group ") or any(w.startswith(f"group {n}:") and f in used[n] for n in names)]
    for w in notes:
        warnings.warn(w, stacklevel=3)
    description = (f"auto (family-robust): per group the union of the bands of the families its fit checks do not "
                   f"reject, of {', '.join(models)}")
    limits = [f"family-robust bands: per group the union of the {100 * ref.level:g}% bands of the families whose fit "
              f"checks show no clear misfit there (p >= {robust.MISFIT:g}; of {', '.join(models)}); where they "
              "disagree a warning names the "
              "group and the labels that would decide. " + robust.MEASURED] + _allowance_limits(
                  names, unlabelled, spread, effective_scores) + ref.limits[1:]
    return Estimate("auto", description, ref.rule, ref.level, ref.sampler, ref.chains, ref.warmup, ref.draws, ref.seed,
                    ref.fmr_targets, ref.groups, results, ref.ppc, limits, notes, by_family=ests,
                    selection=selection, reference=everywhere[0])


def _allowance_limits(names: Sequence[str], unlabelled: Sequence[int], spread: np.ndarray,
                      effective_scores: int | None) -> list[str]:
    """The limit that states the misspecification allowance, where it widened a group's bands."""
    wide = [f"{n} ({u:,} scores: x{f:.2g})" for n, u, f in zip(names, unlabelled, spread) if f > 1]
    if not wide:
        return []
    return [f"misspecification allowance: the robust bands of {', '.join(wide)} are those of {effective_scores:,} "
            "unlabelled scores (each family's draws spread about their median, rates on the angle scale asin(sqrt)): "
            "no family fits real scores exactly, and more scores shrink its band around its own split, not the "
            "truth's (docs/labelfree.md, \"The default\" and \"The allowance, measured\"); each family's own bands "
            "are not spread"]


def _tail_warning(name: str, tail: dict) -> str:
    """The warning of a tail check that fired, naming the bin furthest from the model's count."""
    b = ppc.worst_bin(tail)
    where = " and ".join(x for x in (b["from"] and f"above {b['from']} ({b['low']:.4g})",
                                     b["to"] and f"below {b['to']} ({b['high']:.4g})") if x)
    return (f"group {name}: the fitted model misses the scores near the operating points (tail check p = "
            f"{tail['pvalue']:.3f} < {ppc.TAIL_ALARM:g}): {b['observed']:,} scores {where}, the model expects "
            f"{b['expected']:,.0f} [{b['expected_lower']:,.0f}, {b['expected_upper']:,.0f}]. FNMR at FMR targets are read "
            "from these tails: use family auto (the default: the union over every family that fits), or label some pairs")


def _shape_prior_text(shape_prior: str, fam_name: str) -> str:
    spec = SHAPE_PRIORS[shape_prior][fam_name]
    if spec[0] == "gamma":
        return f"delta ~ Gamma({spec[1]:g}, rate {spec[2]:g})"
    if spec[0] == "lognormal":
        return f"log delta ~ N({spec[1]:g}, {spec[2]:g}^2)"
    return "independence Jeffreys prior of the t degrees of freedom (Fonseca et al. 2008)"


def _extrapolated(fits: list[GroupFit], targets: Sequence[float]) -> np.ndarray:
    n0 = np.array([f.scores.size * (1.0 - np.median(f.params["pi"])) for f in fits])
    return np.asarray(targets)[None, :] < 10.0 / n0[:, None]


def _population(fam, fits, pick, targets, grid) -> RateDraws:
    comps = [[distribution(fam, {k: np.asarray(v)[pick] for k, v in f.params.items()}, j) for f in fits] for j in (0, 1)]
    at = [curves.population_at_fmr(c0, c1, np.r_[targets, grid]) for c0, c1 in zip(*comps)]
    a = len(targets)
    thr = np.stack([t[:, :a] for t, _ in at], axis=1)
    fnmr = np.stack([f[:, :a] for _, f in at], axis=1)
    curve = np.stack([f[:, a:] for _, f in at], axis=1)
    n0 = np.stack([f.scores.size * (1.0 - f.params["pi"][pick]) for f in fits], axis=1)
    w = n0 / n0.sum(axis=1, keepdims=True)
    glob = [curves.population_global(comps[0], comps[1], w, t) for t in targets]
    gt = np.stack([x[0] for x in glob], axis=1)
    gfmr = np.stack([x[1] for x in glob], axis=2)
    gfnmr = np.stack([x[2] for x in glob], axis=2)
    return RateDraws(fnmr, thr, gt, gfmr, gfnmr, grid, curve, _extrapolated(fits, targets))


def _finite(fam, fits, pick, targets, grid, rule, rng, cells: list[Compressed]) -> RateDraws:
    """Finite-sample rates: per draw, the number of matches among the unlabelled pairs of each cell (a distinct
    score, or a fine bin: ``cells``, :func:`binned.compress`) is drawn from the binomial with the cell's posterior
    match probability (labelled pairs keep their labels), and rates are counted on the cells. With distinct
    scores this is the same distribution as drawing every pair's label; with bins, thresholds fall between bins."""
    entries, params = [], []
    for f, c in zip(fits, cells):
        lab = ~np.isnan(f.labels)
        entries.append((np.r_[c.values, f.scores[lab]], np.r_[c.counts, np.ones(int(lab.sum()))], f.labels[lab]))
        params.append({k: np.asarray(v)[pick][:, None] for k, v in f.params.items()})

    def matches(rows: slice) -> list[np.ndarray]:
        out = []
        for c, (_, _, known), par in zip(cells, entries, params):
            p = {k: v[rows] for k, v in par.items()}
            prob = match_probability(fam, p, c.values)
            m = rng.binomial(c.counts.astype(np.int64), np.clip(prob, 0.0, 1.0)).astype(float)
            out.append(np.concatenate([m, np.broadcast_to(known, (m.shape[0], known.size))], axis=1))
        return out

    return counted_draws([e[0] for e in entries], matches, targets, grid, rule, _extrapolated(fits, targets),
                         counts=[e[1] for e in entries], draws=pick.size)


CHUNK = 8_000_000  # draws x entries counted at once (memory: a few such arrays of float64)


def counted(scores: list[np.ndarray], weights, targets, grid, level, names, rule, extrapolated,
            counts: list[np.ndarray] | None = None, draws: int | None = None) -> dict:
    """:func:`counted_draws` summarised like the population rates."""
    return _outputs(counted_draws(scores, weights, targets, grid, rule, extrapolated, counts, draws), level, targets,
                    names)


def counted_draws(scores: list[np.ndarray], weights, targets, grid, rule, extrapolated,
                  counts: list[np.ndarray] | None = None, draws: int | None = None) -> RateDraws:
    """Rates counted on the entries of each group, global threshold from the pooled entries, per draw.
    ``weights``: per group, match weights (draws, entries), or a function of a slice of draws returning them for
    those draws (called chunk by chunk, in order; ``draws`` then says how many). ``counts``: pairs per entry
    (``None``: 1 each), the weights being the number of matches among them."""
    ones = [np.ones(np.asarray(x).size) for x in scores] if counts is None else [np.asarray(c, float) for c in counts]
    total = weights[0].shape[0] if draws is None else int(draws)
    pooled_s, pooled_c = np.concatenate(scores), np.concatenate(ones)
    step = max(1, CHUNK // max(pooled_s.size, 1))
    parts = []
    for a in range(0, total, step):
        rows = slice(a, min(a + step, total))
        w = weights(rows) if callable(weights) else [np.asarray(x)[rows] for x in weights]
        parts.append(_counted_rows(scores, w, ones, pooled_s, pooled_c, targets, grid, rule))
    fnmr, thr, gt, gfmr, gfnmr, curve = (np.concatenate(x, axis=0) for x in zip(*parts))
    return RateDraws(fnmr, thr, gt, gfmr, gfnmr, grid, curve, np.asarray(extrapolated))


def _counted_rows(scores, weights, counts, pooled_s, pooled_c, targets, grid, rule) -> tuple:
    """:func:`counted`'s arrays for some draws: fnmr/thr (M, G, A), gt (M, A), gfmr/gfnmr (M, G, A), curve (M, G, K)."""
    a = len(targets)
    at = [curves.empirical_at_fmr(s, w, np.r_[targets, grid], rule, counts=c) for s, w, c in zip(scores, weights, counts)]
    thr = np.stack([t[:, :a] for t, _, _ in at], 1)
    fnmr = np.stack([fn[:, :a] for _, _, fn in at], 1)
    curve = np.stack([fn[:, a:] for _, _, fn in at], 1)
    gt, _, _ = curves.empirical_at_fmr(pooled_s, np.concatenate(weights, axis=1), np.asarray(targets), rule, counts=pooled_c)
    gfmr = np.empty((gt.shape[0], len(scores), a))
    gfnmr = np.empty_like(gfmr)
    for gi, (s, w, c) in enumerate(zip(scores, weights, counts)):
        for ai in range(a):
            gfmr[:, gi, ai], gfnmr[:, gi, ai] = curves.rates_at(s, w, gt[:, ai], rule, counts=c)
    return fnmr, thr, gt, gfmr, gfnmr, curve
