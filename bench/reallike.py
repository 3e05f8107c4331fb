"""Real-like score generators for the label-free study (#44 item 3): score shapes that resemble a deep model's, with
labels, so that the truth is counted on the pairs at hand.

Every shape draws, per group, ``n`` pairs of which a share ``pi`` are matches, with a group-specific difficulty
``hard`` (1 = the first group; larger = matches lower, the non-match shoulder larger):

* ``cosine``: cosine similarities of a deep face or speaker model. Non-matches near 0 (SD 0.07) with a right
  shoulder of look-alike pairs (3% x hard, shifted by a Gamma(4, 0.6 SD)); matches on Fisher's z around 0.65 with a
  long low tail (z minus an exponential quality loss), read back through tanh: bounded, skewed.
* ``shoulder``: the same with a heavier shoulder (8% x hard, closer to the matches) and 15% poor-quality matches
  (a second, lower match mode): the shapes where the two-piece families split the scores wrongly.
* ``embedding``: cosines of unit embeddings in 128 dimensions: identities gathered around shared cluster centres
  (look-alikes), a per-sample quality scaling each sample's concentration, pairs drawn from all pairs of the group.
* ``llr``: log-likelihood-ratio scores of a PLDA-like back-end: non-matches normal with a heavy upper tail
  (Student t, 5 d.o.f.), matches normal, unbounded.
* ``control``: well-behaved cosine scores, both classes normal on Fisher's z (inside ``sas-atanh``): the case
  where the families should agree and nothing should be alarmed.

Two shapes were added after the misspecification allowance (``robust.EFFECTIVE_SCORES``) was chosen on the five
above, to check it on shapes it was not chosen on:

* ``channels``: speaker-verification cosines over two recording channels: non-matches of the same channel (mean
  0.10) and of different channels (mean -0.02, narrower), the cross-channel share rising with ``hard``; matches
  ``2 Beta(12, 3) - 1`` (left-skewed, bounded), lowered by 0.2 when cross-channel.
* ``calibrated``: log-likelihood ratios of a calibrated Gaussian back-end with a per-trial separation
  ``mu ~ Gamma(5, 3 / hard)``: non-matches ``N(-mu / 2, mu)``, matches ``N(mu / 2, mu)`` (scale mixtures:
  heavy-tailed, unbounded, each class skewed towards the other).

One more was added after the alarm for groups that only one family fits (``robust.alarm_notes``) was chosen on
the misses of all the runs above, to check that rule on a shape it was not chosen on:

* ``quality``: face cosines driven by a per-pair quality ``q ~ Beta(3 / hard, 1.5)``: non-matches on Fisher's z
  ``0.03 + 0.08 (1.5 - q) N(0, 1)`` (poor pairs spread wider), matches ``atanh(0.75) q + 0.12 N(0, 1)`` (poor
  matches drift towards the non-matches: a long low tail that merges into them).
"""

from __future__ import annotations

import numpy as np

SHAPES = ("cosine", "shoulder", "embedding", "llr", "control", "channels", "calibrated", "quality")


def draw(shape: str, n: int, pi: float, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` scores of one group and their labels (1 match, 0 non-match)."""
    n1 = int(rng.binomial(n, pi))
    if shape == "embedding":
        return _embedding(n - n1, n1, hard, rng)
    s0, s1 = {"cosine": _cosine, "shoulder": _shoulder, "llr": _llr, "control": _control, "channels": _channels,
              "calibrated": _calibrated, "quality": _quality}[shape](n - n1, n1, hard, rng)
    s = np.r_[s0, s1]
    y = np.r_[np.zeros(s0.size), np.ones(s1.size)]
    order = rng.permutation(s.size)
    return s[order], y[order]


def _cosine(n0: int, n1: int, hard: float, rng: np.random.Generator, shoulder: float = 0.03, gap: float = 2.4,
            poor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    z0 = rng.standard_normal(n0)
    look = rng.random(n0) < shoulder * hard
    z0[look] += gap + rng.gamma(4.0, 0.6, look.sum())
    s0 = np.tanh(0.02 + 0.07 * z0)
    y1 = np.arctanh(0.68 - 0.06 * (hard - 1.0)) + 0.10 * rng.standard_normal(n1) - rng.exponential(0.12 * hard, n1)
    low = rng.random(n1) < poor
    y1[low] -= 0.3 + 0.08 * rng.standard_normal(low.sum())
    return s0, np.tanh(y1)


def _shoulder(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return _cosine(n0, n1, hard, rng, shoulder=0.08, gap=1.8, poor=0.15)


def _control(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s0 = np.tanh(0.02 + 0.08 * rng.standard_normal(n0))
    s1 = np.tanh(np.arctanh(0.5 - 0.06 * (hard - 1.0)) + 0.15 * hard * rng.standard_normal(n1))
    return s0, s1


def _llr(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s0 = -6.0 + 1.6 * rng.standard_t(5, n0)
    s1 = 6.0 / hard + 3.0 * rng.standard_normal(n1)
    return s0, s1


def _channels(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    cross = 0.4 * hard
    x0 = rng.random(n0) < cross
    s0 = np.where(x0, -0.02 + 0.06 * rng.standard_normal(n0), 0.10 + 0.09 * rng.standard_normal(n0))
    x1 = rng.random(n1) < cross
    s1 = 2.0 * rng.beta(12.0, 3.0, n1) - 1.0 - 0.2 * x1
    return np.clip(s0, -1.0, 1.0), np.clip(s1, -1.0, 1.0)


def _calibrated(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    mu0, mu1 = rng.gamma(5.0, 3.0 / hard, n0), rng.gamma(5.0, 3.0 / hard, n1)
    return (-mu0 / 2 + np.sqrt(mu0) * rng.standard_normal(n0), mu1 / 2 + np.sqrt(mu1) * rng.standard_normal(n1))


def _quality(n0: int, n1: int, hard: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q0, q1 = rng.beta(3.0 / hard, 1.5, n0), rng.beta(3.0 / hard, 1.5, n1)
    s0 = np.tanh(0.03 + 0.08 * (1.5 - q0) * rng.standard_normal(n0))
    s1 = np.tanh(np.arctanh(0.75) * q1 + 0.12 * rng.standard_normal(n1))
    return s0, s1


def _embedding(n0: int, n1: int, hard: float, rng: np.random.Generator, dim: int = 128, identities: int = 400,
               samples: int = 8, clusters: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Cosines of embeddings: ``identities`` identities around ``clusters`` shared centres, ``samples`` each with
    a quality in [0.3, 1] scaling its concentration; ``n0`` impostor and ``n1`` genuine pairs drawn from all pairs."""
    centres = _unit(rng.standard_normal((clusters, dim)))
    which = rng.integers(clusters, size=identities)
    ident = _unit(0.55 * centres[which] + _unit(rng.standard_normal((identities, dim))))
    k = identities * samples
    owner = np.repeat(np.arange(identities), samples)
    quality = rng.uniform(0.3, 1.0, k) ** hard
    noise = _unit(rng.standard_normal((k, dim)))
    emb = _unit(ident[owner] * (1.8 * quality)[:, None] + noise)
    a0, b0 = rng.integers(k, size=(2, 3 * n0 + 10))
    keep = owner[a0] != owner[b0]
    a0, b0 = a0[keep][:n0], b0[keep][:n0]
    i1 = rng.integers(identities, size=n1)
    p, q = rng.integers(samples, size=(2, n1))
    q = np.where(q == p, (q + 1) % samples, q)
    a1, b1 = i1 * samples + p, i1 * samples + q
    a, b = np.r_[a0, a1], np.r_[b0, b1]
    s = np.einsum("ij,ij->i", emb[a], emb[b])
    y = np.r_[np.zeros(a0.size), np.ones(a1.size)]
    order = rng.permutation(s.size)
    return s[order], y[order]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)
