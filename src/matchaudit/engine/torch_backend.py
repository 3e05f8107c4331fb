"""PyTorch backend (``--backend gpu``): scores, entries and weighted counts on a torch device.

Same counts as :class:`~matchaudit.engine.passes.LocalBackend`, bit for bit (tests/test_torch_backend.py):

* Scores: the quantised embeddings (:func:`matchaudit.scores.quantise`, integers in float64) go to the
  device once; a tile's dot products are one fp64 matmul and the score is the same correctly rounded IEEE
  division / square root as :func:`scores._finish_tile`. Exact where the device's GEMM is (integer sums below
  2^53 in any order); a device library may not be (cuBLAS on an H200 gave 1 ulp off in 9.7% of the scores), so
  every score that could decide something is recomputed on the host by the CPU's formula
  (:func:`matchaudit.scores.pair_scores_exact`): those within ``RECHECK_ULPS`` of a cell edge (thresholds are
  edges) and those of the cells whose entries are kept with their scores (the FMR targets' windows). Elsewhere
  a device score within ``RECHECK_ULPS`` of the exact one has the exact one's cell, so the counts are the CPU's;
  the bound is checked on the first row of every tile (an error names the backend to use instead).
* Cells: ``torch.bucketize`` on the grid's float64 edges with ``right`` as :func:`matchaudit.cells.side` says
  (``right=True`` counts edges <= s: rule ``>=``), the definition of :func:`matchaudit.cells.cell_of`.
* Entries: (key, u, v) per comparison exactly as :func:`matchaudit.engine.kernels.emit` (every mode:
  SAMPLE, PRODUCT, SUM, RELABEL; the bootstrap's self-pairs). ``task.collapse`` is ignored: it only saves
  CPU work and the counts are identical.
* Counts: integer arithmetic only. ``method="scatter"`` (default): products ``W[u, r] * W[v, r]`` in int32
  and ``index_add_`` per key into an int32 partial table (exact while a chunk's sum stays below 2^31),
  flushed into the int64 table. ``method="onehot"``: entries sorted by key, cut into segments of ``SEG``
  entries, each segment's per-key sums by a batched matrix product of a ``SPAN x SEG`` 0/1 matrix with the
  segment's products (the tensor-core form; exact while SEG x the largest product < 2^24 in the fp32
  accumulator, and, when ``torch.set_float32_matmul_precision`` allows TF32/bf16 inputs, while every
  product is at most 256; segments spanning more than ``SPAN`` keys go to the scatter). ``method="fused"``: the
  scatter's gather, product and add as one kernel (:func:`_fused_add`, ``torch.compile``: Triton on a GPU, C++ on
  a CPU), so the products stay in registers instead of the ~12 bytes per comparison-replicate the eager scatter
  writes and reads back; the same int32 partial table and flushes, so the same exact integers. docs/gpu.md compares
  the methods (FLOPs and bytes per comparison-replicate against the device's limits).

Memory on the device (all-pairs): the embeddings (n x d float64), the weights ``rows x R`` int32 (rows =
2n+1 sample-level, 3K+1 identity-level, K*G+1 relabel), the counts table ``n_keys x R`` int64 plus one
int32 partial table of ``n_keys x lanes``, one tile of ``tile`` comparisons (scores, cells and ~6 int64
per entry: ~80 bytes per comparison, x G^2 entries for RELABEL) and one product chunk (two buffers of
``budget`` int32: the gathered weight rows; the product is taken in place).
Listed data: the same, with a chunk of ``tile`` table rows in place of the tile.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from matchaudit.cells import side
from matchaudit.engine import kernels as K
from matchaudit.engine.passes import Backend, CountTask
from matchaudit.progress import Meter, pass_meter
from matchaudit.errors import InputError
from matchaudit.model import MatchData
from matchaudit.scores import pair_scores_exact, quantise

SEG = 128  # entries per segment of the one-hot matrix product
SPAN = 8  # keys per segment handled by the matrix product (more: the segment's extra keys are scattered)
EXACT32 = 1 << 24  # fp32 accumulators hold every integer below this
INT32 = (1 << 31) - 1
METHODS = ("scatter", "onehot", "fused")
RECHECK_ULPS = 64  # device scores this close to a cell edge (in units of the last place) are recomputed exactly


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise InputError("the gpu backend needs PyTorch: pip install 'matchaudit[gpu]'") from e
    return torch


def tile_scores(q, sq, r0: int, r1: int, c0: int, c1: int, cosine: bool, scale: float):
    """Scores of rows ``r0:r1`` against columns ``c0:c1`` from quantised embeddings ``q`` (float64 tensor)
    and their exact squared norms ``sq``: the operations of :func:`matchaudit.scores._finish_tile`, each
    correctly rounded, hence the same bits on any device."""
    torch = _torch()
    dots = q[r0:r1] @ q[c0:c1].T
    if cosine:
        return dots / _sqrt(sq[r0:r1, None] * sq[None, c0:c1])
    return -_sqrt(torch.clamp(sq[r0:r1, None] + sq[None, c0:c1] - 2.0 * dots, min=0.0)) / scale


@cache
def _fused_add(torch):
    """``part[key[e]] += W[u[e]] * W[v[e]]`` for every entry ``e`` (int32, in place), compiled once per process into
    one kernel: gather, product and atomic add per (entry, lane), nothing written in between."""

    def add(part, key, W, u, v) -> None:
        part.index_add_(0, key, W[u] * W[v])

    return torch.compile(add, dynamic=True)


def _sqrt(x):
    """Correctly rounded square root. CUDA's fp64 ``sqrt`` is (IEEE, 0 ulp); torch's vectorised CPU kernel
    is not (off by one ulp on some inputs, see the tests), so CPU tensors use NumPy's (``sqrtpd``)."""
    if x.device.type == "cpu":
        return _torch().from_numpy(np.sqrt(x.numpy()))
    return _torch().sqrt(x)


class TorchBackend(Backend):
    """Counting passes on a PyTorch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``, ...).

    ``method``: ``"scatter"``, ``"onehot"`` or ``"fused"`` (see the module doc); ``tile``: comparisons per score tile
    (default 2^24 on a GPU, 2^20 on a CPU); ``budget``: elements per product chunk, entries x replicate
    lanes (default 2^28 on a GPU, 2^24 on a CPU); ``lanes``: replicates per batch (default 1024)."""

    name = "gpu"

    def __init__(self, device: str = "cuda", method: str = "scatter", tile: int | None = None,
                 budget: int | None = None, lanes: int | None = None):
        torch = _torch()
        if method not in METHODS:
            raise InputError(f"method {method!r}: expected one of {', '.join(map(repr, METHODS))}", param="method")
        dev = torch.device(device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise InputError("the gpu backend was asked for CUDA but torch sees no CUDA device: use the cpu backend "
                             "(the same numbers), or run on a machine with a CUDA GPU and a CUDA build of PyTorch.")
        gpu = dev.type != "cpu"  # defaults: ~2 GB of tile work and 1 GiB of products on a GPU, 1/16 on a CPU
        self.tile = tile or (1 << 24 if gpu else 1 << 20)
        self.budget = budget or (1 << 28 if gpu else 1 << 24)
        self.device, self.method, self.lanes = dev, method, lanes

    # ------------------------------------------------------------------ Backend hooks
    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        if wt is None:
            wt, _ = task.weights(data)
        pas = _Pass(self, data, task, task.win, wt)
        total = data.n_comparisons() * wt.shape[1]
        with pass_meter(progress, "resampling (torch)", total) as bar:
            pas.run(lambda: bar.advance(total / max(pas.n_steps, 1)))
        R = wt.shape[1]
        lanes = min(task.lanes, -(-R // 16) * 16)  # the layout LocalBackend returns
        nb_ = -(-R // lanes)
        out = np.zeros((pas.ent.n_keys, nb_ * lanes), np.int64)
        out[:, :R] = pas.table.cpu().numpy()
        return out.reshape(pas.ent.n_keys, nb_, lanes), pas.found

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        pas = _Pass(self, data, task, want, None)
        pas.run(None)
        return pas.found


class _Pass:
    """One pass over the comparisons: counts (when given weights) and the entries of the ``win`` cells."""

    def __init__(self, be: TorchBackend, data: MatchData, task: CountTask, win: np.ndarray, wt: np.ndarray | None):
        torch = self.torch = _torch()
        self.be, self.data, self.dev = be, data, be.device
        ent = self.ent = task.entries(data)
        self.C, self.G = task.grid.n_cells, ent.G
        self.edges = torch.as_tensor(task.grid.edges, dtype=torch.float64, device=self.dev)
        self.right = side(ent.grid.rule) == "right"
        self.win = torch.as_tensor(win, device=self.dev) if win.size else None
        self.cat = torch.as_tensor(task.cats.slot, device=self.dev)
        self.igroup = torch.as_tensor(ent.igroup, device=self.dev)
        self.found: list = []
        self.table = None
        if wt is not None:
            self._weights(wt)
        if data.protocol == "all-pairs":
            n = data.samples.ids.shape[0]
            self.rows = max(1, min(n, self.be.tile // max(n, 1)))
            self.n_steps = -(-n // self.rows)
        else:
            self.n_steps = -(-len(data.table("the gpu backend")) // self.be.tile)

    def _weights(self, wt: np.ndarray) -> None:
        torch = self.torch
        w = int(np.abs(wt).max()) if wt.size else 0
        self.w2 = max(1, w * w)
        if self.w2 > INT32:
            raise InputError(f"weights up to {w} are too large for exact int32 products")
        R = wt.shape[1]
        L = min(R, self.be.lanes or 1024)
        self.batches = [(b, min(R, b + L)) for b in range(0, R, L)]
        W = torch.as_tensor(wt, device=self.dev)
        self.W = [W[:, b0:b1].contiguous() for b0, b1 in self.batches]
        self.Wf = [x.float() for x in self.W] if self.be.method == "onehot" else None
        size = 4 * max(self.be.budget, SEG * L)  # bytes, viewed as int32 or float32
        self.buf = [torch.empty(size, dtype=torch.uint8, device=self.dev) for _ in range(2)]
        self.table = torch.zeros((self.ent.n_keys, R), dtype=torch.int64, device=self.dev)
        self.part = torch.zeros((self.ent.n_keys + SPAN, L), dtype=torch.int32, device=self.dev)

    # ------------------------------------------------------------------ comparisons -> entries
    def run(self, advance) -> None:
        if self.data.protocol == "all-pairs":
            self._all_pairs(advance)
        else:
            self._listed(advance)

    def _all_pairs(self, advance) -> None:
        torch, ent, data = self.torch, self.ent, self.data
        qh, scale = quantise(data.samples.embeddings, data.metric)
        self.host = (qh, np.einsum("ij,ij->i", qh, qh), data.metric == "cosine", scale)
        q = torch.as_tensor(qh, device=self.dev)
        sq = self.sq = torch.as_tensor(self.host[1], device=self.dev)  # exact integers
        ident = torch.as_tensor(ent.ident, device=self.dev)
        cosine = data.metric == "cosine"
        n = q.shape[0]
        if ent.self_pairs:  # sample i against itself: key (group, self cell), rows (n + i, 2n)
            i = torch.arange(n, device=self.dev)
            s = torch.full((n,), ent.self_s, dtype=torch.float64, device=self.dev)
            key = self.igroup[ident] * self.C + self._cell(s)
            self._consume(key, ent.n_units + i, torch.full_like(i, 2 * ent.n_units), s)
        cols = max(1, self.be.tile // self.rows)
        for r0 in range(0, n, self.rows):
            r1 = min(n, r0 + self.rows)
            for c0 in range(r0, n, cols):
                c1 = min(n, c0 + cols)
                s = tile_scores(q, sq, r0, r1, c0, c1, cosine, scale)
                i = torch.arange(r0, r1, device=self.dev)[:, None]
                j = torch.arange(c0, c1, device=self.dev)[None, :]
                ii, jj = torch.nonzero(j > i, as_tuple=True)  # each unordered pair once
                a, b = ii + r0, jj + c0
                ka, kb = ident[a], ident[b]
                self._emit(self._exact_where_it_counts(s[ii, jj], a, b), ka == kb, a, b, ka, kb, self.igroup[ka],
                           self.igroup[kb])
            if advance is not None:
                advance()

    def _listed(self, advance) -> None:
        torch, p = self.torch, self.data.table("the gpu backend")

        def t(x, dtype=torch.int64):
            return torch.as_tensor(np.ascontiguousarray(x), dtype=dtype, device=self.dev)

        for lo in range(0, len(p), self.be.tile):
            sl = slice(lo, lo + self.be.tile)
            self._emit(t(p.score[sl], torch.float64), t(p.genuine[sl], torch.bool), t(p.sample_a[sl]),
                       t(p.sample_b[sl]), t(np.maximum(p.identity_a[sl], 0)), t(np.maximum(p.identity_b[sl], 0)),
                       t(p.group_a[sl]), t(p.group_b[sl]))
            if advance is not None:
                advance()

    def _cell(self, s):
        return self.torch.bucketize(s, self.edges, right=self.right)

    def _exact_where_it_counts(self, s, a, b):
        """The device scores ``s`` of samples ``a``, ``b`` with the host's exact score wherever the device's
        rounding could change a count or a kept score (module doc): near a cell edge, or in a kept cell. Raises
        if the device is further from the exact scores than a quarter of the band on the tile's first row."""
        torch = self.torch
        q, sq, cosine, scale = self.host
        # the band: RECHECK_ULPS units of the dot product's terms (|x.y| <= |x||y|), through the score formula
        err = RECHECK_ULPS * np.finfo(np.float64).eps
        delta = (torch.full_like(s, err) if cosine else torch.sqrt(err * (self.sq[a] + self.sq[b])) / scale)
        first = torch.nonzero(a == a[0], as_tuple=True)[0] if a.numel() else a
        exact = pair_scores_exact(q, sq, a[first].cpu().numpy(), b[first].cpu().numpy(), cosine, scale)
        if (np.abs(s[first].cpu().numpy() - exact) > delta[first].cpu().numpy() / 4).any():
            raise InputError(f"the {self.dev} device's scores are further from the exact ones than its error bound "
                             f"(RECHECK_ULPS = {RECHECK_ULPS}); use --backend cpu (the same numbers).", param="backend")
        near = self._cell(s - delta) != self._cell(s + delta)
        if self.win is not None:
            near |= self.win[self._cell(s)]
        redo = torch.nonzero(near, as_tuple=True)[0]
        if redo.numel():
            s = s.clone()
            s[redo] = torch.as_tensor(pair_scores_exact(q, sq, a[redo].cpu().numpy(), b[redo].cpu().numpy(), cosine,
                                                        scale), device=self.dev)
        return s

    def _emit(self, s, gen, sa, sb, ka, kb, ga, gb) -> None:
        """Entries of comparisons given as flat tensors, as :func:`kernels.emit` writes them."""
        torch, C, G, nu, mode = self.torch, self.C, self.G, self.ent.n_units, self.ent.mode
        c = self._cell(s)
        if mode == K.RELABEL:
            g = torch.arange(G, device=self.dev)
            one = nu * G
            ig = torch.nonzero(gen, as_tuple=True)[0]  # genuine: one entry per group g
            key = (g[None, :] * C + c[ig, None]).reshape(-1)
            u = (ka[ig, None] * G + g[None, :]).reshape(-1)
            self._consume(key, u, torch.full_like(u, one), s[ig].repeat_interleave(G))
            ii = torch.nonzero(~gen, as_tuple=True)[0]  # impostor: one per ordered group pair (g, h)
            gg, hh = g.repeat_interleave(G), g.repeat(G)
            key = ((G + self.cat[gg, hh])[None, :] * C + c[ii, None]).reshape(-1)
            u = (ka[ii, None] * G + gg[None, :]).reshape(-1)
            v = (kb[ii, None] * G + hh[None, :]).reshape(-1)
            self._consume(key, u, v, s[ii].repeat_interleave(G * G))
            return
        key = torch.where(gen, ga, G + self.cat[ga, gb]) * C + c
        if mode == K.SAMPLE:
            self._consume(key, sa, sb, s)
        elif mode == K.PRODUCT:
            self._consume(key, torch.where(gen, ka, nu + ka), torch.where(gen, 2 * nu, nu + kb), s)
        else:  # SUM: genuine (k, one); impostor (K + k, one) and (2K + l, one)
            one = torch.full_like(ka, 3 * nu)
            self._consume(key, torch.where(gen, ka, nu + ka), one, s)
            ii = torch.nonzero(~gen, as_tuple=True)[0]
            self._consume(key[ii], 2 * nu + kb[ii], one[ii], s[ii])

    # ------------------------------------------------------------------ entries -> counts and items
    def _consume(self, key, u, v, s) -> None:
        if key.numel() == 0:
            return
        if self.win is not None:
            m = self.win[key % self.C]
            if bool(m.any()):
                self.found.append(tuple(x[m].cpu().numpy().astype(dt) for x, dt in
                                        ((key, np.int32), (u, np.int32), (v, np.int32), (s, np.float64))))
        if self.table is None:
            return
        if self.be.method == "onehot" or self.dev.type == "cpu":
            # sorted by key: the one-hot segments need it; on a CPU it makes index_add_ sweep the table
            # once (2x faster); on a GPU unsorted keys spread the atomic adds over the table
            key, order = self.torch.sort(key)
            u, v = u[order], v[order]
        if self.be.method == "onehot":
            self._onehot(key, u, v)
        elif self.be.method == "fused":
            self._fused(key, u, v)
        else:
            self._scatter(key, u, v)

    def _products(self, W, u, v, e0: int, e1: int):
        """W[u[e0:e1]] * W[v[e0:e1]] in the preallocated product buffers (fresh allocations of this size
        cost a page fault per 4 KiB on a CPU, more than the arithmetic)."""
        shape = (e1 - e0, W.shape[1])
        a, b = (x[:4 * shape[0] * shape[1]].view(W.dtype).view(shape) for x in self.buf)
        self.torch.index_select(W, 0, u[e0:e1], out=a)
        self.torch.index_select(W, 0, v[e0:e1], out=b)
        return a.mul_(b)

    def _scatter(self, key, u, v) -> None:
        L = self.part.shape[1]
        step = max(1, min(self.be.budget // L, INT32 // self.w2))
        for (b0, b1), W in zip(self.batches, self.W):
            part = self._open(b1 - b0)
            for e0 in range(0, key.numel(), step):
                e1 = min(key.numel(), e0 + step)
                part.index_add_(0, key[e0:e1], self._products(W, u, v, e0, e1))
                self._added(part, b0, e1 - e0, step)
            self._flush(part, b0)

    def _fused(self, key, u, v) -> None:
        """:meth:`_scatter` as one compiled kernel per chunk (no product buffers: chunks only bound the int32 sums)."""
        add = _fused_add(self.torch)
        step = max(1, INT32 // self.w2)
        for (b0, b1), W in zip(self.batches, self.W):
            part = self._open(b1 - b0)
            for e0 in range(0, key.numel(), step):
                e1 = min(key.numel(), e0 + step)
                add(part, key[e0:e1], W, u[e0:e1], v[e0:e1])
                self._added(part, b0, e1 - e0, step)
            self._flush(part, b0)

    def _open(self, lanes: int):
        """The int32 partial table for a batch of ``lanes`` replicates, zeroed."""
        self.n_part = 0
        part = self.part[:, :lanes]
        part.zero_()
        return part

    def _added(self, part, b0: int, entries: int, step: int) -> None:
        """Count ``entries`` just added (each adds at most ``w2`` to a cell); flush the partial table when
        the next ``step`` entries could take a sum past 2^31 - 1."""
        self.n_part += entries
        if (self.n_part + step) * self.w2 > INT32:
            self._flush(part, b0)
            part.zero_()
            self.n_part = 0

    def _flush(self, part, b0: int) -> None:
        self.table[:, b0:b0 + part.shape[1]] += part[:self.ent.n_keys]

    def _onehot(self, key, u, v) -> None:
        """Per-key sums as batched products of 0/1 segment matrices with the products (tensor-core form)."""
        torch = self.torch
        reduced = torch.get_float32_matmul_precision() != "highest"  # TF32 / bf16 inputs: 8 exact bits
        if SEG * self.w2 >= EXACT32 or (reduced and self.w2 > 256):
            self._scatter(key, u, v)  # a segment's sums (or its inputs) would not be exact
            return
        E = key.numel()
        S = -(-E // SEG)
        pad = S * SEG - E
        k0 = key[::SEG]  # first (lowest) key of each segment
        local = key - k0.repeat_interleave(SEG)[:E]
        inside = local < SPAN
        onehot = torch.zeros((S * SPAN * SEG,), dtype=torch.float32, device=self.dev)
        e = torch.arange(E, device=self.dev)
        seg, pos = e // SEG, e % SEG
        onehot[((seg * SPAN + local) * SEG + pos)[inside]] = 1.0
        onehot = onehot.view(S, SPAN, SEG)
        rows = (k0[:, None] + torch.arange(SPAN, device=self.dev)[None, :]).reshape(-1)
        out = torch.nonzero(~inside, as_tuple=True)[0]
        L = self.part.shape[1]
        step = max(SEG, min(self.be.budget // L, INT32 // self.w2) // SEG * SEG)
        for (b0, b1), W, Wf in zip(self.batches, self.W, self.Wf):
            part = self._open(b1 - b0)
            for e0 in range(0, E, step):  # whole segments per chunk
                e1 = min(E, e0 + step)
                x = self._products(Wf, u, v, e0, e1)
                if e1 == E and pad:
                    x = torch.cat([x, x.new_zeros((pad, x.shape[1]))])
                s0, s1 = e0 // SEG, -(-e1 // SEG)
                y = torch.bmm(onehot[s0:s1], x.view(s1 - s0, SEG, -1))  # (segments, SPAN, lanes), exact
                part.index_add_(0, rows[s0 * SPAN:s1 * SPAN], y.view(-1, y.shape[2]).to(torch.int32))
                self._added(part, b0, e1 - e0, step)
            self._flush(part, b0)
        if out.numel():
            self._scatter(key[out], u[out], v[out])


__all__ = ["TorchBackend", "tile_scores"]
