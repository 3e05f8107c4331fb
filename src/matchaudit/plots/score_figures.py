"""Figures of the score views: the APE / normalised Bayes error plot of every group and the genuine and impostor
score densities per group (docs/calibration.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from matchaudit.estimators.calibration import CalibrationResult
from matchaudit.estimators.distributions import DistributionResult
from matchaudit.plots.figures import curve_styles, figure_labels, legend_axes, place_legend, save, tight


def ape_figure(result: CalibrationResult, path: Path) -> Path:
    """Normalised Bayes error against the prior log-odds, one colour per group: minimum (solid), actual (dashed,
    only when the scores are LLRs) and the DR30 line of the overall view (dotted grey)."""
    path = Path(path)
    entries = len(result.ape) * (2 if result.llr else 1) + 1
    fig, ax = legend_axes(7, 4.2, entries)
    labels = figure_labels([c.group for c in result.ape])
    colours = [c for c, _ in curve_styles(len(result.ape))]  # distinct past ten groups (line styles mean here)
    for c, label, colour in zip(result.ape, labels, colours):
        ax.plot(c.prior_log_odds, c.minimum, color=colour, lw=1.6, label=f"{label} minimum")
        if result.llr and c.actual is not None:
            ax.plot(c.prior_log_odds, c.actual, color=colour, lw=1.2, ls="--", label=f"{label} actual")
    first = result.ape[0]
    ax.plot(first.prior_log_odds, first.dr30, color="0.5", lw=1, ls=":", label=f"DR30 ({labels[0]})")
    drawn = [c.minimum for c in result.ape] + [c.actual for c in result.ape if result.llr and c.actual is not None]
    finite = np.concatenate([np.asarray(x, float)[np.isfinite(x)] for x in drawn])
    top = min(2.0, max(0.05, 1.1 * float(finite.max()))) if finite.size else 1.05  # the curves fill the panel
    ax.set_ylim(0, top)
    ax.set_xlabel("prior log-odds  logit(P_target)")
    ax.set_ylabel("normalised Bayes error")
    what = "actual (dashed) and minimum" if result.llr else "minimum (scores are not LLRs)"
    ax.set_title(f"Normalised Bayes error, {what}", fontsize=10)
    ax.grid(alpha=0.3)
    place_legend(ax, entries, fontsize=7, ncol=2)
    tight(fig)
    return save(fig, path)


def distributions_figure(result: DistributionResult, path: Path, log_y: bool = True) -> Path:
    """Genuine (solid) and impostor (dashed) score densities, one colour per group; ``log_y`` (default) shows the
    impostor tail that sets low false match rates."""
    path = Path(path)
    entries = 2 * len(result.histograms)
    fig, ax = legend_axes(7, 4.2, entries)
    centres = (result.edges[:-1] + result.edges[1:]) / 2
    labels = figure_labels([h.group for h in result.histograms])
    colours = [c for c, _ in curve_styles(len(result.histograms))]
    for h, label, color in zip(result.histograms, labels, colours):
        for dens, ls, kind in ((h.genuine, "-", "genuine"), (h.impostor, "--", "impostor")):
            shown = np.where(dens > 0, dens, np.nan) if log_y else dens
            ax.plot(centres, shown, color=color, ls=ls, lw=1.4, label=f"{label} {kind}")
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("score")
    ax.set_ylabel("density" + (" (log scale)" if log_y else ""))
    ax.set_title("Genuine (solid) and impostor (dashed) scores per group", fontsize=10)
    ax.grid(alpha=0.3)
    place_legend(ax, entries, fontsize=7, ncol=2)
    tight(fig)
    return save(fig, path)


__all__ = ["ape_figure", "distributions_figure"]
