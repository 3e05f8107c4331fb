"""Figures besides the DET: the cross-group FMR heat map (log colour scale, as NIST report cards), the permutation
null; and how group names are drawn (font fallback, short labels for names no installed font covers)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.layout_engine import TightLayoutEngine  # noqa: E402
import numpy as np  # noqa: E402

from matchaudit.formatting import fmt, value  # noqa: E402
from matchaudit.model import ALL  # noqa: E402
from matchaudit.pairings import split_group_names  # noqa: E402


DPI = 130
"""Resolution of the PNG figures (those the report shows)."""


def tight(fig: plt.Figure, dpi: float = DPI) -> None:
    """Lay the figure out as ``fig.tight_layout()`` does, without what that call leaves behind: a placeholder layout
    engine, and ``savefig`` draws a figure that has any engine once more before drawing it into the file (half of
    the draws of an audit's figures). Laid out at ``dpi``, the PNG's resolution, so that drawing the PNG reuses the
    text measured for the layout (6 figures of an audit at K = 200: 1.48 -> 1.2 s, both changes)."""
    fig.set_dpi(dpi)
    TightLayoutEngine().execute(fig)


def save(fig: plt.Figure, path: Path, svg: bool = True) -> Path:
    """Write a figure as PNG (for the report) and, with ``svg``, SVG (for papers) side by side; the same figure
    gives the same bytes (no date in the SVG, its element ids salted by a constant)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    if svg:
        with plt.rc_context({"svg.hashsalt": "matchaudit"}):
            fig.savefig(path.with_suffix(".svg"), metadata={"Date": None})
    plt.close(fig)
    return path


TEXT_MAX_GROUPS = 12
"""Up to this many groups each cell of the cross-group heat map carries its rate as text; beyond, the text would
not fit a cell of a figure the width of a page."""

HEAT_MAP_WIDTH, HEAT_MAP_HEIGHT = 10.5, 10.0
"""The heat map's largest size in inches (at the :data:`DPI` of :func:`save`: 1,365 px, a report page's width)."""


def _natural(text: str) -> list:
    """A sort key that orders the numbers inside names by value (R2 before R10)."""
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", text))]


def order_groups(names: Sequence[str], group_by: Sequence[str], attribute: str | None = None
                 ) -> tuple[list[str], list[tuple[str, int, int]]]:
    """Group names (attribute values joined with '|' in the order of ``group_by``) sorted by their value of
    ``attribute`` (default: the first of ``group_by``), then by the other attributes in the order of ``group_by``
    (numbers inside values by value: R2 before R10); with the blocks of equal ``attribute`` value as
    ``(value, first position, end position)``. Names that do not split into ``group_by``'s values (no grouping,
    the overall view) are kept in their order, as one block without a value."""
    names = list(names)
    attribute = attribute or (group_by[0] if group_by else None)
    if attribute is not None and attribute not in group_by:
        raise ValueError(f"{attribute!r} is not one of the grouping attributes {list(group_by)}")
    split, odd = split_group_names(names, group_by)
    if attribute is None or odd:
        return names, [("", 0, len(names))] if names else []
    k = list(group_by).index(attribute)
    order = sorted(range(len(names)), key=lambda i: [_natural(split[i][k])]
                   + [_natural(v) for j, v in enumerate(split[i]) if j != k])
    blocks: list[tuple[str, int, int]] = []
    for pos, i in enumerate(order):
        value = split[i][k]
        if blocks and blocks[-1][0] == value:
            blocks[-1] = (value, blocks[-1][1], pos + 1)
        else:
            blocks.append((value, pos, pos + 1))
    return [names[i] for i in order], blocks


LEGEND_INSIDE = 12
"""Legend entries that fit inside the axes; more go beside them, in columns of 30."""


def side_columns(entries: int) -> int:
    """Columns of a legend beside the axes (0: inside)."""
    return 0 if entries <= LEGEND_INSIDE else -(-entries // 30)


def legend_axes(width: float, height: float, entries: int) -> tuple[plt.Figure, plt.Axes]:
    """A figure of ``width`` x ``height`` inches, widened by the columns of a legend of ``entries`` beside it."""
    return plt.subplots(figsize=(width + 2.6 * side_columns(entries), height))


def place_legend(ax: plt.Axes, entries: int, **inside: Any) -> None:
    """The legend: inside the axes (``inside``: its placement) for a few entries, beside them in columns for many."""
    if columns := side_columns(entries):
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=columns, frameon=False)
    else:
        ax.legend(**inside)


def curve_styles(n: int) -> list[tuple[Any, str]]:
    """(colour, line style) of ``n`` curves, every one distinct: matplotlib's ten colours while they suffice, else
    tab20 (up to 20) or evenly spaced turbo colours, with four line styles in turn (11 groups reused C0 before)."""
    if n <= 10:
        return [(f"C{i}", "-") for i in range(n)]
    cmap = plt.get_cmap("tab20" if n <= 20 else "turbo")
    colours = [cmap(i) for i in range(n)] if n <= 20 else [cmap(x) for x in np.linspace(0.03, 0.97, n)]
    return [(c, ("-", "--", "-.", ":")[i % 4]) for i, c in enumerate(colours)]


def plot_cross_group(records: list[dict[str, Any]], target: float, path: Path, *, group_by: Sequence[str] = (),
                     order_by: str | None = None, marked: Iterable[tuple[str, str]] = (), mark_note: str = "",
                     title: str | None = None, svg: bool = True) -> Path:
    """Heat map of the FMR of every (group_a, group_b) pair at one operating point: colours on a log scale with the
    colour bar in rates; a pair without false matches grey (a log scale has no place for it), one without impostor
    comparisons blank. Groups in the order of :func:`order_groups` (by ``order_by``, default the first of
    ``group_by``), blocks of one value of it separated by lines and named on the top and right edges.

    Legible at any number of groups: the figure grows with the groups up to :data:`HEAT_MAP_WIDTH` x
    :data:`HEAT_MAP_HEIGHT` inches; each cell carries its rate as text (dark or light against its colour) up to
    :data:`TEXT_MAX_GROUPS` groups; beyond, the tick labels shrink, and only every k-th is written when even the
    smallest font would overlap. The cells named in ``marked`` (unordered pairs) get a dot, explained in the legend
    by ``mark_note``. Written as PNG and, with ``svg``, SVG (:func:`save`)."""
    from matplotlib.colors import LogNorm
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    first_seen = list(dict.fromkeys(g for r in records for g in (r["group_a"], r["group_b"])))  # the data's order
    short = dict(zip(first_seen, figure_labels(first_seen)))
    groups, blocks = order_groups(first_seen, list(group_by), order_by)
    named_blocks = len(blocks) > 1 and any(end - start > 1 for _, start, end in blocks)
    n = len(groups)
    idx = {g: i for i, g in enumerate(groups)}
    m = np.full((n, n), np.nan)
    for r in records:
        v = value(r["fmr"])
        m[idx[r["group_a"]], idx[r["group_b"]]] = m[idx[r["group_b"]], idx[r["group_a"]]] = v
    positive = m[m > 0]
    text = n <= TEXT_MAX_GROUPS
    extra = 0.6 if named_blocks else 0.0  # the block names on the top and right edges
    width, height = 1.2 * n + 2.5 + extra, 1.0 * n + 1.8 + extra  # as ever at a few groups; at more, capped:
    scale = min(1.0, HEAT_MAP_WIDTH / width, HEAT_MAP_HEIGHT / height) if text else None  # in proportion
    width, height = (width * scale, height * scale) if text else (HEAT_MAP_WIDTH, HEAT_MAP_HEIGHT)
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    ax.imshow(np.where(m == 0, 1.0, np.nan), cmap="Greys", vmin=0, vmax=4)  # zero cells: light grey underneath
    norm = LogNorm(positive.min(), max(positive.max(), positive.min() * 1.0001)) if positive.size else None
    im = ax.imshow(np.where(m > 0, m, np.nan), cmap="viridis", norm=norm)

    # tick labels: within named blocks the block's value is left out of each group's label (the edge names it)
    k = list(group_by).index(order_by or group_by[0]) if named_blocks else None
    labels = [short[g] if short[g] != g or k is None else "|".join(v for j, v in enumerate(values) if j != k)
              for g, values in zip(groups, split_group_names(groups, group_by)[0])]
    cell_pt = 0.72 * min(width, height) * 72 / max(n, 1)  # about the side of a cell in points
    size = 8.0 if text else min(8.0, 0.85 * cell_pt)
    step = 1 if size >= 4.0 else int(np.ceil(4.0 / size))
    size = max(size, 4.0)
    shown = [lab if i % step == 0 else "" for i, lab in enumerate(labels)]
    font = {} if text else {"fontsize": size}  # with cell text: the default size, as ever
    ax.set_xticks(range(n), shown, rotation=45 if text else 90, ha="right" if text else "center", **font)
    ax.set_yticks(range(n), shown, **font)
    ax.tick_params(length=2 if not text else 3.5)
    if named_blocks:
        bounds = [start - 0.5 for _, start, _ in blocks[1:]]
        for b in bounds:
            ax.axhline(b, color="black", lw=0.6, alpha=0.7)
            ax.axvline(b, color="black", lw=0.6, alpha=0.7)
        centres = [(start + end - 1) / 2 for _, start, end in blocks]
        names = [_block_label(v, groups[start:end], short) for v, start, end in blocks]
        bsize = 10.0 if text else min(9.0, max(5.0, 1.6 * size))
        wide = max(len(x) for x in names) * 0.6 * bsize > min(end - start for _, start, end in blocks) * cell_pt
        top, right = ax.secondary_xaxis("top"), ax.secondary_yaxis("right")
        for sec, axis in ((top, top.xaxis), (right, right.yaxis)):
            axis.set_major_locator(FixedLocator(centres))
            axis.set_major_formatter(FuncFormatter(lambda x, pos: names[pos] if pos is not None and
                                                   pos < len(names) else ""))
            axis.set_minor_locator(FixedLocator(bounds + [-0.5, n - 0.5]))
            axis.set_minor_formatter(NullFormatter())
            sec.tick_params(which="major", length=0, labelsize=bsize)
            sec.tick_params(which="minor", length=8)
        if wide:
            top.tick_params(which="major", labelrotation=90)
    if text:
        for (i, j), v in np.ndenumerate(m):
            if np.isnan(v):
                continue
            light = v > 0 and _luminance(im.cmap(im.norm(v))) > 0.5
            ax.text(j, i, fmt(v, "rate", 2), ha="center", va="center", fontsize=8,
                    color="black" if v == 0 or light else "white")
    dots = [(idx[b], idx[a]) for a, b in marked if a in idx and b in idx]
    dots = sorted({(x, y) for i, j in dots for x, y in ((i, j), (j, i))})
    handles: list[Any] = []
    if dots:
        xs, ys = np.array(dots, dtype=float).T
        off = 0.3 if text else 0.0  # beside the cell's text
        dot = max(2.0, (0.18 if text else 0.4) * min(cell_pt, 40.0))
        ax.scatter(xs + off, ys - off, s=dot**2, marker="o", facecolor="white", edgecolor="black",
                   linewidths=0.5 if dot > 3 else 0.3, zorder=3)
        handles.append(Line2D([], [], ls="", marker="o", markersize=5, markerfacecolor="white",
                              markeredgecolor="black", markeredgewidth=0.6,
                              label=mark_note or "marked cell"))
    if not text and (m == 0).any():
        handles.append(Patch(facecolor=plt.get_cmap("Greys")(0.25), edgecolor="0.6", label="no false matches (FMR 0)"))
    if not text and np.isnan(m).any():
        handles.append(Patch(facecolor="white", edgecolor="0.6", label="no impostor comparisons"))
    if positive.size:
        as_rate = FuncFormatter(lambda x, _: fmt(x, "rate"))
        bar = fig.colorbar(im, ax=ax, label="FMR (log scale)", format=as_rate, shrink=0.8 if not text else 1.0)
        bar.ax.yaxis.set_minor_formatter(as_rate)
    if handles:
        long = sum(len(h.get_label()) for h in handles) > 110
        fig.legend(handles=handles, loc="outside lower center", ncols=1 if long else len(handles), fontsize=8,
                   frameon=False)
    ax.set_title(title or f"Cross-group FMR at the threshold for FMR {target:g}", fontsize=10)
    return save(fig, path, svg)


def _block_label(value: str, members: list[str], short: dict[str, str]) -> str:
    """A block's name on the heat map's edge: its attribute value, or, when a font cannot draw it, the range of
    its groups' short labels (which the caption's key spells out)."""
    if all(short[g] == g for g in members):
        return value
    return f"{short[members[0]]}–{short[members[-1]]}" if len(members) > 1 else short[members[0]]


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


MAX_LABEL = 32
"""Longest group name a figure shows as written (C6: a 5,000-character name's legend covered the DET)."""


def figure_labels(names: list[str]) -> list[str]:
    """Group names as a figure can show them: a name longer than :data:`MAX_LABEL` or with a character no
    installed font draws (a CJK name on a machine without CJK fonts) becomes ``G<k>``, k its position among the
    groups (the overall view ``all`` not counted, so every figure of one audit numbers a group alike), which
    :func:`label_key` spells out."""
    covered = _covered()
    out, k = [], 0
    for n in names:
        k += n != ALL
        drawn = len(n) <= MAX_LABEL and all(ord(c) in covered or c.isspace() for c in n)
        out.append(n if n == ALL or drawn else f"G{k}")
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
    tight(fig)
    return save(fig, path)
