"""The vMF simulator: determinism, shapes, the vMF law itself, the demo's designed group gaps, files, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import typer
import typer.core
import typer.main
from scipy.special import ive
from scipy.stats import kstest
from typer.testing import CliRunner

import matchaudit.cli.simulate  # noqa: F401  (registers the command on the app)
from matchaudit.cli.app import app
from matchaudit.errors import InputError
from matchaudit.simulation import (
    DEMO_GROUPS,
    _POPULATION_STREAM,
    _SAMPLE_STREAM,
    GroupSpec,
    SimulatedData,
    VmfPopulation,
    _rng,
    paper_b1,
    simulate_vmf,
)


def mean_resultant(kappa: np.ndarray | float, dim: int) -> np.ndarray:
    """A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa) = E[x . mu], x ~ vMF(mu, kappa); scaled Bessels, no overflow."""
    return ive(dim / 2, kappa) / ive(dim / 2 - 1, kappa)


def assert_same(a: SimulatedData, b: SimulatedData) -> None:
    pd.testing.assert_frame_equal(a.samples, b.samples)
    assert a.embeddings.tobytes() == b.embeddings.tobytes()
    assert a.centroids.tobytes() == b.centroids.tobytes()
    assert a.kappas.tobytes() == b.kappas.tobytes()


@pytest.fixture(scope="module")
def demo() -> SimulatedData:
    return simulate_vmf(seed=0)


# --- determinism and shared populations ---------------------------------------------------------------------------


def test_same_seed_same_data_and_same_file_bytes(tmp_path):
    a, b = simulate_vmf(seed=7, samples_per_identity=(3, 6)), simulate_vmf(seed=7, samples_per_identity=(3, 6))
    assert_same(a, b)
    for fmt in ("parquet", "csv"):
        pa = a.write(tmp_path / f"a-{fmt}", fmt=fmt)
        pb = b.write(tmp_path / f"b-{fmt}", fmt=fmt)
        assert pa.samples.read_bytes() == pb.samples.read_bytes()
        assert pa.embeddings.read_bytes() == pb.embeddings.read_bytes()


def test_different_seeds_differ():
    a, b = simulate_vmf(seed=1), simulate_vmf(seed=2)
    assert not np.array_equal(a.centroids, b.centroids)
    assert not np.array_equal(a.kappas, b.kappas)
    assert not np.array_equal(a.embeddings, b.embeddings)


def test_population_is_shared_and_data_sets_are_fresh():
    pop = VmfPopulation.draw(seed=3)
    d1, d2 = pop.sample(10, seed=1), pop.sample(10, seed=2)
    for d in (d1, d2):  # the truth is the population's, untouched
        assert d.centroids is pop.centroids and d.kappas is pop.kappas
    pd.testing.assert_frame_equal(d1.samples, d2.samples)  # same identities and sample ids...
    assert not np.array_equal(d1.embeddings, d2.embeddings)  # ...fresh embeddings
    assert_same(pop.sample(10, seed=1), d1)
    # simulate_vmf(seed=s) is exactly draw(seed=s).sample(seed=s): one documented recipe, not a second code path
    assert_same(simulate_vmf(seed=3), pop.sample(10, seed=3))


def test_population_and_samples_use_independent_streams():
    """With one seed for both, the population and the samples must not reuse the same random numbers."""
    assert not np.array_equal(_rng(0, _POPULATION_STREAM).random(8), _rng(0, _SAMPLE_STREAM).random(8))
    assert not np.array_equal(_rng(0, _POPULATION_STREAM).random(8), np.random.default_rng(0).random(8))


# --- shapes, dtypes, norms ----------------------------------------------------------------------------------------


def test_demo_shapes_dtypes_and_unit_norms(demo):
    k = sum(g.n_identities for g in DEMO_GROUPS.values())
    assert demo.embeddings.shape == (10 * k, 128) and demo.embeddings.dtype == np.float32
    assert list(demo.samples.columns) == ["sample_id", "identity", "group"]
    assert len(demo.samples) == 10 * k and demo.samples["sample_id"].is_unique
    assert (demo.samples.groupby("identity").size() == 10).all()
    assert (demo.samples.groupby("identity")["group"].nunique() == 1).all()  # the attribute is per identity
    assert demo.centroids.shape == (k, 128) and demo.kappas.shape == (k,)
    assert list(demo.identity_names) == list(demo.samples["identity"].unique())
    np.testing.assert_allclose(np.linalg.norm(demo.embeddings.astype(np.float64), axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(demo.centroids, axis=1), 1.0, atol=1e-12)
    for name, spec in DEMO_GROUPS.items():
        kappas = demo.kappas[demo.identity_groups == name]
        assert len(kappas) == spec.n_identities
        assert spec.kappa[0] <= kappas.min() and kappas.max() <= spec.kappa[1]


def test_unequal_sizes_within_range_and_redrawn_per_data_set():
    pop = VmfPopulation.draw({"g": GroupSpec(50, (100.0, 200.0))}, dim=16, seed=0)
    s1 = pop.sample((2, 8), seed=1).samples.groupby("identity", sort=False).size()
    s2 = pop.sample((2, 8), seed=2).samples.groupby("identity", sort=False).size()
    assert s1.between(2, 8).all() and s1.nunique() > 1
    assert not s1.equals(s2)


def test_paper_b1_preset():
    d = paper_b1(seed=0)
    assert d.embeddings.shape == (10_000, 128)
    assert set(d.samples["group"]) == {"all"} and d.samples["identity"].nunique() == 1000
    # kappa ~ U[100, 800] and centroids uniform (Marsaglia): fixed seed, so these checks are deterministic
    assert kstest(d.kappas, "uniform", args=(100, 700)).pvalue > 1e-3
    centroid_mean = d.centroids.mean(axis=0)  # uniform on S^127: each coordinate mean has sd 1/sqrt(128*1000)
    assert np.abs(centroid_mean).max() < 5 / np.sqrt(128 * 1000)


@pytest.mark.parametrize(
    "groups, kwargs",
    [
        ({"g": GroupSpec(5, (1.0, 2.0))}, {"dim": 1}),
        ({"g": GroupSpec(5, (300.0, 100.0))}, {}),
        ({"g": GroupSpec(5, (0.0, 100.0))}, {}),
        ({"g": GroupSpec(0, (1.0, 2.0))}, {}),
        ({"g": GroupSpec(5, (1.0, 2.0), centroid_kappa=-1.0)}, {}),
        ({}, {}),
        ({"g": GroupSpec(5, (1.0, 2.0))}, {"samples_per_identity": 0}),
        ({"g": GroupSpec(5, (1.0, 2.0))}, {"samples_per_identity": (4, 2)}),
    ],
)
def test_invalid_specs_raise_input_error(groups, kwargs):
    with pytest.raises(InputError):
        simulate_vmf(groups, **kwargs)


# --- the distribution itself --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [3, 128])
@pytest.mark.parametrize("kappa", [5.0, 100.0, 800.0])
def test_mean_resultant_length_matches_theory(dim, kappa):
    """E[x . mu] = A_d(kappa); Var[x . mu] = 1 - (d-1) A_d(kappa) / kappa - A_d(kappa)^2 (vMF moments).
    |z| < 4.5 over these 6 cases has false-alarm probability ~4e-5; a kappa off by 2% fails (at d=128)."""
    n = 4000
    mu = np.zeros(dim)
    mu[0] = 1.0
    pop = VmfPopulation(np.array([mu]), np.array([kappa]), np.array(["k"]), np.array(["g"]))
    t = pop.sample(n, seed=11).embeddings.astype(np.float64) @ mu
    a = mean_resultant(kappa, dim)
    sd = np.sqrt(1 - (dim - 1) * a / kappa - a**2)
    z = (t.mean() - a) / (sd / np.sqrt(n))
    assert abs(z) < 4.5, (t.mean(), a, z)
    assert t.std() == pytest.approx(sd, rel=0.1)


def _by_identity(data: SimulatedData) -> list[np.ndarray]:
    x = data.embeddings.astype(np.float64)
    codes = pd.Categorical(data.samples["identity"], categories=data.identity_names).codes
    return [x[codes == k] for k in range(len(data.identity_names))]


def test_demo_genuine_scores_differ_as_designed(demo):
    """Two samples of identity k have E[cosine] = A_d(kappa_k)^2. Per group, the mean over identities of
    (observed - theory) is within 4 standard errors (identities are independent), and group B (lower kappa) sits
    well below A. Swapping kappas between identities or groups breaks the per-group agreement."""
    theory = mean_resultant(demo.kappas, 128) ** 2
    observed = np.array([(xs @ xs.T)[np.triu_indices(len(xs), 1)].mean() for xs in _by_identity(demo)])
    means = {}
    for name in DEMO_GROUPS:
        m = demo.identity_groups == name
        diff = observed[m] - theory[m]
        assert abs(diff.mean()) < 4 * diff.std(ddof=1) / np.sqrt(m.sum()), name
        assert np.corrcoef(observed[m], theory[m])[0, 1] > 0.9, name
        means[name] = observed[m].mean()
    assert means["B"] < means["A"] - 0.15 and means["B"] < means["C"] - 0.15


def test_demo_impostor_scores_differ_as_designed(demo):
    """Samples of identities k != l are independent, so E[x_k . x_l] = A_k A_l mu_k . mu_l. Uniform centroids
    (A, B) give ~0; C's clustered centroids give a clearly positive mean (its FMR gap). The observed mean over
    identity pairs of xbar_k . xbar_l matches the truth within 4 SE of its leading noise term
    sum_k e_k . v_k / P (e_k = xbar_k - A_k mu_k, tangential variance (1 - A_k^2) / (n_k (d-1)) per direction,
    v_k = sum_{l != k} A_l mu_l)."""
    a = mean_resultant(demo.kappas, 128)
    xbar = np.stack([xs.mean(axis=0) for xs in _by_identity(demo)])
    truth_means = {}
    for name in DEMO_GROUPS:
        m = demo.identity_groups == name
        k = int(m.sum())
        pairs = np.triu_indices(k, 1)
        signal = a[m][:, None] * demo.centroids[m]
        truth = (signal @ signal.T)[pairs].mean()
        observed = (xbar[m] @ xbar[m].T)[pairs].mean()
        v = signal.sum(axis=0) - signal
        se = np.sqrt(np.sum((1 - a[m] ** 2) / (10 * 127) * np.sum(v**2, axis=1))) / len(pairs[0])
        assert abs(observed - truth) < 4 * se, (name, observed, truth, se)
        truth_means[name] = truth
    assert abs(truth_means["A"]) < 0.005 and abs(truth_means["B"]) < 0.005
    assert truth_means["C"] > 0.03


# --- files --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_written_files_load_back_identically(tmp_path, fmt):
    data = simulate_vmf({"x": GroupSpec(7, (50.0, 90.0)), "y": GroupSpec(4, (10.0, 20.0))}, dim=16, seed=5)
    paths = data.write(tmp_path / "out", fmt=fmt)
    assert paths.samples == tmp_path / "out" / f"samples.{fmt}"
    assert paths.embeddings == tmp_path / "out" / "embeddings.npy"
    table = pd.read_parquet(paths.samples) if fmt == "parquet" else pd.read_csv(paths.samples)
    pd.testing.assert_frame_equal(table, data.samples, check_dtype=False)
    embeddings = np.load(paths.embeddings)
    assert embeddings.dtype == np.float32 and embeddings.tobytes() == data.embeddings.tobytes()


def test_write_refuses_to_leave_a_stale_samples_table(tmp_path):
    data = simulate_vmf({"x": GroupSpec(3, (50.0, 90.0))}, dim=8, seed=0)
    data.write(tmp_path, fmt="parquet")
    with pytest.raises(InputError, match="samples.parquet"):
        data.write(tmp_path, fmt="csv")
    data.write(tmp_path, fmt="parquet")  # rewriting the same format is fine


# --- CLI ----------------------------------------------------------------------------------------------------------


def invoke(args: list[str]):
    """Typer runs a one-command app as that command; with several commands registered it is a group."""
    prefix = ["simulate"] if isinstance(typer.main.get_command(app), typer.core.TyperGroup) else []
    return CliRunner().invoke(app, prefix + args)


def test_cli_help_lists_options_and_an_example():
    result = invoke(["--help"])
    assert result.exit_code == 0
    for text in ("--out", "--preset", "--identities", "--samples-per-identity", "--dim", "--seed", "--format",
                 "paper-b1", "matchaudit simulate --out"):
        assert text in result.output, text


def test_cli_writes_the_same_data_as_the_api(tmp_path):
    result = invoke(["--out", str(tmp_path), "--seed", "4", "--identities", "20", "--samples-per-identity", "3:5",
                     "--dim", "32", "--format", "csv"])
    assert result.exit_code == 0, result.output
    said = result.output.replace("\n", "")  # a long tmp path wraps at the console's width
    assert "samples.csv" in said and "embeddings.npy" in said
    expected = simulate_vmf(
        {name: GroupSpec(n, g.kappa, g.centroid_kappa) for (name, g), n in zip(DEMO_GROUPS.items(), (10, 6, 4))},
        dim=32, samples_per_identity=(3, 5), seed=4,
    )
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "samples.csv"), expected.samples, check_dtype=False)
    assert np.load(tmp_path / "embeddings.npy").tobytes() == expected.embeddings.tobytes()


def test_cli_paper_b1_preset(tmp_path):
    result = invoke(["--out", str(tmp_path), "--preset", "paper-b1", "--identities", "30", "--dim", "16"])
    assert result.exit_code == 0, result.output
    assert np.load(tmp_path / "embeddings.npy").tobytes() == paper_b1(30, 10, 16, seed=0).embeddings.tobytes()


@pytest.mark.parametrize("bad", [["--samples-per-identity", "ten"], ["--dim", "1"], ["--identities", "2"]])
def test_cli_bad_input_exits_2_with_a_message(tmp_path, bad):
    result = invoke(["--out", str(tmp_path), *bad])
    assert result.exit_code == 2
    assert "Error" in result.output
    assert not (tmp_path / "embeddings.npy").exists()


@pytest.mark.parametrize("dim, kappa", [(3, 5.0), (128, 300.0), (512, 50.0)])
def test_fast_vmf_sampler_matches_scipy(dim, kappa):
    """Our O(n d) sampler against scipy.stats.vonmises_fisher: same law of the cosine to mu (two-sample KS,
    alpha = 1e-3 so a fixed-seed false alarm is unlikely; a 5% change of kappa fails it), an isotropic
    tangent part, unit norm."""
    from scipy.stats import ks_2samp, vonmises_fisher

    from matchaudit.simulation import vmf_rvs

    rng = np.random.default_rng(42)
    mu = rng.standard_normal(dim)
    mu /= np.linalg.norm(mu)
    n = 4000
    ours = vmf_rvs(mu, kappa, n, rng)
    theirs = vonmises_fisher(mu, kappa).rvs(n, random_state=rng)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0)
    assert ks_2samp(ours @ mu, theirs @ mu).pvalue > 1e-3
    assert ks_2samp(vmf_rvs(mu, kappa * 1.05 if dim > 3 else kappa * 1.3, n, rng) @ mu, theirs @ mu).pvalue < 1e-3
    tangent = ours - np.outer(ours @ mu, mu)
    se = np.sqrt((1 - (ours @ mu) ** 2).mean() / dim / n)
    assert np.abs(tangent.mean(axis=0)).max() < 5 * se


@pytest.mark.parametrize("kw, says", [({"groups": {"A": 5}}, "Group 'A': 5 is not a GroupSpec"),
                                      ({"dim": "8"}, "dim='8': the von Mises-Fisher distribution needs dimension"),
                                      ({"dim": 8.5}, "dim=8.5: the von Mises-Fisher")])
def test_groups_and_dimensions_of_the_wrong_kind_are_named(kw, says):
    """``simulate(groups={"A": 5})`` ended in an AttributeError, ``dim="8"`` and ``dim=8.0`` in TypeErrors."""
    with pytest.raises(InputError, match=says):
        simulate_vmf(**kw)
    assert simulate_vmf(dim=8.0, samples_per_identity=2).embeddings.shape[1] == 8


@pytest.mark.parametrize("n", [3, 4, 5, 10, 11, 199, 201])
def test_simulate_writes_exactly_the_identities_asked_for(n, tmp_path):
    """#42 S5: `--identities 3` wrote 4 (A0, A1, B0, C0) and 199 wrote 200: each group's share was rounded alone."""
    from typer.testing import CliRunner

    from matchaudit.cli import app

    res = CliRunner().invoke(app, ["simulate", "--identities", str(n), "--samples-per-identity", "2", "--dim", "4",
                                   "--format", "csv", "--out", str(tmp_path), "--quiet"])
    assert res.exit_code == 0, res.output
    samples = pd.read_csv(tmp_path / "samples.csv")
    assert samples.identity.nunique() == n and samples.group.nunique() == 3
