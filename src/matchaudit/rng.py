"""Counter-based randomness: every draw is a pure function of (seed, stream, replicate, unit, draw).

No generator state, so any process (CPU thread, GPU lane, distributed worker) reproduces exactly the draws
of the units it holds, in any order and any chunking: "same seed, same numbers, on every backend".
The mix is a chain of splitmix64 finalisers over the key words; integers only (uint64 wrap-around), so the
Numba scalar path and the vectorised NumPy path give identical bits on every IEEE/two's-complement machine.

* :func:`key` / :func:`key_np` — the 64-bit hash of a key.
* :func:`uniform` — float64 in [0, 1) from the top 53 bits (exact).
* :func:`below` / :func:`below_np` — an exactly uniform integer in [0, n) (Lemire's multiply-shift with
  rejection; a rejected word is re-mixed, which both paths do identically).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)

KEY_HIGH = 2**63 - 1
"""The largest seed, stream, replicate, unit or draw that :func:`key` takes."""

# Streams keep different uses of one seed independent (one per scheme component).
STREAM_SAMPLES = 1
STREAM_IDENTITIES = 2
STREAM_COMPARISONS = 3
STREAM_PERMUTATION = 4
STREAM_AUX = 5


@nb.njit(inline="always", cache=True)
def _fmix(z: np.uint64) -> np.uint64:
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@nb.njit(cache=True)
def key(seed: int, stream: int, replicate: int, unit: int, draw: int) -> np.uint64:
    """64-bit hash of (seed, stream, replicate, unit, draw) — all non-negative integers < 2^63."""
    h = _fmix(np.uint64(seed))
    h = _fmix(h ^ np.uint64(stream))
    h = _fmix(h ^ np.uint64(replicate))
    h = _fmix(h ^ np.uint64(unit))
    return _fmix(h ^ np.uint64(draw))


@nb.njit(cache=True)
def below(h: np.uint64, n: int) -> int:
    """Exactly uniform integer in [0, n), n < 2^32, from hash ``h`` (re-mixed on the rare rejection)."""
    nn = np.uint64(n)
    threshold = (_TWO32 - nn) % nn
    while True:
        m = (h >> _S32) * nn
        if (m & _LOW32) >= threshold:
            return int(m >> _S32)
        h = _fmix(h)


@nb.njit(cache=True)
def uniform(h: np.uint64) -> float:
    return float(h >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def _fmix_np(z: np.ndarray) -> np.ndarray:
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def key_np(seed: int, stream: int, replicate, unit, draw) -> np.ndarray:
    """Vectorised :func:`key` (arguments broadcast); identical bits."""
    with np.errstate(over="ignore"):
        h = _fmix_np(np.uint64(seed) + np.zeros(1, np.uint64))
        h = _fmix_np(h ^ np.uint64(stream))
        h = _fmix_np(h ^ np.asarray(replicate, dtype=np.uint64))
        h = _fmix_np(h ^ np.asarray(unit, dtype=np.uint64))
        return _fmix_np(h ^ np.asarray(draw, dtype=np.uint64))


def below_np(h: np.ndarray, n) -> np.ndarray:
    """Vectorised :func:`below` (``n`` scalar or broadcastable); identical results."""
    h = np.array(h, dtype=np.uint64, copy=True)
    nn = np.broadcast_to(np.asarray(n, dtype=np.uint64), h.shape)
    threshold = (_TWO32 - nn) % nn
    out = np.empty(h.shape, dtype=np.int64)
    todo = np.ones(h.shape, dtype=bool)
    with np.errstate(over="ignore"):
        while todo.any():
            m = (h[todo] >> _S32) * nn[todo]
            ok = (m & _LOW32) >= threshold[todo]
            idx = np.flatnonzero(todo)
            out.flat[idx[ok]] = (m[ok] >> _S32).astype(np.int64)
            todo.flat[idx[ok]] = False
            h.flat[idx[~ok]] = _fmix_np(h.flat[idx[~ok]])
    return out


def uniform_np(h: np.ndarray) -> np.ndarray:
    return (np.asarray(h, dtype=np.uint64) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
