"""The cross-group FMR heat map at many groups: coarser groups pooled from the audit's cells (against audits grouped
by the coarser attributes), the low-count rule, the figure's size and text at 100 and 3 groups, the ordering."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

from matchaudit.errors import InputError
from matchaudit.metrics.cross_groups import (LOW_COUNT_RULE, aggregate_cross_group, heatmap_options, low_count,
                                             low_count_limit)
from matchaudit.plots import figures
from matchaudit.report import html

ATTRS = ["region", "sex", "age"]
KEYS = ("weighting", "kind", "target", "threshold", "group_a", "group_b", "fmr", "errors", "comparisons")


@pytest.fixture(scope="module")
def trials():
    """bench/many_groups.py's trial list, 3 regions x 2 sexes x 2 ages, without any impostor comparison between
    regions R00 and R01 (so those cells, and the R00-R01 cells of every coarser grouping by region, are empty)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from many_groups import trial_list

    df, _ = trial_list(3, n_trials=30_000)
    cross = (df.identity_a != df.identity_b) & (
        ((df.region_a == "R00") & (df.region_b == "R01")) | ((df.region_a == "R01") & (df.region_b == "R00")))
    assert cross.sum() > 0
    return df[~cross].reset_index(drop=True)


def _audit(df, tmp_path, group_by, impostors="all"):
    from matchaudit.data import load_comparisons
    from matchaudit.metrics.evaluate import AuditConfig, evaluate

    path = tmp_path / "t.parquet"
    if not path.exists():
        df.to_parquet(path)
    data = load_comparisons(path, group_by=list(group_by))
    config = AuditConfig(fmr_targets=(1e-1, 1e-2, 1e-3), thresholds=(0.5, 1.7), fnmr_targets=(0.05,),
                         threshold_impostors=impostors)
    return evaluate(data, config).cross_group_fmr


@pytest.mark.parametrize("coarse", [["sex"], ["region"], ["sex", "region"], ["age", "sex"]])
def test_aggregated_cells_equal_an_audit_grouped_by_the_coarser_attributes(trials, tmp_path, coarse):
    """The pooled FMR of a union of cells (summed errors / summed comparisons) is what an audit grouped by the
    coarser attributes counts, record for record, exactly: with threshold_impostors 'all' every threshold (FMR
    targets, FNMR targets, fixed) is the same whatever the grouping. Balanced records are not pooled."""
    fine = _audit(trials, tmp_path, ATTRS)
    assert any(r["comparisons"] == 0 and r["group_a"].startswith("R00") and r["group_b"].startswith("R01")
               for r in fine)  # groups absent from some cells
    direct = [r for r in _audit(trials, tmp_path, coarse) if r["weighting"] == "pooled"]
    pooled = aggregate_cross_group(fine, ATTRS, ",".join(coarse))
    assert [tuple(r[k] for k in KEYS) for r in pooled] == [tuple(r[k] for k in KEYS) for r in direct]
    assert {tuple(r) for r in pooled} == {tuple(r) for r in fine}  # the same fields, in the same order
    assert all(r["weighting"] == "pooled" for r in pooled)
    if "region" in coarse:  # the empty coarse cells are there, with no FMR, as the audit writes them
        empty = [r for r in pooled if {r["group_a"].split("|")[coarse.index("region")],
                                       r["group_b"].split("|")[coarse.index("region")]} == {"R00", "R01"}]
        assert empty and all(r["comparisons"] == 0 and r["errors"] == 0 and r["fmr"] is None for r in empty)
    assert aggregate_cross_group([r for r in fine if r["weighting"] == "balanced"], ATTRS, coarse) == []


def test_aggregation_of_hand_made_records_and_its_refusals():
    """Unordered pairs fold onto one coarse cell whichever side each fine group is on; interval fields of the fine
    cells are not carried into a union (None); a non-attribute is refused naming the parameter."""
    base = {"weighting": "pooled", "kind": "fmr_target", "target": 0.01, "threshold": 1.5, "rule": ">=",
            "threshold_impostors": "all", "alias": "FMR100", "fmr_lower": 0.1, "fmr_upper": 0.2,
            "interval_method": "wilson", "level": 0.95}
    cells = [("A|F", "A|F", 1, 10), ("A|F", "A|M", 2, 20), ("A|F", "B|F", 3, 30), ("A|M", "B|F", 4, 40),
             ("B|F", "B|M", 0, 0), ("A|M", "A|M", 0, 50)]
    recs = [{**base, "group_a": a, "group_b": b, "errors": k, "comparisons": n, "fmr": k / n if n else None}
            for a, b, k, n in cells]
    recs.append({**base, "weighting": "balanced", "group_a": "A|F", "group_b": "A|F", "errors": 1,
                 "comparisons": 10, "fmr": 0.5})
    out = aggregate_cross_group(recs, ["region", "sex"], "sex")
    assert [(r["group_a"], r["group_b"], r["errors"], r["comparisons"]) for r in out] == [
        ("F", "F", 1 + 3, 10 + 30), ("F", "M", 2 + 4 + 0, 20 + 40 + 0), ("M", "M", 0, 50)]
    assert out[0]["fmr"] == 4 / 40 and out[2]["fmr"] == 0.0
    assert all(r["fmr_lower"] is None and r["interval_method"] is None and r["alias"] == "FMR100" for r in out)
    out = aggregate_cross_group(recs, ["region", "sex"], ["region"])
    assert [(r["group_a"], r["group_b"], r["errors"], r["comparisons"]) for r in out] == [
        ("A", "A", 3, 80), ("A", "B", 7, 70), ("B", "B", 0, 0)]
    assert out[2]["fmr"] is None
    for bad in ("age", "sex,sex", ""):
        with pytest.raises(InputError) as err:
            aggregate_cross_group(recs, ["region", "sex"], bad)
        assert err.value.param == "attributes"


def test_low_count_rule_of_three():
    """A cell needs 3/target impostor comparisons; an empty cell is not low-count (it has no FMR at all)."""
    assert low_count(2999, 1e-3) and not low_count(3000, 1e-3) and not low_count(0, 1e-3)
    assert low_count(299, 1e-2) and not low_count(300, 1e-2) and low_count(1, 0.5) and not low_count(6, 0.5)
    assert low_count(10**9, 0.0)  # nothing resolves FMR 0
    np.testing.assert_array_equal(low_count(np.array([0, 1, 29, 30, 31]), 0.1), [False, True, True, False, False])
    assert "3/target" in LOW_COUNT_RULE
    for target in (0.5, 0.3, 0.07, 1e-2, 1e-3, 2e-4, 1e-4, 1e-6):  # the limit the report states is the rule's
        m = low_count_limit(target)
        assert low_count(m - 1, target) and not low_count(m, target)
    assert low_count_limit(1e-3) == 3000 and low_count_limit(1e-4) == 30000 and low_count_limit(0.0) is None


def _grid(seed=0, regions=25):
    """Records of 100 groups (25 regions x 2 sexes x 2 ages, the audit's order: names sorted), every pair a <= b;
    some cells empty, some without false matches, some with few comparisons."""
    rng = np.random.default_rng(seed)
    groups = sorted(f"R{r:02d}|{s}|{a}" for r in range(regions) for s in "FM" for a in ("old", "young"))
    recs = []
    for i, a in enumerate(groups):
        for b in groups[i:]:
            n = int(rng.choice([0, 40, 500, 5000], p=[0.02, 0.38, 0.3, 0.3]))
            k = int(rng.binomial(n, 2e-3 * (5 if a == b else 1)))
            recs.append({"weighting": "pooled", "kind": "fmr_target", "target": 1e-3, "threshold": 2.0,
                         "group_a": a, "group_b": b, "fmr": k / n if n else None, "errors": k, "comparisons": n})
    return groups, recs


@pytest.fixture
def calls(monkeypatch):
    """The per-cell texts and dots the heat map draws."""
    seen = {"text": [], "scatter": []}
    real_text, real_scatter = figures.plt.Axes.text, figures.plt.Axes.scatter

    def text(self, x, y, s, **kw):
        seen["text"].append(s)
        return real_text(self, x, y, s, **kw)

    def scatter(self, x, y, *args, **kw):
        seen["scatter"].append(len(x))
        return real_scatter(self, x, y, *args, **kw)

    monkeypatch.setattr(figures.plt.Axes, "text", text)
    monkeypatch.setattr(figures.plt.Axes, "scatter", scatter)
    return seen


def test_heat_map_of_100_groups_fits_the_page_without_cell_text(tmp_path, calls):
    """At 100 groups the figure was 122 x 102 inches with 10,000 cell texts; now at most the page's width."""
    import matplotlib.image

    groups, recs = _grid()
    marked = [(r["group_a"], r["group_b"]) for r in recs if low_count(r["comparisons"], 1e-3)]
    path = figures.plot_cross_group(recs, 1e-3, tmp_path / "h.png", group_by=ATTRS, marked=marked,
                                    mark_note="too few")
    height, width = matplotlib.image.imread(path).shape[:2]
    assert width <= figures.HEAT_MAP_WIDTH * 130 + 1 and height <= figures.HEAT_MAP_HEIGHT * 130 + 1
    assert calls["text"] == []
    off = sum(1 for a, b in marked if a != b)
    assert calls["scatter"] == [2 * off + len(marked) - off]  # both halves of the symmetric matrix


def test_heat_map_of_3_groups_keeps_the_cell_text_and_dots_the_low_count_cell(tmp_path, calls):
    recs = [{"group_a": a, "group_b": b, "fmr": f, "errors": k, "comparisons": n}
            for a, b, f, k, n in [("F", "F", 0.01, 10, 1000), ("F", "M", 0.0, 0, 20), ("M", "M", 0.02, 40, 2000)]]
    figures.plot_cross_group(recs, 1e-2, tmp_path / "h.png", group_by=["sex"], marked=[("F", "M")],
                             mark_note="fewer than 300")
    assert sorted(calls["text"]) == ["0%", "0%", "1%", "2%"]
    assert calls["scatter"] == [2]


def test_ordering_puts_the_groups_of_one_attribute_value_together():
    """Sorted by the attribute first (numbers by value), then the other attributes in group_by's order; the blocks
    of one value named with their positions; default: the first attribute; names without attributes unchanged."""
    names = [f"R{r}|{s}|{a}" for r in (2, 10, 1) for s in "MF" for a in ("young", "old")]
    random.Random(1).shuffle(names)
    ordered, blocks = figures.order_groups(names, ATTRS, "sex")
    assert sorted(ordered) == sorted(names)
    assert [n.split("|")[1] for n in ordered] == ["F"] * 6 + ["M"] * 6
    assert ordered[:6] == ["R1|F|old", "R1|F|young", "R2|F|old", "R2|F|young", "R10|F|old", "R10|F|young"]
    assert blocks == [("F", 0, 6), ("M", 6, 12)]
    ordered, blocks = figures.order_groups(names, ATTRS)
    assert [b[0] for b in blocks] == ["R1", "R2", "R10"] and all(e - s == 4 for _, s, e in blocks)
    assert ordered[4:8] == ["R2|F|old", "R2|F|young", "R2|M|old", "R2|M|young"]
    assert figures.order_groups(["b", "a"], [], None) == (["b", "a"], [("", 0, 2)])
    with pytest.raises(ValueError, match="not one of the grouping attributes"):
        figures.order_groups(names, ATTRS, "height")


def _results(recs, group_by, weightings=("pooled", "balanced")):
    groups = list(dict.fromkeys(g for r in recs for g in (r["group_a"], r["group_b"])))
    return {"cross_group_fmr": recs, "config": {"weightings": list(weightings)},
            "summary": {"group_by": group_by, "groups": [{"group": g} for g in groups]}}


def test_report_section_states_ordering_aggregation_and_marked_cells():
    """The report's heat map: options checked against group_by, stated in the text with the low-count rule and the
    number of cells it marks; the highest off-diagonal cells listed, the low-count ones after the others."""
    _, recs = _grid()
    res = _results(recs, ATTRS)
    res["_heatmap"] = heatmap_options(res['summary']['group_by'])
    page = html._cross(res, Path("."))
    n_low = sum(1 for r in recs if low_count(r["comparisons"], 1e-3))
    assert "ordered by <b>region</b>, then sex, age" in page and "3/target" in page
    assert f"{n_low:,} of the {sum(1 for r in recs if r['comparisons']):,} cells" in page
    assert "3,000 comparisons" in page and "cells carry no numbers" in page
    table = page[page.index("Highest FMR"):]
    rows = table.split("<tr>")[2:]
    assert len(rows) == html.HEATMAP_TOP and not any("too few" in row for row in rows)  # 500+ comparisons first

    res["_heatmap"] = heatmap_options(res['summary']['group_by'], order="sex", aggregate="region,sex")
    page = html._cross(res, Path("."))
    assert "aggregated to <b>region, sex</b>" in page and "ordered by <b>sex</b>, then region" in page
    assert "cells carry no numbers" in page  # 50 groups

    res["_heatmap"] = heatmap_options(res['summary']['group_by'], aggregate="sex")
    assert "cells carry no numbers" not in html._cross(res, Path("."))  # 2 groups: numbers in the cells

    for kw, param in (({"order": "height"}, "heatmap_order"), ({"order": "region,sex"}, "heatmap_order"),
                      ({"aggregate": "region,height"}, "heatmap_aggregate")):
        with pytest.raises(InputError) as err:
            heatmap_options(res['summary']['group_by'], **kw)
        assert err.value.param == param

    balanced = _results([{**r, "weighting": "balanced"} for r in recs], ATTRS, ("balanced",))
    balanced["_heatmap"] = heatmap_options(balanced['summary']['group_by'], aggregate="sex")
    page = html._cross(balanced, Path("."))
    assert "Not aggregated to sex" in page and "balanced weighting" in page
