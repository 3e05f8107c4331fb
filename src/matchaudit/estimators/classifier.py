"""Group-fairness permutation tests for classifier data (DiCiccio et al., KDD 2020).

Metrics (FNR, FPR, TPR, TNR, accuracy, positive rate, AUC) are evaluated for a whole batch of relabellings
at once from integer row weights ``w`` (R, n): a relabelling is ``w = (codes == g)``, a bootstrap replicate is
a multinomial count vector — one code path, exact integer counts. Each metric returns per-group estimates and
closed-form variances (binomial ``p(1-p)/d`` for rates; DeLong for AUC), which the studentized test needs for
every relabelling.

Relabelling schemes: ``"within-outcome"`` permutes group labels among positives and among negatives
separately (the paper's section 3.1; default for outcome-conditioned metrics), ``"plain"`` permutes them
across all rows (the paper's simulations; default for accuracy and positive rate). Randomness: one NumPy
generator per stratum spawned from ``seed``/``rng``, so the draws do not depend on the batch size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterator, Literal, Sequence

import numpy as np

from matchaudit.data.classifier_table import ClassifierData, check_support
from matchaudit.definitions import Alternative
from matchaudit import checks
from matchaudit.errors import InputError
from matchaudit.encoding import jsonable
from matchaudit.estimators.permutation import (
    METHOD, PermutationTestResult, Studentize, comparison_table, mode_of, permutation_test,
)

Scheme = Literal["auto", "within-outcome", "plain"]
Variance = Literal["closed-form", "pooled", "bootstrap"]
_BATCH_ELEMENTS = 1 << 21


@dataclass(frozen=True)
class Metric:
    """A per-group metric: which outcomes it needs, whether it is conditioned on the outcome, its inputs."""

    name: str
    needs: tuple[str, ...]
    conditioned: bool
    scores: bool = False
    minimum: int = 1


METRICS = {m.name: m for m in (
    Metric("fnr", ("positives",), True),
    Metric("tpr", ("positives",), True),
    Metric("fpr", ("negatives",), True),
    Metric("tnr", ("negatives",), True),
    Metric("accuracy", (), False),
    Metric("positive_rate", (), False),
    Metric("auc", ("positives", "negatives"), True, scores=True, minimum=2),
)}
ALIASES = {"recall": "tpr", "sensitivity": "tpr", "specificity": "tnr", "miss_rate": "fnr", "fall_out": "fpr",
           "selection_rate": "positive_rate", "positive-rate": "positive_rate", "acc": "accuracy"}


def get_metric(name: str) -> Metric:
    """The classifier metric called ``name`` (aliases accepted); InputError for an unknown name."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in METRICS:
        raise InputError(f"unknown metric {name!r}: use one of {', '.join(METRICS)} "
                         f"(aliases: {', '.join(ALIASES)}).")
    return METRICS[key]


class _Rate:
    """num/den proportion: estimate ``k/d`` and binomial variance ``p(1-p)/d`` per weight row."""

    def __init__(self, num: np.ndarray, den: np.ndarray) -> None:
        self.num, self.den = np.flatnonzero(num), np.flatnonzero(den)

    def counts(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numerator and denominator per weight row."""
        k = w[:, self.num].sum(axis=1, dtype=np.int64).astype(np.float64)
        d = w[:, self.den].sum(axis=1, dtype=np.int64).astype(np.float64)
        return k, d

    def stats(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, d = self.counts(w)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = k / d
            return p, p * (1 - p) / d


class _AUC:
    """Mann-Whitney AUC (ties count 1/2) with the DeLong variance, for integer row weights (frequency weights)."""

    def __init__(self, y: np.ndarray, s: np.ndarray) -> None:
        self.pos, self.neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        self.neg_ord = self.neg[np.argsort(s[self.neg], kind="stable")]
        self.pos_ord = self.pos[np.argsort(s[self.pos], kind="stable")]
        sn, sp = s[self.neg_ord], s[self.pos_ord]
        self.p_lo, self.p_hi = np.searchsorted(sn, s[self.pos], "left"), np.searchsorted(sn, s[self.pos], "right")
        self.n_lo, self.n_hi = np.searchsorted(sp, s[self.neg], "left"), np.searchsorted(sp, s[self.neg], "right")

    @staticmethod
    def _cum(w: np.ndarray) -> np.ndarray:
        c = np.zeros((w.shape[0], w.shape[1] + 1))
        np.cumsum(w, axis=1, out=c[:, 1:])
        return c

    def stats(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        wp, wn = w[:, self.pos].astype(np.float64), w[:, self.neg].astype(np.float64)
        n_p, n_n = wp.sum(axis=1), wn.sum(axis=1)
        cn, cp = self._cum(w[:, self.neg_ord]), self._cum(w[:, self.pos_ord])
        below = cn[:, self.p_lo] + 0.5 * (cn[:, self.p_hi] - cn[:, self.p_lo])      # (R, n+) negatives below
        above = (n_p[:, None] - cp[:, self.n_hi]) + 0.5 * (cp[:, self.n_hi] - cp[:, self.n_lo])
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = (wp * below).sum(axis=1) / (n_p * n_n)
            v10 = below / n_n[:, None]
            v01 = above / n_p[:, None]
            s10 = (wp * (v10 - auc[:, None]) ** 2).sum(axis=1) / (n_p - 1)
            s01 = (wn * (v01 - auc[:, None]) ** 2).sum(axis=1) / (n_n - 1)
            return auc, s10 / n_p + s01 / n_n


def evaluator(metric: Metric, y: np.ndarray, pred: np.ndarray | None, score: np.ndarray | None) -> _Rate | _AUC:
    """The metric bound to rows (``pred`` or ``score`` as it needs)."""
    if metric.name == "auc":
        return _AUC(y, score)
    pos, neg = y == 1, y == 0
    one = np.ones_like(pos)
    num, den = {
        "fnr": (pos & (pred == 0), pos), "tpr": (pos & (pred == 1), pos),
        "fpr": (neg & (pred == 1), neg), "tnr": (neg & (pred == 0), neg),
        "accuracy": (pred == y, one), "positive_rate": (pred == 1, one),
    }[metric.name]
    return _Rate(num, den)


# --- relabellings --------------------------------------------------------------------------------------------

def _generator(rng: np.random.Generator | int | None, seed: int | None) -> tuple[np.random.Generator, int | None]:
    if rng is not None and seed is not None:
        raise ValueError("give rng= or seed=, not both.")
    if isinstance(rng, np.random.Generator):
        return rng, None
    if rng is not None:
        seed = int(rng)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 63))
    return np.random.default_rng(seed), seed


def arrangements(codes: np.ndarray) -> np.ndarray:
    """Every distinct arrangement of a multiset of labels (N, n), the identity among them."""
    rows = np.full((1, codes.size), -1, dtype=np.int64)
    values, counts = np.unique(codes, return_counts=True)
    for val, cnt in zip(values[:-1], counts[:-1]):
        out = []
        for r in rows:
            free = np.flatnonzero(r == -1)
            for pick in combinations(free, cnt):
                rr = r.copy()
                rr[list(pick)] = val
                out.append(rr)
        rows = np.array(out)
    rows[rows == -1] = values[-1]
    return rows


def n_arrangements(codes: np.ndarray) -> int:
    counts = np.unique(codes, return_counts=True)[1]
    return math.factorial(codes.size) // math.prod(math.factorial(int(c)) for c in counts)


@dataclass
class Relabelling:
    """Group codes of the rows, the strata they are permuted within, and how many relabellings are drawn."""

    codes: np.ndarray
    strata: list[np.ndarray]
    n_resamples: int | None
    gen: np.random.Generator
    batch: int
    max_exact: int
    total: int = field(init=False)

    def __post_init__(self) -> None:
        if self.n_resamples is None:
            total = math.prod(n_arrangements(self.codes[s]) for s in self.strata)
            if total > self.max_exact:
                raise InputError(f"exact enumeration needs {total:,} relabellings (more than max_exact="
                                 f"{self.max_exact:,}); use a Monte-Carlo test (n_resamples=9999).")
            self.total = total
        else:
            if self.n_resamples < 1:
                raise ValueError("n_resamples must be a positive integer, or 'exact'.")
            self.total = int(self.n_resamples)
            self._gens = self.gen.spawn(len(self.strata))

    @property
    def exact(self) -> bool:
        return self.n_resamples is None

    def batches(self) -> Iterator[np.ndarray]:
        """(b, n) code matrices: every distinct relabelling (exact) or ``n_resamples`` random ones."""
        n = self.codes.size
        if self.exact:
            blocks = [arrangements(self.codes[s]) for s in self.strata]
            shape = tuple(len(b) for b in blocks)
            for start in range(0, self.total, self.batch):
                idx = np.unravel_index(np.arange(start, min(start + self.batch, self.total)), shape)
                out = np.empty((idx[0].size, n), dtype=np.int64)
                for s, block, i in zip(self.strata, blocks, idx):
                    out[:, s] = block[i]
                yield out
            return
        for start in range(0, self.total, self.batch):
            b = min(self.batch, self.total - start)
            out = np.empty((b, n), dtype=np.int64)
            for s, g in zip(self.strata, self._gens):
                out[:, s] = g.permuted(np.tile(self.codes[s], (b, 1)), axis=1)
            yield out


# --- comparisons over relabellings ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Comparison:
    name: str
    left: int
    right: int | None   # None: the rest of the groups
    labels: tuple[str, str]


def _stats(ev: _Rate | _AUC, codes: np.ndarray, comps: Sequence[_Comparison],
           pooled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Differences (R, m) and their closed-form variances (R, m) for a batch of code matrices (R, n).

    ``pooled`` (rates only): ``p(1-p)(1/d_a + 1/d_b)`` with ``p`` pooled over both groups — the variance of the
    difference under the null of equal rates (equal rates imply equal variances for proportions, so it is
    valid under the weak null), and it cannot collapse to 0 when a small group shows 0 or 1 errors."""
    cache: dict[tuple[int, bool], tuple[np.ndarray, ...]] = {}
    use_counts = pooled and isinstance(ev, _Rate)

    def group(g: int, rest: bool = False) -> tuple[np.ndarray, ...]:
        if (g, rest) not in cache:
            w = (codes != g) if rest else (codes == g)
            cache[(g, rest)] = ev.counts(w) if use_counts else ev.stats(w)  # type: ignore[union-attr]
        return cache[(g, rest)]

    t = np.empty((codes.shape[0], len(comps)))
    v = np.empty_like(t)
    for j, c in enumerate(comps):
        a, b = group(c.left), group(c.left, True) if c.right is None else group(c.right)
        if use_counts:
            (ka, da), (kb, db) = a, b
            with np.errstate(divide="ignore", invalid="ignore"):
                p = (ka + kb) / (da + db)
                t[:, j], v[:, j] = ka / da - kb / db, p * (1 - p) * (1 / da + 1 / db)
        else:
            t[:, j], v[:, j] = a[0] - b[0], a[1] + b[1]
    return t, v


def _bootstrap_variance(ev: _Rate | _AUC, codes: np.ndarray, comps: Sequence[_Comparison], n_boot: int,
                        gen: np.random.Generator, batch: int) -> np.ndarray:
    """Per comparison, the paper's bootstrap variance (its eq. 1) of the difference: groups resampled independently."""
    sets: dict[tuple[int, bool], np.ndarray] = {}
    for c in comps:
        sets[(c.left, False)] = np.flatnonzero(codes == c.left)
        key = (c.left, True) if c.right is None else (c.right, False)
        sets[key] = np.flatnonzero(codes != c.left) if c.right is None else np.flatnonzero(codes == c.right)
    var = {}
    for key, rows, g in zip(sets, sets.values(), gen.spawn(len(sets))):
        est0 = ev.stats((np.isin(np.arange(codes.size), rows))[None, :])[0][0]
        dev = []
        for start in range(0, n_boot, batch):
            b = min(batch, n_boot - start)
            w = np.zeros((b, codes.size), dtype=np.int64)
            w[:, rows] = g.multinomial(rows.size, np.full(rows.size, 1.0 / rows.size), size=b)
            dev.append(ev.stats(w)[0] - est0)
        d = np.concatenate(dev)
        var[key] = float(np.nanmean(d ** 2))
    return np.array([var[(c.left, False)] + (var[(c.left, True)] if c.right is None else var[(c.right, False)])
                     for c in comps])


@dataclass(frozen=True)
class _Setup:
    ev: _Rate | _AUC
    codes: np.ndarray
    relabel: Relabelling
    scheme: str
    seed: int | None
    gen: np.random.Generator
    details: dict


def _prepare(data: ClassifierData, metric: Metric, groups: list[int], permutation: Scheme,
             n_resamples: int | str | None, rng: np.random.Generator | int | None, seed: int | None,
             max_exact: int) -> _Setup:
    check_support(data, groups, metric.needs, metric.name.upper(), metric.minimum)
    scheme = ("within-outcome" if metric.conditioned else "plain") if permutation == "auto" else permutation
    if scheme not in ("within-outcome", "plain"):
        raise ValueError(f"permutation={permutation!r}: use 'auto', 'within-outcome' or 'plain'.")
    keep = np.isin(data.group, groups)
    if scheme == "within-outcome" and metric.needs and len(metric.needs) == 1:
        keep &= data.y_true == (1 if metric.needs[0] == "positives" else 0)   # other rows never enter the metric
    rows = np.flatnonzero(keep)
    y = data.y_true[rows]
    pred = None if metric.scores else data.predictions()[rows]
    score = data.scores()[rows] if metric.scores else None
    codes = data.group[rows]
    strata = [np.flatnonzero(y == 1), np.flatnonzero(y == 0)] if scheme == "within-outcome" else [np.arange(y.size)]
    strata = [s for s in strata if s.size]
    exact = n_resamples is None or (isinstance(n_resamples, str) and n_resamples == "exact")
    if isinstance(n_resamples, str) and not exact:
        raise ValueError(f"n_resamples={n_resamples!r}: give an integer, or 'exact' / None for full enumeration.")
    gen, used = _generator(rng, seed)
    batch = max(1, _BATCH_ELEMENTS // max(1, y.size))
    relabel = Relabelling(codes, strata, None if exact else int(n_resamples), gen, batch, max_exact)
    counts = {data.group_names[g]: {"n": int((codes == g).sum()), "positives": int(((codes == g) & (y == 1)).sum()),
                                    "negatives": int(((codes == g) & (y == 0)).sum())} for g in groups}
    details = {"metric": metric.name, "permutation": scheme, "seed": used, "n_rows": int(y.size),
               "group_counts": counts, "threshold": data.threshold if (pred is not None and data.y_pred is None)
               else None}
    return _Setup(evaluator(metric, y, pred, score), codes, relabel, scheme, used, gen, details)


def _run(setup: _Setup, comps: Sequence[_Comparison], studentize: Studentize, variance: Variance,
         n_bootstrap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Observed (t, v) and relabelled (T, V) for all comparisons on the same relabellings."""
    mode = mode_of(studentize)
    if variance not in ("closed-form", "pooled", "bootstrap"):
        raise ValueError(f"variance={variance!r}: use 'closed-form', 'pooled' or 'bootstrap'.")
    pooled = variance == "pooled"
    if variance == "bootstrap" and mode == "studentized":
        raise InputError("variance='bootstrap' with studentize=True would bootstrap every relabelling; use "
                         "studentize='permutation-sd' (the paper's fast variant), or the closed-form variance.",
                         param="studentize")
    if variance == "bootstrap":
        checks.integer(n_bootstrap, "n_bootstrap", low=1)
    t, v = (a[0] for a in _stats(setup.ev, setup.codes[None, :], comps, pooled))
    if variance == "bootstrap":
        v = _bootstrap_variance(setup.ev, setup.codes, comps, n_bootstrap, setup.gen.spawn(1)[0],
                                setup.relabel.batch)
    tt, vv = [], []
    for codes in setup.relabel.batches():
        a, b = _stats(setup.ev, codes, comps, pooled)
        tt.append(a)
        vv.append(b)
    return t, v, np.concatenate(tt), np.concatenate(vv)


def _group_index(data: ClassifierData, name: str) -> int:
    if name not in data.group_names:
        raise InputError(f"{data.source}: no group {name!r}; groups present: {', '.join(data.group_names)}.")
    return data.group_names.index(name)


@dataclass(frozen=True)
class GroupStatistics:
    """Observed difference metric(A) - metric(B), its variance, and both on every relabelling (B,).

    The inputs of :func:`matchaudit.estimators.permutation.permutation_test`; one run serves every
    studentization mode (the simulations in ``bench/`` use it that way).
    """

    t: float
    v: float
    t_perm: np.ndarray
    v_perm: np.ndarray
    exact: bool
    labels: tuple[str, str]
    details: dict


def group_statistics(data: ClassifierData, metric: str = "fnr", groups: tuple[str, str] | None = None, *,
                     permutation: Scheme = "auto", variance: Variance = "pooled", n_bootstrap: int = 1000,
                     n_resamples: int | str | None = 9999, rng: np.random.Generator | int | None = None,
                     seed: int | None = None, max_exact: int = 200_000,
                     studentize: Studentize = True) -> GroupStatistics:
    """The relabelled differences behind :func:`group_test` (same arguments)."""
    m = get_metric(metric)
    if groups is None:
        if len(data.group_names) != 2:
            raise InputError(f"{data.source} has {len(data.group_names)} groups; name the two to compare "
                             "(groups=(A, B)) or use all_groups_test.")
        groups = data.group_names
    a, b = (_group_index(data, g) for g in groups)
    if a == b:
        raise InputError(f"compare two different groups (got {groups[0]!r} twice).")
    setup = _prepare(data, m, [a, b], permutation, n_resamples, rng, seed, max_exact)
    labels = (data.group_names[a], data.group_names[b])
    comp = [_Comparison(f"{labels[0]} vs {labels[1]}", a, b, labels)]
    t, v, tt, vv = _run(setup, comp, studentize, variance, n_bootstrap)
    est = setup.ev.stats(np.stack([setup.codes == a, setup.codes == b]))[0]
    details = setup.details | {"groups": list(labels), "estimates": dict(zip(labels, map(float, est))),
                               "variance": variance, "n_bootstrap": n_bootstrap if variance == "bootstrap" else None}
    return GroupStatistics(float(t[0]), float(v[0]), tt[:, 0], vv[:, 0], setup.relabel.exact, labels, details)


def group_test(data: ClassifierData, metric: str = "fnr", groups: tuple[str, str] | None = None, *,
               permutation: Scheme = "auto", studentize: Studentize = True, variance: Variance = "pooled",
               n_bootstrap: int = 1000, alternative: Alternative = "two-sided",
               n_resamples: int | str | None = 9999, rng: np.random.Generator | int | None = None,
               seed: int | None = None, level: float = 0.95, max_exact: int = 200_000
               ) -> PermutationTestResult:
    """Test ``metric(A) == metric(B)`` (the weak null) by a studentized permutation test.

    ``groups``: the two groups (A, B) compared (default: the only two); the effect is A - B.
    ``n_resamples``: random relabellings, or ``"exact"``/``None`` to enumerate every distinct one.
    ``permutation``: ``"auto"`` (within-outcome for FNR/FPR/TPR/TNR/AUC, plain otherwise), ``"within-outcome"``
    or ``"plain"``. ``studentize``: True (closed-form variance for every relabelling), ``"permutation-sd"``
    (the paper's fast variant) or False (baseline, invalid under the weak null). ``variance="bootstrap"``
    estimates the observed variance by resampling each group ``n_bootstrap`` times (with
    ``studentize="permutation-sd"``).
    """
    st = group_statistics(data, metric, groups, permutation=permutation, variance=variance, n_bootstrap=n_bootstrap,
                          n_resamples=n_resamples, rng=rng, seed=seed, max_exact=max_exact, studentize=studentize)
    return permutation_test(st.t, st.v, st.t_perm, st.v_perm, studentize=studentize, alternative=alternative,
                            exact=st.exact, level=level, labels=st.labels, details=st.details)


@dataclass(frozen=True)
class AllGroupsResult:
    """Every pairwise and/or one-vs-rest comparison with raw, Holm and max-T adjusted p-values, flagged at the
    significance level ``alpha``."""

    rows: list[dict]
    null_distribution: np.ndarray
    statistic: np.ndarray
    alpha: float
    n_resamples: int
    exact: bool
    method: str
    details: dict

    def to_frame(self):
        """One row per comparison (pair of groups, or group against the rest) with its p-values and verdict."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict:
        """JSON-ready summary (without the null distribution)."""
        return jsonable({"comparisons": self.rows, "alpha": self.alpha, "n_resamples": self.n_resamples,
                         "exact": self.exact, "method": self.method, "details": self.details})


def all_groups_test(data: ClassifierData, metric: str = "fnr", *, comparisons: Literal["both", "pairs", "rest"] = "both",
                    alpha: float = 0.05, permutation: Scheme = "auto", studentize: Studentize = True,
                    variance: Variance = "pooled", n_bootstrap: int = 1000,
                    n_resamples: int | str | None = 9999, rng: np.random.Generator | int | None = None,
                    seed: int | None = None, level: float = 0.95, max_exact: int = 200_000
                    ) -> AllGroupsResult:
    """All pairs of groups (A vs B, effect = A - B) and each group against the rest, on the same relabellings.

    Family-wise error control over all rows of the table: Holm, and single-step max-T on the studentized
    statistics (which uses their joint permutation distribution, so it is less conservative under dependence).
    Two-sided tests.
    """
    m = get_metric(metric)
    names = data.group_names
    gidx = list(range(len(names)))
    comps: list[_Comparison] = []
    if comparisons in ("both", "pairs"):
        comps += [_Comparison(f"{names[i]} vs {names[j]}", i, j, (names[i], names[j])) for i, j in combinations(gidx, 2)]
    if comparisons in ("both", "rest"):
        comps += [_Comparison(f"{names[i]} vs rest", i, None, (names[i], "rest")) for i in gidx]
    if not comps:
        raise ValueError(f"comparisons={comparisons!r}: use 'both', 'pairs' or 'rest'.")
    setup = _prepare(data, m, gidx, permutation, n_resamples, rng, seed, max_exact)
    t, v, tt, vv = _run(setup, comps, studentize, variance, n_bootstrap)
    rows, z = comparison_table([c.name for c in comps], t, v, tt, vv, studentize=studentize,
                               exact=setup.relabel.exact, alpha=alpha, level=level,
                               labels=[c.labels for c in comps])
    est = {names[g]: float(e) for g, e in zip(gidx, setup.ev.stats(np.stack([setup.codes == g for g in gidx]))[0])}
    for row, c in zip(rows, comps):
        row.update(kind="pair" if c.right is not None else "one-vs-rest", group_a=c.labels[0], group_b=c.labels[1],
                   estimate_a=est[c.labels[0]],
                   estimate_b=est[c.labels[1]] if c.right is not None else float(
                       setup.ev.stats((setup.codes != c.left)[None, :])[0][0]))
    details = setup.details | {"estimates": est, "variance": variance, "comparisons": comparisons,
                               "n_bootstrap": n_bootstrap if variance == "bootstrap" else None}
    return AllGroupsResult(rows, z.null, z.statistic, alpha, setup.relabel.total, setup.relabel.exact,
                           METHOD[z.mode], details)


def correlation_statistics(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, n_resamples: int = 999,
                           rng: np.random.Generator | int | None = None, seed: int | None = None) -> GroupStatistics:
    """Pearson r of ``x`` and ``y``, its variance ``mu22 / (n mu20 mu02)``, both with ``y`` permuted (B times)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if x.size != y.size or x.size < 3 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("a correlation test needs two finite arrays of the same length (at least 3).")
    gen, used = _generator(rng, seed)
    n = x.size
    xc, yc = x - x.mean(), y - y.mean()
    s20, s02 = (xc @ xc) / n, (yc @ yc) / n
    norm, a = n * np.sqrt(s20 * s02), xc ** 2

    def stats(ycm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return ycm @ xc / norm, ((ycm * ycm) @ a / n) / (s20 * s02) / n

    t, v = stats(yc[None, :])
    batch = max(1, _BATCH_ELEMENTS // n)
    perm_gen = gen.spawn(1)[0]
    tt, vv = [], []
    for start in range(0, n_resamples, batch):
        r, var = stats(perm_gen.permuted(np.tile(yc, (min(batch, n_resamples - start), 1)), axis=1))
        tt.append(r)
        vv.append(var)
    return GroupStatistics(float(t[0]), float(v[0]), np.concatenate(tt), np.concatenate(vv), False,
                           ("correlation", "0"), {"metric": "pearson_correlation", "seed": used, "n_rows": n,
                                                  "permutation": "plain"})


def correlation_test(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, studentize: Studentize = True,
                     alternative: Alternative = "two-sided", n_resamples: int = 999,
                     rng: np.random.Generator | int | None = None, seed: int | None = None,
                     level: float = 0.95) -> PermutationTestResult:
    """Permutation test of zero Pearson correlation between an attribute ``x`` and a model error ``y``.

    Studentized (DiCiccio & Romano 2017, used in the paper's FairTest comparison): ``S = r / se(r)`` with
    ``n se(r)^2 = mu22 / (mu20 mu02)``, valid for uncorrelatedness; ``studentize=False`` is a plain
    permutation test of r (valid only for independence, as FairTest's).
    """
    st = correlation_statistics(x, y, n_resamples=n_resamples, rng=rng, seed=seed)
    return permutation_test(st.t, st.v, st.t_perm, st.v_perm, studentize=studentize, alternative=alternative,
                            level=level, labels=st.labels, details=st.details)
