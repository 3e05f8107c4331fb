"""``matchaudit check``: a claims file answered pass / fail / inconclusive from an audit's intervals (and a model
comparison's), exit status 0 / 1 / 3 for CI (:mod:`matchaudit.claims`); and what ``matchaudit audit --claims`` asks
of the claims before it runs (the level and replicates they need, what the audit will have)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from matchaudit.cli.app import app
from matchaudit.cli.common import NAME_COLUMN, folder_path, output_dir, output_file, user_errors
from matchaudit.errors import InputError

if TYPE_CHECKING:
    from matchaudit.model import MatchData

console = Console()
STYLE = {"pass": "green", "fail": "bold red", "inconclusive": "yellow"}


@app.command("check")
@user_errors
def check(
    claims: Path = typer.Argument(..., help="Claims file (TOML, or YAML with PyYAML installed): see docs/claims.md."),
    results: Path = typer.Argument(..., parser=folder_path, help="The audit: `matchaudit audit`'s --out folder or its results.json."),
    comparison: Path = typer.Option(None, "--comparison", help="`matchaudit compare`'s --out folder or compare.json, for claims on a model difference."),
    out: Path = typer.Option(None, "--out", help="Folder to write claims.json, claims.csv and claims.xml (JUnit) into; the audit's own folder adds a claims section to its report (`matchaudit report`)."),
    junit: Path = typer.Option(None, "--junit", help="Also write the JUnit XML to this file (for CI test reports)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Check a claims file against an audit: each claim passes (its confidence bounds lie inside the limits),
    fails (a bound lies beyond one) or is inconclusive (the data cannot tell; the output says how many identities
    would settle it). Every verdict in the file is right with the file's level (default 95%). Exit status: 0 all
    pass, 1 a claim fails, 3 none fails but some are inconclusive, 2 bad input.

    Example:

        matchaudit check claims.toml results/

        matchaudit check claims.toml results/ --comparison cmp/ --out results/ --junit claims.xml
    """
    from matchaudit.claims import check as run_check
    from matchaudit.outputs import staged

    inputs = (claims, results, comparison)
    if out is not None:
        output_dir(out, "check", inputs)
    if junit is not None:
        output_file(junit, "check-junit", inputs, "--junit")
    result = run_check(claims, results, comparison)
    if out is not None:
        result.save(out, (results, comparison))
    if junit is not None:
        with staged(junit.parent, "check-junit", replace=False, names=(junit.name,), inputs=inputs,
                    param="junit") as tmp:
            (tmp / junit.name).write_text(result.junit(), encoding="utf-8")
    if not quiet:
        show(result)
    raise typer.Exit(result.exit_code)


def show(result) -> None:
    """The verdicts as a table, then the advice for the inconclusive ones."""
    table = Table(title=f"Claims ({result.claims.source}, level {result.claims.level:g})")
    table.add_column("claim", **NAME_COLUMN)
    table.add_column("verdict")
    table.add_column("reason", overflow="fold")
    for c, v in zip(result.claims.claims, result.verdicts):
        table.add_row(escape(f"{c.id}: {c.text}"), f"[{STYLE[v.status]}]{v.status}[/]", escape(v.reason))
    console.print(table)
    for c, v in zip(result.claims.claims, result.verdicts):
        for line in ([v.advice] if v.advice else []) + list(v.notes):
            console.print(f"{escape(c.id)}: {escape(line)}", highlight=False, soft_wrap=True)
    console.print(f"Overall: [{STYLE[result.status]}]{result.status}[/] (exit {result.exit_code})", highlight=False)




def audit_claims(path: Path | None, no_intervals: bool, out: Path, read: tuple) -> Any:
    """The claims file of --claims, read and checked before any work (its verdicts need the intervals)."""
    if path is None:
        return None
    from matchaudit.claims import read_claims

    if no_intervals:
        raise InputError("--claims is answered from the intervals: drop --no-intervals.")
    output_dir(out, "check", read)
    return read_claims(path)


def claims_preflight(claims: Any, data: MatchData, fmr: tuple[float, ...], thresholds: tuple[float, ...],
                      fnmr: tuple[float, ...], weightings: tuple[str, ...], one_sided: bool) -> None:
    """What the claims ask of the audit, checked against the command line before any work: the operating points,
    groups and weightings the audit will have, and both bounds (a fail needs the lower one)."""
    from matchaudit.claims import preflight

    if one_sided:
        raise InputError("--one-sided gives upper bounds only, and a claim's verdict needs both (a fail rests on the "
                         "lower bound): drop --one-sided with --claims.")
    preflight(claims, data.group_names, {"fmr_target": fmr, "threshold": thresholds, "fnmr_target": fnmr},
              weightings or ("pooled", "balanced"))


def claims_level(claims: Any, data: MatchData, level: float, n_resamples: int, quiet: bool) -> tuple[float, int]:
    """The intervals' level and bootstrap replicates: --level and --n-resamples, raised where they are the defaults
    (0.95, 1,000) to what the claims need: the level of their verdicts' bounds, and replicates that leave
    ``TAIL_REPLICATES`` beyond the farthest bound (:func:`matchaudit.claims.required_replicates`)."""
    from matchaudit.claims import required_level, required_replicates

    need = required_level(claims, data.group_names)
    if level < need - 1e-12 and level != 0.95:
        raise InputError(f"--level {level:g}: the claims need intervals at {need:.6g} or above ({len(claims.claims)} "
                         f"claims at level {claims.level:g}); drop --level to let --claims set it.")
    level = max(level, need)
    if n_resamples == 1000:
        n_resamples = max(n_resamples, required_replicates(level))
    if not quiet:
        console.print(f"Intervals at level {level:.6g} from {n_resamples:,} replicates: what the claims' verdicts need "
                      f"({len(claims.claims)} claims at level {claims.level:g}, docs/claims.md).")
    return level, n_resamples


def verdicts_of(claims: Any, audit: Any) -> Any:
    """The claims' verdicts on an audit in memory (:func:`matchaudit.check`), before it is saved."""
    from matchaudit.claims import check as run_check

    return run_check(claims, audit)
