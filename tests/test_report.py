"""The HTML report: self-contained, every section and figure present, renders in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from matchaudit.cli import app

runner = CliRunner()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(demo_run):
    out = demo_run
    res = runner.invoke(app, ["report", str(out / "results.json")])
    assert res.exit_code == 0, res.output
    return out / "report.html"


def test_report_is_self_contained_with_all_sections(report):
    page = report.read_text()
    assert not re.search(r"(src|href)=['\"]https?://", page)  # nothing fetched from the network
    for heading in ("Data", "Reading", "Operating points", "Group tests", "DET curves", "Fairness measures",
                    "Cross-group FMR", "Reproducibility"):
        assert f"<h2>{heading}" in page, heading
    # two DET figures, the threshold view, the cross-group heat map, the APE and score-distribution figures
    assert page.count("data:image/png;base64,") == 6
    assert re.search(r"\d+(\.\d+)?% \([\d,]+/[\d,]+\)", page)  # rates shown with their counts


def test_reading_uses_the_group_tests(report):
    """The demo's FNMR gaps (B against the others) are read with the audit's max-T adjusted p-values."""
    page = report.read_text()
    reading = page[page.index("<h2>Reading"):page.index("<h2>Operating points")]
    fnmr = [li for li in reading.split("<li>")[1:] if "highest FNMR" in li]
    assert len(fnmr) == 3 and all("is distinguishable from noise at 95% (adjusted p = " in li for li in fnmr)
    tests = page[page.index("<h2>Group tests"):page.index("<h2>DET curves")]
    # the summary (header + one row per family: 4 operating points x 2 rates), then every test: header + 3 FMR
    # targets x 2 rates x 3 pairs + the FNMR target 1e-2 x 2 rates x 3 pairs (24 rows: fewer than the report's 40)
    assert tests.count("<tr>") == (1 + 4 * 2) + (1 + 2 * 9 + 2 * 3) and "max-T" in tests
    assert "not distinguishable" in tests and tests.count("<td class='l'>FNMR 0.01</td>") == 2 + 6
    assert "Of the 3 pairs of groups tested" in reading


def test_report_command_rejects_a_missing_file(tmp_path):
    res = runner.invoke(app, ["report", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "no such results file" in res.output


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium_without_console_errors(report, tmp_path):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *flags, "--window-size=1200,3000", f"--screenshot={shot}", report.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 50_000
    dom = subprocess.run([CHROMIUM, *flags, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120)
    assert "DET curves" in dom.stdout
    assert "CONSOLE(" not in dom.stderr  # chromium logs page console messages (errors included) this way
    images = dom.stdout.count("<img")
    assert images == 6


COMPARE = {"command": "matchaudit compare ...", "version": "x", "result": {
    "records": [
        {"metric": "fnmr_at_fmr", "view": "all", "fmr_target": 1e-3, "model_a": 0.020, "model_b": 0.032,
         "difference": -0.012, "low": -0.020, "high": -0.004, "level": 0.95, "method": "double-or-nothing",
         "n_resamples": 1000, "seed": 0},
        {"metric": "fnmr_at_fmr", "view": "all", "fmr_target": 1e-4, "model_a": 0.05, "model_b": 0.051,
         "difference": -0.001, "low": -0.01, "high": 0.008, "level": 0.95, "method": "double-or-nothing",
         "n_resamples": 1000, "seed": 0},
        {"metric": "fnmr_at_fmr", "view": "B", "fmr_target": 1e-3, "model_a": 0.1, "model_b": 0.12,
         "difference": -0.02, "low": "nan", "high": "nan", "level": 0.95, "method": "double-or-nothing",
         "n_resamples": 1000, "seed": 0}],
    "tests": [], "fmr_targets": [1e-3, 1e-4], "method": "double-or-nothing", "n_resamples": 1000, "seed": 0,
    "details": {"data": {"n_samples": 2000, "n_identities": 200, "n_comparisons": 1999000,
                         "identities_per_group": {"A": 100, "B": 60, "C": 40}}}}}  # the demo's data

ESTIMATE = {"method": "SPE-FR (Chouldechova et al., ECCV 2022), matchaudit re-implementation", "family": "sas",
            "family_description": "sinh-arcsinh", "level": 0.89, "limits": ["exchangeable pairs within a group"],
            "warnings": [], "groups": [{"name": "A", "n_pairs": 499500}, {"name": "B", "n_pairs": 179700},
                                       {"name": "C", "n_pairs": 79800}],  # the demo's same-group comparisons
            "results": {"population": {"note": "parametric", "fnmr_at_fmr": [
                {"target": 1e-3, "group": "A", "median": 0.011, "lower": 0.008, "upper": 0.015, "extrapolated": False},
                {"target": 1e-3, "group": "B", "median": 0.042, "lower": 0.03, "upper": 0.06, "extrapolated": True}]}},
            "selection": {"A": {"used": ["sas", "sas-mix"], "alarm": True,
                                "labels_needed": {"n": 120, "low": 0.2, "high": 0.4},
                                "allowance": {"unlabelled_scores": 28000, "effective_scores": 7000, "spread": 2.0,
                                              "reason": "spread"}},
                          "B": {"used": ["sas"], "alarm": False, "labels_needed": None}}}


def test_report_includes_model_comparison_and_label_free_estimates(report, tmp_path):
    import json

    (tmp_path / "results.json").write_text((report.parent / "results.json").read_text())
    (tmp_path / "compare.json").write_text(json.dumps(COMPARE))  # found beside results.json
    est = tmp_path / "elsewhere.json"
    est.write_text(json.dumps(ESTIMATE))
    res = runner.invoke(app, ["report", str(tmp_path / "results.json"), "--estimate", str(est)])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "report.html").read_text()
    cmp = page[page.index("<h2>Model comparison"):page.index("<h2>Label-free")]
    assert ("Model A's FNMR at FMR 0.001 is lower by 1.2 points, 95% interval [-2, -0.4] points: "
            "distinguishable from noise.") in cmp
    assert "FMR 0.0001 is lower by 0.1 points" in cmp and "not distinguishable from noise" in cmp
    assert cmp.count("<tr>") == 1 + 3 and cmp.count("<li>") == 2  # no sentence for a NaN interval
    lf = page[page.index("<h2>Label-free"):page.index("<h2>Reproducibility")]
    assert "label-free estimates" in lf and "89% band" in lf and "[0.8%, 1.5%]" in lf
    assert "tail extrapolation" in lf and "exchangeable pairs within a group" in lf
    assert ("sas, sas-mix</td><td class=''>yes: see the warnings</td><td class=''>x2: as 7,000 of 28,000 scores</td>"
            "<td class=''>about 120 pairs with scores in [0.2, 0.4]</td>") in lf
    assert "<td class=''>sas</td><td class=''>no</td><td class=''>none</td><td class=''></td>" in lf  # an older file
    # without the files, no such sections; a missing --compare file is an error
    assert "<h2>Model comparison" not in report.read_text() and "<h2>Label-free" not in report.read_text()
    bad = runner.invoke(app, ["report", str(tmp_path / "results.json"), "--compare", str(tmp_path / "no.json")])
    assert bad.exit_code == 2 and "--compare" in bad.output
    assert "Other data" not in page and "Warning" not in res.output


def test_report_checks_that_sections_describe_the_audits_data(report, tmp_path):
    """The report used to merge a compare.json or estimate.json of another data set without a word: a stale one
    beside results.json is now left out, a named one included with the mismatch stated; both warned on stderr."""
    import copy
    import json

    (tmp_path / "results.json").write_text((report.parent / "results.json").read_text())
    stale = copy.deepcopy(COMPARE)
    stale["result"]["details"]["data"]["n_identities"] = 150
    (tmp_path / "compare.json").write_text(json.dumps(stale))
    other = dict(ESTIMATE, groups=[{"name": "A", "n_pairs": 10}, {"name": "B", "n_pairs": 20}])
    (tmp_path / "est.json").write_text(json.dumps(other))
    res = runner.invoke(app, ["report", str(tmp_path / "results.json"), "--estimate", str(tmp_path / "est.json")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Model comparison" not in page
    assert "compare.json left out of the report" in res.output and "n_identities 150 (the audit: 200)" in res.output
    lf = page[page.index("<h2>Label-free"):page.index("<h2>Reproducibility")]
    assert "Other data" in lf and "pairs_per_group" in lf and "est.json" in res.output
    named = runner.invoke(app, ["report", str(tmp_path / "results.json"), "--compare", str(tmp_path / "compare.json")])
    assert named.exit_code == 0 and "Other data" in (tmp_path / "report.html").read_text()


def _demo_doc(report) -> dict:
    """The demo's results.json (three groups, group tests at three FMR targets)."""
    import json

    return json.loads((report.parent / "results.json").read_text())


def test_the_verdict_is_the_results_own_flag_at_p_equal_alpha(report, tmp_path):
    """p = alpha exactly: the library calls it significant (p <= alpha); the report must say so too."""
    import json

    doc = _demo_doc(report)
    for t in doc["tests"]:
        t.update(pvalue_adjusted=0.05, pvalue_maxt=0.05, alpha=0.05, significant=True, reason=None)
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert runner.invoke(app, ["report", str(tmp_path / "results.json")]).exit_code == 0
    page = (tmp_path / "report.html").read_text()
    reading = page[page.index("<h2>Reading"):page.index("<h2>Operating points")]
    assert "is not distinguishable" not in reading and reading.count("is distinguishable from noise") == 6
    tests = page[page.index("<h2>Group tests"):page.index("<h2>DET curves")]
    assert "not distinguishable" not in tests


def test_the_reading_quotes_the_audits_ratio_with_its_zero_policy(report, tmp_path):
    """Under zero_policy upper-bound the audit's max/min ratio is finite; the report quotes it instead of
    dividing the raw rates (which gives 'infinitely many times' for the demo's zero-FNMR group)."""
    import json

    doc = _demo_doc(report)
    w = doc["config"]["weightings"][0]
    for f in doc["fairness"]:
        if f["measure"] == "max_min_ratio" and f["rate"] == "FNMR" and f["weighting"] == w:
            f.update(value=123.0, adjusted_groups=["A"], zero_policy="upper-bound", reason=None)
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert runner.invoke(app, ["report", str(tmp_path / "results.json")]).exit_code == 0
    reading = (tmp_path / "report.html").read_text()
    reading = reading[reading.index("<h2>Reading"):reading.index("<h2>Operating points")]
    fnmr = [li for li in reading.split("<li>")[1:] if "highest FNMR" in li]
    assert fnmr and all("123 times (zero rates of A replaced by upper bounds)" in li for li in fnmr)


def test_the_report_never_writes_into_the_results_folder(report, tmp_path):
    import json
    import stat

    src = tmp_path / "in"
    shutil.copytree(report.parent, src, ignore=shutil.ignore_patterns("report.html", "cross_group_fmr.*", "data"))
    before = sorted(p.name for p in src.iterdir())
    src.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:  # read-only (root ignores the mode, so the listing is compared too)
        res = runner.invoke(app, ["report", str(src / "results.json"), "--out", str(tmp_path / "page.html")])
        assert res.exit_code == 0, res.output
    finally:
        src.chmod(stat.S_IRWXU)
    assert sorted(p.name for p in src.iterdir()) == before
    assert (tmp_path / "page.html").read_text().count("data:image/png;base64,") == 6
    assert json.loads((src / "results.json").read_text())["tests"]


def test_quiet_prints_nothing_like_every_other_command(demo_run, tmp_path):
    """``report --quiet`` was a usage error (every other command takes it)."""
    res = runner.invoke(app, ["report", str(demo_run / "results.json"), "--out", str(tmp_path / "r.html"), "--quiet"])
    assert res.exit_code == 0 and res.output == "" and (tmp_path / "r.html").stat().st_size > 0


def test_a_degenerate_test_record_does_not_crash_the_report(demo_run, tmp_path):
    """#42 item 5: an 18-group audit with --tests crashed the report (`'<' not supported between 'str' and
    'float'` in test_summary.ranked): a degenerate record's p-value was the string "nan" beside numbers. The reader
    now turns the schema's non-finite strings back into floats at the boundary; a group named "nan" stays a name."""
    import json
    import math
    import shutil

    from matchaudit.encoding import decoded
    from matchaudit.report.html import write_report
    from matchaudit.auditing.results_json import load_results
    from matchaudit.encoding import schema

    folder = tmp_path / "run"
    shutil.copytree(demo_run, folder, ignore=shutil.ignore_patterns("data", "report.html", ".matchaudit-*"))
    doc = json.loads((folder / "results.json").read_text())
    assert doc["tests"], "the demo runs the group tests"
    broken = dict(doc["tests"][0], pvalue="nan", pvalue_holm="nan", pvalue_maxt="nan", pvalue_adjusted="nan",
                  qvalue_bh="nan", effect="nan", significant=False)
    doc["tests"] = [broken] + doc["tests"]
    (folder / "results.json").write_text(json.dumps(doc))
    loaded = load_results(folder / "results.json")
    assert isinstance(loaded["tests"][0]["pvalue_adjusted"], float) and math.isnan(loaded["tests"][0]["pvalue_adjusted"])
    page = write_report(folder / "results.json", tmp_path / "r.html").read_text()
    assert "Group tests" in page or "group tests" in page
    named = decoded({"tests": [dict(broken, group_a="nan")]}, schema())
    assert named["tests"][0]["group_a"] == "nan" and math.isnan(named["tests"][0]["effect"])


def test_the_report_says_which_question_each_number_answers(demo_run, tmp_path):
    """#43 item 4: the defaults answer one question (a new population of identities) for every record, and the
    report's first section says so; a run that mixes questions says which number answers which."""
    from matchaudit.report.html import write_report

    page = write_report(demo_run / "results.json", tmp_path / "r.html").read_text()
    first = page[page.index("<h2>Data"):page.index("<h2>", page.index("<h2>Data") + 5)]
    assert "The question every interval and test on this page answers: a new population of identities" in first
    assert "rates at the FMR targets: a new population of identities (double-or-nothing)" in first
    assert "fairness measures: a new population of identities (double-or-nothing)" in first
    assert "group tests: a new population of identities" in first
