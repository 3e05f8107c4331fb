"""Synthetic face-verification embeddings with known truth: a von Mises-Fisher (vMF) mixture, one per identity.

The model of the similarity-scoring paper's appendix B.1 (after Hasnat et al. 2017, Conti et al. 2022): identity
``k`` has a centroid ``mu_k`` on the unit sphere of R^d and a concentration ``kappa_k``; its samples are
i.i.d. ``vMF(mu_k, kappa_k)``. Two identities' samples are independent. A *population* (centroids and
concentrations) is drawn once; a *data set* is a fresh draw of samples from it, so many data sets can share
identities (the coverage study: truth from the pooled sets, one interval per set).

What the groups control
-----------------------
* ``kappa`` range: a sample's mean cosine to its centroid is ``A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa)``
  and two samples of one identity have expected cosine ``A_d(kappa)^2``: lower concentration, lower genuine
  scores, higher FNMR.
* ``centroid_kappa``: with centroids uniform on the sphere (the default, and the paper's), every sample is
  marginally uniform whatever its kappa, so impostor scores have the same distribution in every group and
  there is no FMR gap. Drawing a group's centroids from ``vMF(group direction, centroid_kappa)`` instead makes
  its identities look alike: its same-group impostor scores are higher, hence a real FMR gap.

Randomness: ``seed`` feeds :class:`numpy.random.SeedSequence`; the population and the samples use two
independent child streams of it (``spawn_key`` 0 and 1), so ``simulate_vmf(seed=s)`` equals
``VmfPopulation.draw(..., seed=s).sample(..., seed=s)`` and the two never reuse random numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Mapping, NamedTuple

import numpy as np
import pandas as pd

from matchaudit import checks
from matchaudit.data import from_embeddings
from matchaudit.errors import InputError
from matchaudit.protocols import design_protocol
from matchaudit.model import MatchData
from matchaudit.outputs import staged
from matchaudit.scores import pair_scores

SamplesPerIdentity = int | tuple[int, int]
FileFormat = Literal["parquet", "csv"]

_POPULATION_STREAM = 0
_SAMPLE_STREAM = 1
_MODEL_B_STREAM = 2
_FAILURE_STREAM = 3



def vmf_rvs(mu: np.ndarray, kappa: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from vMF(mu, kappa) on the unit sphere of R^d, in O(size * d).

    Wood's (1994) rejection sampler for the cosine ``w`` to ``mu`` (the same algorithm SciPy uses), then a
    uniform direction orthogonal to ``mu``. ``scipy.stats.vonmises_fisher.rvs`` builds a d x d rotation per
    call (about 1.3 s at d = 512), which makes data sets of thousands of identities impractical; the tests
    check this sampler against SciPy's.
    """
    d = mu.shape[0]
    b = (d - 1) / (2 * kappa + np.sqrt(4 * kappa**2 + (d - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (d - 1) * np.log(1 - x0**2)
    w = np.empty(0)
    while w.size < size:
        z = rng.beta((d - 1) / 2, (d - 1) / 2, size=2 * (size - w.size) + 4)
        cand = (1 - (1 + b) * z) / (1 - (1 - b) * z)
        u = rng.uniform(size=z.size)
        ok = kappa * cand + (d - 1) * np.log(1 - x0 * cand) - c >= np.log(u)
        w = np.concatenate([w, cand[ok]])
    w = w[:size]
    v = rng.standard_normal((size, d))
    v -= np.outer(v @ mu, mu)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return w[:, None] * mu[None, :] + np.sqrt(np.clip(1 - w**2, 0, None))[:, None] * v

@dataclass(frozen=True)
class GroupSpec:
    """One demographic group: how many identities, and how concentrated they are.

    ``kappa``: each identity's concentration is drawn from ``U[lo, hi]``. ``centroid_kappa``: ``None`` for
    centroids uniform on the sphere, else the concentration of the group's centroids around a random
    group direction (higher = identities more alike = higher same-group FMR).
    """

    n_identities: int
    kappa: tuple[float, float]
    centroid_kappa: float | None = None


DEMO_GROUPS: dict[str, GroupSpec] = {
    "A": GroupSpec(100, (120.0, 800.0)),
    "B": GroupSpec(60, (70.0, 250.0)),
    "C": GroupSpec(40, (120.0, 800.0), centroid_kappa=40.0),
}
"""The demo population (2,000 samples at 10 per identity): A is the reference; B is less concentrated
(higher FNMR, same FMR); C is as concentrated as A but its identities cluster together (higher FMR)."""


def _rng(seed: int, stream: int) -> np.random.Generator:
    """The generator of one stream of ``seed`` (any whole number from 0: streams derived from a user's seed, e.g.
    a coverage study's per data set, may exceed :data:`checks.SEED_HIGH`)."""
    return np.random.default_rng(np.random.SeedSequence(checks.integer(seed, "seed"), spawn_key=(stream,)))


def _uniform_sphere(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Marsaglia's method: normalised standard Gaussian vectors are uniform on the sphere."""
    x = rng.standard_normal((n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _check_groups(groups: Mapping[str, GroupSpec], dim: int) -> int:
    """``dim`` as an int the vMF has, once the groups are checked to be GroupSpecs (``dim="8"``, ``dim=8.0`` and
    ``groups={"A": 5}`` ended in TypeErrors and an AttributeError)."""
    try:
        dim = checks.integer(dim, "dim", low=2)
    except InputError:
        raise InputError(f"dim={dim!r}: the von Mises-Fisher distribution needs dimension >= 2 (a whole number).",
                         param="dim") from None
    if not isinstance(groups, Mapping) or not groups:
        raise InputError("No groups given: pass at least one GroupSpec.")
    for name, spec in groups.items():
        if not isinstance(spec, GroupSpec):
            raise InputError(f"Group {name!r}: {spec!r} is not a GroupSpec; give groups as "
                             "{name: GroupSpec(n_identities, kappa=(lo, hi))}.", param="groups")
        lo, hi = spec.kappa
        if spec.n_identities < 1:
            raise InputError(f"Group {name!r}: n_identities={spec.n_identities}; it must be at least 1.")
        if not 0 < lo <= hi:
            raise InputError(f"Group {name!r}: kappa range {spec.kappa} must satisfy 0 < lo <= hi.")
        if spec.centroid_kappa is not None and not spec.centroid_kappa > 0:
            raise InputError(f"Group {name!r}: centroid_kappa={spec.centroid_kappa} must be > 0 (or None).")
    return dim


def _sizes(samples_per_identity: SamplesPerIdentity, k: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(samples_per_identity, (int, np.integer)):
        if samples_per_identity < 1:
            raise InputError(f"samples_per_identity={samples_per_identity}; it must be at least 1.")
        return np.full(k, int(samples_per_identity), dtype=np.int64)
    lo, hi = samples_per_identity
    if not 1 <= lo <= hi:
        raise InputError(f"samples_per_identity range {samples_per_identity} must satisfy 1 <= lo <= hi.")
    return rng.integers(lo, hi + 1, size=k, dtype=np.int64)


class WrittenFiles(NamedTuple):
    """Paths written by :meth:`SimulatedData.write`."""

    samples: Path
    embeddings: Path


@dataclass(frozen=True)
class SimulatedData:
    """One synthetic data set and the truth it was drawn from.

    ``samples``: one row per sample (``sample_id``, ``identity``, ``group``), row ``i`` matching
    ``embeddings[i]`` (float32, unit norm). ``centroids`` (K, d) float64, ``kappas`` (K,) and
    ``identity_names``/``identity_groups`` (K,) describe the identities in population order.
    """

    samples: pd.DataFrame
    embeddings: np.ndarray
    centroids: np.ndarray
    kappas: np.ndarray
    identity_names: np.ndarray
    identity_groups: np.ndarray

    def as_data(self, group_by: str | tuple[str, ...] = "group") -> MatchData:
        """The data set as all-pairs cosine :class:`~matchaudit.model.MatchData`, grouped by ``group_by``."""
        return from_embeddings(self.embeddings, self.samples["identity"], ids=self.samples["sample_id"],
                               attributes=self.samples, group_by=group_by)

    def write(self, directory: str | Path, fmt: FileFormat = "parquet") -> WrittenFiles:
        """Write ``samples.parquet`` (or ``samples.csv``) and ``embeddings.npy``, the input of ``matchaudit audit``, as
        one set (:func:`matchaudit.outputs.staged`)."""
        if fmt not in ("parquet", "csv"):
            raise InputError(f"Unknown format {fmt!r}: use 'parquet' or 'csv'.")
        out = Path(directory)
        other = out / f"samples.{'csv' if fmt == 'parquet' else 'parquet'}"
        if other.exists():
            raise InputError(
                f"{other} exists: writing samples.{fmt} and a new embeddings.npy beside it would leave a samples "
                "table that no longer matches the embeddings. Remove it or write to another directory."
            )
        with staged(out, "simulate") as tmp:  # both files or neither (see matchaudit.outputs)
            if fmt == "parquet":
                self.samples.to_parquet(tmp / "samples.parquet", index=False)
            else:
                self.samples.to_csv(tmp / "samples.csv", index=False)
            np.save(tmp / "embeddings.npy", self.embeddings)
        return WrittenFiles(out / f"samples.{fmt}", out / "embeddings.npy")


    def second_model(self, kappa: float = 1500.0, *, seed: int = 0) -> np.ndarray:
        """The same samples as a second, noisier model embeds them: sample ``i`` becomes a draw of
        ``vMF(embeddings[i], kappa)`` (float32, unit norm), so every score is perturbed and the model is worse
        for every group, most where genuine scores are already low. The input of ``matchaudit compare``."""
        if not kappa > 0:
            raise InputError(f"kappa={kappa}: the second model's noise concentration must be > 0.", param="kappa")
        rng = _rng(seed, _MODEL_B_STREAM)
        x = self.embeddings.astype(np.float64)
        return np.concatenate([vmf_rvs(row / np.linalg.norm(row), kappa, 1, rng) for row in x]).astype(np.float32)

    def trial_list(self, genuine: int, impostor: int, *, seed: int = 0) -> pd.DataFrame:
        """A scored trial list within groups, as a demographic evaluation publishes one: per group, ``genuine``
        and ``impostor`` comparisons spread over its identities (:func:`~matchaudit.protocols.design_protocol`),
        scored by cosine exactly as the all-pairs audit scores them, rounded to 6 decimals.

        Columns ``sample_a``, ``sample_b``, ``identity_a``, ``identity_b``, ``group_a``, ``group_b``, ``score``:
        the input of ``matchaudit audit --comparisons`` (and, without its identities, of ``estimate``).
        """
        s = self.samples
        pairs = [design_protocol(g["sample_id"], g["identity"], genuine, impostor, seed=seed).to_frame()
                 for _, g in s.groupby("group", sort=True)]
        frame = pd.concat(pairs, ignore_index=True)
        row = pd.Series(np.arange(len(s)), index=s["sample_id"].to_numpy())
        a, b = row[frame["sample_a"]].to_numpy(), row[frame["sample_b"]].to_numpy()
        for col in ("identity", "group"):
            values = s[col].to_numpy()
            frame[f"{col}_a"], frame[f"{col}_b"] = values[a], values[b]
        frame["score"] = np.round(pair_scores(self.embeddings, a, b), 6)
        return frame


class DemoFiles(NamedTuple):
    """Paths written by :func:`write_demo_data`."""

    samples: Path
    embeddings: Path
    embeddings_b: Path
    comparisons: Path
    match_log: Path
    templates: Path
    subjects: Path


DEMO_FAILURE_RATES = {"A": 0.005, "B": 0.005, "C": 0.03}
"""Share of the demo match log's comparisons that fail (non-zero return code), by the group of side a."""


def frte_match_log(trials: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """A trial list as a NIST FRTE 1:1 match log (``enrollTempl verifTempl simScore returnCode``, templates named
    by sample id) in which comparisons fail at :data:`DEMO_FAILURE_RATES` per group: return code 6 and score -1,
    as a failed comparison is written there."""
    rng = _rng(seed, _FAILURE_STREAM)
    failed = rng.random(len(trials)) < trials["group_a"].map(DEMO_FAILURE_RATES).fillna(0.0).to_numpy()
    return pd.DataFrame({"enrollTempl": trials["sample_a"], "verifTempl": trials["sample_b"],
                         "simScore": np.where(failed, -1.0, trials["score"].round(6)),
                         "returnCode": np.where(failed, 6, 0)})


def write_demo_data(directory: str | Path, seed: int = 0) -> DemoFiles:
    """The demo's input files, every one the README's examples read: ``samples.parquet`` (with a ``sex`` column
    beside ``group``, alternating over each group's identities) and ``embeddings.npy`` (:func:`simulate_vmf`), ``embeddings_b.npy`` (a second model of the same samples,
    :meth:`SimulatedData.second_model`), ``comparisons.csv`` (a scored within-group trial list of 500 genuine
    and 2,000 impostor comparisons per group, :meth:`SimulatedData.trial_list`), and the same trials as a NIST
    FRTE match log with failures (``match_log.txt``, :func:`frte_match_log`) with its template -> subject map
    (``templates.txt``) and subject table (``subjects.csv``), written as one set."""
    sim = simulate_vmf(seed=seed)
    out = Path(directory)
    names = ("samples.parquet", "embeddings.npy", "embeddings_b.npy", "comparisons.csv", "match_log.txt",
             "templates.txt", "subjects.csv")
    # a second attribute per identity (alternating within each group) for intersections and NIST-style pairings
    samples = sim.samples.assign(sex=np.where(pd.factorize(sim.samples["identity"])[0] % 2, "M", "F"))
    with staged(out, "demo-data") as tmp:
        samples.to_parquet(tmp / names[0], index=False)
        np.save(tmp / names[1], sim.embeddings)
        np.save(tmp / names[2], sim.second_model(seed=seed))
        trials = sim.trial_list(500, 2000, seed=seed)
        trials.to_csv(tmp / names[3], index=False)
        frte_match_log(trials, seed).to_csv(tmp / names[4], sep=" ", index=False)
        sim.samples[["sample_id", "identity"]].to_csv(tmp / names[5], sep=" ", header=False, index=False)
        samples[["identity", "group", "sex"]].drop_duplicates().to_csv(tmp / names[6], index=False)
    return DemoFiles(*(out / name for name in names))


@dataclass(frozen=True)
class VmfPopulation:
    """Fixed identities (centroids, concentrations, groups) from which data sets are sampled."""

    centroids: np.ndarray  # (K, d) float64, unit rows
    kappas: np.ndarray  # (K,) float64
    identity_names: np.ndarray  # (K,) str, e.g. "A0007"
    identity_groups: np.ndarray  # (K,) str

    @classmethod
    def draw(
        cls,
        groups: Mapping[str, GroupSpec] | None = None,
        *,
        dim: int = 128,
        seed: int = 0,
    ) -> VmfPopulation:
        """Draw the identities of ``groups`` (default :data:`DEMO_GROUPS`), in the order the groups are given."""
        groups = DEMO_GROUPS if groups is None else groups
        dim = _check_groups(groups, dim)
        rng = _rng(seed, _POPULATION_STREAM)
        centroids, kappas, names, labels = [], [], [], []
        for name, spec in groups.items():
            k = spec.n_identities
            if spec.centroid_kappa is None:
                centroids.append(_uniform_sphere(rng, k, dim))
            else:
                direction = _uniform_sphere(rng, 1, dim)[0]
                centroids.append(vmf_rvs(direction, spec.centroid_kappa, k, rng))
            kappas.append(rng.uniform(*spec.kappa, size=k))
            width = len(str(k - 1))
            names += [f"{name}{j:0{width}d}" for j in range(k)]
            labels += [name] * k
        return cls(
            centroids=np.concatenate(centroids).reshape(-1, dim),
            kappas=np.concatenate(kappas),
            identity_names=np.array(names),
            identity_groups=np.array(labels),
        )

    @property
    def dim(self) -> int:
        return int(self.centroids.shape[1])

    def sample(
        self, samples_per_identity: SamplesPerIdentity = 10, *, seed: int = 0
    ) -> SimulatedData:
        """A fresh data set: ``samples_per_identity`` vMF draws per identity (an ``(lo, hi)`` range draws each
        identity's count uniformly in ``lo..hi``, per data set)."""
        rng = _rng(seed, _SAMPLE_STREAM)
        sizes = _sizes(samples_per_identity, len(self.kappas), rng)
        blocks = [
            vmf_rvs(mu, kappa, int(n), rng)
            for mu, kappa, n in zip(self.centroids, self.kappas, sizes)
        ]
        identity = np.repeat(self.identity_names, sizes)
        within = np.concatenate([np.arange(n) for n in sizes])
        width = len(str(int(sizes.max()) - 1))
        samples = pd.DataFrame(
            {
                "sample_id": [f"{who}_{j:0{width}d}" for who, j in zip(identity, within)],
                "identity": identity,
                "group": np.repeat(self.identity_groups, sizes),
            }
        )
        return SimulatedData(
            samples=samples,
            embeddings=np.concatenate(blocks).astype(np.float32),
            centroids=self.centroids,
            kappas=self.kappas,
            identity_names=self.identity_names,
            identity_groups=self.identity_groups,
        )


def simulate_vmf(
    groups: Mapping[str, GroupSpec] | None = None,
    *,
    dim: int = 128,
    samples_per_identity: SamplesPerIdentity = 10,
    seed: int = 0,
) -> SimulatedData:
    """One data set from a fresh population (default: the demo groups, see :data:`DEMO_GROUPS`)."""
    seed = checks.seed(seed)
    return VmfPopulation.draw(groups, dim=dim, seed=seed).sample(samples_per_identity, seed=seed)


def paper_b1_groups(n_identities: int = 1000) -> dict[str, GroupSpec]:
    """Appendix B.1 of the similarity-scoring paper: one group, centroids uniform, kappa ~ U[100, 800]."""
    return {"all": GroupSpec(n_identities, (100.0, 800.0))}


def paper_b1(n_identities: int = 1000, samples: int = 10, dim: int = 128, seed: int = 0) -> SimulatedData:
    """One data set of the paper's appendix B.1 protocol (K=1000 identities x 10 samples, d=128).

    For its coverage study (200 data sets sharing identities) draw the population once:
    ``pop = VmfPopulation.draw(paper_b1_groups(), seed=s)`` then ``pop.sample(10, seed=i)`` per data set.
    """
    return simulate_vmf(paper_b1_groups(n_identities), dim=dim, samples_per_identity=samples, seed=seed)
