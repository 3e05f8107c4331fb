"""Which impostor comparisons set a global threshold (``threshold_impostors``): the one reader of its spec.

- ``"all"``: every impostor comparison;
- ``"same-group"``: those whose two identities are in the same group (NIST's demographic practice);
- ``"same:ATTR[,ATTR...]"``: those whose two identities share the listed grouping attributes, any subset of
  ``group_by`` (NIST FRTE's impostors of the same sex, age band and region, chosen attribute by attribute).
  ``same:`` with every grouping attribute is ``same-group``; with none it is refused.

The spec resolves, once per data set, to a symmetric (G, G) mask over group pairs (:func:`reference_pairs`);
each table layout then selects its categories from it (:func:`category_mask`).
"""

from __future__ import annotations

from collections.abc import Sequence

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
    values = [str(g).split("|") for g in group_names]
    odd = [g for g, v in zip(group_names, values) if len(v) != len(group_by)]
    if odd:
        raise InputError(f"{_PARAM} {spec!r}: the group names {odd[:3]} do not split into one value per grouping "
                         f"attribute ({', '.join(group_by)}) at '|'; remove '|' from the attribute values.",
                         param=_PARAM)
    cols = np.array([[v[group_by.index(a)] for a in names] for v in values], dtype=object).reshape(G, len(names))
    return (cols[:, None, :] == cols[None, :, :]).all(axis=-1)


def category_mask(pairs: np.ndarray, categories: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n_cat,) bool: which impostor categories (unordered group pairs ``(a, b)``) ``pairs`` selects."""
    return np.array([bool(pairs[a, b]) for a, b in categories], dtype=bool)


__all__ = ["SPEC_HELP", "attributes", "category_mask", "check_spec", "describe", "reference_pairs"]
