"""Labelled `audit` vs label-free `estimate` on the demo data set (same-group pairs, labels hidden).

    .venv/bin/python bench/labelfree_demo.py [--impostors-per-genuine 1] [--sampler numpy]

The audit uses every same-group pair of the demo population (exact, labelled, global threshold from
same-group impostors). `estimate` sees all genuine pairs plus a random sample of same-group impostor pairs
(RFW-like protocol), without labels, and then with N_L = 50 and 200 labelled pairs per group. Printed: both
rankings of the groups by FNMR and by FMR at the global threshold (pooled FMR 1e-2), and the band widths.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np

from matchaudit.data import load_samples
from matchaudit.labelfree import estimate
from matchaudit.metrics.evaluate import AuditConfig, evaluate
from matchaudit.simulation import simulate_vmf

TARGET = 1e-2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impostors-per-genuine", type=float, default=1.0)
    ap.add_argument("--sampler", default="numpy")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sim = simulate_vmf(seed=a.seed)
    with tempfile.TemporaryDirectory() as d:
        files = sim.write(d)
        data = load_samples(files.samples, files.embeddings, group_by=("group",))
        audit = evaluate(data, AuditConfig(fmr_targets=(TARGET,), weightings=("pooled",), threshold_impostors="same-group"))
    truth = {p["group"]: p for p in audit.operating_points if p["kind"] == "fmr_target" and p["group"] in sim.samples["group"].values}
    rng = np.random.default_rng(a.seed)
    emb = sim.embeddings.astype(np.float64)
    ident, grp = sim.samples["identity"].to_numpy(), sim.samples["group"].to_numpy()
    s, g, y = [], [], []
    for name in sorted(set(grp)):
        idx = np.flatnonzero(grp == name)
        i, j = np.triu_indices(idx.size, 1)
        gen = ident[idx[i]] == ident[idx[j]]
        imp = np.flatnonzero(~gen)
        keep = np.r_[np.flatnonzero(gen), rng.choice(imp, int(a.impostors_per_genuine * gen.sum()), replace=False)]
        sc = np.einsum("ij,ij->i", emb[idx[i[keep]]], emb[idx[j[keep]]])
        s.append(sc)
        g += [name] * keep.size
        y.append(gen[keep].astype(float))
    s, g, y = np.concatenate(s), np.array(g), np.concatenate(y)
    print("labelled audit (all same-group pairs): " + ", ".join(
        f"{k}: FNMR {v['fnmr']:.4f}, FMR {v['fmr']:.4f}" for k, v in sorted(truth.items())))
    for n_l in (0, 50, 200):
        lab = np.full(s.size, np.nan)
        for name in sorted(set(g)):
            pick = rng.choice(np.flatnonzero(g == name), n_l, replace=False)
            lab[pick] = y[pick]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = estimate(s, g, lab, fmr=(TARGET,), sampler=a.sampler, seed=a.seed)
        res = est.results["population"]
        fn = {e["group"]: e for e in res["fnmr_at_global"]}
        fm = {e["group"]: e for e in res["fmr_at_global"]}
        rank = lambda d, key: sorted(d, key=lambda k: d[k][key])  # noqa: E731
        print(f"N_L = {n_l} per group ({time.perf_counter() - t0:.0f} s): " + ", ".join(
            f"{k}: FNMR {fn[k]['median']:.4f} [{fn[k]['lower']:.4f}, {fn[k]['upper']:.4f}], "
            f"FMR {fm[k]['median']:.4f} [{fm[k]['lower']:.4f}, {fm[k]['upper']:.4f}]" for k in sorted(fn)))
        print(f"  ranking by FNMR: estimate {rank(fn, 'median')} vs audit {rank(truth, 'fnmr')}; "
              f"by FMR: estimate {rank(fm, 'median')} vs audit {rank(truth, 'fmr')}")


if __name__ == "__main__":
    main()
