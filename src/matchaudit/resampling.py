"""Resampling schemes as integer weights drawn from the counter-based RNG (:mod:`matchaudit.rng`).

Every bootstrap or permutation replicate re-weights comparisons with integers. A scheme says *what* it
weights (its ``level``) and *how* pair weights follow from unit weights (its ``form``); the engine
(:mod:`matchaudit.engine`) turns that into one kernel call, so a new scheme never touches the kernel.

Levels and forms (the weight of comparison (i, j), i in identity k, j in identity l, replicate b):

======================  =========  ==========  =============================================================
scheme                  level      form        weight
======================  =========  ==========  =============================================================
WithinIdentity          sample     product     c_i c_j; plus C(c_i, 2) self-pairs at the self-score
                                               (c = Multinomial(n_k; 1/n_k) inside each identity)
Vertex                  identity   product     genuine w_k; impostor w_k w_l (w = Multinomial(K; 1/K))
DoubleOrNothing         identity   product     genuine w_k; impostor w_k w_l (w_k in {0, 2} iid)
Subsets                 identity   sum         genuine u_k; impostor w_k + w_l (u: first K-1 of the K draws)
GroupPermutation        identity   relabel     weight 1, groups of identities permuted
TwoLevel                comparison  -          identity draws, then comparisons re-drawn inside each drawn
                                               identity's row of the (ordered) comparison matrix
IIDComparison           comparison  -          Multinomial over genuine and over impostor comparisons
======================  =========  ==========  =============================================================

Randomness: a weight is a pure function of (seed, replicate, unit). Per-unit schemes (WithinIdentity:
unit = identity, its samples' counts; DoubleOrNothing: unit = identity) cost O(1) draws per unit. Schemes
that draw K identities with replacement (Vertex, Subsets, TwoLevel) or permute them need the K draws of
the replicate (O(K) integer hashes, no communication): any process recomputes them identically.
Replicate 0 is reserved by the engine for the plug-in (all weights 1); schemes number replicates 1..B.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numba as nb
import numpy as np

from matchaudit import checks, rng

Level = Literal["sample", "identity", "comparison"]
Form = Literal["product", "sum", "relabel", "draws"]


@dataclass(frozen=True)
class Layout:
    """What schemes need to know about the data: sample identities and identity groups."""

    identity_group: np.ndarray  # (K,) int64
    sample_identity: np.ndarray | None = None  # (n,) int64, None when samples are unknown

    @property
    def n_identities(self) -> int:
        return int(self.identity_group.shape[0])

    def samples_by_identity(self) -> tuple[np.ndarray, np.ndarray]:
        """Sample indices grouped by identity (ascending index inside each) and offsets (K+1,)."""
        assert self.sample_identity is not None
        order = np.argsort(self.sample_identity, kind="stable").astype(np.int64)
        sizes = np.bincount(self.sample_identity, minlength=self.n_identities)
        return order, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@nb.njit(cache=True)
def _draw_counts(seed: int, stream: int, b: int, unit: int, n_draws: int, n: int, out: np.ndarray) -> None:
    """out[below(key(seed, stream, b, unit, d), n)] += 1 for d < n_draws."""
    for d in range(n_draws):
        out[rng.below(rng.key(seed, stream, b, unit, d), n)] += 1


@nb.njit(parallel=True, cache=True)
def _within_identity(seed: int, reps: np.ndarray, ids: np.ndarray, order: np.ndarray, offsets: np.ndarray,
                     out: np.ndarray) -> None:
    for r in nb.prange(reps.shape[0]):
        for t in range(ids.shape[0]):
            k = ids[t]
            lo, hi = offsets[k], offsets[k + 1]
            nk = hi - lo
            for d in range(nk):
                pos = rng.below(rng.key(seed, rng.STREAM_SAMPLES, reps[r], k, d), nk)
                out[r, order[lo + pos]] += 1


@nb.njit(parallel=True, cache=True)
def _identity_multinomial(seed: int, reps: np.ndarray, n_draws: int, k: int, out: np.ndarray) -> None:
    for r in nb.prange(reps.shape[0]):
        _draw_counts(seed, rng.STREAM_IDENTITIES, reps[r], 0, n_draws, k, out[r])


@nb.njit(parallel=True, cache=True)
def _permutations(seed: int, reps: np.ndarray, k: int, out: np.ndarray) -> None:
    """out[r] = a uniformly random permutation of 0..k-1 (Fisher-Yates, draw d picks slot d's partner)."""
    for r in nb.prange(reps.shape[0]):
        p = out[r]
        for i in range(k):
            p[i] = i
        for i in range(k - 1, 0, -1):
            j = rng.below(rng.key(seed, rng.STREAM_PERMUTATION, reps[r], 0, i), i + 1)
            p[i], p[j] = p[j], p[i]


def _reps(replicates) -> np.ndarray:
    r = np.asarray(replicates, dtype=np.int64).ravel()
    if r.size and r.min() < 1:
        raise ValueError("scheme replicates are numbered from 1 (0 is the plug-in)")
    return r


@dataclass(frozen=True)
class Scheme:
    """Base: a seeded resampling scheme. Subclasses set ``level``/``form`` and implement the weights."""

    seed: int = 0
    level: ClassVar[Level]
    form: ClassVar[Form]
    name: ClassVar[str]
    self_pairs: ClassVar[bool] = False

    def __post_init__(self) -> None:
        """A seed the counter-based keys take (:data:`matchaudit.rng.KEY_HIGH`): a larger one ended in a cast
        error inside the weights."""
        checks.integer(self.seed, "seed", high=rng.KEY_HIGH)


@dataclass(frozen=True)
class WithinIdentity(Scheme):
    """Recentered bootstrap (docs/methods.md section 3): samples re-drawn with replacement inside each identity."""

    level: ClassVar[Level] = "sample"
    form: ClassVar[Form] = "product"
    name: ClassVar[str] = "within-identity"
    self_pairs: ClassVar[bool] = True

    def sample_weights(self, replicates, layout: Layout, identities: np.ndarray | None = None) -> np.ndarray:
        """Counts c (R, n) int32; only samples of ``identities`` (default all) are filled, the rest 0."""
        reps = _reps(replicates)
        order, offsets = layout.samples_by_identity()
        ids = np.arange(layout.n_identities) if identities is None else np.asarray(identities, np.int64)
        out = np.zeros((reps.size, layout.sample_identity.shape[0]), dtype=np.int32)
        _within_identity(self.seed, reps, ids.astype(np.int64), order, offsets, out)
        return out


@dataclass(frozen=True)
class _IdentityScheme(Scheme):
    level: ClassVar[Level] = "identity"
    form: ClassVar[Form] = "product"

    def identity_weights(self, replicates, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
        """(genuine weights, impostor weights), each (R, K) int32."""
        raise NotImplementedError


@dataclass(frozen=True)
class Vertex(_IdentityScheme):
    """Vertex bootstrap: identities drawn with replacement. Two draws of one identity have no impostor
    comparison; the reference code imputes them with the replicate's mean comparison count and mean FMR,
    which leaves every pooled FMR ratio unchanged, so the weights below are the whole scheme (the number of
    such draw pairs, sum_k C(w_k, 2), is reported by the engine as ``Counts.imputed_pairs``)."""

    name: ClassVar[str] = "vertex"

    def identity_weights(self, replicates, layout):
        reps = _reps(replicates)
        k = layout.n_identities
        w = np.zeros((reps.size, k), dtype=np.int32)
        _identity_multinomial(self.seed, reps, k, k, w)
        return w, w


@dataclass(frozen=True)
class DoubleOrNothing(_IdentityScheme):
    """Double-or-nothing: w_k in {0, 2}, iid equiprobable per identity (a pure function of the unit)."""

    name: ClassVar[str] = "double-or-nothing"

    def identity_weights(self, replicates, layout, identities: np.ndarray | None = None):
        reps = _reps(replicates)
        ids = np.arange(layout.n_identities) if identities is None else np.asarray(identities, np.int64)
        h = rng.key_np(self.seed, rng.STREAM_IDENTITIES, reps[:, None], ids[None, :], 0)
        w = (2 * (h >> np.uint64(63))).astype(np.int32)
        return w, w


@dataclass(frozen=True)
class Subsets(_IdentityScheme):
    """Subsets bootstrap as in the reference R code: K identities drawn with replacement; FMR averages the
    drawn identities' rows of the identity-pair matrix (impostor weight w_k + w_l), FNMR the first K-1 draws."""

    name: ClassVar[str] = "subsets"
    form: ClassVar[Form] = "sum"

    def identity_weights(self, replicates, layout):
        reps = _reps(replicates)
        k = layout.n_identities
        w = np.zeros((reps.size, k), dtype=np.int32)
        u = np.zeros((reps.size, k), dtype=np.int32)
        _identity_multinomial(self.seed, reps, k, k, w)
        _identity_multinomial(self.seed, reps, k - 1, k, u)
        return u, w


@dataclass(frozen=True)
class GroupPermutation(_IdentityScheme):
    """Group labels permuted across identities (an identity's comparisons stay together); group sizes kept."""

    name: ClassVar[str] = "group-permutation"
    form: ClassVar[Form] = "relabel"

    def identity_groups(self, replicates, layout: Layout) -> np.ndarray:
        """(R, K) int64: the group of each identity in each replicate."""
        reps = _reps(replicates)
        k = layout.n_identities
        perm = np.empty((reps.size, k), dtype=np.int64)
        _permutations(self.seed, reps, k, perm)
        return layout.identity_group[perm]


@dataclass(frozen=True)
class ComparisonLists:
    """Comparisons as the comparison-level schemes see them (built by the engine).

    ``genuine_rows``: for identity k, ``genuine_ids[genuine_off[k]:genuine_off[k+1]]`` are its genuine
    comparisons (each unordered comparison once; the ordered row holds it twice). ``impostor_ids`` /
    ``impostor_off``: identity k's row of impostor comparisons (each unordered impostor comparison is in
    the rows of both its identities). ``genuine`` marks the class of each of the ``m`` comparisons.
    """

    m: int
    genuine: np.ndarray
    genuine_ids: np.ndarray
    genuine_off: np.ndarray
    impostor_ids: np.ndarray
    impostor_off: np.ndarray


@nb.njit(cache=True)
def _row_draws(seed: int, stream: int, b: int, k: int, n_draws: int, ids: np.ndarray, lo: int, hi: int,
               div: int, out: np.ndarray) -> None:
    n = (hi - lo) * div
    if n == 0:
        return
    for d in range(n_draws):
        out[ids[lo + rng.below(rng.key(seed, stream, b, k, d), n) // div]] += 1


@nb.njit(parallel=True, cache=True)
def _two_level(seed: int, reps: np.ndarray, w: np.ndarray, gid: np.ndarray, goff: np.ndarray, iid: np.ndarray,
               ioff: np.ndarray, out: np.ndarray) -> None:
    for r in nb.prange(reps.shape[0]):
        for k in range(w.shape[1]):
            if w[r, k] == 0:
                continue
            ng = 2 * (goff[k + 1] - goff[k])
            _row_draws(seed, rng.STREAM_COMPARISONS, reps[r], k, w[r, k] * ng, gid, goff[k], goff[k + 1], 2, out[r])
            ni = ioff[k + 1] - ioff[k]
            _row_draws(seed, rng.STREAM_AUX, reps[r], k, w[r, k] * ni, iid, ioff[k], ioff[k + 1], 1, out[r])


@nb.njit(parallel=True, cache=True)
def _iid(seed: int, reps: np.ndarray, gid: np.ndarray, iid: np.ndarray, out: np.ndarray) -> None:
    for r in nb.prange(reps.shape[0]):
        _row_draws(seed, rng.STREAM_COMPARISONS, reps[r], 0, gid.shape[0], gid, 0, gid.shape[0], 1, out[r])
        _row_draws(seed, rng.STREAM_COMPARISONS, reps[r], 1, iid.shape[0], iid, 0, iid.shape[0], 1, out[r])


@dataclass(frozen=True)
class TwoLevel(Scheme):
    """Two-level bootstrap as in the reference R code: K identities with replacement; for each draw of
    identity k, its row of the ordered comparison matrix is re-drawn with replacement (genuine row: the
    n_k(n_k-1) ordered genuine pairs; impostor row: its n_k(N-n_k) impostor pairs)."""

    level: ClassVar[Level] = "comparison"
    form: ClassVar[Form] = "draws"
    name: ClassVar[str] = "two-level"

    def comparison_weights(self, replicates, layout: Layout, lists: ComparisonLists) -> np.ndarray:
        """(R, m) int32 weights of the listed comparisons."""
        reps = _reps(replicates)
        w, _ = Vertex(self.seed).identity_weights(reps, layout)
        out = np.zeros((reps.size, lists.m), dtype=np.int32)
        _two_level(self.seed, reps, w, lists.genuine_ids, lists.genuine_off, lists.impostor_ids,
                   lists.impostor_off, out)
        return out


@dataclass(frozen=True)
class IIDComparison(Scheme):
    """The naive-independence baseline: genuine and impostor comparisons each re-drawn iid with replacement."""

    level: ClassVar[Level] = "comparison"
    form: ClassVar[Form] = "draws"
    name: ClassVar[str] = "iid-comparison"

    def comparison_weights(self, replicates, layout: Layout, lists: ComparisonLists) -> np.ndarray:
        reps = _reps(replicates)
        out = np.zeros((reps.size, lists.m), dtype=np.int32)
        gid = np.flatnonzero(lists.genuine).astype(np.int64)
        iid = np.flatnonzero(~lists.genuine).astype(np.int64)
        _iid(self.seed, reps, gid, iid, out)
        return out


SCHEMES: dict[str, type[Scheme]] = {
    c.name: c for c in (WithinIdentity, Vertex, DoubleOrNothing, Subsets, GroupPermutation, TwoLevel, IIDComparison)
}
