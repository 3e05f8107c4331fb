"""``matchaudit log-mlflow AUDIT``: an audit's folder logged to one MLflow run (:func:`matchaudit.tracking.log_mlflow`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from matchaudit.cli.app import app
from matchaudit.cli.common import console, err_console, folder_path, user_errors


@app.command("log-mlflow")
@user_errors
def log_mlflow(
    audit: Path = typer.Argument(..., parser=folder_path, help="The audit: the folder `matchaudit audit --out` wrote (or its results.json)."),
    experiment: str = typer.Option(None, "--experiment", help="MLflow experiment name, created if missing (default: $MLFLOW_EXPERIMENT_NAME, else matchaudit)."),
    run_name: str = typer.Option(None, "--run-name", help="Name of the run (default: MLflow's)."),
    uri: str = typer.Option(None, "--tracking-uri", help="Where runs are logged (default: $MLFLOW_TRACKING_URI, else the file store ./mlruns)."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Log an audit to a new MLflow run: its configuration as params, every rate, count, threshold, curve summary,
    fairness measure and interval bound as a metric (the audit's values exactly), and its files as artefacts
    (results.json, the CSVs, the figures, report.html when present, and mlflow_keys.json: which record each metric
    key is). Needs MLflow: pip install 'matchaudit[tracking]'.

    Example:

        matchaudit log-mlflow results/ --experiment face-v2 --run-name nightly

        MLFLOW_TRACKING_URI=http://mlflow.example:5000 matchaudit log-mlflow results/
    """
    from matchaudit.tracking import log_mlflow as log

    run = log(audit, experiment=experiment, run_name=run_name, tracking_uri=uri)
    if not quiet:
        for note in run.absent:
            err_console.print(f"[yellow]Not logged:[/] {escape(note)}", highlight=False, soft_wrap=True)
        console.print(f"Logged run [bold]{run.run_id}[/] (experiment {run.experiment_id}) to {escape(run.tracking_uri)}: "
                      f"{run.n_metrics} metrics, {run.n_params} params, {len(run.artifacts)} artefacts.",
                      highlight=False, soft_wrap=True)
