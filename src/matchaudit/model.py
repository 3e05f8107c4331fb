"""The one internal object every input becomes: identities, groups, and a stream of comparison blocks.

Both input kinds (samples + embeddings, or a comparison table) are turned into a :class:`MatchData` by
``matchaudit.data``; everything downstream (exact metrics, the resampling engine, estimators) only ever sees
this object and the blocks it yields. Validation happens before a ``MatchData`` is built, never after.

Conventions
-----------
* Scores are similarities (larger = more alike). Distances are negated on load; ``score_kind`` says so.
* Identity codes are ``0..K-1`` (``-1`` when the input carries no identities: labels only).
* Group codes are ``0..G-1`` (one group named ``"all"`` when no attribute is given).
* A comparison is genuine iff both sides belong to the same identity (or its label says so when identities
  are unknown). Unordered: each comparison appears once, unless a comparison table lists it more than once
  and ``duplicates="keep-both"`` (the default) counts every row, as trial-list scorers count trial lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal, Protocol, Union

import numpy as np

from matchaudit import interrupt
from matchaudit.blocks import DenseBlock, Metric
from matchaudit.scores import iter_similarity_blocks, tiles

ALL = "all"  # the overall view's name, and the one implicit group of ungrouped data


def block_comparisons(block: Block) -> int:
    """How many comparisons a block holds (a tile of the all-pairs matrix: the entries above the diagonal)."""
    if isinstance(block, DenseBlock):
        r, c = block.scores.shape
        rows = np.arange(block.row0, block.row0 + r)
        return int(np.clip(block.col0 + c - np.maximum(block.col0, rows + 1), 0, c).sum())
    return int(len(block.score))


def view_names(group_names: tuple[str, ...]) -> tuple[str, ...]:
    """The views every table reports: the overall ``"all"``, then each group; ungrouped data (one implicit
    group ``"all"``, which is the overall itself) has only the overall, so no row is written twice."""
    return (ALL,) + (() if tuple(group_names) == (ALL,) else tuple(group_names))



@dataclass(frozen=True)
class PairBlock:
    """Explicitly listed comparisons (rows of a comparison table), all arrays of equal length ``m``.

    ``sample_a``/``sample_b`` are sample indices (``-1`` when the table names identities only).
    """

    score: np.ndarray  # float64 (m,)
    identity_a: np.ndarray  # int64 (m,), -1 if unknown
    identity_b: np.ndarray  # int64 (m,)
    group_a: np.ndarray  # int64 (m,)
    group_b: np.ndarray  # int64 (m,)
    genuine: np.ndarray  # bool (m,)
    sample_a: np.ndarray  # int64 (m,), -1 if unknown
    sample_b: np.ndarray  # int64 (m,)

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def take(self, rows: np.ndarray) -> PairBlock:
        """The comparisons ``rows`` (indices or a boolean mask) of this block, as a block."""
        return PairBlock(*(getattr(self, f)[rows] for f in PairBlock.__dataclass_fields__))

    @classmethod
    def concat(cls, blocks: list[PairBlock]) -> PairBlock:
        """The comparisons of several blocks, in order, as one block."""
        return cls(*(np.concatenate([getattr(b, f) for b in blocks]) for f in cls.__dataclass_fields__))


Block = Union[PairBlock, DenseBlock]

def pair_key(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The key of each unordered pair of codes below ``n`` (identities, or samples), ``min(a, b) * n + max(a, b)``
    (sortable; ``// n``, ``% n`` undo it)."""
    return np.minimum(a, b) * n + np.maximum(a, b)


FtaPolicy = Literal["refuse", "exclude", "count"]
"""What to do with comparisons that produced no score (ISO/IEC 19795-1 failures to acquire, enrol or compare):
refuse the input, exclude them and report their rate, or count them as errors (transaction-level rates)."""

DuplicatePolicy = Literal["keep-both", "first", "mean", "refuse"]
"""A comparison (unordered sample pair) listed more than once: count every row, keep the first, one row with the
mean of their scores, or refuse the input (see :data:`matchaudit.choices.DUPLICATE_POLICIES`)."""


@dataclass(frozen=True)
class Failures:
    """The comparisons that produced no score, and the policy applied to them.

    ``failed`` holds them (score NaN, identities and groups as any comparison); ``rows`` their 0-based rows in
    the input. With policy ``"count"`` they are also among the comparisons, at ``floor``, a score below every
    observed one, so a failed genuine comparison is a false non-match and a failed impostor comparison never a
    false match at any threshold between observed scores: FNMR = FTA + FNMR(1 - FTA) and FMR = FMR(1 - FTA)
    per class, ISO/IEC 19795-1's transaction-level rates. With ``"exclude"`` they are left out of every rate.
    """

    policy: Literal["exclude", "count"]
    failed: PairBlock
    rows: np.ndarray  # int64 (f,)
    floor: float | None = None  # the score failed comparisons carry under "count"


@dataclass(frozen=True)
class Attacks:
    """Presentation attacks (bob's vulnerability score files: rows with a non-empty ``probe_attack_type``), kept
    apart from the comparisons: never genuine nor impostor, so never in FMR or FNMR. Their match rate at the
    audit's thresholds, the IAPMR, is reported per group (:mod:`matchaudit.estimators.attacks`).

    ``identity`` is the attacked reference's subject (the identity an attack claims), a code into
    :attr:`MatchData.identity_names`; ``group`` that subject's group; ``score`` as the comparisons' scores
    (distances negated); ``rows`` the attacks' 1-based lines in the file.
    """

    score: np.ndarray  # float64 (a,)
    identity: np.ndarray  # int64 (a,)
    group: np.ndarray  # int64 (a,)
    attack_type: np.ndarray  # str (a,)
    rows: np.ndarray  # int64 (a,)

    def __len__(self) -> int:
        return int(self.score.shape[0])


@dataclass(frozen=True)
class Conditions:
    """Trial conditions: attributes of each listed comparison (language match, channel, duration bin...), not of its
    identities (one identity appears under several), as string columns aligned with :attr:`MatchData.pairs`. Read
    by :func:`matchaudit.auditing.conditions.audit_conditions`; the audit itself does not use them."""

    columns: dict[str, np.ndarray]  # name -> (m,) str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.columns)


class PairSource(Protocol):
    """Listed comparisons read lazily, a chunk at a time (an out-of-core table, e.g.
    :class:`matchaudit.data.parquet.ParquetPairs`); picklable, so that workers read their own chunks."""

    has_identities: bool

    def __len__(self) -> int: ...

    def n_blocks(self, part: tuple[int, int] = (0, 1)) -> int: ...

    def blocks(self, part: tuple[int, int] = (0, 1)) -> Iterator[PairBlock]: ...


@dataclass(frozen=True)
class Samples:
    """Per-sample index: ids and identity codes; embeddings only for the all-pairs protocol."""

    ids: np.ndarray  # (n,) str
    identity: np.ndarray  # (n,) int64 codes into MatchData.identity_names
    embeddings: np.ndarray | None = None  # (n, d) float32, unit-norm rows for cosine


IDENTITY_SOURCES = "identity or sample columns; speaker_of for trial lists"
"""Where identities come from, for the messages of the jobs that cannot run without them
(:attr:`MatchData.has_identities`)."""


@dataclass(frozen=True)
class MatchData:
    """Identities, their groups, and the comparisons to evaluate.

    ``protocol`` is ``"all-pairs"`` (every unordered pair of samples, scores computed blockwise from
    embeddings, never holding n x n floats) or ``"listed"`` (exactly the rows of a comparison table: in
    memory as ``pairs``, or out of core as ``source``, read a chunk at a time by :meth:`blocks`).
    """

    identity_names: np.ndarray  # (K,) str
    identity_group: np.ndarray  # (K,) int64 codes into group_names
    group_names: tuple[str, ...]
    group_by: tuple[str, ...]  # attribute columns the groups come from (empty: one group "all")
    protocol: Literal["all-pairs", "listed"]
    score_kind: str  # "cosine", "negated euclidean", "similarity", "negated distance"
    samples: Samples | None = None
    pairs: PairBlock | None = None  # the listed comparisons (protocol "listed"), in memory
    source: PairSource | None = None  # or the listed comparisons out of core (then pairs is None)
    metric: Metric = "cosine"
    warnings: tuple[str, ...] = field(default=())
    failures: Failures | None = None  # comparisons without a score, under an fta_policy other than "refuse"
    attacks: Attacks | None = None  # presentation attacks (bob vulnerability files), apart from the comparisons
    conditions: Conditions | None = None  # per-comparison trial conditions (listed, in memory), aligned with pairs

    @property
    def n_identities(self) -> int:
        return int(self.identity_names.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.group_names)

    @property
    def has_identities(self) -> bool:
        """False when a listed table carries labels but no identity information."""
        if self.protocol == "all-pairs":
            return True
        if self.source is not None:
            return self.source.has_identities
        assert self.pairs is not None
        return bool(len(self.pairs) == 0 or self.pairs.identity_a.min() >= 0)

    @property
    def identity_sizes(self) -> np.ndarray:
        """Samples per identity (all-pairs), or -1 per identity when samples are unknown."""
        if self.samples is None:
            return np.full(self.n_identities, -1, dtype=np.int64)
        return np.bincount(self.samples.identity, minlength=self.n_identities).astype(np.int64)

    def genuine_per_identity(self) -> np.ndarray | None:
        """Genuine comparisons per identity: from the samples per identity (all-pairs) or the listed table in
        memory; None for a table read from disk."""
        if self.protocol == "all-pairs":
            m = self.identity_sizes
            return m * (m - 1) // 2
        if self.pairs is None:
            return None
        p = self.pairs
        return np.bincount(np.asarray(p.identity_a)[p.genuine & (p.identity_a >= 0)], minlength=self.n_identities)

    def n_comparisons(self) -> int:
        if self.protocol == "all-pairs":
            assert self.samples is not None
            n = self.samples.ids.shape[0]
            return n * (n - 1) // 2
        return len(self._listed)

    def fingerprint(self) -> dict:
        """What another output must share to describe the same data set (the report checks a compare.json against
        the audit's results.json summary by it): sample, identity and comparison counts, identities per group."""
        n = np.bincount(self.identity_group, minlength=self.n_groups)
        return {"n_samples": None if self.samples is None else int(self.samples.ids.shape[0]),
                "n_identities": int(self.n_identities), "n_comparisons": int(self.n_comparisons()),
                "identities_per_group": {g: int(n[i]) for i, g in enumerate(self.group_names)}}

    def __repr__(self) -> str:
        """A summary, not the arrays (C5: the dataclass's repr printed every id and embedding)."""
        from matchaudit.errors import listing

        n = np.bincount(self.identity_group, minlength=self.n_groups)
        groups = listing([f"{g[:40] + '…' if len(g) > 40 else g} ({k:,})" for g, k in zip(self.group_names, n)], 6)
        emb = None if self.samples is None else self.samples.embeddings
        parts = [f"protocol={self.protocol!r}", f"{self.n_comparisons():,} comparisons",
                 f"{self.n_identities:,} identities" if self.has_identities else "no identities",
                 f"groups by {', '.join(self.group_by) or '(none)'}: {groups} identities",
                 f"scores {self.score_kind}"]
        if emb is not None:
            parts.insert(1, f"{emb.shape[0]:,} samples x {emb.shape[1]} dims ({emb.dtype})")
        parts += [f"{len(self.warnings)} warnings"] if self.warnings else []
        parts += [f"{len(self.attacks):,} presentation attacks"] if self.attacks is not None and len(self.attacks) else []
        return f"MatchData({'; '.join(parts)})"

    @property
    def out_of_core(self) -> bool:
        """True when the listed comparisons are read from disk a chunk at a time (``source``)."""
        return self.source is not None

    @property
    def _listed(self) -> PairBlock | PairSource:
        listed = self.source if self.source is not None else self.pairs
        assert listed is not None, "a listed MatchData has pairs or a source"
        return listed

    def table(self, feature: str) -> PairBlock:
        """All listed comparisons as one in-memory block, for the features that need them at once; an
        InputError naming ``feature`` when the table is out of core."""
        if self.source is not None:
            from matchaudit.errors import InputError

            raise InputError(
                f"{feature} needs the whole comparison table in memory, but this table ({len(self.source):,} "
                "rows) is read out of core. Load it in memory (enough RAM), or use a feature that "
                "streams (the audit's exact metrics and its identity-level bootstrap intervals do)."
            )
        assert self.pairs is not None
        return self.pairs

    def n_blocks(self, block_rows: int = 2048, part: tuple[int, int] = (0, 1)) -> int:
        """How many blocks :meth:`blocks` yields for ``part`` (progress bars)."""
        if self.source is not None:
            return self.source.n_blocks(part)
        if self.protocol == "listed":
            return len(self._chunks(block_rows, part))
        assert self.samples is not None
        return sum(1 for _ in tiles(self.samples.ids.shape[0], block_rows, part))

    def _chunks(self, block_rows: int, part: tuple[int, int]) -> list[slice]:
        """Row ranges of the in-memory table's chunks in ``part`` (``block_rows x 4096`` rows each)."""
        assert self.pairs is not None
        step = max(1, block_rows * 4096)
        return [slice(a, a + step) for a in range(part[0] * step, len(self.pairs), part[1] * step)]

    def blocks(self, block_rows: int = 2048, part: tuple[int, int] = (0, 1), reuse: bool = False
               ) -> Iterator[Block]:
        """Yield the comparisons in blocks (bounded memory: at most ``block_rows`` x n scores at once).

        ``part=(i, P)``: only the i-th of P interleaved shares of the row blocks (all-pairs) or table chunks
        (listed; out-of-core tables: their row groups i, i+P, ...); the P parts together yield every
        comparison exactly once (how workers split the work). ``reuse`` (all-pairs): each tile's scores are
        written over the previous tile's memory, so a caller that is done with a block before asking for the
        next saves the cost of fresh memory (see :func:`matchaudit.scores.iter_similarity_blocks`). A
        Ctrl-C deferred by :mod:`matchaudit.interrupt` is raised before the next block."""
        i, n_parts = part
        if not 0 <= i < n_parts:
            raise ValueError(f"part {part!r}: need 0 <= i < P")
        for block in self._blocks(block_rows, part, reuse):
            interrupt.check()
            yield block

    def _blocks(self, block_rows: int, part: tuple[int, int], reuse: bool) -> Iterator[Block]:
        if self.source is not None:
            yield from self.source.blocks(part)
            return
        if self.protocol == "listed":
            for rows in self._chunks(block_rows, part):
                yield self.pairs.take(rows)
            return
        assert self.samples is not None and self.samples.embeddings is not None
        yield from iter_similarity_blocks(self.samples.embeddings, self.metric, block_rows, part, reuse)
