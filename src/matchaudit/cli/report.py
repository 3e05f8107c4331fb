"""``matchaudit report``: the HTML report of an audit's results.json."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from matchaudit.cli.app import app
from matchaudit.cli.common import err_console, folder_path, report_file, user_errors
from matchaudit.errors import InputError


@app.command("report")
@user_errors
def report(
    results: Path = typer.Argument(..., parser=folder_path, help="results.json written by `matchaudit audit`, or its --out directory (figures are read beside it)."),
    out: str = typer.Option(None, "--out", help="HTML file to write, or a folder (an existing one, or a path ending in '/') for report.html in it (default: report.html beside results.json). An existing file is replaced only if it is an earlier matchaudit report."),
    compare: Path = typer.Option(None, "--compare", help="compare.json of `matchaudit compare` to include (default: one beside results.json)."),
    estimate: Path = typer.Option(None, "--estimate", help="estimate.json of `matchaudit estimate` to include (default: one beside results.json)."),
    claims: Path = typer.Option(None, "--claims", help="claims.json of `matchaudit check` to include (default: one beside results.json)."),
    conditions: Path = typer.Option(None, "--conditions", help="conditions.json of `matchaudit audit --condition-cols` to include (default: one beside results.json)."),
    heatmap_order: str = typer.Option(None, "--heatmap-order", help="The grouping attribute that orders the cross-group FMR heat map (default: the first grouping attribute)."),
    heatmap_aggregate: str = typer.Option(None, "--heatmap-aggregate", help="Pool the cross-group FMR heat map into coarser groups: grouping attributes, comma-separated (e.g. region or region,sex; pooled weighting)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Write one self-contained HTML report (opens without network) from an audit's results.json.

    Example:

        matchaudit report matchaudit-demo/results.json --out demo-report.html

        matchaudit report results/results.json --compare cmp/compare.json --estimate est/estimate.json
    """
    from matchaudit.report.html import write_report
    from matchaudit.auditing.results_json import results_file

    results = results_file(results, "results")  # or the audit's --out directory
    if not results.is_file():
        raise InputError(f"{results}: no such results file; run `matchaudit audit ... --out DIR` first.")
    for name, path in (("--compare", compare), ("--estimate", estimate), ("--claims", claims),
                       ("--conditions", conditions)):
        if path is not None and not path.is_file():
            raise InputError(f"{name} {path}: no such file.")
    report_file(results, out, "--out", (compare, estimate, claims, conditions))

    def warn(message: str) -> None:
        if not quiet:
            err_console.print(f"Warning: {escape(message)}", highlight=False, soft_wrap=True)

    path = write_report(results, out, compare, estimate, heatmap_order=heatmap_order, heatmap_aggregate=heatmap_aggregate,
                        warn=warn, claims=claims, conditions=conditions)
    if not quiet:
        typer.echo(f"Report written to {path}")
