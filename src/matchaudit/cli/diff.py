"""``matchaudit diff OLD NEW``: two audits of versions of one system compared, NEW - OLD per group and FMR target,
paired when both versions' scores of the same trials are given (:func:`matchaudit.api.diff`)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from matchaudit import __version__, checks
from matchaudit.cli.app import app
from matchaudit.cli.common import NAME_COLUMN, err_console, folder_path, names, output_dir, user_errors
from matchaudit.choices import PAIRED_SCHEMES
from matchaudit.errors import InputError

console = Console()
_SCORE_METRIC = {"cosine": "cosine", "negated euclidean": "euclidean"}  # an audit's score_kind -> load_samples' metric


def _audit_results(path: Path, flag: str) -> Path:
    """The results.json of the audit named by ``path`` (the folder or that file), which must exist."""
    from matchaudit.auditing.results_json import results_file

    if not path.exists():
        raise InputError(f"{flag} {path}: no such folder; give the folder `matchaudit audit --out` wrote.")
    return results_file(path, flag.lower())


def _scores(old: Path, samples, embeddings_old, embeddings_new, pairs, comparisons_old, comparisons_new, fmt,
            score_col, identity_cols, sample_cols):
    """Both versions' MatchData from the flags (None, None without them), grouped as the OLD audit."""
    from matchaudit.auditing import Audit
    from matchaudit.cli.formats import load_by_format
    from matchaudit.data import load_samples

    embedded = (samples, embeddings_old, embeddings_new)
    tabled = (comparisons_old, comparisons_new)
    if all(x is None for x in (*embedded, pairs, *tabled)):
        return None, None
    if any(x is not None for x in embedded) and any(x is not None for x in tabled):
        raise InputError("give the versions' scores one way: --samples with --embeddings-old and --embeddings-new, "
                         "or --comparisons-old and --comparisons-new.")
    summary = Audit.load(old, curves=False).exact.summary
    gb = tuple(summary["group_by"])
    if any(x is not None for x in tabled):
        if None in tabled:
            raise InputError("--comparisons-old and --comparisons-new go together: each version's scores of the "
                             "same trials.")
        cols = names(identity_cols)
        if len(cols) != 2:
            raise InputError(f"--identity-cols {identity_cols!r}: give two columns.")
        tidy = {"score_col": score_col, "identity_cols": (cols[0], cols[1])}
        if sample_cols is not None:
            tidy["sample_cols"] = checks.pair(sample_cols, "sample_cols")
        return tuple(load_by_format(fmt, comparisons=t, group_by=gb, tidy=tidy) for t in tabled)
    if None in embedded:
        raise InputError("--samples, --embeddings-old and --embeddings-new go together: the samples table and each "
                         "version's embeddings of them.")
    metric = _SCORE_METRIC.get(summary["score_kind"], "cosine")
    return tuple(load_samples(samples, e, group_by=gb, pairs_path=pairs, metric=metric)  # type: ignore[arg-type]
                 for e in (embeddings_old, embeddings_new))


def _table(rows: list[dict], level: float) -> Table:
    from matchaudit.formatting import fmt, interval

    t = Table(title=f"NEW - OLD in points, {100 * level:g}% simultaneous intervals (diff.csv: marginal too)")
    for name in ("metric", "FMR", "view", "OLD", "NEW", "NEW - OLD", "simultaneous", "verdict"):
        t.add_column(name, **(NAME_COLUMN if name == "view" else {}))
    colour = {"worse": "bold red", "better": "bold green"}
    for r in rows:
        v = r["verdict"]
        t.add_row(r["metric"], f"{r['fmr_target']:g}", escape(str(r["view"])), fmt(r["old"], "rate"),
                  fmt(r["new"], "rate"), fmt(r["difference"], "points", sign=True, suffix=False),
                  interval(r["simultaneous_low"], r["simultaneous_high"], "points").removesuffix(" points"),
                  f"[{colour[v]}]{v}[/]" if v in colour else v)
    return t


def _inside(out: Path, folders: tuple[Path, ...]) -> Path | None:
    """The input folder that ``out`` is, or lies in, if any."""
    target = Path(os.path.realpath(out))
    for f in folders:
        real = Path(os.path.realpath(f))
        if target == real or real in target.parents:
            return f
    return None


@app.command("diff")
@user_errors
def diff(
    old: Path = typer.Argument(..., parser=folder_path, help="The OLD version's audit: the folder `matchaudit audit --out` wrote (or its results.json)."),
    new: Path = typer.Argument(..., parser=folder_path, help="The NEW version's audit folder."),
    samples: Path = typer.Option(None, "--samples", help="Paired diff: the samples table both versions embedded (with --embeddings-old/--embeddings-new)."),
    embeddings_old: Path = typer.Option(None, "--embeddings-old", help="The OLD version's embeddings (.npy aligned with --samples)."),
    embeddings_new: Path = typer.Option(None, "--embeddings-new", help="The NEW version's embeddings (.npy aligned with --samples)."),
    pairs: Path = typer.Option(None, "--pairs", help="With --samples: the sample pairs the audits scored (sample_a, sample_b)."),
    comparisons_old: Path = typer.Option(None, "--comparisons-old", help="Paired diff: the trials scored by the OLD version (a comparison table)."),
    comparisons_new: Path = typer.Option(None, "--comparisons-new", help="The same trials scored by the NEW version."),
    fmt: str = typer.Option("tidy", "--format", help="Format of --comparisons-old/-new: tidy or pair-table."),
    score_col: str = typer.Option("score", "--score-col", help="Score column of the tables."),
    identity_cols: str = typer.Option("identity_a,identity_b", "--identity-cols", help="Identity columns of the tables."),
    sample_cols: str = typer.Option(None, "--sample-cols", help="The two sample id columns of the tables (default sample_a,sample_b)."),
    level: float = typer.Option(0.95, "--level", help="Confidence level of the intervals, marginal and simultaneous (the verdicts' familywise level)."),
    n_resamples: int = typer.Option(1000, "--n-resamples", help="Paired bootstrap replicates."),
    method: str = typer.Option("double-or-nothing", "--ci-method", help=f"Paired identity bootstrap: {', '.join(PAIRED_SCHEMES)}."),
    seed: int = typer.Option(0, "--seed", help="Seed: same seed, same numbers."),
    out: Path = typer.Option(Path("matchaudit-diff"), "--out", parser=folder_path, help="Output directory (not inside OLD or NEW)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Compare two audits of versions of one system: per FMR target both hold, FNMR overall and per group and each
    group's FMR, NEW - OLD with its interval, and which rows got worse or better beyond noise (simultaneous over
    the views of each metric and target: max-T).

    Paired when both versions' scores of the same trials are given (--samples with --embeddings-old/-new, or
    --comparisons-old/-new) and the trials, identities, labels and groups are identical: the paired identity
    bootstrap of `matchaudit compare`. Otherwise unpaired, from the audits' own standard errors, and the output
    says so and why. Writes diff.json, diff.csv, diff.html and det_diff.png (DET curves of both).

    Example:

        matchaudit diff old-audit/ new-audit/ --out diff/

        matchaudit diff old-audit/ new-audit/ --samples samples.parquet --embeddings-old a.npy --embeddings-new b.npy
    """

    from matchaudit.api import diff as ma_diff
    from matchaudit.outputs import staged
    from matchaudit.plots.det import plot_det_versions
    from matchaudit.report.audit_diff import render_diff

    results = (_audit_results(old, "OLD"), _audit_results(new, "NEW"))
    folders = tuple(r.parent for r in results)
    inputs = (*results, samples, embeddings_old, embeddings_new, pairs, comparisons_old, comparisons_new)
    given = _inside(out, folders)
    if given is not None:
        raise InputError(f"--out {out}: that is inside the audit folder {given}, an input; matchaudit never writes "
                         "into an input. Give another folder.")
    output_dir(out, "diff", inputs)
    data = _scores(results[0], samples, embeddings_old, embeddings_new, pairs, comparisons_old, comparisons_new, fmt,
                   score_col, identity_cols, sample_cols)
    res = ma_diff(*results, old_data=data[0], new_data=data[1], level=level, n_resamples=n_resamples, seed=seed,
                  ci_method=method, progress=not quiet)
    doc = {"command": "matchaudit " + " ".join(shlex.quote(x) for x in sys.argv[1:]), "version": __version__,
           "result": res.to_dict()}
    with staged(out, "diff", inputs=inputs) as tmp:
        (tmp / "diff.json").write_text(json.dumps(doc, indent=2, allow_nan=False))
        res.to_frame().to_csv(tmp / "diff.csv", index=False)
        det = (plot_det_versions(res.curves["old"], res.curves["new"], tmp / "det_diff.png")
               if res.curves["old"] and res.curves["new"] else None)
        (tmp / "diff.html").write_text(render_diff(doc["result"], det), encoding="utf-8")
    if not quiet:
        console.print(("Paired" if res.paired else "[yellow]Unpaired[/]") + ": " + escape(res.pairing.split(": ", 1)[1]),
                      highlight=False, soft_wrap=True)
        console.print(_table(res.rows, res.level))
        for note in res.notes:
            err_console.print(f"[yellow]Note:[/] {escape(note)}", highlight=False, soft_wrap=True)
        for s in res.skipped:
            err_console.print(f"[yellow]Skipped:[/] {escape(s)}", highlight=False, soft_wrap=True)
        worse = ", ".join(f"{r['metric']} {r['view']} at FMR {r['fmr_target']:g}" for r in res.worse)
        console.print(f"Worse beyond noise: {escape(worse) if worse else 'none'}.")
        console.print(f"Results written to [bold]{escape(str(out))}[/] (diff.json, diff.csv, diff.html, det_diff.png).")
