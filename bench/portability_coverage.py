"""Coverage of each group's own threshold at an FMR target by the percentile interval of the identity bootstrap's
replicate thresholds (#45 item 4; the portability table's ``required_low``/``required_high``).

The truth is exact on both generators used, because their impostor scores do not depend on the identities' own
difficulty: ``vmf`` (bench/generators.py; identity centres uniform on the sphere, so two samples of different
identities are independent uniform directions and the cosine t has ``(t + 1) / 2 ~ Beta((d-1)/2, (d-1)/2)``, d = 32)
and ``tscore`` (impostor score ``0.5 T_4 + s_a + s_b``, the identity effects ``s ~ N(0, 0.3)``: the quantile by
quadrature). The truth of a group's own threshold at FMR ``a`` is the ``1 - a`` quantile of that law: the threshold
that gives FMR ``a`` on a new population of identities like these. Each data set is drawn anew (a new population), its
replicate thresholds counted by the engine pass the audit runs (``plan(view_targets=...)``, double-or-nothing, the
audit's default), and the interval made by the function the audit calls.

    NUMBA_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/portability_coverage.py \
        --datasets 200 --identities 100 --samples 4 --out bench/results/portability_coverage.csv
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats

sys.path.insert(0, str(Path(__file__).parent))
import generators  # noqa: E402

from matchaudit import resampling as rs  # noqa: E402
from matchaudit.engine import build_grid, run  # noqa: E402
from matchaudit.estimators.portability import own_threshold_interval  # noqa: E402

DIM = 32  # bench/generators.py's vmf dimension


def truth(generator: str, alpha: float) -> float:
    """The ``1 - alpha`` quantile of the generator's impostor score law (module doc)."""
    if generator == "vmf":
        half = (DIM - 1) / 2
        return 2 * stats.beta.ppf(1 - alpha, half, half) - 1
    sd = 0.3 * np.sqrt(2)

    def tail(x: float) -> float:  # P(0.5 T4 + N(0, sd) >= x)
        return integrate.quad(lambda z: stats.norm.pdf(z, scale=sd) * stats.t.sf((x - z) / 0.5, 4),
                              -10 * sd, 10 * sd, epsabs=1e-13, limit=200)[0]
    return optimize.brentq(lambda x: tail(x) - alpha, -5, 30, xtol=1e-10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generators", default="vmf,tscore")
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--identities", type=int, default=100)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--targets", default="1e-2,1e-3")
    ap.add_argument("--n-resamples", type=int, default=200)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--out", type=Path, default=Path("bench/results/portability_coverage.csv"))
    a = ap.parse_args()
    targets = [float(x) for x in a.targets.split(",")]
    rows = []
    for gen in a.generators.split(","):
        true = {t: truth(gen, t) for t in targets}
        start = time.time()
        for d in range(a.datasets):
            data = generators.make(gen, a.groups, a.identities, a.samples, seed=10_000 + d)
            c = run(data, rs.SCHEMES["double-or-nothing"](d), a.n_resamples, grid=build_grid(data),
                    view_targets=targets)
            for ti, t in enumerate(targets):
                for v, view in enumerate(("all", *data.group_names)):
                    est, reps = c.view_threshold[0, ti, v], c.view_threshold[1:, ti, v]
                    lo, hi, _ = own_threshold_interval(est, reps, "double-or-nothing", a.level, "two-sided", d)
                    n_imp = int(c.impostor[0, :, :].sum() if v == 0 else c.impostor[0, v - 1, :].sum())
                    rows.append({"generator": gen, "identities": a.identities, "samples": a.samples, "dataset": d,
                                 "target": t, "view": view, "truth": true[t], "estimate": est, "low": lo, "high": hi,
                                 "covered": bool(lo <= true[t] <= hi), "false_matches": t * n_imp})
        print(f"{gen}: {a.datasets} data sets in {time.time() - start:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out, index=False)
    df["group"] = np.where(df.view == "all", "all", "group")
    df["truth_above"] = df.high < df.truth
    summary = df.groupby(["generator", "target", "group"]).agg(
        coverage=("covered", "mean"), n=("covered", "size"), truth_above=("truth_above", "mean"),
        false_matches=("false_matches", "median"), estimate=("estimate", "mean"), truth=("truth", "first"))
    summary["se"] = np.sqrt(summary.coverage * (1 - summary.coverage) / summary.n)
    print(summary.to_string())


if __name__ == "__main__":
    main()
