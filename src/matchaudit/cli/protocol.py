"""``matchaudit protocol``: pick a budget of comparisons that makes FMR and FNMR estimates as precise as possible
(:mod:`matchaudit.protocols`; the predicted widths: :mod:`matchaudit.estimators.planning`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.console import Console

from matchaudit.cli.app import app
from matchaudit.cli.common import folder_path, output_dir, user_errors
from matchaudit.errors import InputError

console = Console()


@app.command("protocol")
@user_errors
def protocol(
    samples: Path = typer.Option(..., "--samples", help="Samples table: one row per sample (id and identity)."),
    embeddings: Path = typer.Option(None, "--embeddings", help="Optional pilot embeddings (.npy) for predicted widths."),
    id_col: str = typer.Option("sample_id", "--id-col"),
    identity_col: str = typer.Option("identity", "--identity-col"),
    genuine: int = typer.Option(..., "--genuine", help="Genuine comparisons to pick."),
    impostor: int = typer.Option(..., "--impostor", help="Impostor comparisons to pick."),
    threshold: float = typer.Option(None, "--threshold", help="With --embeddings: the threshold the predictions are for."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("matchaudit-protocol"), "--out", parser=folder_path, help="Output directory."),
    quiet: bool = typer.Option(False, "--quiet"),
) -> None:
    """Pick comparisons spread over identities (genuine: one per identity before any second; impostor: each
    identity as rarely as possible) and write pairs.csv (sample_a, sample_b), the input of
    `matchaudit audit --samples ... --pairs pairs.csv`. With --embeddings and --threshold, also predict FMR/FNMR
    interval widths for this protocol and for random selection of the same budget (protocol.json).

    Example:

        matchaudit protocol --samples samples.parquet --embeddings embeddings.npy --genuine 2000 --impostor 200000 --threshold 0.3 --out proto/
    """
    from matchaudit.data import load_samples
    from matchaudit.data.readers import column, read_table
    from matchaudit.encoding import jsonable
    from matchaudit.estimators import planning as pl
    from matchaudit.protocols import design_protocol, expected_random_sums
    from matchaudit.studies.planning import pilot_components
    from matchaudit.outputs import staged

    output_dir(out, "protocol", (samples, embeddings))
    df, where = read_table(samples, "samples table")
    ids = column(df, id_col, where, "sample id", "id_col").to_numpy()
    who = column(df, identity_col, where, "identity", "identity_col").to_numpy()
    if threshold is not None and embeddings is None:  # it was ignored silently
        raise InputError("--threshold is the operating point of the predicted widths: give it with --embeddings "
                         "(pilot embeddings), or drop it.")
    p = design_protocol(ids, who, genuine, impostor, seed=seed)
    doc = {"genuine": genuine, "impostor": impostor, "seed": seed, "usage": p.sums()}
    if embeddings is not None:
        if threshold is None:
            raise InputError("--embeddings needs --threshold (the operating point the widths are predicted at).")
        data = load_samples(samples, embeddings, id_col=id_col, identity_col=identity_col)
        fn, fm = pilot_components(data, threshold)
        doc |= {"components": [fn.to_dict(), fm.to_dict()], "predicted_designed": pl.predict(fn, fm, p.sums()),
                "predicted_random": pl.predict(fn, fm, expected_random_sums(who, genuine, impostor))}
    with staged(out, "protocol") as tmp:
        p.to_frame().to_csv(tmp / "pairs.csv", index=False)
        (tmp / "protocol.json").write_text(json.dumps(jsonable(doc), indent=2, allow_nan=False))
    if not quiet:
        console.print(f"{genuine:,} genuine + {impostor:,} impostor comparisons written to [bold]{escape(str(out / 'pairs.csv'))}[/].")
        if "predicted_designed" in doc:
            d, r = doc["predicted_designed"], doc["predicted_random"]
            console.print(f"predicted 95% width: FNMR {d['fnmr_width']:.3g} (random {r['fnmr_width']:.3g}), "
                          f"FMR {d['fmr_width']:.3g} (random {r['fmr_width']:.3g})")
