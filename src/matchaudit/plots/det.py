"""DET curves: FNMR against FMR on normal-deviate (probit) axes, or log-log axes, with percentage ticks, one curve
per group, operating points at the FMR targets and the EER marked; and FMR and FNMR against the threshold per group
(NIST report-card style)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402
import numpy as np  # noqa: E402

from matchaudit.definitions import DetScale  # noqa: E402
from matchaudit.formatting import fmt  # noqa: E402
from matchaudit.plots.figures import (curve_styles, figure_labels, legend_axes, place_legend, save,  # noqa: E402
                                      side_columns, tight)
from matchaudit.plots.probit import CLIP, probit, rate_ticks, thin_curve  # noqa: E402

_TICKS = np.array([1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8, 0.95])
_DECADES = np.array([1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0])
FNMR_AXIS = (1e-4, 0.95)  # the FNMR range drawn
FMR_HIGH = 0.5  # the FMR axis ends here (it starts at the lowest tick the data reach)


def _log(p: np.ndarray) -> np.ndarray:
    return np.log10(np.clip(p, CLIP, 1.0))


def _label(p: float) -> str:
    return fmt(p, "rate", 4)


def _absent(curve: dict[str, Any], fmr_low: float) -> str:
    """Why a curve has no visible part on the axes (:data:`FNMR_AXIS`; FMR from ``fmr_low`` to :data:`FMR_HIGH`),
    or ""."""
    fmr, fnmr = np.asarray(curve["fmr"], float), np.asarray(curve["fnmr"], float)
    low, high = FNMR_AXIS
    inside = (fnmr >= low) & (fnmr <= high) & (fmr >= fmr_low) & (fmr <= FMR_HIGH)
    if inside.any():
        return ""
    if fnmr.size and np.nanmax(fnmr) < low:
        return (": no FNMR errors, off the log scale" if np.nanmax(fnmr) == 0
                else f": FNMR below {_label(low)}, not drawn")
    return ": outside the plotted range"


BANDS_MAX = 4
"""Curves whose interval bands are shaded; with more, only the overall curve's band (eleven overlapping bands read
as one grey smear)."""


def plot_det(curves: list[dict[str, Any]], points: list[dict[str, Any]], summaries: list[dict[str, Any]],
             title: str, path: Path, bands: list[dict[str, Any]] | None = None, scale: DetScale = "probit",
             styles: list[tuple[Any, str]] | None = None, labels: list[str] | None = None) -> Path:
    """Draw one DET figure (one weighting): ``curves`` as in ``AuditResult.det``; ``points`` are the operating
    points to mark (same weighting); ``summaries`` give each group's EER. Optional ``bands``: per group
    ``{"group", "fmr", "lower", "upper"}`` drawn as shaded pointwise intervals (every curve's up to
    :data:`BANDS_MAX` curves, else the first curve's, the overall one). ``scale``: the axes. ``styles``/``labels``:
    each curve's (colour, line style) and legend name (default: one style per curve, the group names)."""
    axis = probit if scale == "probit" else _log
    one_band = bool(bands) and len(curves) > BANDS_MAX  # then a legend entry says so
    entries = len(curves) + one_band
    fig, ax = legend_axes(6.4, 5.6, entries)
    many = side_columns(entries) > 0  # thinner lines
    styles = styles or curve_styles(len(curves))
    shaded = {c["group"] for c in (curves[:1] if one_band else curves)}
    lo = min(1e-6, max(1e-7, min((c["fmr"][c["fmr"] > 0].min() for c in curves if (c["fmr"] > 0).any()), default=1e-6)))
    all_ticks = _TICKS if scale == "probit" else _DECADES
    ticks = all_ticks[all_ticks >= lo / 1.01]
    names = labels or figure_labels([c["group"] for c in curves])
    for i, c in enumerate(curves):
        colour, ls = styles[i]
        k = thin_curve(c["fmr"], c["fnmr"])
        eer = next((s["eer"] for s in summaries if s["group"] == c["group"]), None)
        label = names[i] + (f" (EER {fmt(eer, 'rate')})" if eer is not None else "") + _absent(c, ticks[0])
        ax.plot(axis(c["fmr"][k]), axis(c["fnmr"][k]), color=colour, ls=ls, lw=1.6 - 0.6 * many, label=label,
                drawstyle="steps-post")
        for b in bands or []:
            if b["group"] == c["group"] and b["group"] in shaded:
                ax.fill_between(axis(b["fmr"]), axis(b["lower"]), axis(b["upper"]), color=colour, alpha=0.2)
        pts = [p for p in points if p["group"] == c["group"] and p["kind"] == "fmr_target"]
        ax.scatter(axis(np.array([p["fmr"] for p in pts])), axis(np.array([p["fnmr"] for p in pts])),
                   color=colour, marker="o", s=22, zorder=3)
        if eer is not None:
            ax.scatter([axis(np.array(eer))], [axis(np.array(eer))], color=colour, marker="x", s=40, zorder=3)
    rate_ticks(ax, ticks, all_ticks, _label, rotation=45, axis=axis)
    ax.set_xlim(axis(np.array(ticks[0])), axis(np.array(FMR_HIGH)))
    ax.set_ylim(*axis(np.array(FNMR_AXIS)))
    ax.plot([-6, 6], [-6, 6], color="0.8", lw=0.8, ls=":")
    ax.set_xlabel("FMR (false match rate)")
    ax.set_ylabel("FNMR (false non-match rate)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, color="0.9")
    if one_band:
        ax.fill_between([], [], [], color=styles[0][0], alpha=0.2, label=f"band of {names[0]} only ({len(curves)} curves)")
    place_legend(ax, entries, fontsize=8, loc="upper right")
    tight(fig)
    return save(fig, path)


def plot_rates_vs_threshold(curves: list[dict[str, Any]], points: list[dict[str, Any]], title: str, path: Path
                            ) -> Path:
    """FMR(t) (dashed) and FNMR(t) (solid) of each group against the threshold on a log rate axis, as NIST's
    report cards draw them; vertical lines at the thresholds of the FMR targets. ``curves`` as in
    ``AuditResult.det`` (each group's genuine and same-group impostor comparisons), ``points`` its operating
    points."""
    fig, ax = legend_axes(6.4, 4.8, 2 * len(curves))
    names = figure_labels([c["group"] for c in curves])
    styles = curve_styles(len(curves))
    for i, c in enumerate(curves):
        t = np.asarray(c["threshold"], float)
        keep = np.isfinite(t)
        k = np.flatnonzero(keep)[thin_curve(np.asarray(c["fmr"])[keep], np.asarray(c["fnmr"])[keep])]
        colour = styles[i][0]
        ax.plot(t[k], np.clip(c["fnmr"][k], 1e-7, None), color=colour, lw=1.5, label=f"{names[i]} FNMR",
                drawstyle="steps-post")
        ax.plot(t[k], np.clip(c["fmr"][k], 1e-7, None), color=colour, lw=1.2, ls="--", label=f"{names[i]} FMR",
                drawstyle="steps-post")
    for p in {(p["target"], p["threshold"]) for p in points if p["kind"] == "fmr_target" and np.isfinite(p["threshold"])}:
        ax.axvline(p[1], color="0.6", lw=0.8, ls=":")
        ax.annotate(f"FMR {p[0]:g}", (p[1], 1.0), fontsize=7, rotation=90, va="top", ha="right", color="0.4")
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1.5)
    # rates as the DET labels them (percentages): plain text, and no mathtext to parse on each draw (2x faster)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: _label(y)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("threshold (accept iff the score passes it)")
    ax.set_ylabel("error rate (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, color="0.9")
    place_legend(ax, 2 * len(curves), fontsize=7, loc="lower left", ncol=2)
    tight(fig)
    return save(fig, path)


def plot_det_versions(old: list[dict[str, Any]], new: list[dict[str, Any]], path: Path, title: str = "DET, OLD and NEW"
                      ) -> Path:
    """Two versions' DET curves on probit axes (``matchaudit diff``), drawn by :func:`plot_det`: one colour per
    group, OLD dashed and NEW solid; ``old``/``new`` as ``AuditResult.det`` (one weighting), a group drawn where
    both have it."""
    groups = [c["group"] for c in new if any(o["group"] == c["group"] for o in old)]
    names = figure_labels(groups)
    curves, styles, labels = [], [], []
    for (colour, _), g, name in zip(curve_styles(len(groups)), groups, names):
        for version, ls, side in ((old, "--", "OLD"), (new, "-", "NEW")):
            c = next(c for c in version if c["group"] == g)
            curves.append({**c, "fmr": np.asarray(c["fmr"], float), "fnmr": np.asarray(c["fnmr"], float)})
            styles.append((colour, ls))
            labels.append(f"{name} {side}")
    return plot_det(curves, [], [], title, path, styles=styles, labels=labels)
