"""One rule for a user's seed (:func:`matchaudit.checks.seed`: a whole number from 0 to 2^32 - 1), held at every
entry point: a negative seed ended in NumPy's "expected non-negative integer" traceback (simulate, protocol,
estimate), a seed of 2^63 or more in a cast or overflow error deep in a run (audit, demo, coverage, estimate)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import matchaudit as ma
from matchaudit import checks, rng
from matchaudit import resampling as rs
from matchaudit.cli import app
from matchaudit.errors import InputError
from matchaudit.studies.coverage import CoverageConfig, run_coverage
from matchaudit.protocols import design_protocol, random_protocol
from matchaudit.simulation import VmfPopulation, simulate_vmf

BAD = [-1, 2**32, 10**23, 3.5, float("nan"), True, "7", None]


@pytest.mark.parametrize("value", BAD)
def test_the_rule_refuses_what_is_not_a_32_bit_seed(value):
    with pytest.raises(InputError, match="give a whole number from 0 to 4294967295") as e:
        checks.seed(value)
    assert e.value.param == "seed"


def test_the_rule_takes_any_integer_type_up_to_the_bound():
    assert [checks.seed(v) for v in (0, np.int64(7), 3.0, checks.SEED_HIGH)] == [0, 7, 3, 2**32 - 1]


@pytest.mark.parametrize("call", [
    lambda s: ma.audit(simulate_vmf(samples_per_identity=3, dim=8).as_data(), fmr=1e-2,
                       intervals=ma.IntervalOptions(n_resamples=50, seed=s)),
    lambda s: simulate_vmf(seed=s),
    lambda s: design_protocol(["a", "b", "c", "d"], [0, 0, 1, 1], 1, 1, seed=s),
    lambda s: random_protocol(["a", "b", "c", "d"], [0, 0, 1, 1], 1, 1, seed=s),
    lambda s: CoverageConfig(seed=s),
    lambda s: ma.estimate(np.linspace(0, 1, 400), np.repeat(["a", "b"], 200), seed=s),
    lambda s: ma.test_equivalence(simulate_vmf(samples_per_identity=3, dim=8).as_data(), ("A", "B"), fmr=1e-2,
                                  margin=(0.5, 2.0), n_resamples=99, seed=s),
    lambda s: ma.audit(simulate_vmf(samples_per_identity=3, dim=8).as_data(), fmr=1e-2, intervals=False,
                       equivalence=ma.EquivalenceOptions((0.5, 2.0), n_resamples=99, seed=s)),
], ids=["audit", "simulate_vmf", "design_protocol", "random_protocol", "CoverageConfig", "estimate",
        "test_equivalence", "audit_equivalence_only"])
@pytest.mark.parametrize("seed", [-1, 2**32])
def test_every_entry_point_refuses_a_bad_seed_before_any_work(call, seed):
    with pytest.raises(InputError, match="seed") as e:
        call(seed)
    assert e.value.param == "seed"


def test_derived_streams_take_larger_seeds_and_the_keys_stop_at_63_bits():
    """Streams derived from a user's seed (a coverage study's per data set, ``seed * 1_000_003 + i``) go past 2^32:
    the simulation's generators take them; the resampling keys take up to 2^63 - 1 and refuse more by name (a
    seed of 2^63 was a cast error inside the weights)."""
    assert VmfPopulation.draw(dim=8, seed=checks.SEED_HIGH * 1_000_003 + 5).centroids.shape[1] == 8
    with pytest.raises(InputError, match="whole number of at least 0"):
        VmfPopulation.draw(dim=8, seed=-1)
    assert rs.DoubleOrNothing(seed=rng.KEY_HIGH).seed == rng.KEY_HIGH
    with pytest.raises(InputError, match="seed 9223372036854775808: give a whole number from 0 to") as e:
        rs.DoubleOrNothing(seed=rng.KEY_HIGH + 1)
    assert e.value.param == "seed"


def test_a_coverage_study_runs_at_the_largest_seed():
    """Its per-data-set seeds (fresh identities: ``seed * 1_000_003 + i + 1``) and the schemes' (``seed * 100_003 +
    i``) stay within the keys at the largest user seed."""
    cfg = CoverageConfig(n_datasets=2, n_identities=12, samples=3, dim=8, n_resamples=40, levels=(0.9,),
                         fmr_targets=(1e-1,), identities="fresh", roc_methods=("double-or-nothing",),
                         fixed_methods=("wilson",), seed=checks.SEED_HIGH)
    assert run_coverage(cfg).rows


@pytest.mark.parametrize("command", [
    ["simulate", "--identities", "30"],
    ["coverage", "--datasets", "1", "--identities", "12", "--samples", "3", "--dim", "8", "--n-resamples", "40"],
    ["protocol", "--samples", "{data}/samples.parquet", "--genuine", "5", "--impostor", "5"],
    ["audit", "--samples", "{data}/samples.parquet", "--embeddings", "{data}/embeddings.npy", "--no-figures"],
    ["estimate", "{data}/comparisons.csv", "--group-col", "group_a"],
    ["demo"],
], ids=lambda c: c[0])
@pytest.mark.parametrize("seed", ["-1", "4294967296", "99999999999999999999999"])
def test_the_commands_name_the_flag_and_exit_2(command, seed, demo_run, tmp_path):
    args = [a.replace("{data}", str(demo_run / "data")) for a in command]
    res = CliRunner().invoke(app, [*args, "--seed", seed, "--out", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert f"--seed {seed}: give a whole number from 0 to 4294967295" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "out").exists()


def test_confidence_levels_flags_and_numbers_at_their_boundaries():
    """The argument rules of session 44, at their edges (each fails when its comparison is flipped): a confidence
    level is above 0.5 (0.5 refused, the next float up taken); a flag is True or False only (NumPy's too; 1 and "no"
    refused); a number is never a bool; a sequence is never a mapping or a set."""
    with pytest.raises(InputError, match="significance level is alpha") as e:
        checks.confidence(0.5)
    assert e.value.param == "level"
    assert checks.confidence(np.nextafter(0.5, 1)) > 0.5 and checks.confidence(0.95) == 0.95
    assert checks.flag(np.True_, "x") is True and checks.flag(False, "x") is False
    for bad in (1, 0, "no", None):
        with pytest.raises(InputError, match="True or False"):
            checks.flag(bad, "x")
    for bad in (True, np.False_):
        with pytest.raises(InputError, match="not True or False"):
            checks.number(bad, "x")
    assert checks.number(np.float32(0.25), "x") == 0.25
    for bad in ({"pooled": 1}, {"pooled"}, 5):
        with pytest.raises(InputError, match="a sequence") as e:
            checks.sequence(bad, "weightings")
        assert e.value.param == "weightings"
    assert checks.sequence("pooled, balanced", "w") == ("pooled", "balanced") and checks.sequence(("a",), "w") == ("a",)
