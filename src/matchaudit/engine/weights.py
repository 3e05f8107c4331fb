"""The weight matrix of a counting pass: one row per weight unit (sample, identity, identity x group) and
one lane per replicate (lane 0 the plug-in), made from a scheme's counter-based weights; its layout
follows the entry mode (:mod:`matchaudit.engine.kernels`)."""

from __future__ import annotations

import numpy as np

from matchaudit.engine import kernels as K
from matchaudit.model import MatchData
from matchaudit.resampling import Layout, Scheme, Vertex


def mode_of(scheme: Scheme | None) -> int:
    if scheme is None:
        return K.PRODUCT
    if scheme.level == "sample":
        return K.SAMPLE
    if scheme.level == "comparison":
        return -1
    return {"product": K.PRODUCT, "sum": K.SUM, "relabel": K.RELABEL}[scheme.form]


def weight_matrix(scheme: Scheme | None, mode: int, reps: np.ndarray, layout: Layout, n_units: int, n_groups: int
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows x lanes int32 weight matrix (lane 0 = plug-in) and vertex imputed draw pairs."""
    R = reps.size + 1
    imputed = None
    if mode == K.SAMPLE:
        c = np.ones((R, n_units), np.int32)
        c[1:] = scheme.sample_weights(reps, layout)
        cols = [c, c * (c - 1) // 2, np.ones((R, 1), np.int32)]
        cols[1][0] = 0
    elif mode == K.RELABEL:
        grp = np.empty((R, n_units), np.int64)
        grp[0] = layout.identity_group
        grp[1:] = scheme.identity_groups(reps, layout)
        onehot = (grp[:, :, None] == np.arange(n_groups)).reshape(R, -1).astype(np.int32)
        cols = [onehot, np.ones((R, 1), np.int32)]
    else:
        gw = np.ones((R, n_units), np.int32)
        iw = np.ones((R, n_units), np.int32)
        if scheme is not None:
            gw[1:], iw[1:] = scheme.identity_weights(reps, layout)
        if isinstance(scheme, Vertex):
            imputed = np.concatenate([[0], (iw[1:].astype(np.int64) * (iw[1:] - 1) // 2).sum(axis=1)])
        if mode == K.PRODUCT:
            cols = [gw, iw, np.ones((R, 1), np.int32)]
        else:
            iwb = iw.copy()
            iwb[0] = 0
            cols = [gw, iw, iwb, np.ones((R, 1), np.int32)]
    return np.concatenate(cols, axis=1).T.copy(), imputed


def batched(wt: np.ndarray, lanes: int) -> np.ndarray:
    rows, R = wt.shape
    nb_ = -(-R // lanes)
    out = np.zeros((nb_, rows, lanes), np.float32)  # small integers, exact in float32
    for t in range(nb_):
        part = wt[:, t * lanes:(t + 1) * lanes]
        out[t, :, :part.shape[1]] = part
    return out


def layout_of(data: MatchData) -> Layout:
    return Layout(identity_group=data.identity_group.astype(np.int64),
                  sample_identity=None if data.samples is None else data.samples.identity.astype(np.int64))
