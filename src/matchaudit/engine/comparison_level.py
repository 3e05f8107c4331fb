"""Counts for comparison-level schemes (two-level, iid): every comparison's key and identities are held,
and per-comparison weights are drawn in chunks (they do not factor over weight rows)."""

from __future__ import annotations

import numpy as np

from matchaudit.engine import kernels as K
from matchaudit.blocks import DenseBlock
from matchaudit.engine.entries import Entries
from matchaudit.engine.targets import Items, needed_cells, target_crossings
from matchaudit.resampling import ComparisonLists


def comparison_level_counts(data, scheme, reps, layout, grid, targets, cats, block_rows):
    """Counts (R, categories, cells) of a comparison-level scheme; with FMR targets also the entries of the cells
    that can hold a replicate's threshold and the targets' crossing cells (:func:`target_crossings`), else None."""
    ent = Entries(data, grid, K.SAMPLE if data.protocol == "all-pairs" else K.PRODUCT, False, cats)
    ref = cats.reference
    none = np.zeros(0, np.bool_)
    parts = []
    for block in data.blocks(block_rows):
        if isinstance(block, DenseBlock):
            for n, keys, us, vs, _ in ent.pieces(block, none):
                parts.append((keys[:n].copy(), layout.sample_identity[us[:n]], layout.sample_identity[vs[:n]]))
        else:
            for n, keys, us, vs, _ in ent.pieces(block, none):
                parts.append((keys[:n].copy(),))
    key = np.concatenate([p[0] for p in parts]).astype(np.int64)
    if data.protocol == "all-pairs":
        ka = np.concatenate([p[1] for p in parts])
        kb = np.concatenate([p[2] for p in parts])
    else:
        p = data.table(f"comparison-level resampling ({scheme.name})")
        ka, kb = p.identity_a.astype(np.int64), p.identity_b.astype(np.int64)
    C = grid.n_cells
    G = data.n_groups
    genuine = (key // C) < G
    lists = comparison_lists(ka, kb, genuine, data.n_identities)
    R = reps.size + 1
    n_kc = ent.n_kc
    table = np.zeros((ent.n_keys, R), np.int64)
    table[:, 0] = np.bincount(key, minlength=ent.n_keys)
    chunk = max(1, (1 << 26) // max(lists.m, 1))
    for r0 in range(0, reps.size, chunk):
        w = scheme.comparison_weights(reps[r0:r0 + chunk], layout, lists)
        K.accumulate_draws(key, w, table, 1 + r0)
    table = table.T.reshape(R, n_kc, C)
    items = cross = None
    if targets.size:
        cross = target_crossings(table, G, targets, ref)
        want = needed_cells(cross, C)
        idx = np.flatnonzero(want[key % C])
        wt = np.ones((idx.size + 1, R), np.int32)  # row i: item i's weights; last row: one
        for r0 in range(0, reps.size, chunk):
            w = scheme.comparison_weights(reps[r0:r0 + chunk], layout, lists)
            wt[:-1, 1 + r0:1 + r0 + w.shape[0]] = w[:, idx].T
        sc = _scores_of(data, idx, ent, block_rows)
        items = Items(key[idx] % C, key[idx] // C, sc, np.arange(idx.size, dtype=np.int64),
                       np.full(idx.size, idx.size, np.int64), wt)
    return table, items, cross


def _scores_of(data, idx, ent, block_rows):
    """Scores of comparisons by their position in block order (refinement of comparison-level schemes)."""
    if data.protocol == "listed":
        return data.table("comparison-level resampling").score[idx].astype(np.float64)
    want = np.ones(ent.grid.n_cells, np.bool_)
    out = []
    for block in data.blocks(block_rows):
        for n, _, _, _, sc in ent.pieces(block, want):
            out.append(sc[:n].copy())
    return np.concatenate(out)[idx]


def comparison_lists(ka, kb, genuine, n_ids) -> ComparisonLists:
    m = ka.size
    cid = np.arange(m, dtype=np.int64)
    g = np.flatnonzero(genuine)
    go = np.argsort(ka[g], kind="stable")
    goff = np.concatenate([[0], np.cumsum(np.bincount(ka[g], minlength=n_ids))])
    imp = np.flatnonzero(~genuine)
    side = np.concatenate([ka[imp], kb[imp]])
    ids = np.concatenate([cid[imp], cid[imp]])
    io = np.argsort(side, kind="stable")
    ioff = np.concatenate([[0], np.cumsum(np.bincount(side, minlength=n_ids))])
    return ComparisonLists(m=m, genuine=genuine, genuine_ids=g[go], genuine_off=goff.astype(np.int64),
                           impostor_ids=ids[io], impostor_off=ioff.astype(np.int64))
