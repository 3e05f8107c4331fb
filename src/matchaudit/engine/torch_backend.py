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
* Tiles: the CPU's tiles (:func:`matchaudit.scores.tiles`) cut along the rows into sub-tiles of ``tile``
  comparisons, each scored once and fed to every run of the pass in turn (:meth:`TorchBackend.count_together`:
  an audit's pooled and balanced bootstraps) and to the identity pass at the audit's thresholds
  (:class:`~matchaudit.engine.identity.IdentityPass`: genuine levels per identity and accepted impostors on the
  device, its thresholds rechecked as edges; the hits by tile in the CPU pass's order).
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

Memory on the device (all-pairs): the embeddings (n x d float64); per run of the pass, the weights ``rows x R``
int32 (rows = 2n+1 sample-level, 3K+1 identity-level, K*G+1 relabel), the counts table ``n_keys x R`` int64 plus
one int32 partial table of ``n_keys x lanes``; per identity pass, ``K x (T+1)`` int64 (its impostor hits go to the
host); one tile of ``tile`` comparisons (scores, cells and ~6 int64
per entry: ~80 bytes per comparison, x G^2 entries for RELABEL) and one product chunk (two buffers of
``budget`` int32, shared by the runs: the gathered weight rows; the product is taken in place).
Listed data: the same, with a chunk of ``tile`` table rows in place of the tile.
"""

from __future__ import annotations

from functools import cache
from typing import Sequence

import numpy as np

from matchaudit.cells import side
from matchaudit.engine import kernels as K
from matchaudit.engine.identity import IdentityHits, IdentityPass
from matchaudit.engine.passes import Accumulator, Backend, CountTask
from matchaudit.progress import Meter, pass_meter
from matchaudit.errors import InputError
from matchaudit.model import MatchData
from matchaudit.scores import pair_scores_exact, quantise, tiles

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
    """Counting passes on a PyTorch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``, ...); several runs and the identity
    pass in one scoring pass (:meth:`count_together`).

    ``method``: ``"scatter"``, ``"onehot"`` or ``"fused"`` (see the module doc); ``tile``: comparisons per score tile (default
    2^24 on a GPU, 2^20 on a CPU; at least one row of a CPU tile, up to ``scores.TILE_COLS``); ``budget``: elements
    per product chunk, entries x replicate lanes (default 2^28 on a GPU, 2^24 on a CPU); ``lanes``: replicates per
    batch (default 1024)."""

    name = "gpu"
    fuses = True

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
        return self._counted(data, [(data, task, wt)], progress, ())[0]

    def count_together(self, data: MatchData, runs: Sequence[tuple[MatchData, CountTask]], progress: bool | Meter,
                       also: Sequence[Accumulator] = ()) -> list[tuple[np.ndarray, list]]:
        """Every run, and the identity passes ``also``, from one scoring of each tile on the device (:class:`_Tiles`:
        each run counts the tile in turn, :class:`_Identity` its identity counts)."""
        return self._counted(data, [(d, task, None) for d, task in runs], progress, also)

    def serves(self, acc: Accumulator) -> bool:
        """The identity pass (:class:`IdentityPass`) at thresholds that are numbers (a NaN threshold, which accepts
        nothing on the CPU, is left to it)."""
        return isinstance(acc, IdentityPass) and not np.isnan(acc.ts).any()

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        pas = _Pass(self, data, task, want, None, [])
        self._scan(data, [pas], (), False, 0)
        return pas.found

    def _counted(self, data: MatchData, runs: Sequence[tuple[MatchData, CountTask, np.ndarray | None]],
                 progress: bool | Meter, also: Sequence[IdentityPass]) -> list[tuple[np.ndarray, list]]:
        """The counts table and window items of every run (its weights ``wt``, or None: regenerated) from one pass,
        which also counts the identity passes ``also`` (merged into them)."""
        buf: list = []  # the product buffers, shared by the runs (they count a tile one after another)
        passes = [_Pass(self, d, task, task.win, task.weights(d)[0] if wt is None else wt, buf) for d, task, wt in runs]
        identities = [_Identity(self.device, acc) for acc in also]
        self._scan(data, passes, identities, progress, sum(p.table.shape[1] for p in passes))
        for ids in identities:
            ids.done()
        return [p.counts(task.lanes) for p, (_, task, _) in zip(passes, runs)]

    def _scan(self, data: MatchData, passes: list[_Pass], identities: Sequence[_Identity], progress: bool | Meter,
              lanes: int) -> None:
        """One pass over ``data``'s comparisons feeding every pass: all pairs tile by tile on the device, each tile
        scored once and fed to the passes and the identity passes (:class:`_Tiles`); a listed table, which carries
        its scores, read by each pass in chunks. Progress in comparisons x ``lanes``."""
        total = data.n_comparisons() * lanes
        with pass_meter(progress, "resampling (torch)", total) as bar:
            if data.protocol != "all-pairs":
                steps = sum(p.n_steps for p in passes)
                for p in passes:
                    p._listed(lambda: bar.advance(total / max(steps, 1)))
                return
            tiles = _Tiles(self, data, passes[0].block_rows)
            for p in passes:
                p.self_pairs()
            tiles.run([*passes, *identities], lambda: bar.advance(total / max(len(tiles.steps), 1)))


class _Tiles:
    """All pairs of ``data``'s embeddings on the device, in the CPU's tiles (:func:`matchaudit.scores.tiles` of
    ``block_rows``) cut along the rows into sub-tiles of at most ``be.tile`` comparisons: each sub-tile scored once
    (:func:`tile_scores`), its scores made exact wherever a consumer's counts could turn on the device's rounding
    (:meth:`exact`), then given to every consumer in turn (``near`` and ``tile``: :class:`_Pass`,
    :class:`_Identity`). Sub-tiles come in the CPU's tile order and a sub-tile's comparisons in row order, so what a
    consumer lists by tile is in the order of the CPU's pass."""

    def __init__(self, be: TorchBackend, data: MatchData, block_rows: int):
        torch = self.torch = _torch()
        self.dev = be.device
        qh, scale = quantise(data.samples.embeddings, data.metric)
        self.host = (qh, np.einsum("ij,ij->i", qh, qh), data.metric == "cosine", scale)
        self.q = torch.as_tensor(qh, device=self.dev)
        self.sq = torch.as_tensor(self.host[1], device=self.dev)  # exact integers
        self.steps = [(r0, c0, a0, min(r1, a0 + rows), max(c0, a0), c1)  # (tile, sub-tile rows and columns)
                      for r0, r1, c0, c1 in tiles(qh.shape[0], block_rows)
                      for rows in (max(1, be.tile // (c1 - c0)),) for a0 in range(r0, r1, rows)]

    def run(self, consumers: Sequence[_Pass | _Identity], advance) -> None:
        torch, dev = self.torch, self.dev
        _, _, cosine, scale = self.host
        for r0, c0, a0, a1, b0, b1 in self.steps:
            s = tile_scores(self.q, self.sq, a0, a1, b0, b1, cosine, scale)
            i = torch.arange(a0, a1, device=dev)[:, None]
            j = torch.arange(b0, b1, device=dev)[None, :]
            ii, jj = torch.nonzero(j > i, as_tuple=True)  # each unordered pair once, in row order
            a, b = ii + a0, jj + b0
            s = self.exact(s[ii, jj], a, b, consumers)
            for c in consumers:
                c.tile((r0, c0), s, a, b)
            if advance is not None:
                advance()

    def exact(self, s, a, b, consumers: Sequence[_Pass | _Identity]):
        """The device scores ``s`` of samples ``a``, ``b`` with the host's exact score wherever the device's rounding
        could change a consumer's count or kept score (module doc; each consumer's ``near``: within the band of one of
        its edges, or in a kept cell). Raises if the device is further from the exact scores than a quarter of the
        band on the sub-tile's first row."""
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
        near = torch.zeros_like(s, dtype=torch.bool)
        for c in consumers:
            near |= c.near(s, delta)
        redo = torch.nonzero(near, as_tuple=True)[0]
        if redo.numel():
            s = s.clone()
            s[redo] = torch.as_tensor(pair_scores_exact(q, sq, a[redo].cpu().numpy(), b[redo].cpu().numpy(), cosine,
                                                        scale), device=self.dev)
        return s


class _Identity:
    """The identity pass ``acc`` (:class:`~matchaudit.engine.identity.IdentityPass`) counted on the device from the
    exact tile scores of :class:`_Tiles`: a comparison's level is the number of thresholds accepting it
    (``torch.bucketize``: thresholds <= s under ``>=``, < s under ``>``, the CPU kernel's rule), the genuine levels
    added per identity on the device, the accepted impostors' identities (k < l) and levels brought to the host per
    tile, in row order. Its thresholds are edges for the recheck (:meth:`near`), so every level is the CPU's;
    :meth:`done` merges the counts into ``acc``: its CPU pass's result, array for array."""

    def __init__(self, dev, acc: IdentityPass):
        torch = self.torch = _torch()
        self.acc = acc
        self.ts = torch.as_tensor(acc.ts, dtype=torch.float64, device=dev)
        self.ident = torch.as_tensor(acc.ident, device=dev)
        self.shape = acc.gen_hist.shape[1:]  # (K, T + 1)
        self.hist = torch.zeros(self.shape[0] * self.shape[1], dtype=torch.int64, device=dev)
        self.hits = IdentityHits(np.zeros(self.shape, np.int64), [], [], [], [])

    def _level(self, s):
        return self.torch.bucketize(s, self.ts, right=self.acc.ge)

    def near(self, s, delta):
        """Where a threshold lies within ``delta`` of the device's score ``s`` (its level could be off)."""
        return self._level(s - delta) != self._level(s + delta)

    def tile(self, tile: tuple[int, int], s, a, b) -> None:
        """Count the comparisons (samples ``a`` < ``b``, exact scores ``s``) of one sub-tile of CPU tile ``tile``."""
        torch = self.torch
        ka, kb, lev = self.ident[a], self.ident[b], self._level(s)
        gen = ka == kb
        self.hist += torch.bincount(ka[gen] * self.shape[1] + lev[gen], minlength=self.hist.numel())
        hit = ~gen & (lev > 0)
        ka, kb = ka[hit], kb[hit]
        self.hits.add_tile(tile, torch.minimum(ka, kb).cpu().numpy().astype(np.int32),
                           torch.maximum(ka, kb).cpu().numpy().astype(np.int32), lev[hit].cpu().numpy().astype(np.int16))

    def done(self) -> None:
        self.hits.hist = self.hist.view(self.shape).cpu().numpy()
        self.acc.merge(self.hits)


class _Pass:
    """One run's counting: counts (when given weights) and the entries of the ``win`` cells of the comparisons it is
    given (all pairs: :class:`_Tiles`' tiles; a listed table: :meth:`_listed`). ``buf``: the product buffers, shared
    by the runs of one pass (grown to the largest need)."""

    def __init__(self, be: TorchBackend, data: MatchData, task: CountTask, win: np.ndarray, wt: np.ndarray | None,
                 buf: list):
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
        self.buf = buf
        if wt is not None:
            self._weights(wt)
        if data.protocol == "all-pairs":
            self.block_rows = task.block_rows  # the CPU's tiling, which the sub-tiles follow
            self.ident = torch.as_tensor(ent.ident, device=self.dev)
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
        if not self.buf or self.buf[0].numel() < size:
            self.buf[:] = [torch.empty(size, dtype=torch.uint8, device=self.dev) for _ in range(2)]
        self.table = torch.zeros((self.ent.n_keys, R), dtype=torch.int64, device=self.dev)
        self.part = torch.zeros((self.ent.n_keys + SPAN, L), dtype=torch.int32, device=self.dev)

    def counts(self, lanes: int) -> tuple[np.ndarray, list]:
        """The counts table in the layout :class:`LocalBackend` returns (batches of ``lanes``) and the window items."""
        R = self.table.shape[1]
        lanes = min(lanes, -(-R // 16) * 16)
        nb_ = -(-R // lanes)
        out = np.zeros((self.ent.n_keys, nb_ * lanes), np.int64)
        out[:, :R] = self.table.cpu().numpy()
        return out.reshape(self.ent.n_keys, nb_, lanes), self.found

    # ------------------------------------------------------------------ comparisons -> entries
    def self_pairs(self) -> None:
        """All pairs under a scheme with self-pairs: sample i against itself, key (group, self cell), rows (n + i, 2n)."""
        torch, ent = self.torch, self.ent
        if not ent.self_pairs:
            return
        i = torch.arange(self.ident.shape[0], device=self.dev)
        s = torch.full(i.shape, ent.self_s, dtype=torch.float64, device=self.dev)
        key = self.igroup[self.ident] * self.C + self._cell(s)
        self._consume(key, ent.n_units + i, torch.full_like(i, 2 * ent.n_units), s)

    def near(self, s, delta):
        """Where the device's rounding of the scores ``s`` (within ``delta`` of the exact ones) could change this run's
        counts or kept scores: a cell edge within ``delta``, or a kept cell."""
        near = self._cell(s - delta) != self._cell(s + delta)
        if self.win is not None:
            near |= self.win[self._cell(s)]
        return near

    def tile(self, tile: tuple[int, int], s, a, b) -> None:
        """The entries of one sub-tile's comparisons (samples ``a`` < ``b``, exact scores ``s``; ``tile``: its CPU
        tile, which the counts do not depend on)."""
        ka, kb = self.ident[a], self.ident[b]
        self._emit(s, ka == kb, a, b, ka, kb, self.igroup[ka], self.igroup[kb])

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
