"""Real-like recovery of the label-free estimate (#44 item 3): coverage of the default (family-robust) band and of
each family's band on score shapes that resemble a deep model's (:mod:`reallike`), with the alarm rate when a band
misses.

Per replication: ``--groups`` groups of ``--n`` pairs each (match shares cycling through ``--pis``, difficulty rising
from 1 to ``--hard`` across the groups), ``estimate(family="auto")`` with the NumPy sampler; the truth is counted on
the pairs at hand with their labels under the estimate's rule (FNMR at each FMR target per group; FMR and FNMR per
group at the global threshold of pooled FMR). A quantity is covered when the truth lies in the band; a miss is
alarmed when the estimate raised an alarm for that group (families that fit disagree, or none fits:
``selection[group]["alarm"]``) or its tail check fired for the reference family.

    .venv/bin/python bench/labelfree_reallike.py --shapes cosine,shoulder,embedding,llr --reps 10 --n 20000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
import reallike  # noqa: E402

from matchaudit.labelfree import estimate, robust  # noqa: E402
from matchaudit.labelfree.api import NotConverged  # noqa: E402
from matchaudit.labelfree.curves import empirical_at_fmr, rates_at  # noqa: E402

TARGETS = (1e-2, 1e-3)


def truth(s: np.ndarray, y: np.ndarray, g: np.ndarray, names: list[str]) -> dict:
    """Counted rates: (quantity, target, group) -> value."""
    out = {}
    a = np.asarray(TARGETS)
    for n in names:
        m = g == n
        _, _, fnmr = empirical_at_fmr(s[m], y[m][None], a)
        for t, v in zip(TARGETS, fnmr[0]):
            out[("fnmr_at_fmr", t, n)] = float(v)
    gt, _, _ = empirical_at_fmr(s, y[None], a)
    for t, thr in zip(TARGETS, gt[0]):
        for n in names:
            m = g == n
            fmr, fnmr = rates_at(s[m], y[m][None], np.array([thr]))
            out[("fmr_at_global", t, n)] = float(np.ravel(fmr)[0])
            out[("fnmr_at_global", t, n)] = float(np.ravel(fnmr)[0])
    return out


def one(job: dict) -> list[dict]:
    rng = np.random.default_rng([job["rep"], reallike.SHAPES.index(job["shape"]), job["groups"], job["n"]])
    G = job["groups"]
    names = [chr(ord("A") + i) for i in range(G)]
    parts = [reallike.draw(job["shape"], job["n"], job["pis"][i % len(job["pis"])],
                           1.0 + (job["hard"] - 1.0) * i / max(G - 1, 1), rng) for i in range(G)]
    s = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    g = np.repeat(names, [p[0].size for p in parts])
    true = truth(s, y, g, names)
    base = {k: job[k] for k in ("shape", "groups", "n", "rep")}
    rows, est = fit(s, g, None, job, {**base, "labels": "none"}, true)
    for spec in job["labels"]:  # labelled pairs where the estimate advised (alarmed groups), or anywhere
        if est is None:
            break
        where, k = spec.split(":")
        y_l = np.full(s.size, np.nan)
        lab_rng = np.random.default_rng([job["rep"], int(k), where == "random"])
        for n in names:
            adv = est.selection[n]["labels_needed"]
            if adv is None:
                continue
            m = (g == n) & ((s >= adv["low"]) & (s <= adv["high"]) if where == "advised" else np.ones(s.size, bool))
            pick = lab_rng.choice(np.flatnonzero(m), min(int(k), int(m.sum())), replace=False)
            y_l[pick] = y[pick]
        rows += fit(s, g, y_l, job, {**base, "labels": spec}, true)[0]
    return rows


def fit(s, g, labels, job: dict, base: dict, true: dict) -> tuple[list[dict], object]:
    """One robust estimate and its rows (every family, both kinds, every quantity)."""
    t0 = time.time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = estimate(s, g, labels, fmr=TARGETS, sampler="numpy", chains=job["chains"], warmup=job["warmup"],
                           draws=job["draws"], seed=job["rep"], effective_scores=job.get("effective_scores",
                                                                                          robust.EFFECTIVE_SCORES))
    except NotConverged as e:
        return [{**base, "family": "none converged", "error": str(e)[:200]}], None
    seconds = time.time() - t0
    rows = []
    for fam, e in (("robust", est), *est.by_family.items()):
        for kind in ("population", "finite-sample"):
            for q in ("fnmr_at_fmr", "fmr_at_global", "fnmr_at_global"):
                for entry in e.results[kind][q]:
                    n = entry["group"]
                    sel = est.selection[n]
                    tv = true[(q, entry["target"], n)]
                    rows.append({**base, "family": fam, "kind": kind, "quantity": q, "target": entry["target"],
                                 "group": n, "truth": tv, "median": entry["median"], "lower": entry["lower"],
                                 "upper": entry["upper"], "covered": entry["lower"] <= tv <= entry["upper"],
                                 "fits": fam == "robust" or fam in sel["fitting"],
                                 "alarm": sel["alarm"], "tail_alarm": bool(e.ppc[n]["tail"]["alarm"]),
                                 "advised": (sel["labels_needed"] or {}).get("n"), "seconds": seconds,
                                 "ks_p": e.ppc[n]["ks_pvalue"], "tail_p": e.ppc[n]["tail"]["pvalue"],
                                 "rhat": e.groups[[x.name for x in e.groups].index(n)].diagnostics["max"]["rhat"]})
    return rows, est


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    ok = df[df["family"] != "none converged"]
    ok = ok if "labels" in ok else ok.assign(labels="none")
    rows = []
    for (shape, labels, fam, kind), d in ok.groupby(["shape", "labels", "family", "kind"], sort=False):
        miss = d[~d["covered"].astype(bool)]
        rows.append({"shape": shape, "labels": labels, "family": fam, "kind": kind, "quantities": len(d),
                     "coverage": d["covered"].mean(),
                     "coverage FNMR@FMR": d.loc[d["quantity"] == "fnmr_at_fmr", "covered"].mean(),
                     "coverage FMR at global": d.loc[d["quantity"] == "fmr_at_global", "covered"].mean(),
                     "misses alarmed": (miss["alarm"].astype(bool) | miss["tail_alarm"].astype(bool)).mean()
                     if len(miss) else float("nan"),
                     "groups alarmed": d.drop_duplicates(["rep", "group"])["alarm"].mean(),
                     "mean width FNMR@FMR": (d["upper"] - d["lower"])[d["quantity"] == "fnmr_at_fmr"].mean()})
    return pd.DataFrame(rows)


def rejoin(df: pd.DataFrame, misfit: float, effective: int | None = None, single_alarm: bool = True) -> pd.DataFrame:
    """The robust rows the estimator would give if a family were joined when both its check p-values are at least
    ``misfit`` (0: every family), recomputed from the per-family rows (the union of their bands; the alarm: their
    bands of some rate in the group do not overlap, a joined family's chains disagree, none fits or only one): how the
    joining rule was chosen (docs/labelfree.md). At the estimator's own floor it reproduces its robust rows
    exactly (checked on the 2 x 20,000 run at 0.01: every band end and alarm). ``effective``: each family's band
    first spread by the misspecification allowance at that many scores (``robust.allowance``, applied to the band's
    ends and median as the estimator applies it to the draws: the same band up to the quantiles' interpolation);
    the alarm stays on the unspread bands, as in the estimator. ``single_alarm=False``: without the alarm for a
    group only one family fits (how that rule was measured)."""
    fam = df[~df["family"].isin(["robust", "none converged"])].copy()
    if effective is not None:  # runs without labels: every group's n pairs unlabelled
        f = robust.allowance(fam["n"].to_numpy(), np.zeros(len(fam)), effective)
        ends = np.stack([fam[c].to_numpy(float) for c in ("lower", "median", "upper")])
        rate = fam["quantity"].ne("threshold_at_fmr").to_numpy()
        wide = np.where(rate, robust.spread(ends, f, True), robust.spread(ends, f, False))
        fam = fam.assign(wide_lower=wide[0], wide_upper=wide[2])
    fam["joined"] = (fam["ks_p"] >= misfit) & (fam["tail_p"] >= misfit)
    unit = ["shape", "labels", "rep", "group"]
    none = fam.groupby(unit)["joined"].transform("any")
    fitting = fam[fam["joined"]].groupby(unit)["family"].nunique()
    alone = pd.Series(fam.set_index(unit).index.isin(fitting[fitting == 1].index), index=fam.index)  # one fits: an alarm
    fam["joined"] |= ~none
    used = fam[fam["joined"]]
    keys = unit + ["kind", "quantity", "target"]
    lo, hi = ("wide_lower", "wide_upper") if effective is not None else ("lower", "upper")
    band = used.groupby(keys).agg(lower=(lo, "min"), upper=(hi, "max"), median=("median", "median"),
                                  truth=("truth", "first")).reset_index()
    apart = used.groupby(keys).apply(lambda d: d["lower"].max() > d["upper"].min()).rename("apart").reset_index()
    alarm = apart.groupby(unit)["apart"].any() | used.groupby(unit)["rhat"].max().ge(1.2) | ~none.groupby(
        [fam[k] for k in unit]).first() | (alone.groupby([fam[k] for k in unit]).first() & single_alarm)
    band = band.merge(alarm.rename("alarm").reset_index(), on=unit)
    band["covered"] = (band["lower"] <= band["truth"]) & (band["truth"] <= band["upper"])
    name = f"joined at p >= {misfit:g}" + (f", allowance {effective:,}" if effective is not None else "")
    return band.assign(family=name, tail_alarm=False)


def markdown(df: pd.DataFrame) -> str:
    """A Markdown table (numbers to 3 decimals), without the optional ``tabulate``."""
    cell = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(reallike.SHAPES))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--pis", default="0.05,0.2")
    ap.add_argument("--hard", type=float, default=1.5)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1500)
    ap.add_argument("--draws", type=int, default=1500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--labels", default="", help="after the unlabelled fit, refit with labelled pairs: "
                    "advised:K (K pairs at random in the range the estimate advised, per alarmed group) or random:K "
                    "(K at random in each alarmed group), comma-separated")
    ap.add_argument("--families", default="robust", help="rows of the summary: robust, or all")
    ap.add_argument("--rejoin", default="", help="instead of fitting: read --out and print the robust rows under "
                    "each joining rule (comma-separated check p-value floors, e.g. 0.05,0.001,0)")
    ap.add_argument("--allowance", default="", help="with --rejoin: also each misspecification allowance "
                    "(comma-separated effective scores, 'none' for none) at the estimator's floor")
    ap.add_argument("--effective-scores", default=str(robust.EFFECTIVE_SCORES), help="the estimate's allowance "
                    "(robust.EFFECTIVE_SCORES; 'none' for none)")
    ap.add_argument("--out", default="bench/results/labelfree_reallike.csv")
    a = ap.parse_args()
    if a.rejoin:
        df = pd.read_csv(a.out)
        lab = df["labels"].iloc[0] if "labels" in df else "none"
        for floor in (float(x) for x in a.rejoin.split(",")):
            print(f"joined unless a check's p < {floor:g}:")
            print(markdown(summarise(rejoin(df, floor).assign(labels=lab))))
        for eff in (x for x in a.allowance.split(",") if x):
            effective = None if eff == "none" else int(eff)
            print(f"joined unless a check's p < {robust.MISFIT:g}, allowance {eff}:")
            print(markdown(summarise(rejoin(df, robust.MISFIT, effective).assign(labels=lab))))
        return
    pis = [float(x) for x in a.pis.split(",")]
    jobs = [{"shape": sh, "rep": r, "groups": a.groups, "n": a.n, "pis": pis, "hard": a.hard, "chains": a.chains,
             "warmup": a.warmup, "draws": a.draws, "labels": [x for x in a.labels.split(",") if x],
             "effective_scores": None if a.effective_scores == "none" else int(a.effective_scores)}
            for sh in a.shapes.split(",") for r in range(a.reps)]
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as pool:
        rows = [r for part in pool.map(one, jobs) for r in part]
    df = pd.DataFrame(rows)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out, index=False)
    summary = summarise(df if a.families == "all" else df[df["family"].isin(["robust", "none converged"])])
    print(json.dumps(vars(a)), f"{time.time() - t0:.0f} s")
    print("not converged:", int((df["family"] == "none converged").sum()), "of", len(jobs))
    print(markdown(summary))


if __name__ == "__main__":
    main()
