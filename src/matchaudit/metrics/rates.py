"""Exact error rates from a :class:`~matchaudit.metrics.tally.Tally`: rates at a threshold, the threshold at
an FMR target, the DET curve, AUC, the ROC-convex-hull EER and normalised minDCF.

A *view* selects which comparisons a rate is about: the genuine comparisons of some groups, the impostor
comparisons of some categories, and a weighting:

* ``pooled``: every comparison weighs the same (NIST practice, the 1:1-matching CI work);
* ``balanced``: identity-balanced — FNMR is the mean over identities of their FNMR, FMR the mean over
  identity pairs of theirs (the similarity-scoring paper's eq. 2-3).

Decision rule: accept iff ``s >= t`` (``">="``, default) or ``s > t`` (``">"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numba as nb
import numpy as np

from matchaudit.cells import cell_of
from matchaudit.metrics.calibration import normalized_dcf
from matchaudit.metrics.tally import Tally
from matchaudit.definitions import Rule, fmr_passes, lowest_passing

Weighting = Literal["pooled", "balanced"]


class NeedsRefinement(RuntimeError):
    """A threshold falls inside a cell whose impostors were not collected (an internal ordering error)."""


@dataclass(frozen=True)
class View:
    """Which comparisons a rate covers: genuine groups (bool mask, G) and impostor categories (bool mask over the
    tally's categories)."""

    genuine_groups: np.ndarray
    impostor_categories: np.ndarray
    weighting: Weighting = "pooled"


@dataclass(frozen=True)
class Rate:
    """A rate with the raw counts behind it (``errors / comparisons``, always pooled counts)."""

    value: float
    errors: int
    comparisons: int


def safe_ratio(num, den):
    """num / den, NaN where the denominator is 0 (a view or replicate with no comparisons of that class): the one
    division of a count by its total (the rates here, the bootstrap's replicate rates)."""
    if not np.ndim(num) and not np.ndim(den):
        return num / den if den else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.asarray(den)
        return np.where(den > 0, np.divide(num, np.where(den > 0, den, 1)), np.nan)


class Rates:
    """Exact rate queries on one view of a tally."""

    def __init__(self, tally: Tally, view: View):
        self.tally, self.view = tally, view
        balanced = view.weighting == "balanced"
        gen = tally.genuine
        keep = view.genuine_groups[gen.group]
        order = np.argsort(gen.score[keep], kind="stable")
        self._gs = gen.score[keep][order]
        self._gw = (gen.weight[keep][order] if balanced else np.ones(order.size))
        self._gcum = np.concatenate([[0.0], np.cumsum(self._gw)])
        cats = view.impostor_categories
        self._cnt, self._tie = tally.counts[cats].sum(axis=0), tally.ties[cats].sum(axis=0)
        src_c, src_t = (tally.wcounts, tally.wties) if balanced else (tally.counts, tally.ties)
        self._wc = src_c[cats].sum(axis=0).astype(np.float64)
        self._wt = src_t[cats].sum(axis=0).astype(np.float64)
        self._suf = np.concatenate([np.cumsum(self._wc[::-1])[::-1], [0.0]])  # (J+2,): weight in cells >= i
        self._nsuf = np.concatenate([np.cumsum(self._cnt[::-1])[::-1], [0]])
        if balanced:
            self.genuine_total = float(tally.genuine_units[view.genuine_groups].sum())
            self.impostor_total = float(tally.impostor_units[cats].sum())
            if np.isnan(self._gw).any() or self.impostor_total == 0 and self._cnt.sum() > 0:
                raise ValueError("identity-balanced weighting needs identities; this input has labels only")
        else:
            self.genuine_total = float(self._gs.size)
            self.impostor_total = float(self._cnt.sum())
        self.n_genuine = int(self._gs.size)
        self.n_impostor = int(self._cnt.sum())

    # ------------------------------------------------------------------ primitive counts at a threshold

    def _genuine_rejected(self, t: float, rule: Rule, weighted: bool) -> float:
        side = "left" if rule == ">=" else "right"  # '>=' rejects s < t; '>' rejects s <= t
        k = int(np.searchsorted(self._gs, t, side=side))
        return float(self._gcum[k]) if weighted else float(k)

    def _impostor_accepted(self, t: float, rule: Rule, weighted: bool) -> float:
        if t == np.inf:
            return 0.0
        if t == -np.inf:
            return float(self._suf[0] if weighted else self._nsuf[0])
        suf, tie = (self._suf, self._wt) if weighted else (self._nsuf, self._tie)
        edges = self.tally.edges
        i = int(cell_of(edges, t))
        if i > 0 and edges[i - 1] == t:
            return float(suf[i] - (tie[i - 1] if rule == ">" else 0))
        return float(suf[i + 1]) + self._inside(i, t, rule, weighted)

    def _inside(self, cell: int, t: float, rule: Rule, weighted: bool) -> float:
        """Accepted impostors strictly inside ``cell`` at a threshold ``t`` inside it (needs refinement)."""
        left_ties = self._tie[cell - 1] if cell > 0 else 0
        if self._cnt[cell] - left_ties == 0:
            return 0.0
        ref = self.tally.refined
        if ref is None or cell not in ref.cells:
            raise NeedsRefinement(f"cell {cell} holds impostors around threshold {t!r} and was not refined")
        edges = self.tally.edges
        lo = edges[cell - 1] if cell > 0 else -np.inf
        hi = edges[cell] if cell < edges.size else np.inf
        # the cell's items, ref.score being sorted: [lo, hi), of which those at or above (above) t
        a, b = np.searchsorted(ref.score, [lo, hi], side="left")
        a = max(a, int(np.searchsorted(ref.score, t, side="left" if rule == ">=" else "right")))
        m = self.view.impostor_categories[ref.category[a:b]] if a < b else np.zeros(0, bool)
        return float(ref.weight[a:b][m].sum()) if weighted else float(m.sum())

    # ------------------------------------------------------------------ rates

    @property
    def _weighted(self) -> bool:
        return self.view.weighting == "balanced"

    def fnmr(self, t: float, rule: Rule = ">=") -> Rate:
        k = int(self._genuine_rejected(t, rule, False))
        v = safe_ratio(self._genuine_rejected(t, rule, self._weighted), self.genuine_total)
        return Rate(float(v), k, self.n_genuine)

    def fmr(self, t: float, rule: Rule = ">=") -> Rate:
        k = int(self._impostor_accepted(t, rule, False))
        v = safe_ratio(self._impostor_accepted(t, rule, self._weighted), self.impostor_total)
        return Rate(float(v), k, self.n_impostor)

    def _fmr_at_edges(self, rule: Rule) -> np.ndarray:
        """FMR with the threshold at each edge (exact, no refinement needed)."""
        w = self._weighted
        suf, tie = (self._suf, self._wt) if w else (self._nsuf.astype(float), self._tie.astype(float))
        acc = suf[1 : self.tally.edges.size + 1] - (tie if rule == ">" else 0.0)
        return safe_ratio(acc, self.impostor_total)

    def target_cell(self, alpha: float, rule: Rule = ">=") -> int:
        """The one cell whose impostors decide the threshold at FMR target ``alpha`` (for refinement)."""
        return int(lowest_passing(self._fmr_at_edges(rule), alpha))

    def threshold_at_fmr(self, alpha: float, rule: Rule = ">=") -> float:
        """``t_alpha``: the lowest observed score (or +inf) whose FMR is at most ``alpha``
        (:mod:`matchaudit.definitions`)."""
        edges = self.tally.edges
        cell = self.target_cell(alpha, rule)
        fallback = float(edges[cell]) if cell < edges.size else np.inf
        cand = self._scores_inside(cell, f"FMR target {alpha}")
        if cand.size:
            first, last = 0, cand.size  # FMR is non-increasing: bisect for the first candidate that passes
            while first < last:
                mid = (first + last) // 2
                if fmr_passes(self.fmr(float(cand[mid]), rule).value, alpha):
                    last = mid
                else:
                    first = mid + 1
            if first < cand.size:
                return float(cand[first])
        return fallback

    def impostor_cells_from(self, t: float) -> list[int]:
        """The cells :meth:`lowest_impostor_from` reads, to refine first: the one holding ``t``, the next holding
        any of this view's impostors, and the last holding any (empty without impostors)."""
        held = np.flatnonzero(self._cnt)
        if held.size == 0:
            return []
        c = int(cell_of(self.tally.edges, t)) if np.isfinite(t) else int(held[-1])
        after = held[held > c]
        return sorted({c, int(held[-1]), *([int(after[0])] if after.size else [])})

    def _impostors_in(self, cell: int) -> np.ndarray:
        """This view's impostor scores in ``cell``, ascending (its lower edge once when impostors tie with it)."""
        edges, ref = self.tally.edges, self.tally.refined
        tie = [float(edges[cell - 1])] if cell > 0 and self._tie[cell - 1] > 0 else []
        if self._cnt[cell] - (self._tie[cell - 1] if cell > 0 else 0) == 0:
            return np.array(tie)
        if ref is None or cell not in ref.cells:
            raise NeedsRefinement(f"cell {cell} holds impostors and was not refined")
        lo = edges[cell - 1] if cell > 0 else -np.inf
        hi = edges[cell] if cell < edges.size else np.inf
        a, b = np.searchsorted(ref.score, lo, side="right"), np.searchsorted(ref.score, hi, side="left")
        inside = ref.score[a:b][self.view.impostor_categories[ref.category[a:b]]]
        return np.concatenate([tie, inside])

    def lowest_impostor_from(self, t: float) -> float:
        """bob.measure's ``far_threshold`` from this rule's threshold ``t`` at the same target (``>=``): the lowest
        impostor score at or above ``t`` (FMR only changes at impostor scores, so it has the same FMR), or just
        above the highest impostor score when none is (bob's FAR-0 threshold); ``t`` without impostors. Needs
        :meth:`impostor_cells_from` refined."""
        cells = self.impostor_cells_from(t)
        if not cells:
            return t
        scores = np.concatenate([self._impostors_in(c) for c in cells])
        above = scores[scores >= t]
        return float(above.min()) if above.size else float(np.nextafter(scores.max(), np.inf))

    def _first_failing_fnmr(self, beta: float, rule: Rule) -> tuple[np.ndarray, int]:
        """The distinct genuine scores ascending, and the position of the first whose FNMR exceeds ``beta`` (FNMR
        is non-decreasing in the threshold), or their number when none does."""
        cand = np.unique(self._gs)
        first, last = 0, cand.size
        while first < last:
            mid = (first + last) // 2
            if fmr_passes(self.fnmr(float(cand[mid]), rule).value, beta):
                first = mid + 1
            else:
                last = mid
        return cand, first

    def target_cell_fnmr(self, beta: float, rule: Rule = ">=") -> int | None:
        """The cell whose impostors may hold the threshold at FNMR target ``beta`` (rule ``>``), for refinement;
        None under ``>=``, where the threshold is a genuine score (an edge)."""
        if rule == ">=":
            return None
        cand, j = self._first_failing_fnmr(beta, rule)
        return int(cell_of(self.tally.edges, cand[j])) - 1 if j < cand.size else None

    def threshold_at_fnmr(self, beta: float, rule: Rule = ">=") -> float:
        """``t_beta``: the highest observed score (or -inf) whose FNMR over this view's genuine comparisons is at
        most ``beta`` (:mod:`matchaudit.definitions`, the dual of :meth:`threshold_at_fmr`)."""
        cand, j = self._first_failing_fnmr(beta, rule)
        if rule == ">=":  # FNMR is constant on (g_{j-1}, g_j]: the highest passing score is a genuine one
            return float(cand[j - 1]) if j > 0 else -np.inf
        # '>': FNMR is constant on [g_{j-1}, g_j): the highest observed score below g_j, of any class
        if j == cand.size:
            return float(cand[-1]) if cand.size else -np.inf
        edges = self.tally.edges
        cell = int(cell_of(edges, cand[j])) - 1
        below = float(edges[cell - 1]) if cell > 0 else -np.inf  # a genuine score, of any group
        inside = self._scores_inside(cell, f"FNMR target {beta}")
        return max(below, float(inside[-1])) if inside.size else below

    def _scores_inside(self, cell: int, what: str) -> np.ndarray:
        """The distinct scores strictly inside ``cell``, ascending: threshold candidates (the scores of *all*
        comparisons, so impostors of any category count); the cell must be refined when it holds any."""
        edges = self.tally.edges
        inside = self.tally.counts[:, cell].sum() - (self.tally.ties[:, cell - 1].sum() if cell > 0 else 0)
        if inside == 0:
            return np.zeros(0)
        ref = self.tally.refined
        if ref is None or cell not in ref.cells:
            raise NeedsRefinement(f"cell {cell} ({what}) was not refined")
        lo = edges[cell - 1] if cell > 0 else -np.inf
        hi = edges[cell] if cell < edges.size else np.inf
        a, b = np.searchsorted(ref.score, lo, side="right"), np.searchsorted(ref.score, hi, side="left")
        return np.unique(ref.score[a:b])  # ref.score is sorted: the scores strictly between lo and hi

    # ------------------------------------------------------------------ curve summaries (vertices only)

    def vertices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ROC vertices with the threshold at each distinct genuine score (``>=`` semantics), plus the two
        end points: returns (thresholds, FMR, FNMR), thresholds ascending from -inf to +inf."""
        edges = self.tally.edges
        fmr = np.concatenate([[1.0], self._fmr_at_edges(">="), [0.0]])
        fnmr = np.concatenate([[0.0], self._fnmr_at_edges(">="), [1.0]])
        return np.concatenate([[-np.inf], edges, [np.inf]]), fmr, fnmr

    def _fnmr_at_edges(self, rule: Rule) -> np.ndarray:
        """FNMR with the threshold at each edge: the genuine weight below it (``>=``) or at most at it (``>``)."""
        k = np.searchsorted(self._gs, self.tally.edges, side="left" if rule == ">=" else "right")
        return safe_ratio(self._gcum[k], self.genuine_total)

    def auc(self) -> float:
        """P(genuine score > impostor score) + 1/2 P(tie): exact (Mann-Whitney)."""
        edges = self.tally.edges
        j = np.searchsorted(edges, self._gs)  # each genuine score is an edge
        gw = np.bincount(j, weights=self._gw, minlength=edges.size)
        below = self._suf[0] - self._suf[1 : edges.size + 1]  # impostor weight < edge
        total_w = self._suf[0]
        return float(safe_ratio((gw * (below + 0.5 * self._wt)).sum(), self._gcum[-1] * total_w))

    def eer(self, method: EerMethod = "rocch") -> float:
        """Equal error rate: ``"rocch"``, of the ROC convex hull (as BOSARIS and PyBOSARIS): where the convex hull
        of the (FMR, FNMR) vertices crosses FMR = FNMR; ``"interpolated"``, where the straight lines between
        consecutive vertices cross it (the NIST SRE'16 scorer v4.1, as wespeaker vendors it; tied scores pooled
        into one vertex, where the scorer splits them in its sort's order); ``"closest"``, the mean of FMR and FNMR
        where they are closest (speechbrain); ``"fvc2000"``, pyeer's rule (:meth:`_fvc2000_eer`). The last two need
        :meth:`closest_cell` refined."""
        if method == "rocch":
            _, x, y = self.vertices()
            return rocch_eer(x, y)
        if method == "closest":
            return self._closest_eer()
        if method == "fvc2000":
            return self._fvc2000_eer()
        return float(interpolated_eer_rows(*self.staircase()))

    def closest_cell(self, turn: str = "<") -> int | None:
        """The cell whose impostor scores :meth:`eer` ``"closest"`` (``turn`` ``"<"``: where FMR - FNMR turns
        negative) or ``"fvc2000"`` (``"<="``: where it turns non-positive) reads, to refine first: that run of the
        staircase when it is horizontal (impostors only), else None."""
        return _turning_run(*self.staircase(), turn)[1]

    def _turning_points(self, turn: str) -> tuple[np.ndarray, np.ndarray]:
        """The staircase with the impostor steps of the run where FMR - FNMR turns (``turn``, :meth:`closest_cell`):
        every operating point ``s >= u`` of a distinct score ``u`` there, in threshold order."""
        x, y = self.staircase()
        k, cell = _turning_run(x, y, turn)
        if cell is None:
            return x, y
        u = self._impostors_in(cell)
        lo = self.tally.edges[cell - 1] if cell > 0 else -np.inf
        fm = np.array([self.fmr(float(t), ">=").value for t in np.unique(u[u > lo])])
        return np.insert(x, k, fm), np.insert(y, k, np.full(fm.size, y[k]))

    def _closest_eer(self) -> float:
        """speechbrain's EER (:func:`closest_eer_rows`) on the staircase with the turning run's impostor steps."""
        return float(closest_eer_rows(*self._turning_points("<")))

    def _fvc2000_eer(self) -> float:
        """pyeer's EER (:func:`fvc2000_eer_rows`) on the staircase with the turning run's impostor steps."""
        return float(fvc2000_eer_rows(*self._turning_points("<=")))

    def staircase(self) -> tuple[np.ndarray, np.ndarray]:
        """(FMR, FNMR) of the ROC as a path over every score: at each genuine score the threshold just at it
        (``>=``) and just above it (``>``), the ends (1, 0) and (0, 1); between two such points only impostors
        (a horizontal run) or only the scores tied at one value (a straight segment). The points where the NIST
        SRE'16 scorer's per-trial curve turns."""
        fnmr = np.stack([self._fnmr_at_edges(">="), self._fnmr_at_edges(">")], -1)
        fmr = np.stack([self._fmr_at_edges(">="), self._fmr_at_edges(">")], -1)
        return (np.concatenate([[1.0], fmr.ravel(), [0.0]]), np.concatenate([[0.0], fnmr.ravel(), [1.0]]))

    def dcf_at(self, threshold: float, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> float:
        """Normalised detection cost at ``threshold`` (accept iff ``s >= threshold``, the convention of
        :meth:`min_dcf`'s threshold): what this view pays at a threshold chosen elsewhere."""
        return float(normalized_dcf(self.fnmr(threshold, ">=").value, self.fmr(threshold, ">=").value, p_target,
                                    c_miss, c_fa))

    def min_dcf(self, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0) -> tuple[float, float]:
        """Normalised minimum detection cost (:func:`matchaudit.metrics.calibration.normalized_dcf`) and the
        threshold attaining it."""
        t, fmr, fnmr = self.vertices()
        cost = normalized_dcf(fnmr, fmr, p_target, c_miss, c_fa)
        k = int(np.argmin(cost))
        return float(cost[k]), float(t[k])


def roc_hull(fmr: np.ndarray, fnmr: np.ndarray) -> np.ndarray:
    """Indices of the ROC points (FMR, FNMR) on the lower convex hull (the ROCCH), by ascending FMR."""
    order = np.lexsort((fnmr, fmr))
    return order[_lower_hull(fmr[order], fnmr[order])]


def rocch_eer(fmr: np.ndarray, fnmr: np.ndarray) -> float:
    """ROCCH-EER of ROC points (any order; include the end points (1, 0) and (0, 1)): where the lower convex
    hull of the points crosses FMR = FNMR. Shared by :meth:`Rates.eer` and the bootstrap replicates
    (:func:`rocch_eer_rows`)."""
    fmr, fnmr = np.asarray(fmr, float), np.asarray(fnmr, float)
    order = np.lexsort((fnmr, fmr))
    return float(_hull_crossing(fmr[order], fnmr[order]))


EerMethod = Literal["rocch", "interpolated", "closest", "fvc2000"]
EER_METHODS = ("rocch", "interpolated", "closest", "fvc2000")


def interpolated_eer_rows(fmr: np.ndarray, fnmr: np.ndarray) -> np.ndarray:
    """The interpolated EER of every row of ROC points ``(..., P)`` (any order; with the end points): the points in
    threshold order (FMR falling, FNMR rising), the first where FNMR - FMR >= 0 and the one before it, and the
    FNMR where the line between them meets FMR = FNMR: the NIST SRE'16 scorer's ``compute_eer``. NaN where a row has
    a non-finite point."""
    x, y = _threshold_order(fmr, fnmr)
    d = y - x
    k = np.clip(np.argmax(d >= 0, axis=-1), 1, d.shape[-1] - 1)[..., None]
    d1, d0 = np.take_along_axis(d, k, -1)[..., 0], np.take_along_axis(d, k - 1, -1)[..., 0]
    y1, y0 = np.take_along_axis(y, k, -1)[..., 0], np.take_along_axis(y, k - 1, -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(d1 - d0 > 0, d1 / (d1 - d0), 0.0)
        out = y1 + a * (y0 - y1)
    return np.where(np.isfinite(x).all(-1) & np.isfinite(y).all(-1), out, np.nan)


def closest_eer_rows(fmr: np.ndarray, fnmr: np.ndarray) -> np.ndarray:
    """speechbrain's EER of every row of ROC points ``(..., P)`` (any order; with the end points): over its operating
    points (accept iff ``s > v`` for each distinct score ``v``: every point but accept-all, (1, 0)), in threshold
    order, the mean of FMR and FNMR at the first point where they are closest. NaN where a row has a non-finite
    point. On a grid curve: resolution-limited, as the other methods there; on :meth:`Rates._turning_points`:
    exact."""
    x, y = _threshold_order(fmr, fnmr)
    gap = np.where((x == 1) & (y == 0), np.inf, np.abs(x - y))
    i = np.argmin(np.where(np.isfinite(x - y), gap, np.inf), axis=-1)[..., None]
    out = (np.take_along_axis(x, i, -1) + np.take_along_axis(y, i, -1))[..., 0] / 2
    return np.where(np.isfinite(x).all(-1) & np.isfinite(y).all(-1), out, np.nan)


def fvc2000_eer_rows(fmr: np.ndarray, fnmr: np.ndarray) -> np.ndarray:
    """pyeer's (FVC2000) EER of every row of ROC points ``(..., P)`` (any order; with the end points): over its
    operating points (``s >= u`` for each distinct score ``u``: every point but reject-all, (0, 1)), in threshold
    order, of the first point with FMR <= FNMR and the one before it (unless equal there) the one with the smaller
    FMR + FNMR, the mean of its two rates; 1 when no point has FMR <= FNMR (pyeer's answer, with a warning there).
    NaN where a row has a non-finite point (pyeer ``eer_stats.get_eer_values``)."""
    x, y = _threshold_order(fmr, fnmr)
    d = np.where((x == 0) & (y == 1), np.inf, x - y)
    t2 = np.argmax(d <= 0, axis=-1)[..., None]
    at = np.take_along_axis(d, t2, -1)
    t1 = np.where((at != 0) & (t2 != 0), t2 - 1, t2)
    s1 = np.take_along_axis(x + y, t1, -1)
    s2 = np.take_along_axis(x + y, t2, -1)
    out = (np.where(s1 <= s2, s1, s2) / 2)[..., 0]
    ok = np.isfinite(x).all(-1) & np.isfinite(y).all(-1)
    return np.where(ok, np.where((d <= 0).any(-1), out, 1.0), np.nan)


def _turning_run(x: np.ndarray, y: np.ndarray, turn: str) -> tuple[int, int | None]:
    """On a :meth:`Rates.staircase` (accept-all, then ``>=`` and ``>`` at each genuine score, then reject-all):
    the first point where FMR - FNMR turns (``"<"``: negative, ``"<="``: non-positive), and the cell of the run
    ending there when that run is horizontal (impostors only between its ends), else None."""
    k = int(np.argmax(x - y < 0 if turn == "<" else x - y <= 0))
    run = k >= 1 and (k - 1) % 2 == 0 and y[k - 1] == y[k] and x[k - 1] > x[k]
    return k, (k - 1) // 2 if run else None


def _threshold_order(fmr: np.ndarray, fnmr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ROC points ``(..., P)`` in threshold order: FMR falling, FNMR rising."""
    x, y = np.asarray(fmr, float), np.asarray(fnmr, float)
    order = np.lexsort((y, -x), axis=-1)
    return np.take_along_axis(x, order, -1), np.take_along_axis(y, order, -1)


def rocch_eer_rows(fmr: np.ndarray, fnmr: np.ndarray) -> np.ndarray:
    """:func:`rocch_eer` of every row of ``fmr``, ``fnmr`` (..., P) (NaN where a row has a non-finite point), in
    one compiled pass: a row of a curve (FMR non-increasing, FNMR non-decreasing along it) is put in the hull's
    order in linear time, any other row is sorted as :func:`rocch_eer` sorts."""
    x = np.ascontiguousarray(fmr, dtype=float)
    y = np.ascontiguousarray(fnmr, dtype=float)
    shape = x.shape[:-1]
    flat_x, flat_y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    return _eer_rows(flat_x, flat_y).reshape(shape)


@nb.njit(cache=True)
def _hull_order(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The order of ``np.lexsort((y, x))`` (x ascending, ties by y ascending): linear for a curve's row (x
    non-increasing, y non-decreasing: runs of equal x taken from the end, each run forward), else sorted."""
    n = x.size
    curve = True
    for i in range(1, n):
        if x[i] > x[i - 1] or y[i] < y[i - 1]:
            curve = False
            break
    if not curve:
        first = np.argsort(y, kind="mergesort")
        return first[np.argsort(x[first], kind="mergesort")]
    order = np.empty(n, np.int64)
    k = 0
    end = n
    while end > 0:
        start = end - 1
        while start > 0 and x[start - 1] == x[end - 1]:
            start -= 1
        for i in range(start, end):
            order[k] = i
            k += 1
        end = start
    return order


@nb.njit(cache=True)
def _hull_crossing(x: np.ndarray, y: np.ndarray) -> float:
    """Where the lower convex hull of points sorted by (x, y) crosses x = y."""
    hull = _lower_hull(x, y)
    k = 0
    while k < hull.size - 1 and y[hull[k]] - x[hull[k]] > 0:  # y - x decreases along the hull to (1, 0)
        k += 1
    b = hull[k]
    if y[b] == x[b] or k == 0:
        return x[b]
    a = hull[k - 1]
    lam = (y[a] - x[a]) / ((y[a] - x[a]) - (y[b] - x[b]))
    return x[a] + lam * (x[b] - x[a])


@nb.njit(parallel=True, cache=True)
def _eer_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape[0])
    for r in nb.prange(x.shape[0]):
        if not (np.isfinite(x[r]).all() and np.isfinite(y[r]).all()):
            out[r] = np.nan
            continue
        order = _hull_order(x[r], y[r])
        out[r] = _hull_crossing(x[r][order], y[r][order])
    return out


@nb.njit(cache=True)
def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of points sorted by x (monotone chain; compiled: the bootstrap runs it
    once per replicate and view)."""
    hull = np.empty(x.size, np.int64)
    h = 0
    for i in range(x.size):
        while h >= 2:
            a, b = hull[h - 2], hull[h - 1]
            if (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a]) <= 0:
                h -= 1
            else:
                break
        hull[h] = i
        h += 1
    return hull[:h]
