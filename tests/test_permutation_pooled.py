"""The pooled two-proportion variance (default for rate differences)."""

from __future__ import annotations

import numpy as np
import pytest

from matchaudit.data.classifier_table import classifier_data
from matchaudit.estimators.classifier import group_statistics


def test_pooled_variance_is_the_two_proportion_null_variance():
    rng = np.random.default_rng(3)
    g = np.repeat(["A", "B"], [120, 80])
    y = (rng.random(200) < 0.5).astype(int)
    pred = np.where(rng.random(200) < 0.85, y, 1 - y)
    data = classifier_data(y, g, y_pred=pred)
    st = group_statistics(data, "fnr", n_resamples=99, seed=0)
    pos = y == 1
    k = [((pred == 0) & pos & (g == x)).sum() for x in "AB"]
    d = [(pos & (g == x)).sum() for x in "AB"]
    p = sum(k) / sum(d)
    assert st.t == pytest.approx(k[0] / d[0] - k[1] / d[1], abs=1e-15)
    assert st.v == pytest.approx(p * (1 - p) * (1 / d[0] + 1 / d[1]), rel=1e-12)
    unpooled = group_statistics(data, "fnr", variance="closed-form", n_resamples=99, seed=0)
    assert unpooled.v == pytest.approx(sum(ki / di * (1 - ki / di) / di for ki, di in zip(k, d)), rel=1e-12)
    # a group with no errors: the per-group variance collapses, the pooled one does not
    pred2 = np.where(pos & (g == "B"), 1, pred)
    z = classifier_data(y, g, y_pred=pred2)
    assert group_statistics(z, "fnr", n_resamples=9, seed=0).v > group_statistics(
        z, "fnr", variance="closed-form", n_resamples=9, seed=0).v
