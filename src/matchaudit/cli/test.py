"""``matchaudit test``: is a gap in a metric between groups real? Studentized permutation tests
(DiCiccio et al., KDD 2020) for classifier tables; all pairs and one-vs-rest with Holm and max-T control."""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.markup import escape
from rich.console import Console
from rich.table import Table

from matchaudit import __version__, checks
from matchaudit.choices import CLASSIFIER_METRICS
from matchaudit.cli.app import app
from matchaudit.cli.common import NAME_COLUMN, folder_path, margin, names, output_dir, status, user_errors
from matchaudit.errors import InputError

console = Console()


class PermOpt(str, Enum):
    auto = "auto"
    within = "within-outcome"
    plain = "plain"


class StudOpt(str, Enum):
    studentized = "studentized"
    fast = "permutation-sd"
    none = "none"


class VarOpt(str, Enum):
    pooled = "pooled"
    closed = "closed-form"
    bootstrap = "bootstrap"


class AltOpt(str, Enum):
    two = "two-sided"
    greater = "greater"
    less = "less"


_STUDENTIZE = {"studentized": True, "permutation-sd": "permutation-sd", "none": False}
MATCHING_ALIASES = {"far": "fmr", "frr": "fnmr", "frr_at_far": "fnmr_at_fmr"}
"""FAR/FRR names (docs/methods.md section 1) accepted for the ISO/IEC 19795-1 FMR/FNMR on matching data."""


def _resamples(text: str) -> int | str:
    if text.strip().lower() == "exact":
        return "exact"
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"--n-resamples {text!r}: give a positive integer (e.g. 9999) or 'exact'.") from None
    if value < 1:
        raise InputError(f"--n-resamples {text!r}: give a positive integer (e.g. 9999) or 'exact'.")
    return value


@app.command("test")
@user_errors
def test(
    table: Path = typer.Option(None, "--table", help="Classifier table (CSV/TSV/Parquet): one row per example."),
    samples: Path = typer.Option(None, "--samples", help="Matching data: samples table (with --embeddings); all pairs."),
    embeddings: Path = typer.Option(None, "--embeddings", help="Matching data: .npy embeddings aligned with --samples."),
    comparisons: Path = typer.Option(None, "--comparisons", help="Matching data: a scored comparison table (identity_a, identity_b, score, <attr>_a/_b)."),
    duplicates: str = typer.Option("keep-both", "--duplicates", help="--comparisons: a comparison listed more than once ((a, b) and (b, a) of the same sample ids): keep-both (count every row, as trial-list scorers do; default, with a warning), first, mean (one row with the mean of their scores) or refuse."),
    group_by: str = typer.Option(None, "--group-by", help="Matching data: the attribute defining groups."),
    fmr: float = typer.Option(None, "--fmr", help="Matching data, metric fnmr_at_fmr: the FMR target (threshold re-derived in every relabelling)."),
    threshold_impostors: str = typer.Option("all", "--threshold-impostors", help="Matching data: impostors that set the threshold at --fmr: all, same-group, or same:ATTR,... (impostors whose identities share those grouping attributes, e.g. same:sex,age_band: NIST FRTE)."),
    unit: str = typer.Option("identity", "--unit", help="Matching data: exchangeable unit, identity (valid) or comparison (baseline; ignores dependence)."),
    y_true: str = typer.Option("y_true", "--y-true", help="True label column (0/1 or true/false)."),
    y_pred: str = typer.Option(None, "--y-pred", help="Prediction column (0/1)."),
    y_score: str = typer.Option(None, "--y-score", help="Score column (for AUC, or with --threshold)."),
    threshold: float = typer.Option(None, "--threshold", help="With --y-score and no --y-pred: predict 1 iff score >= threshold."),
    group: str = typer.Option("group", "--group", help="Group column."),
    groups: str = typer.Option(None, "--groups", help="Two groups to compare, 'A,B' (default: the only two, or all groups as --versus says)."),
    versus: str = typer.Option(None, "--versus", help="More than two groups: pairs (every pair), rest (each group against the pooled rest; matching data: FNMR and FMR) or both, on the same relabellings. Default: both for --table, pairs for matching data."),
    metric: str = typer.Option(None, "--metric", help=f"Metric: {', '.join(CLASSIFIER_METRICS)} (default: fnr for --table; fnmr_at_fmr with --fmr, else fnmr, for matching data)."),
    permutation: PermOpt = typer.Option(PermOpt.auto, "--permutation", help="Relabelling: within-outcome (FNR/FPR/TPR/TNR/AUC by default) or plain."),
    studentize: StudOpt = typer.Option(StudOpt.studentized, "--studentize", help="studentized (valid under the weak null), permutation-sd (fast variant) or none (baseline; invalid under the weak null)."),
    variance: VarOpt = typer.Option(VarOpt.pooled, "--variance", help="Classifier tables: pooled (two-proportion null variance; rates), closed-form (per-group binomial, DeLong for AUC) or bootstrap (with --studentize permutation-sd). Matching data use the identity-clustered variance."),
    n_bootstrap: int = typer.Option(1000, "--n-bootstrap", help="Bootstrap replicates for --variance bootstrap."),
    n_resamples: str = typer.Option("9999", "--n-resamples", help="Random relabellings, or 'exact' to enumerate all (small data)."),
    alternative: AltOpt = typer.Option(AltOpt.two, "--alternative", help="Two-group test only: two-sided, greater (A > B) or less."),
    seed: int = typer.Option(0, "--seed", help="Seed: same seed, same numbers."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level of the 'significant' flags (and of --equivalence)."),
    level: float = typer.Option(0.95, "--level", help="Confidence level of the effect and p-value intervals, as in every command."),
    equivalence: str = typer.Option(None, "--equivalence", help="Matching data: instead of testing for a gap, test that it lies within a margin lo,hi accepted as fair (e.g. 0.8,1.25): TOST on --n-resamples double-or-nothing identity replicates, at --alpha; needs --fmr."),
    equivalence_scale: str = typer.Option("ratio", "--equivalence-scale", help="With --equivalence: ratio (A / B) or difference (A - B)."),
    out: Path = typer.Option(Path("matchaudit-test"), "--out", parser=folder_path, help="Output directory (created if missing)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Is the gap real? Test metric(A) = metric(B) by a studentized permutation test.

    Classifier tables (--table): within-outcome relabelling of rows. Matching data (--samples/--embeddings or
    --comparisons, --group-by): group labels permuted across identities (the identity is the exchangeable unit);
    metrics fnmr, fmr (with --threshold), fnmr_at_fmr (with --fmr), auc, eer (with --studentize permutation-sd).

    Two groups (or --groups A,B): one test. More groups: every pair and/or each group against the rest (--versus),
    with Holm and max-T family-wise adjusted p-values and BH q-values. Writes test.json, comparisons.csv and
    null_distribution.png.

    Example:

        matchaudit test --table predictions.csv --y-true label --y-pred pred --group gender --metric fnr --n-resamples 9999 --seed 0 --out results/

        matchaudit test --table scores.parquet --y-true y --y-score s --group ethnicity --metric auc --alpha 0.05 --out results/

        matchaudit test --samples samples.parquet --embeddings embeddings.npy --group-by group --metric fnmr_at_fmr --fmr 1e-3 --n-resamples 999 --out results/
    """
    from matchaudit.cli.matching_writer import write_matching_test, write_test
    from matchaudit.data import load_comparisons, load_samples
    from matchaudit.data.classifier_table import load_classifier_table
    from matchaudit.estimators.classifier import all_groups_test, group_test

    output_dir(out, "test", (table, samples, embeddings, comparisons))
    checks.probability(alpha, "alpha")
    checks.probability(level, "level")
    if level <= 0.5:  # --level was this command's significance level before: never read 0.05 as a 5% interval
        raise InputError(f"--level {level:g}: the confidence level of the intervals (e.g. 0.95), as in every command; "
                         "the significance level is --alpha (e.g. --alpha 0.05).")
    pair = names(groups)
    if (pair and len(pair) != 2) or (groups is not None and not pair):  # ',' was read as no --groups
        raise InputError(f"--groups {groups!r}: give exactly two groups, e.g. --groups A,B.")
    if versus is not None:
        from matchaudit.estimators.matching_tests import Comparisons

        checks.choice(versus, Comparisons, "comparisons")
    if versus is not None and pair:
        raise InputError("--versus chooses the comparisons among all groups; --groups names two: give one of them.")
    meta = {"command": "matchaudit " + " ".join(shlex.quote(a) for a in sys.argv[1:]), "version": __version__}
    if (table is None) == (samples is None and comparisons is None):
        raise InputError("give --table (classifier data) or matching data (--samples with --embeddings, or "
                         "--comparisons), not both or neither.")
    if duplicates != "keep-both" and comparisons is None:
        raise InputError("--duplicates applies to a scored comparison table (--comparisons).")
    if table is None:
        data = (load_samples(samples, embeddings, group_by=names(group_by)) if samples is not None
                else load_comparisons(comparisons, group_by=names(group_by), duplicates=duplicates))
        name = (metric or ("fnmr_at_fmr" if fmr is not None else "fnmr")).lower()
        metric = MATCHING_ALIASES.get(name, name)
        if equivalence is not None:
            _equivalence(data, metric, fmr, equivalence, equivalence_scale, pair, n_resamples, alpha, seed,
                         threshold_impostors, meta, out, quiet)
            return
        if threshold is None and fmr is None and metric in ("fnmr", "fmr"):
            raise InputError(f"--metric {metric} on matching data needs --threshold (or use fnmr_at_fmr with --fmr).")
        doc, rows = write_matching_test(
            data, metric, out, groups=tuple(pair) if pair else None, threshold=threshold, fmr=fmr,
            threshold_impostors=threshold_impostors, comparisons=versus, unit=unit, studentize=_STUDENTIZE[studentize.value],
            variance="clustered" if metric in ("fnmr", "fmr", "fnmr_at_fmr")
            and studentize.value != "permutation-sd" else "bootstrap", n_bootstrap=n_bootstrap,
            n_resamples=_resamples(n_resamples), alternative=alternative.value, seed=seed, alpha=alpha,
            level=level, meta=meta, progress=not quiet)
        if not quiet:
            _print(rows, doc["result"], out, alpha)
        return
    if equivalence is not None:
        raise InputError("--equivalence tests matching data (--samples/--embeddings or --comparisons).")
    if not table.exists():
        raise InputError(f"--table {table}: no such file.")
    if y_pred is None and y_score is None:
        raise InputError("give --y-pred (predictions) and/or --y-score (scores).")
    if fmr is not None:  # it was ignored silently
        raise InputError("--fmr applies to matching data (--samples or --comparisons); a classifier table has no "
                         "FMR target: use --threshold with --y-score, or --y-pred.")
    if threshold is not None and y_score is None:
        raise InputError("--threshold turns --y-score into predictions; with --y-pred alone drop it.")
    metric = metric or "fnr"
    data = load_classifier_table(table, y_true=y_true, group=group, y_pred=y_pred, y_score=y_score, threshold=threshold)
    common = dict(permutation=permutation.value, studentize=_STUDENTIZE[studentize.value], variance=variance.value,
                  n_bootstrap=n_bootstrap, n_resamples=_resamples(n_resamples), seed=seed, level=level)
    meta |= {"table": str(table), "alpha": alpha, "level": level}
    with status(quiet, "Permutation test..."):
        if pair or (len(data.group_names) == 2 and versus is None):
            res = group_test(data, metric, tuple(pair) if pair else None, alternative=alternative.value, **common)
        else:
            if alternative.value != "two-sided":  # it was ignored silently
                raise InputError(f"--alternative {alternative.value} is a two-group test's; with "
                                 f"{len(data.group_names)} groups the tests are two-sided (--groups A,B for one pair).")
            res = all_groups_test(data, metric, comparisons=versus or "both", alpha=alpha, **common)
    doc, rows = write_test(res, metric, out, alpha, meta)
    if not quiet:
        _print(rows, doc["result"], out, alpha)


def _equivalence(data, metric: str, fmr: float | None, margin_text: str, scale: str, pair: list[str], n_resamples: str,
                 alpha: float, seed: int, threshold_impostors: str, meta: dict, out: Path, quiet: bool) -> None:
    """``--equivalence``: TOST of each pair (or ``--groups``) at ``--fmr``; equivalence.json and equivalence.csv."""
    import json

    import pandas as pd

    from matchaudit.auditing.equivalence import equivalence_tests
    from matchaudit.encoding import jsonable
    from matchaudit.outputs import staged

    if metric not in ("fnmr_at_fmr", "fmr") or fmr is None:
        raise InputError("--equivalence tests FNMR or FMR at the global threshold of an FMR target: give --fmr "
                         "(and --metric fnmr_at_fmr, the default, or fmr).")
    resamples = _resamples(n_resamples)
    if resamples == "exact":
        raise InputError("--n-resamples exact enumerates relabellings; --equivalence resamples identities: give a "
                         "number of replicates (e.g. 1999).")
    res = equivalence_tests(data, fmr, margin=margin(margin_text), scale=scale,
                            metrics=("fnmr" if metric == "fnmr_at_fmr" else "fmr",),
                            pairs=[tuple(pair)] if pair else None, n_resamples=resamples, alpha=alpha, seed=seed,
                            threshold_impostors=threshold_impostors, progress=not quiet)
    rows = jsonable([r.to_dict() for r in res])  # the files' encoding: lists, non-finite numbers as words
    with staged(out, "test") as tmp:
        (tmp / "equivalence.json").write_text(json.dumps(meta | {"kind": "equivalence", "results": rows}, indent=2,
                                                         allow_nan=False))
        pd.DataFrame(rows).to_csv(tmp / "equivalence.csv", index=False)
    if not quiet:
        for r in res:
            console.print(r.verdict(), highlight=False)
        console.print(f"Results written to [bold]{escape(str(out))}[/] (equivalence.json, equivalence.csv).")


def _print(rows: list[dict], result: dict, out: Path, alpha: float) -> None:
    table = Table(title=f"{result.get('method')}")
    cols = ["comparison", "effect", "pvalue"] + [c for c in ("pvalue_holm", "pvalue_maxt", "qvalue_bh") if c in rows[0]]
    for c in cols + ["verdict"]:
        table.add_column(c, **(NAME_COLUMN if c == "comparison" else {}))
    for r in rows:
        sig = r.get("significant_maxt", r.get("significant"))
        verdict = r["reason"] if r.get("reason") else (f"{r['direction']} (significant at {alpha:g})" if sig
                                                       else f"not significant at {alpha:g}")
        table.add_row(*[f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols], verdict)
    console.print(table)
    for r in rows:
        if r.get("caveat") and r.get("significant_maxt", r.get("significant")):
            console.print(f"Caveat ({escape(str(r['comparison']))}): {escape(r['caveat'])}.", highlight=False)
    console.print(f"Results written to [bold]{escape(str(out))}[/] (test.json, comparisons.csv, null_distribution.png).")
