"""How the report reads (#15 item 10): one number format, reasons instead of "inf [nan, nan]", a heat map and
DET legend that say what they cannot draw, labels for names no font covers, a page that fits a phone."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from matchaudit.cli import app
from matchaudit.formatting import fmt, interval, with_counts
from matchaudit.plots import det, figures

runner = CliRunner()


@pytest.mark.parametrize("args, expected", [
    ((0.0123, "rate"), "1.23%"), ((1.37e-43, "rate"), "< 0.0001%"), ((0.0, "rate"), "0%"),
    ((float("nan"), "rate"), "n/a"), ((float("inf"), "plain"), "∞"), ((2.5e-17, "plain"), "< 0.0001"), ((-2.5e-17, "plain"), "> -0.0001"), ((3e9, "plain"), "3e+09"),
    ((1646.3, "plain"), "1,646"), ((209.33, "plain"), "209"), ((0.00000469, "rate"), "0.000469%"),
    ((-0.012, "points"), "-1.2 points"), ((0.00004, "p"), "< 0.0001"), (("inf", "plain"), "∞"),
])
def test_one_number_format(args, expected):
    """Label-free values used to print as "1.37e-41%", a normalized uncertainty as "2.52e-17"."""
    assert fmt(*args) == expected


@pytest.mark.parametrize("x, expected", [
    (0.9999999853, "0.99999999"), (-0.99999999, "-0.99999999"), (1e308, "1e+308"), (-705054050671.3, "-7.0505e+11"),
    (0.11733, "0.11733"), (1.0, "1"), (1e-7, "1e-07"), (1646.3, "1646.3"), (float("nan"), "n/a"),
])
def test_thresholds_never_round_onto_another_number(x, expected):
    """C3: console thresholds read "1" for 0.9999999853 and 309 digits for 1e308."""
    from matchaudit.formatting import threshold

    assert threshold(x) == expected


def test_intervals_and_counts_read_the_same_everywhere():
    assert interval(-0.02, -0.004, "points") == "[-2, -0.4] points"
    assert interval(5.95e-165, 0.02, "rate") == "[< 0.0001%, 2%]"
    assert interval(float("nan"), 1.0, "plain") == "undefined"
    assert fmt(0.012, "points", sign=True) == "+1.2 points" and with_counts(0.021, 767, 36520) == "2.1% (767/36,520)"
    # an identity-balanced rate is not k/n (#19: "1% (3,481/275,368)" read as 1.26%): the counts are marked raw
    assert with_counts(0.01, 3481, 275368, "balanced") == "1% (identity-balanced; raw 3,481/275,368)"


def test_balanced_rows_of_the_report_mark_their_counts_raw(tmp_path):
    import matchaudit as ma
    from matchaudit.report.html import write_report

    data = ma.simulate(samples_per_identity=4, dim=32, seed=5).as_data()
    ma.audit(data, fmr=1e-2, measures=ma.MeasureOptions(calibration=False),
             intervals=False).save(tmp_path / "o", figures=False)
    html = write_report(tmp_path / "o" / "results.json", tmp_path / "r.html").read_text()
    assert "identity-balanced; raw " in html


@pytest.fixture(scope="module")
def zero_groups(tmp_path_factory):
    """Two groups, one without any error (genuine scores ~1, impostors ~0), one of them named in CJK."""
    d = tmp_path_factory.mktemp("zero")
    rng = np.random.default_rng(3)
    s = pd.DataFrame([(f"{k}_{i}", k, "北京" if k % 2 else "Zürich") for k in range(80) for i in range(4)],
                     columns=["sample_id", "identity", "group"])
    emb = np.zeros((len(s), 96), np.float32)
    emb[np.arange(len(s)), s.identity.to_numpy()] = 1.0
    emb += np.where(s.group.to_numpy() == "北京", 0.5, 0.05)[:, None] * rng.normal(size=emb.shape).astype(np.float32)
    s.to_parquet(d / "samples.parquet", index=False)
    np.save(d / "embeddings.npy", emb)
    res = runner.invoke(app, ["audit", "--samples", str(d / "samples.parquet"), "--embeddings", str(d / "embeddings.npy"),
                              "--group-by", "group", "--fmr", "1e-2,1e-3", "--n-resamples", "100", "--out", str(d / "o"),
                              "--quiet"])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["report", str(d / "o" / "results.json")]).exit_code == 0
    return d / "o"


def test_fairness_table_gives_reasons_and_units(zero_groups):
    """The fairness table used to show "inf [nan, nan]" without a reason and differences as bare fractions."""
    page = (zero_groups / "report.html").read_text()
    fair = page[page.index("<h2>Fairness"):page.index("<h2>Normalized")]
    assert "[nan" not in fair and ">inf" not in fair and ">nan" not in fair
    assert "∞<sup>1</sup>" in fair and "zero observed rate in Zürich" in fair  # the footnote says why
    assert "] points" in fair  # the max-min difference and its interval in percentage points


def test_zero_false_matches_read_as_an_upper_bound(zero_groups):
    """M8: "0% (0/2,448) [0%, 33.3%]" beside a group's 26.6% read as if the error-free group could be worse: a group
    without a false match gets "≤ bound (none seen; ...)", never a two-sided interval."""
    page = (zero_groups / "report.html").read_text()
    ops = page[page.index("<h2>Operating points"):page.index("<h2>", page.index("<h2>Operating points") + 5)]
    assert "(none seen; assumption-free)" in ops and "if identity pairs are independent‡" in ops
    assert "FMR [0%," not in ops


def test_measure_intervals_stay_within_what_the_measure_can_take(zero_groups):
    """A max-min difference of rates read "96.7 points [90.8, 102]": intervals are clipped to each measure's range."""
    doc = json.loads((zero_groups / "results.json").read_text())
    for r in doc["intervals"]:
        measure = r["metric"].split(":")[-1]
        lo, hi = (float(r[k]) for k in ("low", "high"))
        if measure in ("max_min_difference", "gini", "fdr", "garbe") and not math.isnan(lo):
            assert 0 <= lo <= hi <= 1, r
        if measure in ("max_min_ratio", "max_geomean_ratio", "inequity_rate") and not math.isnan(lo):
            assert lo >= 1, r


def test_page_fits_a_narrow_screen(zero_groups):
    page = (zero_groups / "report.html").read_text()
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in page
    assert page.count("<table>") == page.count("<div class='scroll'><table>") > 0
    assert "Noto Sans CJK" in page  # a font stack that covers CJK names where the reader's system has one


def test_names_no_font_draws_get_labels_and_a_key(monkeypatch):
    """CJK group names used to render as boxes in the figures: they get G<k> labels, keyed in the caption."""
    monkeypatch.setattr(figures, "_covered", lambda: frozenset(map(ord, "allZürich ")))
    assert figures.figure_labels(["all", "Zürich", "北京"]) == ["all", "Zürich", "G2"]
    assert figures.figure_labels(["Zürich", "北京"]) == ["Zürich", "G2"]  # the same label in every figure
    assert figures.label_key(["all", "Zürich", "北京"]) == "G2 = 北京"
    long = "x" * 5000  # C6: its legend covered the DET
    assert figures.figure_labels(["all", "Zürich", long]) == ["all", "Zürich", "G2"]


def test_det_legend_says_why_a_curve_is_not_drawn():
    """The DET legend listed groups whose curve never appears (no errors: below the log axis)."""
    fmr = np.array([1e-3, 1e-2, 1e-1, 0.5])
    assert det._absent({"fmr": fmr, "fnmr": np.zeros(4)}, 1e-6) == ": no FNMR errors, off the log scale"
    assert det._absent({"fmr": fmr, "fnmr": np.full(4, 5e-5)}, 1e-6) == ": FNMR below 0.01%, not drawn"
    assert det._absent({"fmr": fmr, "fnmr": np.full(4, 0.2)}, 1e-6) == ""


def test_heat_map_marks_zero_cells_and_picks_legible_text(tmp_path, monkeypatch):
    """Zero-FMR cells used to be blank white, text white on yellow, the scale in unlabeled log10 units."""
    texts = []
    real = figures.plt.Axes.text

    def spy(self, x, y, s, **kw):
        texts.append((s, kw.get("color")))
        return real(self, x, y, s, **kw)

    monkeypatch.setattr(figures.plt.Axes, "text", spy)
    recs = [{"group_a": "A", "group_b": "A", "fmr": 0.0}, {"group_a": "A", "group_b": "B", "fmr": 1e-4},
            {"group_a": "B", "group_b": "B", "fmr": 2e-2}]
    figures.plot_cross_group(recs, 1e-3, tmp_path / "h.png")
    cells = dict(texts)
    assert cells["0%"] == "black" and cells["2%"] == "black" and cells["0.01%"] == "white"  # yellow top, purple bottom
    assert (tmp_path / "h.svg").exists()  # for papers; the report's page asks for the PNG alone:
    figures.plot_cross_group(recs, 1e-3, tmp_path / "page" / "h.png", svg=False)
    assert [f.name for f in (tmp_path / "page").iterdir()] == ["h.png"]


def test_many_groups_get_distinct_curve_styles_and_one_band(tmp_path, monkeypatch):
    """#19: with more than 10 groups the DET reused colours (C10 = C0) and shaded 11 overlapping bands."""
    import matplotlib.pyplot as plt

    from matchaudit.plots import det
    from matchaudit.plots.figures import curve_styles

    for n in (3, 11, 18, 40):
        styles = curve_styles(n)
        assert len(set(map(str, styles))) == n
    fmr = np.geomspace(1e-4, 0.5, 20)
    curves = [{"group": "all" if g == 0 else f"G{g}", "threshold": -np.log(fmr), "fmr": fmr,
               "fnmr": np.clip(0.05 * (1 + g / 20) * fmr ** -0.2, 0, 1)} for g in range(13)]
    bands = [{"group": c["group"], "fmr": fmr, "lower": c["fnmr"] * 0.8, "upper": c["fnmr"] * 1.2} for c in curves]
    shaded = []
    real = plt.Axes.fill_between
    monkeypatch.setattr(plt.Axes, "fill_between", lambda self, x, *a, **k: shaded.append(len(x)) or real(self, x, *a, **k))
    det.plot_det(curves, [], [], "t", tmp_path / "d.png", bands=bands)
    assert shaded.count(len(fmr)) == 1  # the overall curve's band only
    shaded.clear()
    det.plot_det(curves[:det.BANDS_MAX], [], [], "t", tmp_path / "e.png", bands=bands)
    assert shaded.count(len(fmr)) == det.BANDS_MAX


def test_tight_lays_out_as_tight_layout_and_leaves_no_engine(tmp_path):
    """``figures.tight`` places the axes where ``fig.tight_layout()`` does at the PNG's resolution (the same file to
    the byte) without the placeholder layout engine that call leaves, which makes every ``savefig`` draw the figure
    twice."""
    import matplotlib.pyplot as plt

    def drawn(lay_out) -> tuple[plt.Figure, bytes]:
        fig, ax = plt.subplots(figsize=(5, 3), dpi=figures.DPI)
        ax.plot([1e-4, 1e-2, 1], [0.3, 0.1, 0.01])
        ax.set_yscale("log")
        ax.set_ylabel("a long label that tight layout makes room for")
        ax.set_title("title")
        lay_out(fig)
        fig.savefig(tmp_path / "f.png", dpi=60)
        plt.close(fig)
        return fig, (tmp_path / "f.png").read_bytes()

    fig, ours = drawn(figures.tight)
    reference_fig, reference = drawn(lambda f: f.tight_layout())
    plain_fig, plain = drawn(lambda f: None)
    assert fig.get_layout_engine() is None and reference_fig.get_layout_engine() is not None
    assert ours == reference and ours != plain
    assert fig.subplotpars.left > plain_fig.subplotpars.left
    fig, _ = plt.subplots()
    figures.tight(fig)
    assert fig.dpi == figures.DPI
    plt.close(fig)


def test_one_gap_is_said_in_the_singular():
    """C7: "1 gaps are distinguishable", "1 rows fewer"."""
    from matchaudit.report.verdicts import family_words as _family_words

    said = _family_words({"comparison": "pairs", "metric": "fnmr", "tests": 3, "distinguishable": 1,
                          "discoveries": 1, "alpha": 0.05})
    assert "1 gap is distinguishable" in said and "1 is a discovery" in said


def test_score_figures_of_many_groups_put_the_legend_beside_and_keep_colours_distinct(tmp_path):
    """Hostile run: with 30 groups the score-distribution legend ran off the figure and colours repeated every 10
    groups. The legend now goes beside the axes (the figure widens), each group its own colour."""
    from matchaudit.estimators.distributions import DistributionResult, Histogram
    from matchaudit.plots.score_figures import distributions_figure

    edges = np.linspace(-1, 1, 21)
    hist = tuple(Histogram(f"g{k:02d}", np.full(20, 0.5), np.full(20, 0.5)) for k in range(30))
    seen = []
    real = figures.plt.Axes.plot
    import unittest.mock as mock

    def spy(self, *a, **k):
        seen.append(k.get("color"))
        return real(self, *a, **k)
    with mock.patch.object(figures.plt.Axes, "plot", spy):
        wide = distributions_figure(DistributionResult((), edges, hist, "double-or-nothing", 0.95, 40, 0), tmp_path / "w.png")
    narrow = distributions_figure(DistributionResult((), edges, hist[:3], "double-or-nothing", 0.95, 40, 0), tmp_path / "n.png")
    assert figures.plt.imread(wide).shape[1] > 1.3 * figures.plt.imread(narrow).shape[1]
    assert len({str(c) for c in seen}) == 30
