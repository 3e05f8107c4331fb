"""``matchaudit estimate``: label-free / semi-supervised per-group error rates (SPE-FR) from a scored table."""

from __future__ import annotations

import json
import warnings
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.console import Console

from matchaudit.choices import LABELFREE_FAMILIES
from matchaudit.cli.app import app
from matchaudit.cli.common import err_console, folder_path, floats, output_dir, user_errors
from matchaudit.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from matchaudit.data.validate import Where

console = Console()


class SamplerOpt(str, Enum):
    auto = "auto"
    numpyro = "numpyro"
    numpy = "numpy"


FamilyOpt = Enum("FamilyOpt", {n.replace("-", "_"): n for n in ("auto", *LABELFREE_FAMILIES)}, type=str)  # type: ignore[misc]


class RuleOpt(str, Enum):
    ge = ">="
    gt = ">"


def _groups(df: pd.DataFrame, col: str, where: Where) -> tuple[np.ndarray, np.ndarray, str | None]:
    """Group per row and the rows kept: one column, or per-side ``<col>_a``/``<col>_b`` (rows whose sides
    differ are dropped, and counted)."""
    import numpy as np

    from matchaudit.data.validate import as_str

    if col in df.columns:
        return as_str(df[col], where, f"group ({col})"), np.ones(len(df), dtype=bool), None
    a, b = f"{col}_a", f"{col}_b"
    if a in df.columns and b in df.columns:
        ga, gb = as_str(df[a], where, f"group ({a})"), as_str(df[b], where, f"group ({b})")
        keep = ga == gb
        note = f"{int((~keep).sum())} of {len(df)} pairs have different {a} and {b} and were excluded" if (~keep).any() else None
        if not keep.any():
            raise InputError(f"{where.what}: no pair has the same {a} and {b}; a label-free estimate needs within-group pairs")
        return ga, keep, note
    raise InputError(f"{where.what}: no group column {col!r} (nor per-side {a!r}/{b!r}); columns are {', '.join(map(str, df.columns))}. "
                     "Name it with --group-col.")


def _effective(text: str, family: str) -> int | None:
    """``--effective-scores``: a whole number of at least 100, or ``none``; only with ``--family auto``."""
    if family != "auto":
        raise InputError(f"applies to --family auto (the robust bands); {family}'s bands are conditional on it and "
                         "are not spread: drop it", param="effective_scores")
    if text.strip().lower() == "none":
        return None
    value = int(text) if text.isascii() and text.isdigit() else 0  # plain digits: not "+500", "7_000" or "1e4"
    if value < 100:
        raise InputError(f"{text!r}: give a whole number of at least 100, or none", param="effective_scores")
    return value


@app.command("estimate")
@user_errors
def estimate(
    table: Path = typer.Argument(..., help="Comparison table (CSV/TSV/Parquet): one row per pair with a score and a group."),
    out: Path = typer.Option(Path("matchaudit-estimate"), "--out", parser=folder_path, help="Output directory (created if missing)."),
    score_col: str = typer.Option("score", "--score-col", help="Score column."),
    group_col: str = typer.Option("group", "--group-col", help="Group column, or the stem of per-side columns <col>_a/<col>_b."),
    label_col: str = typer.Option(None, "--label-col", help="Optional label column (1/0, genuine/impostor...); empty/NA = unlabelled."),
    distance: bool = typer.Option(False, "--distance", help="Scores are distances (smaller = more alike): negated first."),
    family: FamilyOpt = typer.Option("auto", "--family", help="auto (default): every candidate family (two-piece SAS and t on the scores, on their Fisher z when they lie in [-1, 1], and SAS with a non-match shoulder), the band per group the union over those that fit, with a warning where they disagree; or one family (its bands are then conditional on it): a two-piece kernel, '-atanh' on Fisher's z of cosine scores, '-mix' with non-matches a bulk and a shoulder."),
    shape_prior: str = typer.Option("jeffreys", "--shape-prior", help="Priors of the tail parameters: jeffreys (default; Jeffreys prior of the t d.o.f., weak log-normal for sinh-arcsinh; nominal coverage in our recovery study), weak (Gamma(2, 0.1) d.o.f.) or supplement (the paper's; both pull heavy tails towards normal)."),
    fmr: str = typer.Option("1e-1,1e-2,1e-3", "--fmr", help="FMR targets, comma-separated (per-group FNMR@FMR and the pooled global threshold at each)."),
    level: float = typer.Option(0.89, "--level", help="Credible level of the equal-tailed bands (0.89 as in SPE-FR)."),
    rule: RuleOpt = typer.Option(RuleOpt.ge, "--rule", help="Accept iff score >= t (default) or > t."),
    sampler: SamplerOpt = typer.Option(SamplerOpt.auto, "--sampler", help="NUTS via NumPyro (extra 'mcmc'), the NumPy sampler, or auto."),
    chains: int = typer.Option(4, "--chains", help="Number of chains (>= 2, for R-hat)."),
    draws: int = typer.Option(None, "--draws", help="Kept draws per chain (default 500 NUTS, 5000 NumPy)."),
    warmup: int = typer.Option(None, "--warmup", help="Warm-up (tuning) iterations per chain, discarded (default: as many as --draws when it is given; else 500 NUTS, 3000 NumPy)."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same numbers)."),
    effective_scores: str = typer.Option(None, "--effective-scores", help="With --family auto: a group's robust bands are those of at most this many unlabelled scores (default 3000; a misspecification allowance, docs/labelfree.md), or 'none' for no allowance."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Per-group FNMR-vs-FMR curves, FNMR@FMR and FMR/FNMR at a global threshold with credible bands,
    from scores without identity labels (or with a few), by a Bayesian mixture of two-piece distributions.

    Writes estimate.json, estimate.csv, det_bands.png and ppc.png to --out.

    Example:

        matchaudit estimate matchaudit-demo/data/comparisons.csv --group-col group --fmr 1e-3 --out est/
    """
    from matchaudit.data.readers import read_table
    from matchaudit.data.validate import as_scores, partial_labels
    from matchaudit.labelfree import NotConverged, estimate as run_estimate
    from matchaudit.labelfree.figures import plot_det, plot_ppc
    from matchaudit.outputs import staged

    output_dir(out, "estimate", (table,))
    df, where = read_table(table, "comparison table")
    if score_col not in df.columns:
        raise InputError(f"{where.what}: no score column {score_col!r}; columns are {', '.join(map(str, df.columns))}. Use --score-col.")
    groups, keep, note = _groups(df, group_col, where)
    scores = as_scores(df[score_col], where, distance=distance)
    labels = None
    if label_col is not None:
        if label_col not in df.columns:
            raise InputError(f"{where.what}: no label column {label_col!r}; columns are {', '.join(map(str, df.columns))}.")
        labels = partial_labels(df[label_col].to_numpy(), where)[keep]
    targets = floats(fmr, "--fmr")
    allowance = {} if effective_scores is None else {"effective_scores": _effective(effective_scores, family.value)}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            est = run_estimate(scores[keep], groups[keep], labels, family=family.value, shape_prior=shape_prior,
                               fmr=targets, level=level, rule=rule.value, sampler=sampler.value, chains=chains,
                               draws=draws, warmup=draws if warmup is None else warmup, seed=seed, progress=not quiet,
                               **allowance)
        except NotConverged as e:
            err_console.print(f"[bold red]Not converged:[/] {escape(str(e))} (options --warmup, --draws, "
                              "--label-col, --family)", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except InputError as e:  # the library's arrays are this table's columns
            column = {"scores": "score_col", "groups": "group_col", "labels": "label_col"}.get(e.param or "")
            if column is None:
                raise
            raise InputError(str(e), param=column) from None
    if note:
        est.limits.append(note)
    doc = est.to_dict()
    doc["input"] = {"table": str(table), "score_col": score_col, "group_col": group_col, "label_col": label_col,
                    "score_orientation": "negated distance" if distance else "similarity", "excluded_pairs": note}
    with staged(out, "estimate") as tmp:
        (tmp / "estimate.json").write_text(json.dumps(doc, indent=1))
        est.to_frame().to_csv(tmp / "estimate.csv", index=False)
        plot_det(est, tmp / "det_bands.png")
        plot_ppc(est, tmp / "ppc.png")
    if not quiet:
        console.print(str(est), highlight=False, soft_wrap=True)
        console.print(f"Results written to [bold]{escape(str(out))}[/] (estimate.json, estimate.csv, det_bands.png, ppc.png).")
