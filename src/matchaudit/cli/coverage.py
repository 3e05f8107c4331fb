"""``matchaudit coverage``: the coverage study of interval methods on synthetic vMF data (appendix B.1)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.console import Console

from matchaudit.cli.app import app
from matchaudit.cli.common import folder_path, floats, names, output_dir, user_errors
from matchaudit.errors import InputError
from matchaudit.outputs import staged
from matchaudit.progress import Meter

console = Console()


def _kappa_range(text: str, flag: str) -> tuple[float, float]:
    """``lo,hi`` (or one value) with 0 < lo <= hi < inf."""
    kap = floats(text, flag)
    if len(kap) not in (1, 2) or not all(0 < k < float("inf") for k in kap) or kap[0] > kap[-1]:
        raise InputError(f"{flag} {text!r}: give lo,hi with 0 < lo <= hi (or one positive value).")
    return kap[0], kap[-1]


@app.command("coverage")
@user_errors
def coverage(
    out: Path = typer.Option(Path("matchaudit-coverage"), "--out", parser=folder_path, help="Output directory."),
    datasets: int = typer.Option(200, "--datasets", help="Number of synthetic data sets."),
    identities: int = typer.Option(200, "--identities", help="Identities per data set."),
    samples: int = typer.Option(10, "--samples", help="Samples per identity."),
    dim: int = typer.Option(128, "--dim", help="Embedding dimension."),
    n_resamples: int = typer.Option(200, "--n-resamples", help="Bootstrap replicates per interval."),
    fmr: str = typer.Option("1e-1,1e-2,1e-3", "--fmr", help="FMR targets (comma-separated)."),
    levels: str = typer.Option("0.95,0.9,0.8,0.5", "--levels", help="Nominal levels (comma-separated)."),
    kappa: str = typer.Option("100,800", "--kappa", help="Concentration range lo,hi of the identities (kappa ~ U[lo, hi]; lower is harder: more errors). One value: every identity the same."),
    group_kappas: str = typer.Option("", "--group-kappas", help="Two or more groups with equal shares of the identities, their kappa ranges separated by ';' (e.g. '50,200;30,120'); adds the FNMR fairness measures at each FMR target. Replaces --kappa."),
    truth_samples: int = typer.Option(0, "--truth-samples", help="Draws per identity of the shared protocol's impostor Monte Carlo that sets the true thresholds (0: 100 x --samples, threshold error about 5% of a data set's spread)."),
    protocol: str = typer.Option("shared", "--protocol", help="shared (paper: same identities, truth conditional on them) or fresh (new identities per data set, truth from the model)."),
    roc_methods: str = typer.Option(",".join(("recentered", "naive", "gaussian", "vertex", "double-or-nothing")), "--roc-methods", help="Methods for FNMR@FMR."),
    fixed_methods: str = typer.Option("wilson,wilson-naive,wald,clopper-pearson,jackknife,recentered,vertex,double-or-nothing", "--fixed-methods", help="Methods for FMR/FNMR at the true thresholds."),
    seed: int = typer.Option(0, "--seed", help="Seed of the population and data sets."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Share of intervals containing the truth, per method, nominal level and FMR target (like the paper's
    Tables 1-2). Writes coverage.csv, coverage.json and coverage.md.

    Example:

        matchaudit coverage --datasets 200 --identities 200 --n-resamples 200 --fmr 1e-1,1e-2,1e-3 --out cov/
    """
    output_dir(out, "coverage")
    from matchaudit.studies.coverage import CoverageConfig, markdown, pivot, run_coverage

    if protocol not in ("shared", "fresh"):
        raise InputError(f"--protocol {protocol!r}: use shared or fresh.")
    kap = _kappa_range(kappa, "--kappa")
    groups = tuple(_kappa_range(g, "--group-kappas") for g in group_kappas.split(";")) if group_kappas.strip() else ()
    if truth_samples < 0 or 0 < truth_samples < samples:
        raise InputError(f"--truth-samples {truth_samples}: give 0 (automatic) or at least --samples ({samples}).")
    lv = floats(levels, "--levels")
    cfg = CoverageConfig(n_datasets=datasets, n_identities=identities, samples=samples, dim=dim,
                         n_resamples=n_resamples, fmr_targets=floats(fmr, "--fmr"), levels=lv,
                         identities=protocol, seed=seed, roc_methods=names(roc_methods),
                         fixed_methods=names(fixed_methods), kappa=kap, group_kappas=groups,
                         truth_samples=truth_samples)
    with Meter(not quiet, "coverage study", cfg.n_datasets, "data sets") as meter:
        res = run_coverage(cfg, progress=lambda i: meter.advance(i - meter.done))
    with staged(out, "coverage") as tmp:
        res.to_frame().to_csv(tmp / "coverage.csv", index=False)
        (tmp / "coverage.json").write_text(json.dumps({"config": dict(cfg.__dict__), "truth": res.truths,
                                                       "rows": res.rows}, indent=1, default=str))
        (tmp / "coverage.md").write_text(markdown(pivot(res)))
    if not quiet:
        console.print(pivot(res).round(3).to_string())
        console.print(f"Written to [bold]{escape(str(out))}[/] (coverage.csv, coverage.json, coverage.md).")
