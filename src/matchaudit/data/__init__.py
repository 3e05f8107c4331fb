"""Loaders and all input validation: user files or arrays -> :class:`matchaudit.model.MatchData`.

Two input kinds, each with a file loader and an in-memory builder (the loaders call the builders, so every
check lives once): samples + embeddings (:func:`load_samples`, :func:`from_embeddings`) and comparison
tables (:func:`load_comparisons`, :func:`from_scores`). Bad input raises
:class:`matchaudit.errors.InputError`; user files and passed-in objects are never modified.
"""

from matchaudit.data.comparisons import from_scores, load_comparisons
from matchaudit.data.samples import from_embeddings, load_samples

__all__ = ["from_embeddings", "from_scores", "load_comparisons", "load_samples"]
