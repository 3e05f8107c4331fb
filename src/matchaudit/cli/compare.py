"""``matchaudit compare``: is model A better than model B on the same comparisons? Paired identity bootstrap
intervals for the difference and a per-identity swap test (:mod:`matchaudit.estimators.compare`)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.console import Console

from matchaudit import __version__
from matchaudit.choices import PAIRED_SCHEMES
from matchaudit import checks
from matchaudit.cli.app import app
from matchaudit.cli.common import folder_path, err_console, floats, names, output_dir, user_errors
from matchaudit.errors import InputError

console = Console()


def _det(data, label: str, ax) -> None:
    """The model's exact pooled DET (all groups), from the metrics layer."""
    from matchaudit.metrics.evaluate import ALL, AuditConfig, evaluate
    from matchaudit.plots.probit import probit

    curve = next(c for c in evaluate(data, AuditConfig(fmr_targets=(), weightings=("pooled",))).det
                 if c["group"] == ALL)
    ax.plot(probit(curve["fmr"]), probit(curve["fnmr"]), label=label, drawstyle="steps-post")


def plot_compare(a, b, result, path: Path) -> None:
    """DET of both models (probit axes) and the difference in FNMR@FMR with its interval per target."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matchaudit.formatting import fmt
    from matchaudit.plots.figures import tight
    from matchaudit.plots.probit import probit, rate_ticks

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for d, lab in ((a, "model A"), (b, "model B")):
        _det(d, lab, ax1)
    rate_ticks(ax1, [1e-4, 1e-3, 1e-2, 0.1, 0.5], [0.01, 0.05, 0.2, 0.5, 0.9], lambda t: fmt(t, "rate", 4))
    ax1.set_xlim(*probit([1e-5, 0.5]))
    ax1.set_ylim(*probit([5e-3, 0.99]))
    ax1.set_xlabel("FMR")
    ax1.set_ylabel("FNMR")
    ax1.set_title("DET (pooled)")
    ax1.legend()
    rec = [r for r in result.records if r["metric"] == "fnmr_at_fmr" and r["view"] == "all"]
    x = np.arange(len(rec))
    d = np.array([r["difference"] for r in rec])
    lo, hi = np.array([r["low"] for r in rec]), np.array([r["high"] for r in rec])
    ax2.errorbar(x, d, yerr=[d - lo, hi - d], fmt="o", capsize=4)
    ax2.axhline(0, color="0.5", lw=1)
    ax2.set_xticks(x, [f"{r['fmr_target']:g}" for r in rec])
    ax2.set_xlabel("FMR target")
    ax2.set_ylabel("FNMR(A) - FNMR(B)")
    ax2.set_title(f"difference, {result.method} {100 * rec[0]['level']:.0f}% interval" if rec else "difference")
    tight(fig, dpi=120)
    fig.savefig(path, dpi=120)
    plt.close(fig)


@app.command("compare")
@user_errors
def compare(
    comparisons_a: Path = typer.Option(None, "--comparisons-a", help="Comparison table scored by model A."),
    comparisons_b: Path = typer.Option(None, "--comparisons-b", help="The same comparisons (same rows) scored by model B."),
    comparisons: Path = typer.Option(None, "--comparisons", help="One table holding both models' scores, one column each (with --score-cols)."),
    score_cols: str = typer.Option(None, "--score-cols", help="With --comparisons: model A's and model B's score columns, e.g. modelA,modelB."),
    fmt: str = typer.Option("tidy", "--format", help="Input format, as audit's: tidy or pair-table tables (--comparisons-a/-b or --comparisons with --score-cols), or a score-file format (bob, bob-csv, kaldi, kaldi-eer, pyeer, voxceleb, voxsrc, wespeaker, speechbrain, nist-sre, bosaris, frvt, score-matrix) with --scores-a and --scores-b and the files they share (see docs/formats.md)."),
    scores_a: Path = typer.Option(None, "--scores-a", help="A score-file --format: model A's score file (or score matrix)."),
    scores_b: Path = typer.Option(None, "--scores-b", help="A score-file --format: model B's score file for the same trials."),
    trials: Path = typer.Option(None, "--trials", help="A score-file --format: the trial list both score files score (kaldi, voxceleb, voxsrc; wespeaker's 3-column files)."),
    key: Path = typer.Option(None, "--key", help="--format nist-sre or bosaris: the trial key."),
    impostor_scores_a: Path = typer.Option(None, "--impostor-scores-a", help="--format pyeer: model A's impostor score file (--scores-a: its genuine one)."),
    impostor_scores_b: Path = typer.Option(None, "--impostor-scores-b", help="--format pyeer: model B's impostor score file (--scores-b: its genuine one)."),
    ids: Path = typer.Option(None, "--ids", help="--format score-matrix: the sample id of each row."),
    metadata: Path = typer.Option(None, "--metadata", help="Subject or speaker table giving the --group-by attributes (score-file formats)."),
    metadata_key: str = typer.Option(None, "--metadata-key", help="Key column of --metadata."),
    speaker_of: str = typer.Option(None, "--speaker-of", "--subject-of", help="Identity of each id: prefix, path, or a file of '<id> <identity>' lines (score-file formats)."),
    sample_cols: str = typer.Option(None, "--sample-cols", help="The two sample id columns of the tables (tidy default sample_a,sample_b; pair-table p1,p2)."),
    samples: Path = typer.Option(None, "--samples", help="Samples table (with --embeddings-a/--embeddings-b)."),
    embeddings_a: Path = typer.Option(None, "--embeddings-a", help="Model A embeddings (.npy aligned with --samples)."),
    embeddings_b: Path = typer.Option(None, "--embeddings-b", help="Model B embeddings (.npy aligned with --samples)."),
    pairs: Path = typer.Option(None, "--pairs", help="With --samples: score only these sample pairs (sample_a, sample_b)."),
    identity_cols: str = typer.Option("identity_a,identity_b", "--identity-cols", help="Identity columns of the tables."),
    score_col: str = typer.Option("score", "--score-col", help="Score column of the tables."),
    duplicates: str = typer.Option("keep-both", "--duplicates", help="The tables: a comparison listed more than once ((a, b) and (b, a) of the same sample ids): keep-both (count every row, as trial-list scorers do; default, with a warning), first, mean (one row with the mean of their scores) or refuse."),
    group_by: str = typer.Option(None, "--group-by", help="Attribute(s) for per-group differences and fairness measures."),
    fmr: str = typer.Option("1e-3", "--fmr", help="FMR targets, comma-separated."),
    method: str = typer.Option("double-or-nothing", "--ci-method", "--method", help=f"Paired identity bootstrap: {', '.join(PAIRED_SCHEMES)}."),
    n_resamples: int = typer.Option(1000, "--n-resamples", help="Bootstrap replicates."),
    test_resamples: int = typer.Option(999, "--test-resamples", help="Swap relabellings for the paired test (0: no test)."),
    n_permutations: int = typer.Option(None, "--n-permutations", hidden=True, help="Old name of --test-resamples."),
    threshold_impostors: str = typer.Option("all", "--threshold-impostors", help="Impostors that set the threshold at --fmr: all, same-group, or same:ATTR,... (impostors whose identities share those grouping attributes, e.g. same:sex,age_band: NIST FRTE)."),
    level: float = typer.Option(0.95, "--level", help="Confidence level."),
    seed: int = typer.Option(0, "--seed", help="Seed: same seed, same numbers."),
    out: Path = typer.Option(Path("matchaudit-compare"), "--out", parser=folder_path, help="Output directory."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Compare two models on the same comparisons: paired identity-bootstrap interval for FNMR@FMR(A) - FNMR@FMR(B)
    (overall, per group, and each fairness measure) and a paired per-identity swap test.

    Writes compare.json, differences.csv and compare.png (DET of both models; the difference with its interval).

    Example:

        matchaudit compare --comparisons-a a.csv --comparisons-b b.csv --group-by gender --fmr 1e-3,1e-4 --out cmp/

        matchaudit compare --format pair-table --comparisons bfw.csv --score-cols vgg16,senet50 --group-by e --out cmp/

        matchaudit compare --samples samples.parquet --embeddings-a a.npy --embeddings-b b.npy --out cmp/

        matchaudit compare --format wespeaker --scores-a a.score --scores-b b.score --speaker-of path --metadata vox1_meta.csv --group-by Gender
    """
    import pandas as pd

    from matchaudit.api import compare as ma_compare
    from matchaudit.cli.formats import load_by_format
    from matchaudit.data import load_samples
    from matchaudit.outputs import staged

    output_dir(out, "compare", (comparisons_a, comparisons_b, comparisons, samples, embeddings_a, embeddings_b,
                                pairs, scores_a, scores_b, impostor_scores_a, impostor_scores_b, trials, key, ids,
                                metadata,
                                speaker_of if speaker_of and Path(speaker_of).is_file() else None))
    gb = names(group_by)
    cols = names(identity_cols)
    if len(cols) != 2:
        raise InputError(f"--identity-cols {identity_cols!r}: give two columns.")
    if (score_cols is not None) != (comparisons is not None):
        raise InputError("--comparisons and --score-cols go together: one table and its two score columns.")
    tables = fmt in ("tidy", "pair-table")
    files = {"--scores-a": scores_a, "--scores-b": scores_b, "--trials": trials, "--key": key, "--ids": ids,
             "--impostor-scores-a": impostor_scores_a, "--impostor-scores-b": impostor_scores_b}
    if tables and any(v is not None for v in files.values()):
        raise InputError(f"--format {fmt} reads comparison tables (--comparisons-a/-b or --comparisons); "
                         f"{', '.join(k for k, v in files.items() if v is not None)} go with a score-file format.")
    tidy = dict(score_col=score_col, identity_cols=(cols[0], cols[1]))
    if sample_cols is not None:
        tidy["sample_cols"] = checks.pair(sample_cols, "sample_cols")
    if not tables:
        if scores_a is None or scores_b is None or comparisons_a or comparisons_b or comparisons or samples:
            raise InputError(f"--format {fmt}: give --scores-a and --scores-b (the two models' score files for the "
                             "same trials), with the files they share (--trials, --key, --ids, --metadata).")
        if fmt == "pyeer":  # before reading: its files have no ids, and the advice of the loader names audit's flags
            raise InputError("--format pyeer: its score files carry no ids (one score per line), so the comparisons "
                             "cannot be paired between the two models nor clustered by identity, which compare's "
                             "paired identity bootstrap needs. Compare the models on a format with ids (a tidy "
                             "table, a trial list with --speaker-of, bob, ...); audit reads pyeer files alone.")
        if (impostor_scores_a is None) != (impostor_scores_b is None):
            raise InputError("--impostor-scores-a and --impostor-scores-b go together (--format pyeer): each model's "
                             "impostor score file.")
        a, b = (load_by_format(fmt, scores=s, impostor_scores=i, trials=trials, key=key, ids=ids, metadata=metadata,
                               metadata_key=metadata_key, speaker_of=speaker_of, group_by=gb, duplicates=duplicates)
                for s, i in ((scores_a, impostor_scores_a), (scores_b, impostor_scores_b)))
    elif comparisons is not None:
        if comparisons_a is not None or comparisons_b is not None:
            raise InputError("give one table (--comparisons with --score-cols) or two (--comparisons-a and "
                             "--comparisons-b), not both.")
        models = names(score_cols)
        if len(models) != 2:
            raise InputError(f"--score-cols {score_cols!r}: give two score columns, model A's and model B's, e.g. "
                             "modelA,modelB.")
        a, b = (load_by_format(fmt, comparisons=comparisons, group_by=gb, duplicates=duplicates,
                               tidy=dict(tidy, score_col=m)) for m in models)
    elif comparisons_a is not None and comparisons_b is not None:
        a, b = (load_by_format(fmt, comparisons=t, group_by=gb, duplicates=duplicates, tidy=tidy)
                for t in (comparisons_a, comparisons_b))
    elif samples is not None and embeddings_a is not None and embeddings_b is not None:
        if duplicates != "keep-both":
            raise InputError("--duplicates applies to scored comparison tables; --pairs of --samples must list "
                             "each sample pair once.")
        a = load_samples(samples, embeddings_a, group_by=gb, pairs_path=pairs)
        b = load_samples(samples, embeddings_b, group_by=gb, pairs_path=pairs)
    else:
        raise InputError("give --comparisons-a and --comparisons-b, --comparisons with --score-cols, or --samples with "
                         "--embeddings-a and --embeddings-b.")
    if n_permutations is not None:  # the old flag: still honoured, with a warning (removed in 1.0)
        if test_resamples != 999:
            raise InputError("give --test-resamples only (--n-permutations is its old name).")
        err_console.print("[yellow]Warning:[/] --n-permutations is now --test-resamples (removed in 1.0).",
                          highlight=False)
        test_resamples = checks.integer(n_permutations, "n_permutations")
    res = ma_compare(a, b, fmr=floats(fmr, "--fmr"), ci_method=method, n_resamples=n_resamples,
                     test_resamples=test_resamples, seed=seed, level=level, threshold_impostors=threshold_impostors,
                     progress=not quiet)
    doc = {"command": "matchaudit " + " ".join(shlex.quote(x) for x in sys.argv[1:]), "version": __version__,
           "result": res.to_dict()}
    with staged(out, "compare") as tmp:
        (tmp / "compare.json").write_text(json.dumps(doc, indent=2, allow_nan=False))
        pd.DataFrame(res.records).to_csv(tmp / "differences.csv", index=False)
        plot_compare(a, b, res, tmp / "compare.png")
    if not quiet:
        for r in res.records:
            if r["metric"] == "fnmr_at_fmr" and r["view"] == "all":
                console.print(f"FMR {r['fmr_target']:g}: FNMR A {r['model_a']:.4g}, B {r['model_b']:.4g}, "
                              f"A - B = {r['difference']:.4g} [{r['low']:.4g}, {r['high']:.4g}] ({method})")
        for t in res.tests:
            verdict = (f"({t.reason})" if t.reason else t.direction if t.significant(1 - level) else
                       f"not significant at {1 - level:g}")  # a direction for p = 0.113 read as a finding
            console.print(f"paired swap test at FMR {t.details['fmr_target']:g}: p = {t.pvalue:.4g}, {verdict}")
        for w in res.warnings:
            err_console.print(f"[yellow]Warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
        console.print(f"Results written to [bold]{escape(str(out))}[/] (compare.json, differences.csv, compare.png).")
