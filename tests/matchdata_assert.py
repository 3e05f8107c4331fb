"""Shared test assertion: two MatchData objects hold identical arrays and metadata."""

from __future__ import annotations

import numpy as np

from matchaudit.model import MatchData


def assert_same_matchdata(x: MatchData, y: MatchData) -> None:
    for name in ("identity_names", "identity_group"):
        assert np.array_equal(getattr(x, name), getattr(y, name)), name
    assert (x.group_names, x.group_by, x.protocol, x.score_kind, x.metric) == (
        y.group_names, y.group_by, y.protocol, y.score_kind, y.metric)
    for part in ("samples", "pairs"):
        a, b = getattr(x, part), getattr(y, part)
        assert (a is None) == (b is None), part
        if a is not None:
            for f in a.__dataclass_fields__:
                u, w = getattr(a, f), getattr(b, f)
                assert (u is None and w is None) or np.array_equal(u, w), f"{part}.{f}"
