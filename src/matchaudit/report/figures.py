"""Figures besides the DET: the cross-group FMR heat map (log colour scale, as NIST report cards), the permutation
null; and how group names are drawn (font fallback, short labels for names no installed font covers)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from matchaudit.formatting import fmt, value  # noqa: E402
from matchaudit.model import ALL  # noqa: E402


def save(fig: plt.Figure, path: Path) -> Path:
    """Write a figure as PNG (for the report) and SVG (for papers) side by side."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    fig.savefig(path.with_suffix(".svg"))
    plt.close(fig)
    return path


def plot_cross_group(records: list[dict[str, Any]], target: float, path: Path) -> Path:
    """Heat map of the FMR of every (group_a, group_b) pair at one operating point: colours on a log scale with the
    colour bar in rates; a pair without false matches grey and marked 0 (a log scale has no place for it); each
    cell's text dark or light against its colour."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    groups = list(dict.fromkeys(g for r in records for g in (r["group_a"], r["group_b"])))  # the data's order
    idx = {g: i for i, g in enumerate(groups)}
    m = np.full((len(groups), len(groups)), np.nan)
    for r in records:
        v = value(r["fmr"])
        m[idx[r["group_a"]], idx[r["group_b"]]] = m[idx[r["group_b"]], idx[r["group_a"]]] = v
    positive = m[m > 0]
    fig, ax = plt.subplots(figsize=(1.2 * len(groups) + 2.5, 1.0 * len(groups) + 1.8))
    ax.imshow(np.where(m == 0, 1.0, np.nan), cmap="Greys", vmin=0, vmax=4)  # zero cells: light grey underneath
    norm = LogNorm(positive.min(), max(positive.max(), positive.min() * 1.0001)) if positive.size else None
    im = ax.imshow(np.where(m > 0, m, np.nan), cmap="viridis", norm=norm)
    labels = figure_labels(groups)
    ax.set_xticks(range(len(groups)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(groups)), labels)
    for (i, j), v in np.ndenumerate(m):
        if np.isnan(v):
            continue
        light = v > 0 and _luminance(im.cmap(im.norm(v))) > 0.5
        ax.text(j, i, fmt(v, "rate", 2), ha="center", va="center", fontsize=8,
                color="black" if v == 0 or light else "white")
    if positive.size:
        as_rate = FuncFormatter(lambda x, _: fmt(x, "rate"))
        bar = fig.colorbar(im, ax=ax, label="FMR (log scale)", format=as_rate)
        bar.ax.yaxis.set_minor_formatter(as_rate)
    ax.set_title(f"Cross-group FMR at the threshold for FMR {target:g}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def _luminance(rgba: tuple[float, ...]) -> float:
    """Relative luminance of a colour (ITU-R BT.709 weights), to pick dark or light text on it."""
    r, g, b = rgba[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _fallback_fonts() -> list[str]:
    """The sans-serif font, then installed fonts that cover other scripts (CJK, and wide-coverage Noto/Unifont), for
    matplotlib's per-glyph fallback."""
    from matplotlib import font_manager

    wide = ("Noto Sans CJK", "Noto Sans", "Source Han Sans", "WenQuanYi", "Droid Sans Fallback", "IPAGothic",
            "IPAexGothic", "Unifont", "Arial Unicode")
    names = sorted({f.name for f in font_manager.fontManager.ttflist if f.name.startswith(wide)})
    return ["DejaVu Sans", *names]


@lru_cache(maxsize=1)
def _covered() -> frozenset[int]:
    """Code points the figure fonts can draw."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    plt.rcParams["font.family"] = _fallback_fonts()
    points: set[int] = set()
    for name in _fallback_fonts():
        path = font_manager.findfont(font_manager.FontProperties(family=name), fallback_to_default=False)
        points |= set(FT2Font(path).get_charmap())
    return frozenset(points)


def figure_labels(names: list[str]) -> list[str]:
    """Group names as a figure can show them: a name with a character no installed font draws (a CJK name on a
    machine without CJK fonts) becomes ``G<k>``, k its position among the groups (the overall view ``all`` not
    counted, so every figure of one audit numbers a group alike), which :func:`label_key` spells out."""
    covered = _covered()
    out, k = [], 0
    for n in names:
        k += n != ALL
        out.append(n if n == ALL or all(ord(c) in covered or c.isspace() for c in n) else f"G{k}")
    return out


def label_key(names: list[str]) -> str:
    """``G2 = 北京`` for the names :func:`figure_labels` replaced, for a caption the browser renders (empty when
    none was)."""
    return ", ".join(f"{short} = {n}" for short, n in zip(figure_labels(names), names) if short != n)


def plot_null(null: np.ndarray, observed: dict[str, float], title: str, xlabel: str, path: Path) -> Path:
    """Histogram of a permutation null distribution with the observed statistic(s) marked."""
    fig, ax = plt.subplots(figsize=(7, 4))
    finite = null[np.isfinite(null)]
    ax.hist(finite, bins=min(80, max(10, finite.size // 50)), color="0.7", edgecolor="0.5")
    for k, (label, x) in enumerate(observed.items()):
        if np.isfinite(x):
            ax.axvline(x, color=f"C{k % 10}", lw=2, label=f"{label}: {fmt(x)}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("relabellings")
    ax.set_title(title, fontsize=10)
    if observed:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, path)
