"""The audit: exact metrics, intervals and group tests of one :class:`~matchaudit.model.MatchData`, in memory.

:func:`audit` is the one place where the three are assembled (the ``matchaudit audit`` command, the demo and
the report are its consumers); :class:`Audit` holds the result with DataFrame views in the style of
fairlearn's ``MetricFrame`` and writes what ``results.json`` holds.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from matchaudit import __version__, checks
from matchaudit.choices import CLOSED_FORM
from matchaudit.definitions import DetScale, Rule, ThresholdImpostors
from matchaudit.engine import Backend
from matchaudit.encoding import as_document, columns
from matchaudit.errors import InputError
from matchaudit.auditing.equivalence import equivalence_tests
from matchaudit.auditing.matching_passes import check_all_groups_budget
from matchaudit.estimators.test_summary import summarise_tests
from matchaudit.estimators.calibration import CalibrationResult
from matchaudit.estimators.distributions import DistributionResult
from matchaudit.estimators.dual_point import interval_records
from matchaudit.estimators.attacks import iapmr_records
from matchaudit.estimators.failures import failure_note, fta_records
from matchaudit.estimators.regime import annotate, regime_warnings
from matchaudit.auditing.group_tests import group_tests
from matchaudit.auditing.score_analyses import score_analyses, score_warnings
from matchaudit.auditing.options import (CarriedThresholds, EquivalenceOptions, IntervalOptions, MeasureOptions,
                                         TestOptions)
from matchaudit.auditing.portability import own_thresholds, portability_table
from matchaudit.auditing.pass_plan import share_passes, tested_targets
from matchaudit.auditing.results_json import write_results
from matchaudit.auditing.stored import ARRAYS, load_audit, write_arrays
from matchaudit.auditing.intervals import (add_cross_group_intervals, balanced_method, check_methods,
                                           compute_intervals, interval_weightings, intervals_without_identities,
                                           plan_chunks, plan_note)
from matchaudit.metrics.evaluate import ALL, AuditConfig, AuditResult, evaluate
from matchaudit.model import view_names
from matchaudit.outputs import staged
from matchaudit.progress import announce
from matchaudit.scores import tile_cache
from matchaudit.metrics import fairness
from matchaudit.metrics.rates import Weighting
from matchaudit.model import MatchData

def _frame(records: list[dict[str, Any]] | None, table: str) -> pd.DataFrame:
    """The records of results.json's ``table`` as a DataFrame; without any, an empty one with the columns every
    record of that table has (:func:`matchaudit.encoding.columns`), so a filter on a table the audit left empty
    still runs (``a.tests[a.tests.significant]``)."""
    return pd.DataFrame(records) if records else pd.DataFrame(
        {name: pd.Series(dtype=dtype) for name, dtype in columns(table).items()})


@dataclass
class Audit:
    """An audit's results: exact metrics, and intervals and group tests when asked for.

    Views are DataFrames: :meth:`at_fmr`, :meth:`at_threshold`, :attr:`operating_points`, :attr:`curves`,
    :attr:`fairness`, :attr:`cross_group_fmr`, :attr:`intervals`, :attr:`tests`, :attr:`portability`; reducers
    :meth:`group_max`, :meth:`group_min`, :meth:`difference` and :meth:`ratio` all derive from :meth:`group_values` (the groups the
    fairness measures compare, with the audit's zero policy). :meth:`to_dict` is what ``results.json`` holds; :meth:`save` writes it, the CSV
    tables and the DET figures.
    """

    exact: AuditResult
    interval_options: IntervalOptions | None = None
    test_options: TestOptions | None = None
    interval_records: list[dict[str, Any]] | None = None
    bands: list[dict[str, Any]] = field(default_factory=list)
    test_records: list[dict[str, Any]] | None = None
    equivalence_records: list[dict[str, Any]] | None = None
    failure_records: list[dict[str, Any]] | None = None
    attack_records: list[dict[str, Any]] | None = None
    portability_records: list[dict[str, Any]] | None = None
    calibration_result: CalibrationResult | None = None
    distribution_result: DistributionResult | None = None
    warnings: list[str] = field(default_factory=list)
    command: str | None = None  # what made it, as results.json records it (None: this process, until saved)
    version: str | None = None  # the matchaudit that computed it (None: this one)
    missing_arrays: str | None = None  # why its figures cannot be drawn (loaded without curves.npz), else None
    det_scale: DetScale | None = None  # the DET figures' axes when saved (None: not saved yet, probit)

    @classmethod
    def load(cls, path: str | Path, curves: bool = True) -> Audit:
        """The audit that :meth:`save` wrote into ``path`` (the folder, or its results.json): the same tables,
        arrays and figures, and :meth:`save` writes the same results.json again (:mod:`matchaudit.auditing.stored`).
        ``curves=False``: the tables only, without reading curves.npz (what a report of the saved figures needs)."""
        return load_audit(path, curves)

    @property
    def config(self) -> AuditConfig:
        """What was computed (FMR targets, thresholds, rule, weightings, threshold impostors, costs, zero policy)."""
        return self.exact.config

    @property
    def groups(self) -> tuple[str, ...]:
        """The views, overall (``"all"``) first, then the groups (none for ungrouped data: :func:`model.view_names`)."""
        return view_names(tuple(g["group"] for g in self.exact.summary["groups"]))

    # ------------------------------------------------------------------ views
    @property
    def operating_points(self) -> pd.DataFrame:
        """Every operating point: FMR targets and fixed thresholds, per weighting and group."""
        return _frame(self.exact.operating_points, "operating_points")

    @property
    def curves(self) -> pd.DataFrame:
        """AUC, EER (``eer_method``) and minDCF per weighting and group."""
        return _frame(self.exact.curve_summaries, "curve_summaries")

    @property
    def fairness(self) -> pd.DataFrame:
        """The fairness measures of FMR, FNMR and both at every operating point (zero policy applied)."""
        return _frame(self.exact.fairness, "fairness")

    @property
    def cross_group_fmr(self) -> pd.DataFrame:
        """FMR of every pair of groups at every operating point; with intervals, pooled rows carry the cell's
        closed-form identity-clustered interval (``fmr_lower``, ``fmr_upper``, ``interval_method``,
        ``level``; None elsewhere)."""
        return _frame(self.exact.cross_group_fmr, "cross_group_fmr")

    @property
    def intervals(self) -> pd.DataFrame:
        """One row per interval (empty when the audit ran without intervals)."""
        return _frame(self.interval_records, "intervals")

    @property
    def tests(self) -> pd.DataFrame:
        """One row per comparison (pair of groups, or group against the rest), metric and operating point (empty
        when the audit ran without tests)."""
        return _frame(self.test_records, "tests")

    @property
    def test_summary(self) -> pd.DataFrame:
        """One row per family of group tests (metric, operating point, pairs or against the rest): how many gaps are
        distinguishable from noise (max-T), how many BH discoveries, the largest gap
        (:func:`matchaudit.estimators.test_summary.summarise_tests`)."""
        return pd.DataFrame(summarise_tests(self.test_records or []))

    @property
    def equivalence(self) -> pd.DataFrame:
        """One TOST verdict per metric, FMR target and pair of groups (empty when no margin was given)."""
        return _frame(self.equivalence_records, "equivalence")

    @property
    def calibration(self) -> pd.DataFrame:
        """Cllr, minCllr, actual and minimum DCF per group and operating point with intervals (empty without
        intervals)."""
        return _frame(self.calibration_result and self.calibration_result.to_records(), "calibration")

    @property
    def score_distributions(self) -> pd.DataFrame:
        """Genuine and impostor score means and SDs, d' and each group's shifts, with intervals (empty without
        intervals)."""
        return _frame(self.distribution_result and self.distribution_result.to_records(), "score_distributions")

    @property
    def portability(self) -> pd.DataFrame:
        """Per carried threshold and group: FMR and FNMR there with intervals, FMR / target, and the group's own
        threshold for the target with its interval (empty without carried thresholds; docs/intervals.md)."""
        return _frame(self.portability_records, "portability")

    @property
    def failures(self) -> pd.DataFrame:
        """Failure-to-acquire rates per group and class with intervals (empty when no comparison failed)."""
        return _frame(self.failure_records, "failures")

    @property
    def attacks(self) -> pd.DataFrame:
        """The impostor-attack presentation match rate (IAPMR) per operating point and group of the attacked
        subject, with its identity-clustered interval (empty without presentation attacks: bob vulnerability
        files)."""
        return _frame(self.attack_records, "attacks")

    def at_fmr(self, target: float, weighting: Weighting = "pooled") -> pd.DataFrame:
        """Group x (threshold, FMR, FNMR, their counts k/n, interval bounds and method) at one FMR target."""
        return self._point("fmr_target", target, weighting)

    def at_threshold(self, threshold: float, weighting: Weighting = "pooled") -> pd.DataFrame:
        """As :meth:`at_fmr`, at one of the fixed thresholds the audit was asked for."""
        return self._point("threshold", threshold, weighting)

    def at_fnmr(self, target: float, weighting: Weighting = "pooled") -> pd.DataFrame:
        """As :meth:`at_fmr`, at one of the FNMR targets (the dual operating point: FMR at a fixed FNMR)."""
        return self._point("fnmr_target", target, weighting)

    def _target(self, kind: str, target: float, weighting: Weighting) -> float:
        """The audit's own target (or threshold) of ``kind`` that ``target`` names: equal, or within float32
        precision (a float32 0.01 is 0.0099999998); an InputError listing those it has otherwise."""
        what, param = {"fmr_target": ("FMR target", "fmr"), "fnmr_target": ("FNMR target", "fnmr"),
                       "threshold": ("threshold", "thresholds")}[kind]
        target = checks.number(target, param, finite=False)  # "1e-2" too (it was 'not in this audit')
        checks.choice(weighting, self.config.weightings, "weighting")  # a typo was blamed on the target
        ops = self.operating_points
        have = np.unique(ops.loc[(ops["kind"] == kind) & (ops["weighting"] == weighting), "target"].astype(float))
        named = checks.same_point(have, target)
        if named is not None:
            return named
        if not have.size:  # e.g. balanced weighting of data without identities: skipped (a warning says why)
            held = list(dict.fromkeys(ops.loc[ops["kind"] == kind, "weighting"]))
            raise InputError(f"this audit has no {what}s with {weighting} weighting (it has them with "
                             f"{', '.join(held) or 'none'}).", param="weighting")
        raise InputError(f"{what} {target!r} with {weighting} weighting is not in this audit "
                         f"(it has {have.tolist()}).", param=param)

    def _point(self, kind: str, target: float, weighting: Weighting) -> pd.DataFrame:
        target = self._target(kind, target, weighting)
        ops = self.operating_points
        sel = ops[(ops["kind"] == kind) & (ops["weighting"] == weighting) & (ops["target"] == target)]
        cols = ["group", "threshold", "fmr", "fmr_errors", "fmr_comparisons", "fnmr", "fnmr_errors",
                "fnmr_comparisons", "below_resolution"]
        out = sel[cols].set_index("group")
        for metric in ("FMR", "FNMR"):
            m = metric.lower()
            out[[f"{m}_low", f"{m}_high"]] = np.nan
            out[f"{m}_method"] = None
            for r in reversed(self.interval_records or []):  # several methods: the first one given is shown
                if (r["metric"], r["kind"], r["target"], r["weighting"]) == (metric, kind, target, weighting):
                    out.loc[r["group"], [f"{m}_low", f"{m}_high", f"{m}_method"]] = [r["low"], r["high"], r["method"]]
        return out

    # ------------------------------------------------------------------ reducers (fairlearn style)
    def group_values(self, metric: Literal["fmr", "fnmr"] = "fnmr", *, fmr: float, weighting: Weighting = "pooled"
                     ) -> pd.Series:
        """Per group, ``metric`` at FMR target ``fmr`` as the fairness measures read it: the groups they compare
        (small groups left out when the audit excludes them) and zero rates as the zero policy has them (upper
        bounds under ``zero_policy="upper-bound"``). Every reducer below derives from this one table, so
        ``difference == group_max - group_min`` and ``ratio == group_max / group_min`` under every option."""
        record = self._record(metric, "max_min_difference", fmr, weighting)
        rows = self.at_fmr(fmr, weighting).drop(ALL).drop(record["excluded_groups"])
        values, _ = fairness.apply_zero_policy(rows[metric].to_numpy(float),
                                               rows[f"{metric}_comparisons"].to_numpy(float),
                                               self.config.zero_policy, self.config.zero_policy_level)
        return pd.Series(values, index=rows.index, name=metric)

    def group_max(self, metric: Literal["fmr", "fnmr"] = "fnmr", *, fmr: float, weighting: Weighting = "pooled"
                  ) -> float:
        """The largest of :meth:`group_values`."""
        return float(self.group_values(metric, fmr=fmr, weighting=weighting).max())

    def group_min(self, metric: Literal["fmr", "fnmr"] = "fnmr", *, fmr: float, weighting: Weighting = "pooled"
                  ) -> float:
        """The smallest of :meth:`group_values`."""
        return float(self.group_values(metric, fmr=fmr, weighting=weighting).min())

    def difference(self, metric: Literal["fmr", "fnmr"] = "fnmr", *, fmr: float, weighting: Weighting = "pooled"
                   ) -> float:
        """Max - min of :meth:`group_values` (the audit's ``max_min_difference``)."""
        return float(self._record(metric, "max_min_difference", fmr, weighting)["value"])

    def ratio(self, metric: Literal["fmr", "fnmr"] = "fnmr", *, fmr: float, weighting: Weighting = "pooled"
              ) -> float:
        """Max / min of :meth:`group_values` (the audit's ``max_min_ratio``: inf or NaN with a reason in
        :attr:`fairness` where the smallest is 0)."""
        return float(self._record(metric, "max_min_ratio", fmr, weighting)["value"])

    def _record(self, metric: str, measure: str, fmr: float, weighting: Weighting) -> dict[str, Any]:
        """The fairness record of ``measure`` of ``metric`` at FMR target ``fmr``."""
        checks.choice(metric, ("fmr", "fnmr"), "metric")  # "auc" was blamed on group_by
        target = self._target("fmr_target", fmr, weighting)  # a clear error for a target the audit lacks
        rows = [r for r in self.exact.fairness
                if (r["rate"], r["measure"], r["kind"], r["target"], r["weighting"])
                == (metric.upper(), measure, "fmr_target", target, weighting)]
        if not rows:
            raise InputError("fairness measures need at least two groups (group the data by an attribute).",
                             param="group_by")
        return rows[0]

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """What ``results.json`` holds (before the version and command are added)."""
        payload = self.exact.to_dict()
        payload["summary"] = dict(payload["summary"], warnings=list(payload["summary"]["warnings"]) + self.warnings)
        if self.interval_records is not None:
            payload["intervals"] = self.interval_records
            payload["config"]["intervals"] = self.interval_options.recorded()
        if self.test_records is not None:
            payload["tests"] = self.test_records
            payload["config"]["tests"] = {k: v for k, v in asdict(self.test_options).items()}
        if self.equivalence_records is not None:
            payload["equivalence"] = self.equivalence_records
        if self.failure_records is not None:
            payload["failures"] = self.failure_records
        if self.attack_records is not None:
            payload["attacks"] = self.attack_records
        if self.portability_records is not None:
            payload["portability"] = self.portability_records
        if self.calibration_result is not None:
            payload["calibration"] = self.calibration_result.to_records()
        if self.distribution_result is not None:
            payload["score_distributions"] = self.distribution_result.to_records()
        return payload

    def document(self, command: str | None = None) -> dict[str, Any]:
        """What ``results.json`` holds, numbers as numbers (non-finite ones as floats, as :meth:`load` reads
        them): :meth:`to_dict` with the version and ``command`` (default :attr:`command`, else
        ``"matchaudit.audit"``). The report renders from it, in memory or loaded (the same page either way)."""
        return as_document({"matchaudit_version": self.version or __version__,
                            "command": command or self.command or "matchaudit.audit", **self.to_dict()})

    def save(self, out: str | Path, command: str | None = None, det_scale: DetScale | None = None,
             figures: bool = True) -> dict[str, Path]:
        """Write ``results.json`` (schema-checked), the CSV tables, ``curves.npz`` (the arrays behind the figures,
        so :meth:`load` gets them back) and, with ``figures``, one DET figure per weighting (``det_scale``: probit
        or log-log axes; default :attr:`det_scale`, else probit), one of FMR and FNMR against the threshold, the APE
        curves and the score distributions into ``out`` (created if missing) as one set: a re-run replaces the
        previous set, an interrupted one leaves it untouched, and a file there that an earlier audit did not write (or
        that was changed since) is never replaced: InputError before anything is written (:mod:`matchaudit.outputs`);
        return the paths written. ``command`` is recorded in ``results.json`` (default: :attr:`command`, else
        ``"matchaudit.audit"``); it and ``det_scale`` become the audit's own. Drawing the figures is most of the time a
        small audit takes to save."""
        out = Path(checks.path(out, "out"))
        if command is not None and (not isinstance(command, str) or not command.strip()):
            raise InputError(f"command {command!r}: give the command that made the audit, as text (or leave it out).",
                             param="command")
        scale = checks.choice(det_scale or self.det_scale or "probit", DetScale, "det_scale")
        if checks.flag(figures, "figures") and self.missing_arrays:
            raise InputError(f"figures cannot be drawn: {self.missing_arrays}; save with figures=False.",
                             param="figures")
        with staged(out, "audit") as tmp:  # the whole set or nothing (:mod:`matchaudit.outputs`)
            paths = write_results(self.document(command), self.exact.det, tmp)
            if not self.missing_arrays:
                paths["curves"] = write_arrays(self, tmp / ARRAYS, scale)
            if figures:
                paths.update(self._figures(tmp, scale))
        self.command, self.det_scale = command or self.command, scale
        return {k: out / Path(p).relative_to(tmp) for k, p in paths.items()}

    def _figures(self, tmp: Path, det_scale: DetScale) -> dict[str, Path]:
        """Draw the audit's figures into ``tmp``; return their paths by name."""
        from matchaudit.plots.det import plot_det, plot_rates_vs_threshold
        from matchaudit.plots.score_figures import ape_figure, distributions_figure

        paths: dict[str, Path] = {}
        config, opts = self.config, self.interval_options
        for w in dict.fromkeys(c["weighting"] for c in self.exact.det):
            wb = [b for b in self.bands if b["weighting"] == w] or None
            band_note = f"; {opts.level:.0%} {opts.band} bands" if wb and opts is not None else ""
            paths[f"det_{w}"] = tmp / f"det_{w}.png"
            plot_det([c for c in self.exact.det if c["weighting"] == w],
                     [p for p in self.exact.operating_points if p["weighting"] == w],
                     [s for s in self.exact.curve_summaries if s["weighting"] == w],
                     f"DET per group{', log-log' if det_scale == 'log' else ''} ({w} weighting; accept iff s "
                     f"{config.rule} t{band_note})", paths[f"det_{w}"], bands=wb,
                     scale=det_scale)
            paths[f"thresholds_{w}"] = plot_rates_vs_threshold(
                [c for c in self.exact.det if c["weighting"] == w],
                [p for p in self.exact.operating_points if p["weighting"] == w],
                f"FMR and FNMR against the threshold ({w} weighting; accept iff s {config.rule} t)",
                tmp / f"thresholds_{w}.png")
        if self.calibration_result is not None:
            paths["ape"] = ape_figure(self.calibration_result, tmp / "ape.png")
        if self.distribution_result is not None:
            paths["score_distributions"] = distributions_figure(self.distribution_result,
                                                                tmp / "score_distributions.png")
        return paths

    def __repr__(self) -> str:
        extra = [name for name, on in (("intervals", self.interval_records is not None),
                                       ("tests", self.test_records is not None)) if on]
        head = repr(self.exact).replace("AuditResult(", "Audit(", 1)
        return head + (f"\n  with {' and '.join(extra)}" if extra else "")


@tile_cache()
def audit(
    data: MatchData,
    *,
    fmr: float | Sequence[float] = (1e-1, 1e-2, 1e-3, 1e-4),
    thresholds: float | Sequence[float] = (),
    fnmr: float | Sequence[float] = (),
    rule: Rule = ">=",
    threshold_impostors: ThresholdImpostors = "all",
    measures: MeasureOptions | None = None,
    intervals: IntervalOptions | bool = True,
    tests: TestOptions | bool = False,
    equivalence: EquivalenceOptions | tuple[float, float] | None = None,
    carried: CarriedThresholds | None = None,
    backend: Backend | str | None = None,
    progress: bool = False,
) -> Audit:
    """Audit a matching system: exact per-group error rates and fairness measures, with intervals and tests.

    Parameters
    ----------
    data : MatchData
        From :func:`load_samples`, :func:`load_comparisons`, :func:`from_embeddings` or :func:`from_scores`.
    fmr : float or sequence of float
        FMR targets in [0, 1): the threshold at each is the lowest observed score whose FMR over the
        ``threshold_impostors`` is at most the target (+inf if none).
    thresholds : float or sequence of float
        Fixed thresholds to evaluate as well.
    fnmr : float or sequence of float
        FNMR targets in [0, 1) (the dual operating point: FMR at a fixed FNMR): the threshold at each is the
        highest observed score whose FNMR over all genuine comparisons is at most the target (-inf if none).
    rule : {">=", ">"}
        Accept iff ``score >= t`` (default) or ``score > t``.
    threshold_impostors : str
        The impostors whose FMR sets the one global threshold: ``"all"``, ``"same-group"``, or
        ``"same:ATTR,..."`` (those whose identities share the named grouping attributes, any subset of
        ``group_by``: NIST FRTE's same sex, age band and region), :mod:`matchaudit.pairings`.
    measures : MeasureOptions, optional
        What is measured besides the rates (default ``MeasureOptions()``):

        - ``weightings``: ``"pooled"`` (every comparison equal) and/or ``"balanced"`` (identity-balanced);
        - ``dcf_p_target``, ``dcf_c_miss``, ``dcf_c_fa``: the minDCF operating point of the curve summaries;
        - ``eer``: ``"rocch"`` (the ROC convex hull: BOSARIS, PyBOSARIS; default), ``"interpolated"`` (the NIST
          SRE'16 scorer, as wespeaker reports it), ``"closest"`` (speechbrain) or ``"fvc2000"`` (pyeer);
          docs/conventions.md;
        - ``fmr_threshold``: ``"lowest-score"`` (default) or ``"bob"`` (bob.measure's ``far_threshold``, the lowest
          *impostor* score with the target's FMR: reproduces bob's published FNMR; a plug-in number, so it runs
          without intervals, tests and equivalence, which re-derive thresholds by the default rule);
        - ``dcf`` (a sequence of (p_target, c_miss, c_fa)) and ``llr``: the operating points of the calibration and
          cost metrics (Cllr, minCllr, actual and minimum DCF per group with identity-aware intervals, APE curves,
          score distributions; computed with the intervals, docs/calibration.md), and whether the scores are
          natural-log likelihood ratios (Cllr and actual DCF need it);
        - ``calibration``: with intervals, compute those metrics (default; one more sorted pass over every
          comparison, about half of a default audit's time at 8e6 comparisons);
        - ``zero_policy``: zero rates in fairness ratios give inf/NaN with a reason (``"report"``) or one-sided
          upper bounds (``"upper-bound"``);
        - ``exclude_small_groups``: the fairness measures (and their intervals) over the groups that are not small
          only; every group is flagged ``small`` in ``summary["groups"]`` whatever this says (fewer than
          ``small_group_identities`` identities, default 10, or 20 genuine or 20 same-group impostor comparisons:
          docs/evaluators.md).
    intervals : IntervalOptions or bool
        Confidence intervals: ``True`` (default) with ``IntervalOptions()`` (each metric's default method, level
        0.95, 1,000 resamples, seed 0), an :class:`IntervalOptions` (``method``: one or several methods, each where
        it applies; ``level``, ``n_resamples``, ``seed``, ``one_sided``, ``band``, ``memory_gb``: the bootstrap's
        memory budget, in chunks that fit it), or ``False``. docs/intervals.md.
    tests : TestOptions or bool
        The groups' FNMR@FMR and FMR gaps at each target tested by identity-level permutations: ``True`` with
        ``TestOptions()`` (999 relabellings, every pair of groups, max-T adjusted at ``alpha`` 0.05), a
        :class:`TestOptions` (``comparisons="rest"``: each group against the pooled rest, the view for many
        groups), or ``False`` (default).
    equivalence : EquivalenceOptions or (float, float), optional
        A margin the user accepts as fair, e.g. ``(0.8, 1.25)`` (or an :class:`EquivalenceOptions` with its scale,
        replicates, alpha and scheme): every pair of groups' FNMR and FMR at each target is tested to lie within it
        (TOST on identity-bootstrap replicates). The report says "equivalent within the margin" only where this
        test says so.
    carried : CarriedThresholds, optional
        Thresholds set elsewhere and the FMR target each was set for: evaluated as fixed thresholds, and the
        portability table added (:attr:`Audit.portability`, pooled rates; docs/intervals.md, "Thresholds carried to
        a new population").
    backend : Backend or str, optional
        Where the bootstrap's counting passes run (default: this process): a Backend, or a backend's name
        ("cpu", "dask", "gpu"; made with its defaults for this call).
    progress : bool
        Show progress bars.

    Returns
    -------
    Audit

    Examples
    --------
    >>> import matchaudit as ma
    >>> data = ma.simulate(samples_per_identity=4, dim=32, seed=1).as_data()
    >>> result = ma.audit(data, fmr=1e-2, intervals=ma.IntervalOptions(n_resamples=50))
    >>> result.at_fmr(1e-2).loc["all", ["fnmr_errors", "fnmr_comparisons"]].tolist()
    [1, 1200]
    """
    checks.match_data(data)
    checks.flag(progress, "progress")
    if backend is not None and not isinstance(backend, (str, Backend)):
        raise InputError(f"backend {backend!r}: give a backend's name (cpu, dask, gpu) or a Backend.", param="backend")
    measures = _option(measures, MeasureOptions, "measures", {None: MeasureOptions()})
    iopts = _option(intervals, IntervalOptions, "intervals", {True: IntervalOptions(), False: None})
    topts = _option(tests, TestOptions, "tests", {True: TestOptions(), False: None})
    eopts = EquivalenceOptions(tuple(equivalence)) if isinstance(equivalence, tuple | list) else \
        _option(equivalence, EquivalenceOptions, "equivalence", {None: None}, "a margin (lo, hi)")
    if not np.size(fmr) and not np.size(thresholds) and not np.size(fnmr):
        raise InputError("no operating point: give at least one FMR target (fmr), FNMR target (fnmr) or threshold.",
                         param="fmr")
    carried = _option(carried, CarriedThresholds, "carried", {None: None})
    if carried is not None:
        given = np.atleast_1d(np.asarray(thresholds, dtype=object)).tolist()  # then each carried one not given
        thresholds = [*given, *(t for t in dict.fromkeys(carried.thresholds) if t not in given)]
        if "pooled" not in measures.weightings:
            raise InputError("carried thresholds: the portability table reads pooled rates; add 'pooled' to the "
                             "weightings.", param="weightings")
    config = measures.config(fmr, thresholds, fnmr, rule, threshold_impostors)
    with_bob = [(name, lib, cli) for name, on, lib, cli in (
        ("the intervals", iopts is not None, "intervals=False", "--no-intervals"),
        ("the tests", topts is not None, "tests=False", "no --tests"),
        ("the equivalence test", eopts is not None, "equivalence=None", "no --equivalence")) if on]
    if config.fmr_threshold == "bob" and with_bob:
        raise InputError(f"fmr_threshold 'bob' reproduces bob's plug-in numbers; {', '.join(w[0] for w in with_bob)} "
                         "re-derive each replicate's or relabelling's threshold by the default rule (the lowest "
                         "observed score), so they would not describe these numbers: leave them out "
                         f"({', '.join(w[1] for w in with_bob)}; CLI: {', '.join(w[2] for w in with_bob)}), or use "
                         "the default fmr_threshold.", param="fmr_threshold")
    level = (iopts or IntervalOptions()).level  # of the failure and attack rates' intervals too
    no_intervals = None
    if iopts is not None and not data.has_identities:
        no_intervals, iopts = intervals_without_identities(iopts), None
    elif iopts is None and measures.calibration and (measures.llr or measures.dcf is not None):  # asked for
        no_intervals = ("Cllr, minCllr and the actual and minimum DCF at the dcf points come with their intervals "
                        "(one pass over the sorted scores): skipped without intervals (CLI --no-intervals); the "
                        "per-group minDCF at the audit's own prior is in curve_summaries")
    if iopts is not None:
        check_methods(data, iopts)
    bal_method, bal_skipped = balanced_method(data, config, iopts) if iopts is not None else (None, None)
    if iopts is not None:  # before any work: a bootstrap that cannot fit is refused at once, a long one announced
        note = plan_note(plan_chunks(data, iopts, interval_weightings(config, bal_method)), iopts)
        announce(bool(note and progress), note or "")
    if topts is not None:  # before the audit's work: too many relabellings are the user's to change
        check_all_groups_budget(data, topts.comparisons, topts.n_resamples, "test_resamples")
    exact = evaluate(data, config, also_fmr=tested_targets(config.fmr_targets, topts, data, config.threshold_impostors))
    result = Audit(exact, iopts, topts)
    result.warnings += score_warnings(exact)
    if no_intervals:
        result.warnings.append(no_intervals)
    # what several steps below read, made once: the identity counts, the comparisons for the score views
    shared = share_passes(data, exact, iopts, topts, measures.calibration or bool(config.fnmr_targets))
    own = own_thresholds(carried) if carried is not None and iopts is not None else None
    if data.failures is not None:
        result.failure_records = fta_records(data, level)
        result.warnings.append(failure_note(data.failures))
    if data.attacks is not None and len(data.attacks):
        result.attack_records = iapmr_records(data, exact.operating_points, config.rule, level)
    if iopts is not None:
        with _engine(backend) as engine:  # the bootstrap's pass counts the shared identities too
            result.interval_records, result.bands = compute_intervals(data, config, iopts, progress=progress,
                                                                      result=exact, backend=engine, also=shared,
                                                                      own=own)
            if measures.calibration or config.fnmr_targets:
                cal, dist, dual, note = score_analyses(data, config, exact, iopts, measures.cost_points, measures.llr,
                                                       progress, engine)
                if measures.calibration:
                    result.calibration_result, result.distribution_result = cal, dist
                result.interval_records += dual
                result.warnings += note
        annotate(data, result.interval_records, iopts.methods, exact.summary.get("threshold_impostor_comparisons"))
        if bal_skipped:
            result.warnings.append(bal_skipped)
        idle = [m for m in iopts.methods if m in CLOSED_FORM] if len(iopts.methods) > 1 and not config.thresholds \
            else []
        if idle:
            result.warnings.append(f"{', '.join(idle)}: closed forms apply at fixed thresholds only, and none was "
                                   "given (--threshold): no intervals of that method.")
        result.warnings += regime_warnings(data, result.interval_records)
    result.warnings += add_cross_group_intervals(data, exact, iopts)  # the interval fields, None without intervals
    if carried is not None:
        result.portability_records = portability_table(data, exact, carried, result.interval_records, own, iopts)
    if topts is not None:
        result.test_records, test_warnings = group_tests(data, config, topts, exact, progress)
        result.warnings += test_warnings
    if eopts is not None and (data.n_groups < 2 or not data.has_identities):
        result.warnings.append("equivalence tests skipped: they compare groups' identities, and the data has "
                               + ("one group." if data.has_identities else "no identities."))
    elif eopts is not None:
        result.equivalence_records = [r.to_dict() for r in equivalence_tests(
            data, config.fmr_targets, margin=eopts.margin, scale=eopts.scale, method=eopts.method,
            n_resamples=eopts.n_resamples, alpha=eopts.alpha, seed=eopts.seed,
            rule=config.rule, threshold_impostors=config.threshold_impostors, progress=progress)]
    return result


def _option(value: Any, kind: type, name: str, given: dict, also: str = "") -> Any:
    """An option argument as its object: ``value`` itself when it is one of ``kind``, else ``given[value]`` (the
    shorthands that argument takes: ``True``, ``False``, ``None``), else an InputError naming ``name``."""
    if isinstance(value, kind):
        return value
    for short, meant in given.items():
        if value is short:
            return meant
    words = ", ".join([*map(repr, given), *([also] if also else [])])
    raise InputError(f"{name}={value!r}: give {words} or {kind.__name__}(...).", param=name)


@contextmanager
def _engine(backend: Backend | str | None) -> Iterator[Backend | None]:
    """``backend`` for the audit's resampling steps: a Backend as given, or a name's (``"cpu"``, ``"dask"``,
    ``"gpu"``) made with its defaults once for them and closed after."""
    if not isinstance(backend, str):
        yield backend
        return
    from matchaudit.engine import backends

    engine = backends.make_backend(backend)
    try:
        yield engine
    finally:
        engine.close()


__all__ = ["Audit", "TestOptions", "audit", "group_tests"]
