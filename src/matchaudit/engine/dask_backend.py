"""The Dask backend: counting passes cut into parts that run on dask.distributed workers.

What runs where: the client builds the grid, the window and the :class:`CountTask` (small: grid edges,
scheme and seed, replicate numbers), and ships the :class:`MatchData` to every worker once (embeddings or
an in-memory table; an out-of-core table ships only its path and name maps, and each worker reads its own
row groups, so the file must be reachable under the same path from every worker). Worker ``i`` of ``P``
parts counts ``MatchData.blocks(part=(i, P))`` -- row blocks of the similarity matrix or row groups of the
table -- regenerating the replicate weights from the seed (counter-based, never shipped). Partial tables
(``(B+1) x keys`` int64) are added on the workers in pairs as they finish, and the client fetches one
(exact: integer sums); window items are concatenated. Runs over the same tiles (an audit's pooled and balanced
bootstraps) are one scoring pass of each part (:meth:`DaskBackend.count_together`), which also counts the audit's
shared identity counts (:class:`~matchaudit.engine.identity.IdentityPass` at the thresholds, rebuilt per part from
the thresholds and the rule; the parts' hits merged in tile order). Comparison-level schemes (two-level,
iid-comparison) do not take this path: their weights couple all comparisons of an identity, so they run on
the client (see :mod:`matchaudit.engine.driver`).

Threads: a worker runs one task at a time (``threads_per_worker=1``) and its Numba kernels use
``cores // workers`` threads on the local cluster (set in each task: ``numba.set_num_threads``), so the
workers together use each core once. On a remote cluster they use the workers' ``NUMBA_NUM_THREADS``: start
workers with ``--nthreads 1`` and ``NUMBA_NUM_THREADS`` = cores per worker process.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from matchaudit import interrupt
from matchaudit.engine.identity import IdentityHits, IdentityPass
from matchaudit.engine.passes import Accumulator, Backend, CountTask, count_many
from matchaudit.progress import Meter, pass_meter
from matchaudit.errors import InputError
from matchaudit.model import MatchData


def _threads(n: int | None) -> None:
    """Numba threads of this worker: ``n`` (the local cluster's share of the cores), else as configured."""
    if n is not None:
        import numba

        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))


def _count(data: MatchData, task: CountTask, part: tuple[int, int], threads: int | None) -> tuple[np.ndarray, list]:
    _threads(threads)
    return task.count(data, part)


def _count_many(data: MatchData, runs: list, identities: list[tuple[np.ndarray, bool]], part: tuple[int, int],
                threads: int | None) -> tuple[list, list[IdentityHits]]:
    """Every run's counts over ``part`` and the identity pass at each ``(thresholds, rule >=)`` of ``identities``
    over it, from one scoring pass of the part."""
    _threads(threads)
    accs = [IdentityPass(data, ts, ge) for ts, ge in identities]
    return count_many(data, runs, part, also=accs), [acc.partial() for acc in accs]


def _add(x: tuple[np.ndarray, list], y: tuple[np.ndarray, list]) -> tuple[np.ndarray, list]:
    return x[0] + y[0], x[1] + y[1]


def _add_each(x: tuple[list, list], y: tuple[list, list]) -> tuple[list, list]:
    return [_add(a, b) for a, b in zip(x[0], y[0])], [a + b for a, b in zip(x[1], y[1])]


def _items(data: MatchData, task: CountTask, want: np.ndarray, part: tuple[int, int], threads: int | None) -> list:
    _threads(threads)
    return task.items(data, want, part)


def _block(fn: Callable[[int, int], Any], lo: int, hi: int, threads: int | None) -> Any:
    _threads(threads)
    return fn(lo, hi)


class DaskBackend(Backend):
    """Counting passes on a dask.distributed cluster: ``client``, or the scheduler at ``scheduler``
    (``tcp://host:8786``), or a new local cluster of ``n_workers`` processes. ``n_parts``: parts per pass
    (default: twice the workers, for balance); ``timeout``: seconds to connect to ``scheduler``; ``threads``:
    Numba threads per worker (default: cores // n_workers on the local cluster, else the workers' own
    ``NUMBA_NUM_THREADS``). Gives the same counts as :class:`LocalBackend`."""

    name = "dask"
    fuses = True

    def __init__(self, client: Any = None, scheduler: str | None = None, n_parts: int | None = None,
                 n_workers: int = 2, timeout: float = 30, threads: int | None = None):
        try:
            import distributed
        except ImportError:
            raise InputError("the dask backend needs the optional extra: pip install 'matchaudit[distributed]'.") from None
        self._own = None  # the local cluster this backend started
        self._owns_client = client is None
        self.threads = threads
        if client is None:
            if scheduler is not None:
                try:
                    client = distributed.Client(scheduler, timeout=timeout)
                except OSError as e:
                    raise InputError(f"scheduler {scheduler}: cannot connect ({e}).", param="scheduler") from None
            else:
                self.threads = threads or max(1, (os.cpu_count() or 1) // n_workers)
                # SIGINT ignored while the cluster starts: its worker processes inherit SIG_IGN. A terminal's
                # Ctrl-C reaches the whole process group; the client alone handles it (cancels the pass,
                # closes the cluster), so workers print no tracebacks. The price: a Ctrl-C during the
                # start-up (2-4 s) is ignored; press it again.
                with interrupt.sigint_handler(signal.SIG_IGN):
                    self._own = distributed.LocalCluster(
                        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        silence_logs=logging.ERROR)  # no warnings of cancelled tasks after an interrupted pass
                client = distributed.Client(self._own)
        self.client = client
        self.n_parts = n_parts
        self._data: tuple[MatchData, Any] | None = None

    def close(self) -> None:
        """Close the client this backend opened (to ``scheduler`` or its local cluster) and the local cluster
        (a given client stays open; a remote cluster keeps running)."""
        if self._owns_client:
            self.client.close()
            self._owns_client = False
        if self._own is not None:
            self._own.close()
            self._own = None

    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _parts(self, data: MatchData, task: CountTask) -> int:
        workers = max(1, len(self.client.nthreads()))
        return max(1, min(self.n_parts or 2 * workers, task.n_blocks(data)))

    def _scattered(self, data: MatchData):
        """The data on every worker (shipped once per MatchData)."""
        if self._data is None or self._data[0] is not data:
            self._data = (data, self.client.scatter(data, broadcast=True, hash=False))
        return self._data[1]

    def count(self, data: MatchData, task: CountTask, progress: bool | Meter, wt: np.ndarray | None = None
              ) -> tuple[np.ndarray, list]:
        remote, rtask = self._scattered(data), self.client.scatter(task, broadcast=True, hash=False)
        return self._summed(data, task, task.replicates.size + 1, progress, _count, _add,
                            lambda part, P: (remote, rtask, (part, P), self.threads))

    def serves(self, acc: Accumulator) -> bool:
        """The identity pass (:class:`IdentityPass`): counted per part on the workers, beside the runs."""
        return isinstance(acc, IdentityPass)

    def count_together(self, data: MatchData, runs: Sequence[tuple[MatchData, CountTask]], progress: bool | Meter,
                       also: Sequence[Accumulator] = ()) -> list[tuple[np.ndarray, list]]:
        """Every run's parts, and the identity passes ``also``, counted in one scoring pass of each part
        (:func:`count_many` on the workers); each identity pass merges its parts' hits (:meth:`IdentityPass.merge`:
        the local pass's result, array for array)."""
        remote = self._scattered(data)
        rruns = self.client.scatter(list(runs), broadcast=True, hash=False)
        identities = [(acc.ts, acc.ge) for acc in also]
        lanes = sum(task.replicates.size + 1 for _, task in runs)
        counts, hits = self._summed(data, runs[0][1], lanes, progress, _count_many, _add_each,
                                    lambda part, P: (remote, rruns, identities, (part, P), self.threads))
        for acc, h in zip(also, hits, strict=True):
            acc.merge(h)
        return counts

    def _summed(self, data: MatchData, task: CountTask, lanes: int, progress: bool | Meter, work: Callable,
                add: Callable, args: Callable[[int, int], tuple]) -> Any:
        """``work(*args(i, P))`` over the pass's parts on the workers, the results added pairwise there as they finish
        (the client fetches one), with progress in comparisons x ``lanes``."""
        from distributed import as_completed

        P = self._parts(data, task)
        futures = [self.client.submit(work, *args(i, P), pure=False) for i in range(P)]
        blocks = {f.key: task.n_blocks(data, (i, P)) for i, f in enumerate(futures)}
        pending = list(futures)
        try:
            total = data.n_comparisons() * lanes
            per_block = total / max(task.n_blocks(data), 1)
            with pass_meter(progress, "resampling (dask)", total) as bar:
                done = None
                for f in as_completed(futures):
                    bar.advance(blocks[f.key] * per_block)
                    if done is None:
                        done = f
                    else:  # add pairs on the workers as they finish: the client fetches one result
                        done = self.client.submit(add, done, f, pure=False)
                        pending.append(done)
                return done.result()
        except KeyboardInterrupt:
            self.client.cancel(pending)
            raise

    def blocks(self, fn: Callable[[int, int], Any], spans: Sequence[tuple[int, int]]) -> Iterator[Any]:
        """Each block on a worker (``fn``, with what it holds, is sent to every worker once), yielded in order."""
        remote = self.client.scatter(fn, broadcast=True, hash=False)
        futures = [self.client.submit(_block, remote, lo, hi, self.threads, pure=False) for lo, hi in spans]
        try:
            for f in futures:
                yield f.result()
        except (KeyboardInterrupt, GeneratorExit):
            self.client.cancel(futures)
            raise

    def items(self, data: MatchData, task: CountTask, want: np.ndarray) -> list:
        P = self._parts(data, task)
        remote, rtask = self._scattered(data), self.client.scatter(task, broadcast=True, hash=False)
        futures = [self.client.submit(_items, remote, rtask, want, (i, P), self.threads, pure=False) for i in range(P)]
        try:
            return [it for part in self.client.gather(futures) for it in part]
        except KeyboardInterrupt:
            self.client.cancel(futures)
            raise


__all__ = ["DaskBackend"]
