"""What a counting run returns: weighted counts per replicate, class, group (pair) and grid cell
(:class:`Counts`), the comparisons above a floor kept by the pass (:class:`TailHits`), and the order of
impostor categories (:class:`matchaudit.pairings.PairCategories`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from matchaudit.definitions import ThresholdImpostors
from matchaudit.engine.grid import Grid


@dataclass(frozen=True)
class TailHits:
    """Every comparison with score >= ``floor`` (all-pairs), by identity: what identity-level counts at any
    threshold >= ``floor`` need (:func:`matchaudit.engine.identity_counts` ``hits=``), kept by the counting
    pass itself (``run(keep_tail=True)``) instead of scoring everything again."""

    floor: float
    genuine_identity: np.ndarray  # (h,) int64
    genuine_score: np.ndarray  # (h,) float64
    impostor_a: np.ndarray  # (m,) int64, < impostor_b
    impostor_b: np.ndarray  # (m,) int64
    impostor_score: np.ndarray  # (m,) float64

    def covers(self, thresholds: np.ndarray) -> bool:
        return bool(np.all(np.asarray(thresholds) >= self.floor))


@dataclass
class Counts:
    """Weighted counts per replicate (index 0 = plug-in, exact), class, group (pair) and grid cell.

    ``genuine[r, g, c]``: weighted genuine comparisons of group ``g`` in cell ``c``; ``impostor[r, k, c]``:
    impostor comparisons of category ``k`` (same-group ``g`` at ``k = g``, then the cross-group pairs, pooled by
    default: ``categories[k]`` is the group pair, or a :data:`matchaudit.pairings.POOLED_REFERENCE` /
    :data:`~matchaudit.pairings.POOLED_OTHER` marker). Accepted at threshold ``edges[e]`` = cells ``> e``. ``target_*``: exact thresholds at
    the FMR targets and the exact accepted counts there. The threshold (the project definition, as
    :meth:`matchaudit.metrics.rates.Rates.threshold_at_fmr`): the lowest score of any comparison with
    positive weight in the replicate, genuine or impostor, whose FMR over the reference impostors
    (``threshold_impostors``, its categories ``threshold_categories``) is at most the target under ``grid.rule``; +inf if none (or no reference impostors).
    """

    scheme: str
    seed: int | None
    replicates: np.ndarray  # (R,) replicate numbers, 0 first
    grid: Grid
    group_names: tuple[str, ...]
    categories: list[tuple[int, int]]
    genuine: np.ndarray  # (R, G, C+1) int64
    impostor: np.ndarray  # (R, n_cat, C+1) int64
    fmr_targets: np.ndarray  # (T,)
    threshold_impostors: ThresholdImpostors
    threshold_categories: np.ndarray  # (n_cat,) bool: the impostor categories of threshold_impostors
    target_threshold: np.ndarray  # (R, T) float64
    target_genuine_accepted: np.ndarray  # (R, T, G) int64
    target_impostor_accepted: np.ndarray  # (R, T, n_cat) int64
    imputed_pairs: np.ndarray | None = None  # (R,) vertex: draw pairs of one identity (no comparisons)
    tail: TailHits | None = None  # run(keep_tail=True): every comparison scoring at least tail.floor
    info: dict = field(default_factory=dict)
    view_targets: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (T',): plan(view_targets=...)
    view_threshold: np.ndarray | None = None  # (R, T', 1+G): each view's own threshold (all, then the groups)

    def plug_in(self) -> Counts:
        """These counts restricted to replicate 0 (the plug-in), dropping the replicates' tables."""
        return replace(self, replicates=self.replicates[:1], genuine=self.genuine[:1].copy(),
                       impostor=self.impostor[:1].copy(), target_threshold=self.target_threshold[:1].copy(),
                       target_genuine_accepted=self.target_genuine_accepted[:1].copy(),
                       target_impostor_accepted=self.target_impostor_accepted[:1].copy(),
                       imputed_pairs=None if self.imputed_pairs is None else self.imputed_pairs[:1].copy(),
                       view_threshold=None if self.view_threshold is None else self.view_threshold[:1].copy())

    @property
    def genuine_total(self) -> np.ndarray:
        return self.genuine.sum(axis=2)

    @property
    def impostor_total(self) -> np.ndarray:
        return self.impostor.sum(axis=2)

    def accepted_at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Exact accepted counts at threshold ``t`` (a grid edge): genuine (R, G), impostor (R, n_cat)."""
        e = self.grid.edge_index(t)
        return self.genuine[:, :, e + 1:].sum(axis=2), self.impostor[:, :, e + 1:].sum(axis=2)

    def accepted_curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Accepted counts at every edge: genuine (R, G, C), impostor (R, n_cat, C) (exact at each edge)."""
        def tail(x: np.ndarray) -> np.ndarray:
            return np.cumsum(x[:, :, ::-1], axis=2)[:, :, ::-1][:, :, 1:]
        return tail(self.genuine), tail(self.impostor)

    @property
    def resolution(self) -> dict[str, float]:
        """Grid resolution of the plug-in curve: the largest share of impostors / genuines in one cell."""
        g, i = self.genuine[0].sum(axis=0), self.impostor[0].sum(axis=0)
        return {"max_fmr_step": float(i.max() / max(i.sum(), 1)), "max_fnmr_step": float(g.max() / max(g.sum(), 1)),
                "n_cells": self.grid.n_cells}
