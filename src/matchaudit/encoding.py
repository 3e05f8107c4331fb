"""The one JSON encoding of every file matchaudit writes (results.json, test.json, compare.json, estimate.json,
protocol.json): plain JSON values, with non-finite floats as the strings ``"inf"``, ``"-inf"`` and ``"nan"``
(JSON has no infinity; the results schema documents the strings). ``float(value)`` reads them back."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def jsonable(x: Any) -> Any:
    """Nested dicts/lists/tuples/arrays as plain JSON values: NumPy scalars unwrapped, keys as strings,
    non-finite floats as ``"inf"``, ``"-inf"``, ``"nan"``."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    return x
