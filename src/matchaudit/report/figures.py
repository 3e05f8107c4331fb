"""Figures besides the DET: the cross-group FMR heat map (log10, as NIST report cards)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def save(fig: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG (for the report) and SVG (for papers) side by side."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    fig.savefig(path.with_suffix(".svg"))
    plt.close(fig)
    return path


def plot_cross_group(records: list[dict[str, Any]], target: float, path: Path) -> Path:
    """Heat map of log10 FMR for every (group_a, group_b) pair at one operating point."""
    groups = sorted({r["group_a"] for r in records} | {r["group_b"] for r in records})
    idx = {g: i for i, g in enumerate(groups)}
    m = np.full((len(groups), len(groups)), np.nan)
    for r in records:
        v = r["fmr"]
        if isinstance(v, (int, float)) and v > 0:
            m[idx[r["group_a"]], idx[r["group_b"]]] = m[idx[r["group_b"]], idx[r["group_a"]]] = np.log10(v)
    fig, ax = plt.subplots(figsize=(1.2 * len(groups) + 2.5, 1.0 * len(groups) + 1.8))
    im = ax.imshow(m, cmap="viridis")
    ax.set_xticks(range(len(groups)), groups, rotation=45, ha="right")
    ax.set_yticks(range(len(groups)), groups)
    for (i, j), v in np.ndenumerate(m):
        ax.text(j, i, "0" if np.isnan(v) else f"{10 ** v:.1e}", ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(im, ax=ax, label="log10 FMR")
    ax.set_title(f"Cross-group FMR at the threshold for FMR {target:g}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def plot_null(null: np.ndarray, observed: dict[str, float], title: str, xlabel: str, path: Path) -> Path:
    """Histogram of a permutation null distribution with the observed statistic(s) marked."""
    fig, ax = plt.subplots(figsize=(7, 4))
    finite = null[np.isfinite(null)]
    ax.hist(finite, bins=min(80, max(10, finite.size // 50)), color="0.7", edgecolor="0.5")
    for k, (label, value) in enumerate(observed.items()):
        if np.isfinite(value):
            ax.axvline(value, color=f"C{k % 10}", lw=2, label=f"{label}: {value:.3g}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("relabellings")
    ax.set_title(title, fontsize=10)
    if observed:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)
