"""Many groups' tests read as a summary: per family (metric, operating point, pairs or against the rest) the number
of gaps distinguishable from noise and the extremes, in the library (``Audit.test_summary``) and in the report,
which lists each family's strongest rows instead of 4,950 pairs; each group against the rest through the audit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import matchaudit as ma
from matchaudit.estimators.test_summary import ranked, summarise_tests


def _record(a, b, effect, p, q, metric="fnmr", target=1e-3, comparison="pair", alpha=0.05):
    return {"metric": metric, "kind": "fmr_target", "target": target, "comparison": comparison, "group_a": a,
            "group_b": b, "effect": effect, "pvalue": p, "pvalue_adjusted": p, "qvalue_bh": q,
            "significant": bool(p <= alpha), "alpha": alpha}


def test_families_count_verdicts_and_name_the_extremes():
    recs = [_record("A", "B", 0.10, 0.001, 0.002), _record("A", "C", -0.30, 0.04, 0.03),
            _record("B", "C", 0.02, 0.50, 0.04), _record("B", "D", np.nan, np.nan, np.nan),
            _record("A", "rest", 0.05, 0.01, 0.01, comparison="one-vs-rest"),
            _record("C", "rest", -0.07, 0.02, 0.02, comparison="one-vs-rest"),
            _record("D", "rest", 0.01, 0.9, 0.9, comparison="one-vs-rest"),
            _record("A", "B", 0.001, 0.8, 0.8, metric="fmr")]
    fam = {(f["metric"], f["comparison"]): f for f in summarise_tests(recs)}
    assert set(fam) == {("fnmr", "pair"), ("fnmr", "one-vs-rest"), ("fmr", "pair")}
    pairs = fam["fnmr", "pair"]
    assert (pairs["tests"], pairs["distinguishable"], pairs["discoveries"], pairs["undefined"]) == (4, 2, 3, 1)
    assert pairs["largest"]["group_b"] == "C"  # |-0.30| beats 0.10
    rest = fam["fnmr", "one-vs-rest"]
    assert [r["group_a"] for r in rest["above"]] == ["A"] and [r["group_a"] for r in rest["below"]] == ["C"]
    assert [r["group_b"] for r in ranked(recs[:4])] == ["B", "C", "C", "D"]  # by p, the undefined last


@pytest.fixture(scope="module")
def many():
    """24 groups of 6 to 18 identities, a third of them with spread identities (higher FNMR): 276 pairs."""
    from matchaudit.simulation import GroupSpec, simulate_vmf

    specs = {f"G{g:02d}": GroupSpec(6 + (g % 5) * 3, (25, 60) if g % 3 else (10, 30)) for g in range(24)}
    sim = simulate_vmf(specs, dim=24, samples_per_identity=3, seed=3)
    return ma.from_embeddings(sim.embeddings, sim.samples.identity.values, attributes=sim.samples, group_by="group")


def test_the_audit_tests_each_group_against_the_rest_and_writes_tests_csv(many, tmp_path):
    res = ma.audit(many, fmr=1e-2, measures=ma.MeasureOptions(calibration=False), intervals=False,
                   tests=ma.TestOptions(n_resamples=99, comparisons="rest"))
    t = res.tests
    assert len(t) == 2 * 24 and set(t.comparison) == {"one-vs-rest"} and set(t.group_b) == {"rest"}
    s = res.test_summary
    assert list(s.tests) == [24, 24]
    assert list(s.distinguishable) == [int(t[t.metric == m].significant.sum()) for m in s.metric]
    paths = res.save(tmp_path / "out", figures=False)
    assert (tmp_path / "out" / "tests.csv").is_file() and "tests" in paths
    with pytest.raises(ma.InputError, match="test_comparisons"):
        ma.audit(many, fmr=1e-2, tests=ma.TestOptions(comparisons="others"))


def test_the_report_summarises_many_pairs_and_lists_the_strongest(many, tmp_path):
    from matchaudit.report.html import write_report
    from matchaudit.report.verdicts import ALL_ROWS as _ALL_ROWS, FAMILY_ROWS as _FAMILY_ROWS

    res = ma.audit(many, fmr=1e-2, measures=ma.MeasureOptions(calibration=False), intervals=False,
                   tests=ma.TestOptions(n_resamples=99))
    assert len(res.tests) == 2 * 276 > _ALL_ROWS
    res.save(tmp_path / "out", figures=False)
    html = write_report(tmp_path / "out" / "results.json", tmp_path / "r.html").read_text()
    section = html[html.index("<h2>Group tests"):]
    section = section[:section.index("<h2>", 5)]
    body = section.split("<tbody>")[2]
    assert body.count("<tr>") == 2 * _FAMILY_ROWS and "tests.csv" in section
    fnmr = res.test_summary.set_index("metric").loc["fnmr"]
    reading = html[html.index("<h2>Reading"):html.index("<h2>", html.index("<h2>Reading") + 5)]
    tested = 276 - int(fnmr.undefined)  # pairs too sparse to test are said apart (#43)
    said = re.search(rf"Of the {tested} pairs of groups tested( \([^)]*\))?, (\d+) (gap is|gaps are) distinguishable", reading)
    assert said is not None and int(said.group(2)) == fnmr.distinguishable


def test_too_many_relabellings_stop_the_audit_naming_the_flag(many, tmp_path):
    """Before: every group test was skipped with a warning naming n_resamples, and the audit exited 0."""
    from typer.testing import CliRunner

    from matchaudit.cli import app
    from matchaudit.simulation import write_demo_data

    with pytest.raises(ma.InputError, match="test_resamples 999,999,999 keeps about") as e:
        ma.audit(many, fmr=1e-2, measures=ma.MeasureOptions(calibration=False), intervals=False,
                 tests=ma.TestOptions(n_resamples=999_999_999))
    assert e.value.param == "test_resamples"
    write_demo_data(tmp_path / "data")
    out = CliRunner().invoke(app, ["audit", "--comparisons", str(tmp_path / "data" / "comparisons.csv"),
                                   "--group-by", "group", "--fmr", "1e-2", "--no-intervals", "--tests",
                                   "--test-resamples", "999999999", "--out", str(tmp_path / "o"), "--quiet"])
    assert out.exit_code == 2 and "--test-resamples" in out.output and "Traceback" not in out.output


def test_a_q_value_equal_to_alpha_is_a_discovery():
    """Pins ``summarise_tests``' ``discoveries``: a BH q-value exactly at alpha counts (``q <= alpha``; ``<`` would
    not), one just above does not, and an undefined one never does."""
    recs = [_record("A", "B", 0.1, 0.01, 0.05), _record("A", "C", 0.1, 0.02, 0.050000001),
            _record("B", "C", np.nan, np.nan, np.nan)]
    (fam,) = summarise_tests(recs)
    assert fam["alpha"] == 0.05 and fam["discoveries"] == 1


def test_the_audits_verdicts_are_at_the_tests_alpha():
    """Every group-test record is significant exactly when its max-T p-value is at most ``TestOptions.alpha``, the
    alpha it records (session 44's vocabulary change passed alpha as the confidence level: verdicts stayed at 0.05
    whatever alpha was given, while the records and the report said otherwise)."""
    import matchaudit as ma

    data = ma.simulate(samples_per_identity=4, dim=16, seed=3).as_data()
    between = 0
    for alpha in (0.05, 0.5):
        res = ma.audit(data, fmr=(3e-2, 1e-1), intervals=False, tests=ma.TestOptions(n_resamples=49, seed=3,
                                                                                    alpha=alpha))
        rows = [r for r in res.test_records if r["reason"] is None]
        assert rows and all(r["alpha"] == alpha for r in res.test_records)
        assert all(r["significant"] == (r["pvalue_adjusted"] <= alpha) for r in rows)
        between += sum(0.05 < r["pvalue_adjusted"] <= 0.5 for r in rows)
    assert between  # a row whose verdict the two alphas decide differently
