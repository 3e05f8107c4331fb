"""Checks shared by both input kinds: ids, scores, labels, groups, comparisons. Each raises one InputError.

Every check names the rows (or identities) involved through a :class:`Where`, so the same code reports
1-based data rows for files and 0-based positions for arrays passed from Python.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from matchaudit.errors import InputError, listing
from matchaudit.model import ALL, pair_key

BINARY_TRUE = ("1", "1.0", "+1", "+1.0", "true", "t", "yes", "y")
BINARY_FALSE = ("0", "0.0", "-1", "-1.0", "false", "f", "no", "n")
"""The one vocabulary of a binary label, for comparison labels and classifier tables alike (they disagreed: yes/no
was refused by one and 1/-1 by the other)."""
_GENUINE = BINARY_TRUE + ("genuine", "target", "match", "mated", "same")
_IMPOSTOR = BINARY_FALSE + ("impostor", "imposter", "nontarget", "nonmatch", "nonmated", "different")
_LABELS = {**{w: True for w in _GENUINE}, **{w: False for w in _IMPOSTOR}}


@dataclass(frozen=True)
class Where:
    """Where values come from, for messages: ``what`` names the source; ``base`` is 1 for file rows, 0 for arrays."""

    what: str
    base: int = 0

    def rows(self, idx: Sequence[int] | np.ndarray) -> str:
        shown = [int(i) + self.base for i in idx]
        if self.base:
            return f"rows {listing(shown)} (first data row = 1)"
        return f"positions {listing(shown)} (0-based)"


def as_array(values: object) -> np.ndarray:
    """A fresh 1-D object array (never a view of the caller's data)."""
    if isinstance(values, (pd.Series, pd.Index)):
        return values.to_numpy(dtype=object, copy=True)
    return np.array(values, dtype=object, copy=True).reshape(-1)


MISSING_WORDS = frozenset({"", "na", "n/a", "nan", "none", "null", "?"})
"""Labels and scores read as missing, case-insensitive and stripped (the words pandas' readers turn into NaN, and
'?'). Ids and attribute values are names: there only an empty entry is missing (a group "NA" is North America)."""


def _text(arr: object, words: frozenset[str] = MISSING_WORDS) -> tuple[pd.Series, np.ndarray]:
    """Stripped text of each entry, and which entries are missing (None/NaN, or blank or one of ``words`` once
    stripped and lower-cased)."""
    ser = pd.Series(as_array(arr), dtype=object)
    text = ser.astype(str).str.strip()
    return text, (ser.isna() | text.str.lower().isin(words)).to_numpy()


NO_FAILURE_FIELD = ("This format has no field for a failed comparison, so every comparison needs a score: rescore "
                    "or remove those (a tidy comparison table can keep them as failures: fta_policy 'exclude' or "
                    "'count').")
"""What to do with a missing score in a file that cannot record failures (``advice`` of :func:`as_scores`): the
general advice, --fta-policy, is refused for those formats."""


def missing(values: object) -> np.ndarray:
    """Which entries are missing: None/NaN, blank, or one of :data:`MISSING_WORDS` (the one rule every reader
    of ids, attributes, labels and scores uses)."""
    return _text(values)[1]


def as_str(values: object, where: Where, what: str) -> np.ndarray:
    """Ids or attribute values as strings; missing (None/NaN) or blank entries are an error naming the rows. Any
    text is a name, "NA" and "None" included."""
    text, missing = _text(as_array(values), frozenset({""}))
    bad = np.flatnonzero(missing)
    if bad.size:
        raise InputError(
            f"{where.what}: missing {what} at {where.rows(bad)}. Every row needs one: fill them in "
            "(e.g. 'unknown' for an attribute) or remove those rows."
        )
    return text.to_numpy(dtype=str)


def as_scores(values: object, where: Where, what: str = "score", distance: bool = False,
              missing_ok: bool = False, advice: str | None = None) -> np.ndarray:
    """Finite float64 similarities (negated when ``distance``); non-numeric, NaN or inf entries are errors.
    ``missing_ok``: a missing entry (NaN, empty, a missing-value word) is a failure to acquire or compare and
    comes back as NaN, for the caller's failure policy; infinite or unparsable scores stay errors."""
    arr = as_array(values)
    num = pd.to_numeric(pd.Series(arr, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    text, missing = _text(arr)
    spelled_nan = text.str.lower().isin(["nan", "inf", "-inf", "+inf", "infinity", "-infinity"]).to_numpy()
    unparsable = np.flatnonzero(np.isnan(num) & ~missing & ~spelled_nan)
    if unparsable.size:
        examples = listing(sorted({str(arr[i]) for i in unparsable[:1000]}), 5)
        raise InputError(
            f"{where.what}: {what} is not a number at {where.rows(unparsable)} (values: {examples}). "
            f"Scores must be numeric; fix or remove those rows."
        )
    bad = np.flatnonzero(~np.isfinite(num) & ~(missing_ok & np.isnan(num)))
    if bad.size:
        raise InputError(
            f"{where.what}: NaN, empty or infinite {what} at {where.rows(bad)}. "
            + (advice or "A missing score is a failure to acquire or compare; matchaudit never drops it silently. "
               "Choose fta_policy='exclude' (drop and report them per group) or 'count' (count them as errors), or "
               "give them a real score.")
            if not missing_ok else f"{where.what}: infinite {what} at {where.rows(bad)}; give finite scores."
        )
    return -num if distance else num


def parse_labels(values: object, where: Where) -> np.ndarray:
    """Genuine (True) / impostor (False) from 1/0, 1/-1, true/false, genuine/impostor, target/nontarget,
    match/non-match.

    Case, surrounding blanks and '-', '_' or ' ' between letters are ignored (``non-match`` = ``nonmatch``); a
    sign is kept (``-1`` is an impostor, as in the +1/-1 convention).
    """
    arr = as_array(values)
    words = (pd.Series(arr, dtype=object).astype(str).str.strip().str.lower()
             .str.replace(r"(?<=[a-z])[-_ ]+(?=[a-z])", "", regex=True))
    parsed = words.map(_LABELS).to_numpy(dtype=object)
    bad = np.flatnonzero(pd.isna(parsed))
    if bad.size:
        values_seen = listing(sorted({str(arr[i]) for i in bad[:1000]}), 5)
        raise InputError(
            f"{where.what}: unrecognised label at {where.rows(bad)} (values: {values_seen}). Use 1/0, 1/-1, "
            "true/false, yes/no, genuine/impostor, target/nontarget or match/non-match."
        )
    return parsed.astype(bool)


def partial_labels(values: object, where: Where) -> np.ndarray:
    """1.0 (genuine) / 0.0 (impostor) per row in any vocabulary of :func:`parse_labels`, NaN where the label is
    missing (an unlabelled pair of a label-free estimate)."""
    arr = as_array(values)
    unlabelled = missing(arr)
    out = np.full(arr.shape[0], np.nan)
    if (~unlabelled).any():
        out[~unlabelled] = parse_labels(arr[~unlabelled], where).astype(float)
    return out


def encode(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique names and int64 codes into them (hashing, then sorting only the distinct names)."""
    codes, uniq = pd.factorize(np.asarray(names, dtype=str))
    uniq = np.asarray(uniq, dtype=str)
    order = np.argsort(uniq, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return uniq[order], rank[codes].astype(np.int64)


def n_rows(values: object, name: str = "input") -> int:
    """Length of an array-like, a DataFrame, or a dict of equal-length columns; a scalar or an array of more than
    one column (a 400 x 2 score array was flattened into 800 scores, and the audit ended in an IndexError) is an
    InputError naming ``name``."""
    if isinstance(values, Mapping) and not isinstance(values, pd.DataFrame):
        return len(next(iter(values.values()))) if values else 0
    if isinstance(values, pd.DataFrame):
        return len(values)
    shape = np.shape(values) if not isinstance(values, (str, bytes)) else ()
    if len(shape) == 0:
        raise InputError(f"{name}: give one value per comparison (a sequence), not a single "
                         f"{type(values).__name__}.", param=name)
    if any(d != 1 for d in shape[1:]):
        raise InputError(f"{name} has shape {tuple(shape)}: give one value per comparison (a 1-D sequence); for two "
                         "models' scores, compare them (ma.compare) or audit each column.", param=name)
    return int(shape[0])


def check_lengths(lengths: Mapping[str, int], context: str) -> int:
    """All inputs must have the same length; returns it."""
    distinct = set(lengths.values())
    if len(distinct) > 1:
        detail = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise InputError(f"{context}: inputs have different lengths ({detail}); they must be aligned row by row.")
    n = distinct.pop()
    if n == 0:
        raise InputError(f"{context}: no rows. Give at least one comparison or sample.")
    return n


def check_aligned(given: Mapping[str, object], where: Where) -> None:
    """pandas inputs (Series, DataFrames) are taken by position (row i = comparison i): refuse those whose indexes
    differ, which a pandas user would expect to be aligned by label (a shuffled score Series read 1,476/1,500 FNMR
    errors for 43)."""
    indexed = {k: x.index for k, x in given.items() if isinstance(x, (pd.Series, pd.DataFrame))}
    if len(indexed) < 2:
        return
    (first, ref), *others = indexed.items()
    differ = [k for k, idx in others if not idx.equals(ref)]
    if differ:
        raise InputError(
            f"{where.what}: {first} and {', '.join(differ)} are pandas objects with different indexes; inputs are "
            "matched by position, not by index. Align them first (e.g. .loc[common_index]) or pass "
            ".reset_index(drop=True) of each in the same row order.")


def attribute_values(
    attributes: pd.DataFrame | Mapping[str, object] | None, group_by: tuple[str, ...], n: int, where: Where, side: str = ""
) -> dict[str, np.ndarray]:
    """String values of each ``group_by`` attribute (aligned with ``n`` rows); missing columns/values are errors."""
    if not group_by:
        return {}
    if attributes is None:
        raise InputError(
            f"{where.what}: group_by={list(group_by)} but no attributes{side} were given. Pass a table with "
            "those columns, or leave group_by empty for one group 'all'."
        )
    if not isinstance(attributes, (pd.DataFrame, Mapping)):
        raise InputError(f"{where.what}: attributes{side} must be a table (a pandas DataFrame) or a mapping of column "
                         f"names to values; got {type(attributes).__name__}.")
    cols = list(attributes.columns) if isinstance(attributes, pd.DataFrame) else list(attributes.keys())
    out: dict[str, np.ndarray] = {}
    for attr in group_by:
        if attr not in cols:
            raise InputError(missing_column(where, attr, cols, "a group_by attribute"))
        vals = as_str(attributes[attr], where, f"'{attr}'{side}")
        if vals.shape[0] != n:
            raise InputError(
                f"{where.what}: attribute '{attr}'{side} has {vals.shape[0]} values for {n} rows; align them."
            )
        out[attr] = vals
    return out


def missing_column(where: Where, name: str, present: Sequence[object], role: str, arg: str | None = None) -> str:
    """Message for a missing column: what exists, and close matches."""
    import difflib

    cols = [str(c) for c in present]
    close = [c for c in cols if c.lower() == name.lower()]
    close += [c for c in difflib.get_close_matches(name, cols, n=3, cutoff=0.6) if c not in close]
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    sep = next((d for d in (";", "\t", "|") if len(cols) == 1 and d in cols[0]), None)
    if sep is not None:
        shown = "tab" if sep == "\t" else repr(sep)
        hint = (f" The file seems {shown}-delimited (one column named {cols[0][:60]!r}): save it comma-separated "
                "(.csv) or tab-separated (.tsv), with '.' as the decimal point.")
    how = f" (set it with {arg}=...)" if arg else ""
    return (
        f"{where.what} has no column '{name}' ({role}){how}. Columns present: {listing(cols, 30)}.{hint}"
    )


def group_names_of(values: Mapping[str, np.ndarray], group_by: tuple[str, ...], n: int) -> np.ndarray:
    """Group name per row: the attribute values joined with '|' (e.g. 'F|asian'), or 'all' (:data:`model.ALL`,
    the overall view's name, which a real group therefore cannot take)."""
    if not group_by:
        return np.full(n, ALL, dtype=object)
    first, *rest = (pd.Series(values[a], dtype=object) for a in group_by)
    if rest:  # 'x|y' + 'z' and 'x' + 'y|z' would both be 'x|y|z': two intersections merged into one group
        for attr in group_by:
            piped = sorted({str(x) for x in values[attr] if "|" in str(x)})
            if piped:
                raise InputError(
                    f"attribute '{attr}' has values containing '|' ({listing([repr(x) for x in piped], 5)}): with "
                    f"group_by={list(group_by)} the groups are the values joined with '|', and such a value makes "
                    "different intersections one group. Replace '|' in those values (for example by '/').",
                    param="group_by")
    out = first.str.cat(rest, sep="|").to_numpy(dtype=object) if rest else first.to_numpy(dtype=object)
    clash = np.flatnonzero(out == ALL)
    if clash.size:
        raise InputError(
            f"a group is named '{ALL}' (group_by={list(group_by)}, {clash.size} occurrence(s), first at positions "
            f"{listing([str(i) for i in clash[:5]], 5)}, 0-based), the name of the overall rows of every table. "
            "Rename that attribute value (for example to 'all_')."
        )
    return out


def identity_groups(
    identity: np.ndarray, names: np.ndarray, values: Mapping[str, np.ndarray], group_by: tuple[str, ...]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Group code per identity from per-occurrence attribute values, which must be constant within an identity.

    ``identity``: identity code per occurrence (sample, or side of a comparison); ``names``: identity names.
    """
    problems: list[str] = []
    for attr in group_by:
        varying = values_per_key(identity, values[attr])
        if varying:
            items = [f"{names[k]} ({', '.join(v)})" for k, v in varying.items()]
            noun = "identity" if len(items) == 1 else f"{len(items)} identities"
            problems.append(f"'{attr}' varies within {noun}: {listing(items)}")
    if problems:
        raise InputError(
            "Groups are defined per identity, but " + "; ".join(problems) + ". Fix the attribute so that each "
            "identity has one value, or drop it from group_by (sample-level grouping is not supported)."
        )
    per_row = group_names_of(values, group_by, identity.shape[0])
    present, first = np.unique(identity, return_index=True)
    assert present.shape[0] == names.shape[0], "every identity occurs at least once"
    group_of_identity = per_row[first]
    gnames, gcodes = encode(group_of_identity.astype(str))
    return gcodes, tuple(str(g) for g in gnames)


def values_per_key(keys: np.ndarray, values: np.ndarray) -> dict[int, list[str]]:
    """The keys (non-negative int codes) seen with more than one distinct value, each with its sorted values."""
    names, codes = encode(values)
    pairs = np.unique(keys.astype(np.int64) * names.shape[0] + codes)
    ks, counts = np.unique(pairs // names.shape[0], return_counts=True)
    out: dict[int, list[str]] = {}
    for pair in pairs[np.isin(pairs // names.shape[0], ks[counts > 1])]:
        out.setdefault(int(pair // names.shape[0]), []).append(str(names[pair % names.shape[0]]))
    return out


def check_group_coverage(group_names: tuple[str, ...], n_genuine: np.ndarray, n_impostor: np.ndarray) -> None:
    """Every group needs genuine and same-group impostor comparisons, or its error rates are undefined."""
    no_gen = [g for g, c in zip(group_names, n_genuine) if c == 0]
    no_imp = [g for g, c in zip(group_names, n_impostor) if c == 0]
    parts = []
    if no_gen:
        parts.append(f"no genuine comparisons in group(s) {listing(no_gen)} (FNMR undefined)")
    if no_imp:
        parts.append(
            f"no impostor comparisons with both sides in group(s) {listing(no_imp)} (per-group FMR undefined)"
        )
    if parts:
        text = "; ".join(parts)
        raise InputError(
            text[0].upper() + text[1:] + ". Add comparisons for these groups, merge them with another group, "
            "or choose a different group_by."
        )


def check_self_pairs(a: np.ndarray, b: np.ndarray, names: np.ndarray, where: Where,
                     rows: np.ndarray | None = None) -> None:
    """No sample compared with itself (an error whatever the duplicates policy). ``rows``: the positions of
    ``a``/``b`` in the table (default ``0..m-1``), for messages."""
    same = np.flatnonzero(a == b)
    if same.size:
        rows = np.arange(a.shape[0]) if rows is None else np.asarray(rows)
        raise InputError(
            f"{where.what}: a sample is compared with itself at {where.rows(rows[same])} "
            f"(samples {listing(sorted(set(names[a[same]].tolist())))}). Remove those rows."
        )


def check_pairs(a: np.ndarray, b: np.ndarray, names: np.ndarray, where: Where, rows: np.ndarray | None = None
                ) -> None:
    """No sample compared with itself; each unordered comparison once ((a, b) and (b, a) are the same): the
    rule for sample pairs whose scores are computed (``pairs`` of :func:`matchaudit.data.load_samples`); scored
    comparison tables choose with :func:`resolve_duplicates`.
    ``rows``: the positions of ``a``/``b`` in the table (default ``0..m-1``), for messages."""
    rows = np.arange(a.shape[0]) if rows is None else np.asarray(rows)
    check_self_pairs(a, b, names, where, rows)
    frame = pd.DataFrame({"lo": np.minimum(a, b), "hi": np.maximum(a, b)}, index=rows)
    dup = frame.duplicated(keep=False).to_numpy()
    if dup.any():
        groups = frame[dup].groupby(["lo", "hi"]).groups
        items = [
            f"{names[lo]} vs {names[hi]} at {where.rows(np.asarray(rows))}"
            for (lo, hi), rows in sorted(groups.items(), key=lambda kv: min(kv[1]))
        ]
        raise InputError(
            f"{where.what}: the same comparison is listed more than once ((a, b) and (b, a) count as the same): "
            f"{listing(items, 5)}. Keep one row per comparison."
        )


EXAMPLES = 5
"""Repeated comparisons named in a duplicates message (the first ones in file order)."""


@dataclass(frozen=True)
class Repeats:
    """Comparisons (unordered sample pairs) listed more than once: ``pairs`` of them in ``rows`` rows, ``differ``
    of them with different scores; ``examples``: (first row, description) of the first few in file order."""

    pairs: int
    rows: int
    differ: int
    examples: tuple[tuple[int, str], ...]

    def __add__(self, other: Repeats) -> Repeats:
        """Two disjoint sets of repeated comparisons (e.g. hash shares of an out-of-core table) as one."""
        return Repeats(self.pairs + other.pairs, self.rows + other.rows, self.differ + other.differ,
                       tuple(sorted(self.examples + other.examples))[:EXAMPLES])


@dataclass(frozen=True)
class Resolved:
    """The comparisons left by :func:`resolve_duplicates`: positions ``keep`` (file order) of the input rows,
    their ``score`` and ``failed`` flags (``None`` when none were given), and the ``repeats`` found (or None)."""

    keep: np.ndarray
    score: np.ndarray
    failed: np.ndarray | None
    repeats: Repeats | None


_POLICY_TEXT = {
    "keep-both": "Every row is counted, as trial-list scorers count trial lines (duplicates='keep-both', the default)",
    "first": "Kept the first row of each (duplicates='first')",
    "mean": "Merged the rows of each into one comparison with the mean of their scores (duplicates='mean')",
}


def duplicates_without_samples(policy: str, where: Where) -> None:
    """Without sample ids a repeated comparison cannot be told from another comparison of the same identities:
    every row counts, and a ``duplicates`` policy other than ``"keep-both"`` is an InputError."""
    if policy != "keep-both":
        raise InputError(
            f"{where.what}: duplicates={policy!r} needs sample ids: without them a repeated comparison cannot be "
            "told apart from another comparison of the same two identities, so every row is counted "
            "(duplicates='keep-both'). Give the two sample id columns, or drop the option.", param="duplicates")


def duplicates_message(repeats: Repeats, where: Where, policy: str, out_of_core: bool = False) -> str:
    """The warning (``keep-both``, ``first``, ``mean``) or the error (``refuse``; ``first``/``mean`` on a table
    read ``out_of_core``) about repeated comparisons."""
    shown = "; ".join(text for _, text in repeats.examples)
    more = repeats.pairs - len(repeats.examples)
    found = (f"{where.what}: {repeats.pairs} comparison{'s are' if repeats.pairs > 1 else ' is'} listed more than "
             f"once ((a, b) and (b, a) count as the same sample pair; {repeats.rows} rows in all), {repeats.differ} "
             f"of them with different scores: {shown}{f' (and {more} more)' if more > 0 else ''}.")
    if policy == "refuse":
        return (found + " Choose which rows count: duplicates='keep-both' (every row, as trial-list scorers count "
                "trial lines), 'first' (the first row of each) or 'mean' (one row with the mean of their scores); "
                "or keep one row per comparison.")
    if out_of_core and policy != "keep-both":
        return (found + f" duplicates={policy!r} rewrites the table, which needs it in memory: load it in memory "
                "(out_of_core=False; CLI: --in-memory), or choose duplicates='keep-both' (every row counts) or "
                "'refuse'.")
    dropped = repeats.rows - repeats.pairs
    return (f"{found} {_POLICY_TEXT[policy]}" + (f": {dropped:,} {'row' if dropped == 1 else 'rows'} fewer" if policy != "keep-both" else "")
            + ". Choose with duplicates='keep-both', 'first', 'mean' or 'refuse' (CLI: --duplicates "
            "keep-both|first|mean|refuse).")


def resolve_duplicates(
    a: np.ndarray, b: np.ndarray, score: np.ndarray, names: np.ndarray, where: Where, policy: str, *,
    rows: np.ndarray | None = None, genuine: np.ndarray | None = None,
    groups: tuple[np.ndarray, np.ndarray] | None = None, failed: np.ndarray | None = None,
) -> Resolved:
    """The one rule for a scored comparison listed more than once: the rows whose sample codes ``a``/``b``
    (into ``names``) are the same unordered pair are one comparison.

    ``policy``: ``"keep-both"`` keeps every row (as trial-list scorers count trial lines); ``"first"`` keeps the
    first row of each pair in file order; ``"mean"`` keeps that row with the mean of the pair's scores (failed if
    any of its rows failed); ``"refuse"`` raises an InputError naming the pairs (``param="duplicates"``). A
    sample compared with itself, or one pair listed with different labels (``genuine``) or groups (``groups``,
    per side), is an error whatever the policy. ``rows``: the positions of the inputs in the table, for
    messages (default ``0..m-1``). The inputs are not modified."""
    m = a.shape[0]
    rows = np.arange(m) if rows is None else np.asarray(rows)
    check_self_pairs(a, b, names, where, rows)
    everything = Resolved(np.arange(m), score, failed, None)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = pair_key(a, b, np.int64(max(1, names.shape[0])))
    dup = np.flatnonzero(pd.Series(key).duplicated(keep=False).to_numpy())
    if dup.size == 0:
        return everything
    uniq, first, pair, count = np.unique(key[dup], return_index=True, return_inverse=True, return_counts=True)
    pair = pair.reshape(-1)
    head = dup[first]  # the first row of each repeated pair (dup is in file order)

    def varies(values: np.ndarray) -> np.ndarray:
        return np.flatnonzero(np.bincount(pair, weights=values[dup] != values[head][pair],
                                          minlength=uniq.size) > 0)

    def described(which: np.ndarray, limit: int = EXAMPLES) -> list[tuple[int, int, str]]:
        """(repeated pair, its first row, "a vs b at rows ...") of the first ``limit`` of ``which`` in file order."""
        order = which[np.argsort(rows[head[which]], kind="stable")][:limit]
        return [(j, int(rows[head[j]]), f"{names[lo[head[j]]]} vs {names[hi[head[j]]]} at "
                 f"{where.rows(rows[dup[pair == j]])}") for j in order]

    if genuine is not None and (bad := varies(np.asarray(genuine))).size:
        raise InputError(
            f"{where.what}: the same comparison is listed more than once with different labels (genuine and "
            f"impostor): {'; '.join(t for *_, t in described(bad))}. A comparison has one label: fix the labels.")
    for side, g in enumerate(groups or ()):
        own = np.where(a <= b, g, groups[1 - side])  # type: ignore[index]  # the group of lo (side 0), of hi (1)
        if (bad := varies(own)).size:
            raise InputError(
                f"{where.what}: the same comparison is listed more than once with different attribute values: "
                f"{'; '.join(t for *_, t in described(bad))}. A sample has one value of each attribute: fix them.")
    s = np.asarray(score, dtype=np.float64)[dup]
    differ = pd.Series(s).groupby(pair).nunique(dropna=False).to_numpy() > 1
    examples = tuple((r, text + (", different scores" if differ[j] else ""))
                     for j, r, text in described(np.arange(uniq.size)))
    repeats = Repeats(int(uniq.size), int(dup.size), int(differ.sum()), examples)
    if policy == "refuse":
        raise InputError(duplicates_message(repeats, where, policy), param="duplicates")
    if policy == "keep-both":
        return replace(everything, repeats=repeats)
    kept = np.ones(m, dtype=bool)
    kept[dup] = False
    kept[head] = True
    keep = np.flatnonzero(kept)
    new_score = np.array(score, dtype=np.float64, copy=True)
    new_failed = None if failed is None else np.array(failed, dtype=bool, copy=True)
    if policy == "mean":
        new_score[head] = np.bincount(pair, weights=s, minlength=uniq.size) / count
        if new_failed is not None:
            new_failed[head] = np.bincount(pair, weights=new_failed[dup], minlength=uniq.size) > 0
    return Resolved(keep, new_score[keep], None if new_failed is None else new_failed[keep], repeats)


def check_unique_ids(ids: np.ndarray, where: Where, what: str = "sample id") -> None:
    """Duplicate ids are an InputError naming them and their rows."""
    dup = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        raise InputError(
            f"{where.what}: duplicate {what}s {listing(sorted(set(ids[rows].tolist())))} at {where.rows(rows)}. "
            f"Each {what} must appear once."
        )


def single_sample_warnings(identity_names: np.ndarray, sizes: np.ndarray) -> list[str]:
    """Identities with one sample contribute no genuine comparisons: a warning, not an error."""
    lone = identity_names[sizes == 1]
    if lone.size == 0:
        return []
    return [
        f"{lone.size} of {identity_names.size} identities have a single sample ({listing(lone.tolist())}); "
        "they take part in impostor comparisons only."
    ]


def emit(messages: list[str]) -> tuple[str, ...]:
    """Warn (UserWarning, pointing at the user's call) and return the messages for ``MatchData.warnings``."""
    for msg in messages:
        warnings.warn(msg, UserWarning, stacklevel=4)  # the caller of from_*/load_*
    return tuple(messages)


def pick_key(columns: Sequence[object], key: str | None, candidates: Sequence[str], where: Where, what: str) -> str:
    """The key column of a metadata table: ``key`` if given, else the first of ``candidates`` present."""
    if key is not None:
        return key
    found = next((k for k in candidates if k in columns), None)
    if found is None:
        raise InputError(
            f"{where.what}: cannot tell which column is the {what} (none of {', '.join(candidates)}); set "
            f"metadata_key. Columns present: {listing(list(columns), 30)}."
        )
    return found
