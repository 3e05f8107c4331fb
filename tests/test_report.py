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
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep")
    assert runner.invoke(app, ["demo", "--out", str(out), "--quiet"]).exit_code == 0
    res = runner.invoke(app, ["report", str(out / "results.json")])
    assert res.exit_code == 0, res.output
    return out / "report.html"


def test_report_is_self_contained_with_all_sections(report):
    page = report.read_text()
    assert not re.search(r"(src|href)=['\"]https?://", page)  # nothing fetched from the network
    for heading in ("Data", "Reading", "Operating points", "Group tests", "DET curves", "Fairness measures",
                    "Cross-group FMR", "Reproducibility"):
        assert f"<h2>{heading}" in page, heading
    assert page.count("data:image/png;base64,") == 3  # two DET figures and the cross-group heat map
    assert re.search(r"\d+(\.\d+)?% \([\d,]+/[\d,]+\)", page)  # rates shown with their counts


def test_reading_uses_the_group_tests(report):
    """The demo's FNMR gaps (B against the others) are read with the audit's max-T adjusted p-values."""
    page = report.read_text()
    reading = page[page.index("<h2>Reading"):page.index("<h2>Operating points")]
    fnmr = [li for li in reading.split("<li>")[1:] if "highest FNMR" in li]
    assert len(fnmr) == 3 and all("is distinguishable from noise at 95% (adjusted p = " in li for li in fnmr)
    tests = page[page.index("<h2>Group tests"):page.index("<h2>DET curves")]
    assert tests.count("<tr>") == 1 + 9 and "max-T" in tests and "not distinguishable" in tests


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
    assert images == 3
