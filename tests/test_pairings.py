"""NIST-style impostor pairings (``threshold_impostors="same:ATTR,..."``): the spec's one reader, and the
threshold, FMR and intervals of every path against brute force over the impostors that share the attributes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import matchaudit as ma
from matchaudit import resampling as rs
from matchaudit.definitions import lowest_passing
from matchaudit.engine import run
from matchaudit.errors import InputError
from matchaudit.estimators.compare import comparison_arrays
from matchaudit.scores import pair_scores
from matchaudit.pairings import category_mask, check_spec, reference_pairs

GROUPS = ("F|old|N", "F|old|S", "F|young|N", "M|old|N", "M|young|S")
BY = ("sex", "age", "region")


def test_reference_pairs_by_attribute():
    sex = reference_pairs("same:sex", GROUPS, BY)
    want = np.array([[g[0] == h[0] for h in GROUPS] for g in GROUPS])
    np.testing.assert_array_equal(sex, want)
    two = reference_pairs("same:age, sex", GROUPS, BY)
    np.testing.assert_array_equal(two, [[g.split("|")[:2] == h.split("|")[:2] for h in GROUPS] for g in GROUPS])
    np.testing.assert_array_equal(reference_pairs("same:sex,age,region", GROUPS, BY), np.eye(5, dtype=bool))
    np.testing.assert_array_equal(reference_pairs("same-group", GROUPS, BY), np.eye(5, dtype=bool))
    assert reference_pairs("all", GROUPS, BY).all()
    cats = [(0, 0), (0, 3), (1, 2), (3, 4)]
    np.testing.assert_array_equal(category_mask(sex, cats), [True, False, True, True])


@pytest.mark.parametrize("spec, words", [
    ("same", "same:ATTR"), ("same:", "same:ATTR"), ("same:sex,", "same:ATTR"), ("equal:sex", "same:ATTR"),
    ("same:sex,sex", "repeated"), ("group", "same:ATTR"),
])
def test_bad_specs_are_named(spec, words):
    with pytest.raises(InputError, match="threshold_impostors") as e:
        check_spec(spec)
    assert words in str(e.value) and repr(spec) in str(e.value)


def test_attributes_must_be_grouping_attributes():
    with pytest.raises(InputError, match="'country' is not a grouping attribute .group_by: sex, age, region"):
        reference_pairs("same:country", GROUPS, BY)
    with pytest.raises(InputError, match="not grouped"):
        reference_pairs("same:sex", ("all",), ())
    with pytest.raises(InputError, match="remove '|'"):
        reference_pairs("same:sex", ("F|x|old|N",), BY)


def _data(n_id: int = 48, seed: int = 3) -> tuple[ma.MatchData, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({"sex": rng.choice(["F", "M"], n_id), "age": rng.choice(["old", "young"], n_id),
                           "region": rng.choice(["N", "S"], n_id)})
    ident = np.repeat(np.arange(n_id), 3)
    centre = rng.normal(size=(n_id, 6))
    centre[:, 0] += np.where(people.sex == "F", 1.5, 0.0)  # same-sex impostors score higher
    emb = centre[ident] + 0.6 * rng.normal(size=(ident.size, 6))
    attrs = people.iloc[ident].reset_index(drop=True)
    return ma.from_embeddings(emb, ident, attributes=attrs, group_by=BY), attrs


def _brute_threshold(data: ma.MatchData, attrs: pd.DataFrame, shared: tuple[str, ...], target: float) -> float:
    """The project's threshold rule, written out over the listed-out comparisons."""
    i, j = np.triu_indices(data.samples.ids.size, 1)
    s = pair_scores(data.samples.embeddings, i, j)  # the library's (quantised) scores of every pair
    ident = data.samples.identity
    imp = ident[i] != ident[j]
    same = np.all([attrs[a].to_numpy()[i] == attrs[a].to_numpy()[j] for a in shared], axis=0)
    ref = s[imp & same]
    cand = np.sort(np.unique(np.concatenate([s, [np.inf]])))
    fmr = np.array([(ref >= t).sum() / ref.size for t in cand])
    return float(cand[lowest_passing(fmr, np.array(target))])


@pytest.mark.parametrize("shared", [("sex",), ("sex", "age"), ("age", "region")])
def test_threshold_and_fmr_against_brute_force(shared):
    data, attrs = _data()
    spec, target = "same:" + ",".join(shared), 0.05
    a = ma.audit(data, fmr=target, threshold_impostors=spec, measures=ma.MeasureOptions(weightings=("pooled",)),
                 intervals=ma.IntervalOptions(method="wilson,double-or-nothing", n_resamples=50))
    row = a.at_fmr(target).loc["all"]
    want = _brute_threshold(data, attrs, shared, target)
    assert row.threshold == pytest.approx(want, abs=0)
    # the overall FMR is over the reference impostors: brute-force count
    s, gen, _, ref = comparison_arrays(data, spec)
    assert row.fmr_comparisons == int(ref.sum())
    assert row.fmr_errors == int((s[ref] >= row.threshold).sum())
    # the engine (every bootstrap's replicate 0) finds the same threshold
    c = run(data, fmr_targets=[target], threshold_impostors=spec)
    assert c.target_threshold[0, 0] == pytest.approx(want, abs=0)
    # and the wider/narrower specs differ from it, so the test can tell them apart
    others = {sp: _brute_threshold(data, attrs, sh, target)
              for sp, sh in (("all", ()), ("same-group", BY))}
    assert all(v != want for v in others.values())
    iv = a.intervals
    assert (iv[(iv.group == "all") & (iv.kind == "fmr_target")].method == "double-or-nothing").any()
    assert set(iv.threshold_impostors) == {spec}


def test_replicate_thresholds_against_brute_force():
    """Each double-or-nothing replicate's threshold over the impostors sharing the attributes: the rule on the
    weighted comparisons (genuine of identity k: weight w_k; impostor (k, l): w_k w_l)."""
    data, attrs = _data()
    spec, target, reps = "same:sex,age", 0.05, np.arange(1, 6)
    c = run(data, rs.DoubleOrNothing(7), reps, fmr_targets=[target], threshold_impostors=spec)
    w = rs.DoubleOrNothing(7).identity_weights(reps, rs.Layout(identity_group=data.identity_group))[0]
    i, j = np.triu_indices(data.samples.ids.size, 1)
    s = pair_scores(data.samples.embeddings, i, j)
    ki, kj = data.samples.identity[i], data.samples.identity[j]
    ref = (ki != kj) & (attrs.sex.to_numpy()[i] == attrs.sex.to_numpy()[j]) & (attrs.age.to_numpy()[i] == attrs.age.to_numpy()[j])
    for r, wr in enumerate(w, start=1):
        cw = np.where(ki == kj, wr[ki], wr[ki] * wr[kj]).astype(float)
        cand = np.sort(np.unique(np.concatenate([s[cw > 0], [np.inf]])))
        fmr = np.array([cw[ref & (s >= t)].sum() / cw[ref].sum() for t in cand])
        assert c.target_threshold[r, 0] == cand[lowest_passing(fmr, np.array(target))]


def test_fixed_threshold_closed_form_counts_reference_impostors():
    data, attrs = _data()
    a = ma.audit(data, fmr=(), thresholds=0.5, threshold_impostors="same:sex",
                 measures=ma.MeasureOptions(weightings=("pooled",)), intervals=ma.IntervalOptions(method="wilson"))
    s, gen, _, ref = comparison_arrays(data, "same:sex")
    iv = a.intervals
    r = iv[(iv.group == "all") & (iv.metric == "FMR")].iloc[0]
    assert (r.errors, r.comparisons) == (int((s[ref] >= 0.5).sum()), int(ref.sum()))


def test_unknown_attribute_is_refused_before_work():
    data, _ = _data()
    with pytest.raises(InputError, match="'country' is not a grouping attribute"):
        ma.audit(data, fmr=0.1, threshold_impostors="same:country", intervals=False)
