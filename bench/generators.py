"""Three data generators for validity studies (#43 item 5): groups drawn from one law or apart, on designs the
methods were not tuned on.

* ``vmf``: matchaudit's own von Mises-Fisher identities (:func:`matchaudit.simulation.simulate_vmf`): impostor
  pairs nearly homogeneous.
* ``lookalike``: identities whose centroids gather around shared cluster centres (look-alikes: heterogeneous
  impostor pairs), 10% hard identities (low concentration) and a per-sample quality that scales each sample's
  concentration.
* ``tscore``: a direct score model: genuine scores shifted per identity (normal), impostor scores heavy-tailed
  (Student t, 4 df) with an additive effect per identity on each side.

Each returns a :class:`matchaudit.model.MatchData` grouped by ``group``. ``scale``: per group, a factor on its error
rates' difficulty (1 everywhere: parity).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

import matchaudit as ma
from matchaudit.simulation import GroupSpec, simulate_vmf

GENERATORS = ("vmf", "lookalike", "tscore")


def make(generator: str, groups: int, identities: int, samples: int, seed: int,
         scale: Sequence[float] | None = None, fixed_law: bool = False) -> ma.MatchData:
    """One data set: ``groups`` groups of ``identities`` identities with ``samples`` samples each. ``fixed_law``
    (lookalike): :data:`CLUSTERS` cluster centres fixed once for every data set, so that identities are drawn
    from one law whatever their number and a large data set gives a new population's truth (by default the
    centres are drawn per data set, one per 8 identities: the share of look-alike impostor pairs then falls with
    the number of identities)."""
    scale = np.ones(groups) if scale is None else np.asarray(scale, float)
    if generator == "lookalike":
        return _lookalike(groups, identities, samples, seed, scale, fixed_law=fixed_law)
    return {"vmf": _vmf, "tscore": _tscore}[generator](groups, identities, samples, seed, scale)


CLUSTERS = 16  # the fixed law's cluster centres (lookalike, fixed_law=True): 1/16 of impostor pairs look alike


def _names(groups: int) -> list[str]:
    return [chr(ord("A") + g) for g in range(groups)]


def _vmf(groups, identities, samples, seed, scale) -> ma.MatchData:
    # a harder group: lower concentrations (scale > 1 divides kappa)
    specs = {n: GroupSpec(identities, (30 / s, 60 / s)) for n, s in zip(_names(groups), scale)}
    sim = simulate_vmf(specs, dim=32, samples_per_identity=samples, seed=seed)
    return ma.from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples, group_by="group")


def _lookalike(groups, identities, samples, seed, scale, dim: int = 32, fixed_law: bool = False) -> ma.MatchData:
    rng = np.random.default_rng(seed)
    k = groups * identities
    n_clusters = CLUSTERS if fixed_law else max(4, k // 8)
    centres = _sphere(np.random.default_rng(4242) if fixed_law else rng, n_clusters, dim)
    cluster = rng.integers(0, n_clusters, k)
    group = np.repeat(np.arange(groups), identities)
    rng.shuffle(group)  # groups independent of the clusters: one law
    centroids = np.array([stats.vonmises_fisher(centres[c], 40.0).rvs(1, random_state=rng)[0] for c in cluster])
    hard = rng.random(k) < 0.10
    kappa = np.where(hard, 18.0, 45.0) / scale[group]
    ids, emb, grp = [], [], []
    for i in range(k):
        quality = rng.uniform(0.5, 1.0, samples)
        for q in quality:
            emb.append(stats.vonmises_fisher(centroids[i], kappa[i] * q).rvs(1, random_state=rng)[0])
            ids.append(i)
            grp.append(_names(groups)[group[i]])
    attrs = pd.DataFrame({"group": grp})
    return ma.from_embeddings(np.array(emb, np.float32), np.array(ids), attributes=attrs, group_by="group")


def _sphere(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _tscore(groups, identities, samples, seed, scale) -> ma.MatchData:
    rng = np.random.default_rng(seed)
    k = groups * identities
    group = np.repeat(np.arange(groups), identities)
    shift = rng.normal(0.0, 0.7, k)  # per-identity genuine shift
    side = rng.normal(0.0, 0.3, k)  # per-identity impostor effect
    ident = np.repeat(np.arange(k), samples)
    a, b = np.triu_indices(ident.size, 1)
    ia, ib = ident[a], ident[b]
    gen = ia == ib
    # a harder group (scale > 1): genuine scores lower by 0.8 (scale - 1) and its identities' shifts wider
    sc = scale[group[ia]]
    score = np.where(gen, 4.0 - 0.8 * (sc - 1) + shift[ia] * sc + rng.normal(0, 0.5, a.size),
                     0.5 * stats.t.rvs(4, size=a.size, random_state=rng) + side[ia] + side[ib])
    names = np.array(_names(groups))
    return ma.from_scores(score, ia, ib, attributes_a={"group": names[group[ia]]},
                          attributes_b={"group": names[group[ib]]}, group_by="group")
