"""``matchaudit simulate``: write a synthetic data set (von Mises-Fisher embeddings) in the audit's input format."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from matchaudit.cli.app import app
from matchaudit.cli.common import folder_path, output_dir, user_errors
from matchaudit.errors import InputError

if TYPE_CHECKING:
    from matchaudit.simulation import GroupSpec, SamplesPerIdentity


class Preset(str, Enum):
    demo = "demo"
    paper_b1 = "paper-b1"


class Format(str, Enum):
    parquet = "parquet"
    csv = "csv"


def _parse_sizes(text: str) -> SamplesPerIdentity:
    """``"10"`` (every identity) or ``"5:15"`` (each identity's count uniform in 5..15)."""
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        parts = []
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise InputError(f"--samples-per-identity {text!r}: give a count (10) or a range lo:hi (5:15).")


def _demo_groups(identities: int | None) -> dict[str, GroupSpec]:
    """The demo groups, rescaled to ``identities`` in total (same proportions, at least one per group)."""
    import numpy as np

    from matchaudit.simulation import DEMO_GROUPS, GroupSpec

    if identities is None:
        return DEMO_GROUPS
    total = sum(g.n_identities for g in DEMO_GROUPS.values())
    if identities < len(DEMO_GROUPS):
        raise InputError(
            f"--identities {identities}: the demo preset needs at least {len(DEMO_GROUPS)} (one per group)."
        )
    # largest remainders: the counts add up to ``identities`` exactly (rounding each share wrote 4 for 3, 200 for
    # 199), at least one per group
    shares = np.array([g.n_identities for g in DEMO_GROUPS.values()], float) * identities / total
    counts = np.maximum(1, np.floor(shares)).astype(int)
    order = np.argsort(-(shares - np.floor(shares)), kind="stable")
    for i in order[: identities - counts.sum()]:
        counts[i] += 1
    while counts.sum() > identities:  # the minimum of one per group took more than the floors gave
        counts[int(np.argmax(counts))] -= 1
    return {name: GroupSpec(int(n), g.kappa, g.centroid_kappa) for n, (name, g) in zip(counts, DEMO_GROUPS.items())}


@app.command("simulate")
@user_errors
def simulate(
    out: Path = typer.Option(
        ..., "--out", parser=folder_path, help="Directory to write samples.<format> and embeddings.npy into (created if missing)."
    ),
    preset: Preset = typer.Option(
        Preset.demo,
        "--preset",
        help="demo: groups A/B/C with known FNMR and FMR gaps; paper-b1: the similarity-scoring paper's "
        "appendix B.1 (one group, kappa ~ U[100, 800]).",
    ),
    identities: int | None = typer.Option(
        None,
        "--identities",
        help="Number of identities (default: 200 for demo, split about 50/30/20% over A/B/C; 1000 for paper-b1).",
    ),
    samples_per_identity: str = typer.Option(
        "10",
        "--samples-per-identity",
        help="Samples per identity: a count (10) or a range lo:hi drawn per identity (5:15).",
    ),
    dim: int = typer.Option(128, "--dim", help="Embedding dimension."),
    seed: int = typer.Option(0, "--seed", help="Random seed: the same seed writes the same files."),
    fmt: Format = typer.Option(Format.parquet, "--format", help="File format of the samples table."),
    quiet: bool = typer.Option(False, "--quiet", help="Print nothing but errors."),
) -> None:
    """Write a synthetic face-verification data set: unit-norm embeddings drawn from a von Mises-Fisher mixture
    (one component per identity; centroids on the sphere, concentration kappa per identity) and a samples
    table (sample_id, identity, group) - the input of `matchaudit audit`, with a known truth.

    Demo groups: A (reference), B (lower kappa: higher FNMR), C (identities clustered: higher FMR).

    Examples:

        matchaudit simulate --out synth --seed 1

        matchaudit simulate --out b1 --preset paper-b1 --samples-per-identity 5:15 --format csv
    """
    from matchaudit.simulation import paper_b1_groups, simulate_vmf

    console = Console()
    output_dir(out, "simulate")
    if preset is Preset.demo:
        groups = _demo_groups(identities)
    else:
        groups = paper_b1_groups(1000 if identities is None else identities)
    data = simulate_vmf(groups, dim=dim, samples_per_identity=_parse_sizes(samples_per_identity), seed=seed)
    written = data.write(out, fmt=fmt.value)
    if quiet:
        return
    table = Table(title=f"Synthetic vMF data set ({preset.value}, d={dim}, seed={seed})")
    for column in ("group", "identities", "samples", "kappa range", "centroids"):
        table.add_column(column, justify="left" if column in ("group", "centroids") else "right")
    counts = data.samples.groupby("group", sort=False).size()
    for name, spec in groups.items():
        table.add_row(
            name,
            f"{spec.n_identities:,}",
            f"{int(counts[name]):,}",
            f"{spec.kappa[0]:g}-{spec.kappa[1]:g}",
            "uniform" if spec.centroid_kappa is None else f"clustered (kappa {spec.centroid_kappa:g})",
        )
    console.print(table)
    shape = "x".join(str(n) for n in data.embeddings.shape)
    console.print(f"Wrote {written.samples} ({len(data.samples):,} rows) and {written.embeddings} ({shape} float32).")
