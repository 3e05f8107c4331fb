"""The tables of docs/labelfree.md, "The allowance, measured" and "The alarm": every stored real-like run
(bench/results/labelfree_{reallike,heldout,heldout2}_*.csv, made by bench/labelfree_reallike.py) recomputed from its
per-family rows (:func:`labelfree_reallike.rejoin`) with the estimator's allowance (``robust.EFFECTIVE_SCORES``) and
without it, and with and without the alarm for a group only one family fits. Seconds; prints Markdown.

    .venv/bin/python bench/labelfree_allowance_tables.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from labelfree_reallike import rejoin  # noqa: E402

from matchaudit.labelfree.robust import EFFECTIVE_SCORES  # noqa: E402

warnings.simplefilter("ignore")  # pandas' groupby-apply notes
RUNS = [("reallike_2x20k", "tuning", "2 x 20,000, 6 sets"), ("reallike_4x20k", "tuning", "4 x 20,000, 3 sets"),
        ("reallike_2x100k", "tuning", "2 x 100,000, 3 sets"), ("heldout_2x20k", "held out", "2 x 20,000, 6 sets"),
        ("heldout_2x100k", "held out", "2 x 100,000, 3 sets"), ("heldout_3x20k", "held out", "3 x 20,000, 3 sets"),
        ("heldout_8x10k", "held out", "8 x 10,000, 1 set"), ("heldout_2x1m", "held out", "2 x 10^6, 1 set"),
        ("heldout2_2x20k", "held out (2)", "2 x 20,000, 6 sets"), ("heldout2_2x100k", "held out (2)", "2 x 100,000, 3 sets"),
        ("heldout2_4x20k", "held out (2)", "4 x 20,000, 2 sets")]
def stats(r: pd.DataFrame) -> dict:
    """Per shape: coverage, misses alarmed, groups alarmed, mean FNMR@FMR band width (finite-sample bands)."""
    r = r[r.kind == "finite-sample"]
    out = {}
    for shape, g in r.groupby("shape"):
        m = g[~g.covered]
        out[shape] = (g.covered.mean(), m.alarm.mean() if len(m) else np.nan, g.drop_duplicates(["rep", "group"]).alarm.mean(),
                      (g.upper - g.lower)[g.quantity == "fnmr_at_fmr"].mean())
    return out


def f(x: float) -> str:
    return "-" if np.isnan(x) else f"{x:.2f}"


def main() -> None:
    print("| run | design | coverage with the allowance | without | misses alarmed | FNMR@FMR band width (without) |")
    print("| --- | --- | --- | --- | --- | --- |")
    alarm_rows = []
    for name, kind, design in RUNS:
        d = pd.read_csv(f"bench/results/labelfree_{name}.csv")
        d = d.assign(labels=d["labels"] if "labels" in d else "none")
        w, n, w0 = stats(rejoin(d, 0.001, EFFECTIVE_SCORES)), stats(rejoin(d, 0.001)), stats(rejoin(d, 0.001, EFFECTIVE_SCORES, single_alarm=False))
        shapes = sorted(w)
        print(f"| {' / '.join(shapes)} ({kind}, `labelfree_{name}.csv`) | {design} | " + " / ".join(f(w[s][0]) for s in shapes)
              + " | " + " / ".join(f(n[s][0]) for s in shapes) + " | " + " / ".join(f(w[s][1]) for s in shapes) + " | "
              + " / ".join(f(w[s][3]) for s in shapes) + " (" + " / ".join(f(n[s][3]) for s in shapes) + ") |")
        alarm_rows.append(f"| {' / '.join(shapes)} ({kind}, {design.rsplit(',', 1)[0]}) | " + " / ".join(f"{f(w0[s][1])} -> {f(w[s][1])}" for s in shapes)
                          + " | " + " / ".join(f"{f(w0[s][2])} -> {f(w[s][2])}" for s in shapes) + " |")
    print()
    print("| run | misses alarmed | groups alarmed |")
    print("| --- | --- | --- |")
    print("\n".join(alarm_rows))


if __name__ == "__main__":
    main()
