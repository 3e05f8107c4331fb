"""Sorting large arrays of scores faster than NumPy's one-core sorts, with NumPy's results: a least-significant-digit
radix sort of the scores' bits on one thread (8 passes of one byte, each stable; a pass whose byte is the same for
every score is skipped).

* :func:`stable_order`: the permutation of ``np.argsort(kind="stable")``. Its keys order the floats as NumPy
  compares them: -0.0 and 0.0 equal, every NaN equal and last, so ties keep their input order.
* :func:`sorted_values`: the values of ``np.sort`` (keys that tell -0.0 from 0.0, so that each value comes back to
  the bit; NaN last).
* :func:`merge_order`: sorted runs merged into :func:`stable_order`'s order of the stream they were cut from (the
  merge of an external sort: :mod:`matchaudit.external_sort`).

Why: the threshold grid sorts a sample of up to 2^19 scores in every audit, comparison and test (on one core a
fifth of a 0.1 s audit of 1,000 samples); the calibration and score-distribution pass orders every comparison
(2.0e6 in the demo, 8.0e6 for 4,000 samples). Against two threads' NumPy sorts merged: the order of 8.0e6 scores
0.72 -> 0.30 s, 2.0e6 0.15 -> 0.08 s; the values of 4.2e5 scores 13 -> 7 ms, 8.0e6 0.28 -> 0.24 s."""

from __future__ import annotations

import numba as nb
import numpy as np

SIGN = np.uint64(1 << 63)
NAN_KEY = np.uint64((1 << 64) - 1)
BYTE = np.uint64(255)


@nb.njit(cache=True, nogil=True, inline="always")
def _key(x: float, bits: np.uint64, zeros_equal: bool) -> np.uint64:
    """The unsigned key of the float64 ``x`` (``bits``: its bits) in the floats' order (NaN: the largest key;
    ``zeros_equal``: -0.0 keyed as 0.0)."""
    if x != x:
        return NAN_KEY
    if zeros_equal and x == 0.0:
        return SIGN
    if bits >= SIGN:
        return ~bits  # negative: the larger the magnitude, the smaller the key
    return bits | SIGN


@nb.njit(cache=True, nogil=True)
def _keys(x: np.ndarray, zeros_equal: bool) -> tuple[np.ndarray, np.ndarray]:
    """The keys of the float64 values ``x`` (:func:`_key`) and the count of each byte value at each of the 8 byte
    positions."""
    bits = x.view(np.uint64)
    keys = np.empty(x.shape[0], np.uint64)
    count = np.zeros((8, 256), np.int64)
    for i in range(x.shape[0]):
        k = _key(x[i], bits[i], zeros_equal)
        keys[i] = k
        for d in range(8):
            count[d, (k >> np.uint64(8 * d)) & BYTE] += 1
    return keys, count


@nb.njit(cache=True, nogil=True)
def _lsd(keys: np.ndarray, count: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys sorted ascending, stably, and ``order`` (empty: not carried) permuted with them."""
    n = keys.shape[0]
    carry = order.shape[0] == n
    keys2, order2 = np.empty_like(keys), np.empty_like(order)
    start = np.empty(256, np.int64)
    for d in range(8):
        if count[d].max() == n:
            continue  # every key has this byte: the pass would not move anything
        total = 0
        for b in range(256):
            start[b] = total
            total += count[d, b]
        shift = np.uint64(8 * d)
        for i in range(n):
            b = (keys[i] >> shift) & BYTE
            j = start[b]
            start[b] = j + 1
            keys2[j] = keys[i]
            if carry:
                order2[j] = order[i]
        keys, keys2 = keys2, keys
        order, order2 = order2, order
    return keys, order


@nb.njit(cache=True, nogil=True)
def _values(keys: np.ndarray) -> np.ndarray:
    """The float64 values of keys made with ``zeros_equal`` False (NaN keys: NaN)."""
    bits = np.empty(keys.shape[0], np.uint64)
    for i in range(keys.shape[0]):
        bits[i] = keys[i] ^ SIGN if keys[i] >= SIGN else ~keys[i]
    return bits.view(np.float64)


def _float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "f":
        raise TypeError(f"sorts of scores take floats, not {x.dtype}")
    return np.ascontiguousarray(x, dtype=np.float64)  # float32 -> float64 is exact


def stable_order(x: np.ndarray) -> np.ndarray:
    """``np.argsort(x, kind="stable")`` of the 1-D float array ``x`` (int64 positions), the same permutation."""
    keys, count = _keys(_float64(x), True)
    return _lsd(keys, count, np.arange(x.shape[0]))[1]


def sorted_values(x: np.ndarray) -> np.ndarray:
    """A sorted copy of the 1-D float array ``x`` (ascending, NaN last): the values of ``np.sort(x)``, its dtype."""
    keys, count = _keys(_float64(x), False)
    return _values(_lsd(keys, count, np.zeros(0, np.int64))[0]).astype(x.dtype, copy=False)


@nb.njit(cache=True, nogil=True, inline="always")
def _before(key: np.uint64, run: int, other_key: np.uint64, other_run: int) -> bool:
    """Whether a run's head comes before another's: a smaller key, or an equal one in an earlier run."""
    return key < other_key or (key == other_key and run < other_run)


@nb.njit(cache=True, nogil=True, inline="always")
def _down(hk: np.ndarray, hr: np.ndarray, size: int, i: int, key: np.uint64, run: int) -> None:
    """Put (``key``, ``run``) into the binary heap of run heads (keys ``hk``, runs ``hr``; :func:`_before` order)
    at the hole ``i``, moving the smaller child up until it fits."""
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _before(hk[c + 1], hr[c + 1], hk[c], hr[c]):
            c += 1
        if _before(key, run, hk[c], hr[c]):
            break
        hk[i], hr[i] = hk[c], hr[c]
        i = c
    hk[i], hr[i] = key, run


@nb.njit(cache=True, nogil=True)
def _merge(x: np.ndarray, heads: np.ndarray, ends: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out`` with the positions of the runs' next entries in merged order (:func:`merge_order`)."""
    bits = x.view(np.uint64)
    hk = np.empty(heads.shape[0], np.uint64)
    hr = np.empty(heads.shape[0], np.int64)
    size = 0
    for r in range(heads.shape[0]):
        if heads[r] < ends[r]:
            hk[size], hr[size] = _key(x[heads[r]], bits[heads[r]], True), r
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _down(hk, hr, size, i, hk[i], hr[i])
    for j in range(out.shape[0]):
        r = hr[0]
        p = heads[r]
        out[j] = p
        heads[r] = p + 1
        if p + 1 < ends[r]:
            _down(hk, hr, size, 0, _key(x[p + 1], bits[p + 1], True), r)
        else:
            size -= 1
            _down(hk, hr, size, 0, hk[size], hr[size])


def merge_order(x: np.ndarray, heads: np.ndarray, ends: np.ndarray, count: int) -> np.ndarray:
    """Positions in ``x`` (1-D float64, e.g. a file's memmap) of the next ``count`` entries (fewer where the runs end)
    of the merge of its runs ``x[heads[r]:ends[r]]``, each in :func:`stable_order`'s order and each run's entries
    after the previous run's in the stream they were cut from: merged by the floats' order, ties by run, then by
    position in the run, so the merge of consecutive calls is ``np.argsort(stream, kind="stable")``'s order of the
    whole stream (an external sort). ``heads`` (int64) advance past the positions returned."""
    out = np.empty(min(int(count), int((ends - heads).sum())), np.int64)
    _merge(x, heads, ends, out)
    return out


__all__ = ["merge_order", "sorted_values", "stable_order"]
