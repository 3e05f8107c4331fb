"""Coverage of the equalised rate and of the condition differences, and the level of the condition x group interaction
tests, of ``ma.audit_conditions`` (#45 item 3; docs/conditions.md), on a direct score model whose truth is exact.

Model: K identities, half in group A, half in B; C conditions. Identity k has a genuine effect ``u_k ~ N(0, su)`` and
an impostor effect ``v_k ~ N(0, sv)``, shared by all its comparisons in every condition (so conditions are dependent
through the identities). Per identity and condition: ``--genuine`` genuine comparisons scoring ``mu + shift_c + u_k +
e`` and ``--impostor`` impostor comparisons with random partners l scoring ``v_k + v_l + e``, ``e ~ N(0, 1)``. The
groups have the same law (``--gap`` adds ``gap`` to group B's genuine scores under the last condition only: an
interaction, for power). Truth: the threshold at FMR ``a`` on a new population is ``sd_i z_{1-a}``, ``sd_i =
sqrt(2 sv^2 + 1)``; FNMR under condition c is ``Phi((t - mu - shift_c) / sqrt(su^2 + 1))``; the equalised FNMR their
mean; every interaction is 0 without ``--gap``.

    NUMBA_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=src .venv/bin/python bench/conditions_level.py \
        --datasets 200 --out bench/results/conditions_level.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import matchaudit as ma
from matchaudit.estimators.permutation import rejects


def simulate(rng: np.random.Generator, K: int, shifts: np.ndarray, n_gen: int, n_imp: int, mu: float, su: float,
             sv: float, gap: float) -> pd.DataFrame:
    group = np.where(np.arange(K) < K // 2, "A", "B")
    u, v = rng.normal(0, su, K), rng.normal(0, sv, K)
    rows = []
    for c, s in enumerate(shifts):
        k = np.repeat(np.arange(K), n_gen)
        extra = np.where((group[k] == "B") & (c == len(shifts) - 1), gap, 0.0)
        rows.append(pd.DataFrame({"a": k, "b": k, "score": mu + s + u[k] + extra + rng.normal(0, 1, k.size),
                                  "condition": f"c{c}"}))
        k = np.repeat(np.arange(K), n_imp)
        l = (k + rng.integers(1, K, k.size)) % K
        rows.append(pd.DataFrame({"a": k, "b": l, "score": v[k] + v[l] + rng.normal(0, 1, k.size),
                                  "condition": f"c{c}"}))
    t = pd.concat(rows, ignore_index=True)
    t["group_a"], t["group_b"] = group[t.a], group[t.b]
    t["identity_a"], t["identity_b"] = "id" + t.a.astype(str), "id" + t.b.astype(str)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--identities", type=int, default=120)
    ap.add_argument("--genuine", type=int, default=2)
    ap.add_argument("--impostor", type=int, default=6)
    ap.add_argument("--shifts", default="0,-0.5,-1")
    ap.add_argument("--fmr", type=float, default=0.05)
    ap.add_argument("--gap", type=float, default=0.0)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--method", default="double-or-nothing")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    mu, su, sv = 3.5, 0.7, 0.5
    shifts = np.array([float(x) for x in a.shifts.split(",")])
    thr = np.sqrt(2 * sv**2 + 1) * stats.norm.ppf(1 - a.fmr)
    fnmr = stats.norm.cdf((thr - mu - shifts) / np.sqrt(su**2 + 1))
    truth = {("equalised", "c*", "all"): fnmr.mean()}
    truth.update({("difference", f"c{c}", "all"): fnmr[c] - fnmr[0] for c in range(1, shifts.size)})
    out = []
    t0 = time.time()
    for d in range(a.datasets):
        t = simulate(np.random.default_rng([a.seed, d]), a.identities, shifts, a.genuine, a.impostor, mu, su, sv, a.gap)
        data = ma.from_scores(t.score, t.identity_a, t.identity_b, attributes_a={"group": t.group_a},
                              attributes_b={"group": t.group_b}, group_by="group", conditions=t[["condition"]])
        r = ma.audit_conditions(data, fmr=a.fmr, n_resamples=a.B, seed=d, method=a.method)
        for rec in r.records:
            if rec["metric"] != "fnmr":
                continue
            if rec["kind"] in ("equalised", "difference") and rec["group"] == "all":
                true = truth[(rec["kind"], rec["condition"] if rec["kind"] == "difference" else "c*", "all")]
                out.append({"dataset": d, "quantity": f"{rec['kind']} {rec['condition']}", "truth": true,
                            "estimate": rec["estimate"], "covered": rec["low"] <= true <= rec["high"],
                            "p_value": rec.get("p_value")})
            if rec["kind"] == "interaction":
                out.append({"dataset": d, "quantity": f"interaction {rec['condition']}", "truth": 0.0,
                            "estimate": rec["estimate"], "covered": rec["low"] <= 0.0 <= rec["high"],
                            "p_value": rec["p_value"]})
        for test in r.tests:
            if test["metric"] == "fnmr":
                out.append({"dataset": d, "quantity": f"wald {test['test']}", "truth": np.nan,
                            "estimate": test["statistic"], "covered": np.nan, "p_value": test["p_value"]})
        if d % 20 == 19:
            print(f"{d + 1} data sets, {time.time() - t0:.0f} s", flush=True)
    df = pd.DataFrame(out)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(a.out, index=False)
    n = a.datasets
    summary = df.groupby("quantity").agg(truth=("truth", "first"), mean_estimate=("estimate", "mean"),
                                         coverage=("covered", "mean"),
                                         reject_05=("p_value", lambda p: float(np.mean([rejects(x, 0.05) for x in p]))))
    summary["se_coverage"] = np.sqrt(0.95 * 0.05 / n)
    summary["se_reject"] = np.sqrt(0.05 * 0.95 / n)
    print(f"{a.method}, K={a.identities}, shifts={a.shifts}, FMR {a.fmr}, gap {a.gap}, B={a.B}, {n} data sets; true FNMR per "
          f"condition {np.round(fnmr, 4).tolist()}")
    print(summary.to_string())


if __name__ == "__main__":
    main()
