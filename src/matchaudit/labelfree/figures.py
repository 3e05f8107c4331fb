"""Figures of a label-free estimate: DET curves with credible bands, and the posterior predictive check."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from matchaudit.formatting import fmt  # noqa: E402
from matchaudit.plots.figures import tight  # noqa: E402
from matchaudit.plots.probit import probit, rate_ticks  # noqa: E402

_TICKS = np.array([1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8])


def plot_det(est, path: Path) -> None:
    """FNMR against FMR on probit axes per group: population median and band (solid), finite-sample (dashed)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True)
    for ax, kind in zip(axes, ("population", "finite-sample")):
        c = est.results[kind]["curve"]
        x = probit(c["fmr"])
        for i, g in enumerate(est.group_names):
            col = f"C{i}"
            ax.plot(x, probit(c[g]["median"]), color=col, label=g)
            ax.fill_between(x, probit(c[g]["lower"]), probit(c[g]["upper"]), color=col, alpha=0.2, lw=0)
        rate_ticks(ax, _TICKS, _TICKS, lambda t: fmt(t, "rate", 4))
        ax.set_xlabel("FMR")
        ax.set_title(f"{kind} ({100 * est.level:g}% credible bands)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("FNMR")
    axes[0].legend()
    fig.suptitle(f"Label-free DET (SPE-FR, {est.family_description}; accept iff s {est.rule} t)", fontsize=10)
    tight(fig, dpi=120)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_ppc(est, path: Path) -> None:
    """Per group: KDE of the data against the band of KDEs of data sets replicated from the posterior."""
    n = len(est.group_names)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.4), squeeze=False)
    for ax, g in zip(axes[0], est.group_names):
        c = est.ppc[g]
        r = c["kde_replicates"]
        ax.fill_between(c["grid"], r["lower"], r["upper"], color="C1", alpha=0.35, lw=0, label="posterior predictive")
        ax.plot(c["grid"], r["median"], color="C1", lw=1)
        ax.plot(c["grid"], c["kde_data"], color="k", lw=1.2, label="data")
        ax.set_title(f"{g}: KS {c['ks']:.3f}, p {c['ks_pvalue']:.2f}; tail check p {c['tail']['pvalue']:.2f}", fontsize=9)
        ax.set_xlabel("score")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Posterior predictive check ({100 * est.level:g}% band of replicated KDEs)", fontsize=10)
    tight(fig, dpi=120)
    fig.savefig(path, dpi=120)
    plt.close(fig)
