"""Where the exact tally's time goes per comparison: why the 50,000 x 512 audit is not within 1.5x of one GEMM.

On the first tiles of ``bench/audit_50k.py``'s data (the audit's own tiles, edges and bucket table), the same
iteration over the impostor comparisons of each tile (rows split over the threads, pairs j <= i and same-identity
pairs skipped) is timed doing more and more of the tally's work:

1. ``read``: add up the scores (the floor of any pass that reads the GEMM's output);
2. ``bucket``: the bucket of each score (:func:`matchaudit.cells.bucket`), no memory read;
3. ``lookup``: the cell of each score (:func:`matchaudit.cells.cell`: the bucket table, then the edges);
4. ``tally``: the tally kernel itself (:func:`matchaudit.metrics.tally._bin_dense`: the lookup, then the counts,
   identity-balanced weights and ties of the comparison's category and cell).

Prints CPU nanoseconds per comparison (wall x threads / comparisons) and what each step would cost over the whole
triangle, beside the cells the impostors fall into (how concentrated the table updates are).

Usage: .venv/bin/python bench/tally_kernel.py [n_tiles]   (data made by bench/audit_50k.py's ``dataset``)
"""

from __future__ import annotations

import os
import sys
import time

import numba as nb
import numpy as np
from audit_50k import dataset

from matchaudit import cells as L
from matchaudit.data import load_samples
from matchaudit.metrics import tally as T
from matchaudit.scores import iter_similarity_blocks


@nb.njit(parallel=True)
def _walk(scores, row0, col0, ident, padded, acc, lo, scale, what, out):
    """Visit the tile's impostor comparisons as ``_bin_dense`` does; ``what``: 0 read, 1 bucket, 2 cell."""
    r, c = scores.shape
    nt = out.shape[0]
    chunk = (r + nt - 1) // nt
    for t in nb.prange(nt):
        total = 0.0
        for a in range(t * chunk, min(r, (t + 1) * chunk)):
            i = row0 + a
            ki = ident[i]
            for b in range(max(0, i + 1 - col0), c):
                if ident[col0 + b] == ki:
                    continue
                s = scores[a, b]
                if what == 0:
                    total += s
                elif what == 1:
                    total += L.bucket(s, acc, lo, scale)
                else:
                    total += L.cell(s, padded, acc, lo, scale, True)
        out[t] += total


def main() -> None:
    n_tiles = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    root = dataset()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    data = load_samples(root / "data/samples.parquet", root / "data/embeddings.npy", group_by=["group"])
    edges = np.unique(T.genuine_scores(data).score)
    _, padded, acc, lo, scale, _ = L.table(edges)
    threads = nb.get_num_threads()
    cats = T.tally_categories(np.ones((data.n_groups,) * 2, bool), edges.size, threads)
    ident = data.samples.identity
    blocks = []
    for blk in iter_similarity_blocks(data.samples.embeddings, data.metric):
        blocks.append(blk)
        if len(blocks) == n_tiles:
            break
    n = ident.size
    impostor = [(np.arange(b.scores.shape[1])[None, :] + b.col0 > np.arange(b.scores.shape[0])[:, None] + b.row0)
                & (ident[b.row0:b.row0 + b.scores.shape[0], None] != ident[None, b.col0:b.col0 + b.scores.shape[1]])
                for b in blocks]
    compared = sum(int(m.sum()) for m in impostor)
    sample = np.concatenate([b.scores[m][:: 16] for b, m in zip(blocks, impostor)])
    share = np.sort(np.bincount(L.cell_of(edges, sample)))[::-1].cumsum() / sample.size
    print(f"{n_tiles} tiles, {compared:.3e} impostor comparisons, {edges.size} edges, {acc.size - 1} buckets; cells "
          f"holding 50 / 90 / 99% of them: {', '.join(str(int(np.searchsorted(share, q)) + 1) for q in (.5, .9, .99))}")
    size = data.identity_sizes.astype(np.float64)

    def tally() -> None:
        shape = (threads, cats.n, edges.size)  # counts and weight sums per cell (J + 1), ties per edge (J)
        counts, ties = np.zeros(shape[:2] + (edges.size + 1,), np.int64), np.zeros(shape, np.int64)
        wcounts, wties = np.zeros(shape[:2] + (edges.size + 1,)), np.zeros(shape)
        none_s, none_i = np.empty((threads, 0)), np.empty((threads, 0), np.int64)  # no cells collected
        for b in blocks:
            T._bin_dense(b.scores, b.row0, b.col0, ident, data.identity_group, size, cats.slot, padded, acc, lo, scale,
                         counts, ties, wcounts, wties, np.zeros(0, np.bool_), none_s, none_i, none_i,
                         np.zeros(threads, np.int64))

    def walk(what: int) -> None:
        out = np.zeros(threads)
        for b in blocks:
            _walk(b.scores, b.row0, b.col0, ident, padded, acc, lo, scale, what, out)

    steps = {"read": lambda: walk(0), "bucket": lambda: walk(1), "lookup": lambda: walk(2), "tally": tally}
    everything = n * (n - 1) / 2
    for name, step in steps.items():
        step()  # compile / load
        best = min(_timed(step) for _ in range(3))
        ns = best * threads / compared * 1e9
        print(f"  {name:7s} {ns:6.2f} ns CPU per comparison   whole triangle: {everything * ns / threads / 1e9:5.1f} s")


def _timed(step) -> float:
    t = time.perf_counter()
    step()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
