"""Which impostor comparisons set a global threshold (``threshold_impostors``): the one reader of its spec.

- ``"all"``: every impostor comparison;
- ``"same-group"``: those whose two identities are in the same group (NIST's demographic practice);
- ``"same:ATTR[,ATTR...]"``: those whose two identities share the listed grouping attributes, any subset of
  ``group_by`` (NIST FRTE's impostors of the same sex, age band and region, chosen attribute by attribute).
  ``same:`` with every grouping attribute is ``same-group``; with none it is refused.

The spec resolves, once per data set, to a symmetric (G, G) mask over group pairs (:func:`reference_pairs`);
each table layout then selects its categories from it (:func:`category_mask`).

Which impostor categories a table counts is a :class:`PairCategories`: every group pair of its own (``full``:
what a cross-group FMR matrix needs, G(G+1)/2 categories) or, for everything else an audit computes (each
group's same-group impostors and the threshold's impostors), the G same-group pairs and the cross-group pairs
pooled by whether they set the threshold (``pooled``: at most G + 2 categories, so tables grow linearly in G).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from matchaudit.errors import InputError

SPEC_HELP = ("all, same-group, or same:ATTR[,ATTR...] (impostors whose identities share those grouping "
             "attributes, e.g. same:sex,age_band)")
_PARAM = "threshold_impostors"


def attributes(spec: str) -> tuple[str, ...] | None:
    """The attributes a ``same:`` spec names (None for ``all`` / ``same-group``); InputError for any other
    spec, naming it."""
    if spec in ("all", "same-group"):
        return None
    head, _, tail = str(spec).partition(":")
    names = tuple(a.strip() for a in tail.split(","))
    if head.strip() != "same" or not tail.strip() or "" in names:
        raise InputError(f"{_PARAM} {spec!r}: use {SPEC_HELP}.", param=_PARAM)
    if len(set(names)) < len(names):
        raise InputError(f"{_PARAM} {spec!r}: an attribute is repeated; name each once.", param=_PARAM)
    return names


def check_spec(spec: str) -> str:
    """``spec`` if it is well formed (see module doc); the attributes are checked against the data later."""
    attributes(spec)
    return spec


def describe(spec: str) -> str:
    """The spec in words, for reports: which impostor comparisons set the threshold."""
    names = attributes(spec)
    if names is None:
        return "all impostor comparisons" if spec == "all" else "the same-group impostor comparisons"
    return f"the impostor comparisons whose identities share {' and '.join(names)} ({spec})"


def split_group_names(group_names: Sequence[str], group_by: Sequence[str]) -> tuple[list[list[str]], list[str]]:
    """Each group name's attribute values (names are the values joined with '|' in ``group_by`` order:
    :func:`matchaudit.data.validate.group_names_of`), and the names that do not split into one value per
    attribute (a value holding a '|', or ungrouped data); each caller decides what those mean."""
    values = [str(g).split("|") for g in group_names]
    return values, [str(g) for g, v in zip(group_names, values) if len(v) != len(group_by)]


def reference_pairs(spec: str, group_names: Sequence[str], group_by: Sequence[str]) -> np.ndarray:
    """(G, G) symmetric bool: the group pairs whose impostor comparisons set the threshold under ``spec``.

    Group names are the grouping attributes' values joined with '|' in ``group_by`` order
    (:func:`matchaudit.data.validate.group_names_of`)."""
    G = len(group_names)
    names = attributes(spec)
    if names is None:
        return np.ones((G, G), bool) if spec == "all" else np.eye(G, dtype=bool)
    unknown = [a for a in names if a not in group_by]
    if unknown:
        have = ", ".join(group_by) if group_by else "none: the data are not grouped"
        raise InputError(f"{_PARAM} {spec!r}: {', '.join(map(repr, unknown))} is not a grouping attribute "
                         f"(group_by: {have}). Name attributes the groups are made of.", param=_PARAM)
    values, odd = split_group_names(group_names, group_by)
    if odd:
        raise InputError(f"{_PARAM} {spec!r}: the group names {odd[:3]} do not split into one value per grouping "
                         f"attribute ({', '.join(group_by)}) at '|'; remove '|' from the attribute values.",
                         param=_PARAM)
    cols = np.array([[v[group_by.index(a)] for a in names] for v in values], dtype=object).reshape(G, len(names))
    return (cols[:, None, :] == cols[None, :, :]).all(axis=-1)


def category_mask(pairs: np.ndarray, categories: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n_cat,) bool: which impostor categories (unordered group pairs ``(a, b)``) ``pairs`` selects."""
    return np.array([bool(pairs[a, b]) for a, b in categories], dtype=bool)


POOLED_REFERENCE, POOLED_OTHER = (-1, 1), (-1, 0)  # the pairs of the pooled cross-group categories


@dataclass(frozen=True, eq=False)
class PairCategories:
    """The impostor category of every group pair (``slot[a, b]``, symmetric), what each category holds
    (``pairs[c]``: the group pair ``(a, b)``, a <= b, of a category of its own, or :data:`POOLED_REFERENCE` /
    :data:`POOLED_OTHER` for the cross-group pairs pooled by whether they set the threshold) and which
    categories set the threshold (``reference``)."""

    slot: np.ndarray  # (G, G) int64
    pairs: tuple[tuple[int, int], ...]
    reference: np.ndarray  # (n,) bool

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PairCategories) and self.pairs == other.pairs
                and np.array_equal(self.slot, other.slot) and np.array_equal(self.reference, other.reference))

    __hash__ = None  # mutable arrays inside

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def n_groups(self) -> int:
        return self.slot.shape[0]

    @property
    def pooled(self) -> bool:
        return any(a < 0 for a, _ in self.pairs)

    @classmethod
    def full(cls, reference: np.ndarray) -> PairCategories:
        """Every group pair its own category: same-group ``(g, g)`` at ``g``, then ``(g, h)``, g < h, in order."""
        G = reference.shape[0]
        pairs = [(g, g) for g in range(G)] + [(g, h) for g in range(G) for h in range(g + 1, G)]
        slot = np.empty((G, G), np.int64)
        for c, (a, b) in enumerate(pairs):
            slot[a, b] = slot[b, a] = c
        return cls(slot, tuple(pairs), category_mask(reference, pairs))

    @classmethod
    def pooled_by(cls, reference: np.ndarray) -> PairCategories:
        """Same-group ``(g, g)`` at ``g``; the cross-group pairs that set the threshold in one category, the
        others in another (each only when there are such pairs)."""
        G = reference.shape[0]
        cross = ~np.eye(G, dtype=bool)
        pairs = [(g, g) for g in range(G)]
        slot = np.diag(np.arange(G)).astype(np.int64)
        for pooled, where in ((POOLED_REFERENCE, cross & reference), (POOLED_OTHER, cross & ~reference)):
            if where.any():
                slot[where] = len(pairs)
                pairs.append(pooled)
        ref = np.array([bool(reference[a, b]) if a >= 0 else (a, b) == POOLED_REFERENCE for a, b in pairs])
        return cls(slot, tuple(pairs), ref)

    def select(self, pairs: np.ndarray) -> np.ndarray:
        """(n,) bool: the categories of the group pairs ``pairs`` ((G, G) bool); refused when ``pairs`` splits a
        pooled category (ask for the full layout)."""
        out = np.zeros(self.n, bool)
        for c in range(self.n):
            inside = pairs[self.slot == c]
            if inside.any() and not inside.all():
                raise ValueError(f"the group pairs asked for split the pooled category {self.pairs[c]}")
            out[c] = inside.any()
        return out


__all__ = ["POOLED_OTHER", "POOLED_REFERENCE", "SPEC_HELP", "PairCategories", "attributes", "category_mask", "check_spec",
           "describe", "reference_pairs"]
