"""The whole CLI job side by side with the public cimat package, on the same files, in one run.

For each K: K identities x 5 samples, d = 128 (the reference job's data), targets FMR 1e-3 and 1e-2, B = 100.
cimat 0.1.2 (its README's job: cosine scores, Wilson intervals with the plug-in variance at the thresholds of the
targets, 100 double-or-nothing replicates and the percentile FNMR@FMR intervals) runs in its own environment
(``--cimat-python``: cimat needs NumPy < 2; make one with ``python3 -m venv /tmp/cimat && /tmp/cimat/bin/pip
install cimat==0.1.2``). matchaudit runs as a user runs it, a fresh ``matchaudit audit`` process per run, two ways:

* ``cimat's job``: ``--ci-method wilson,double-or-nothing --threshold T1,T2 --weighting pooled --no-calibration
  --no-figures`` (the same intervals: Wilson at the targets' thresholds, double-or-nothing at the targets);
* ``full audit``: the same plus everything an audit does by default (identity-balanced rows, DET bands, EER, AUC,
  minDCF, calibration and score distributions with intervals, figures).

"First run" is the first audit after a fresh install (a new Numba cache filled by ``python -m matchaudit.warmup``,
as ``make demo`` does); "second run" the next one. Runs interleave (cimat, then each matchaudit run), wall clock;
then the same job as one ``matchaudit.audit`` call in this process (data loaded, best of 5 after a warm-up). Then a
profile of one second run of each matchaudit job by phase (in-process timers around the library's calls;
start-up measured as a fresh ``import`` of the command's modules) and the floor any Python command with these
libraries pays (interpreter + NumPy + pandas + PyArrow + Numba imports), then with one call of a cached Numba kernel
(the first call in a process sets up Numba's typing and lowering, cached or not); and what a command line reading
Parquet pays with neither pandas nor Numba (Typer, Rich, NumPy, PyArrow), beside ``matchaudit audit --help``.

    .venv/bin/python bench/cli_vs_cimat.py --K 200 400 800 --cimat-python /tmp/cimat/bin/python [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

TARGETS = (1e-3, 1e-2)
B = 100
CIMAT_JOB = r"""
import sys, numpy as np
from cimat import MTData, UncertaintyEstimator
from sklearn import metrics
emb = np.load(sys.argv[1]).astype(np.float64)
ident = np.loadtxt(sys.argv[2], dtype=np.int64)
df = {}
for i, (k, e) in enumerate(zip(ident, emb)):
    df.setdefault(int(k), {})[i] = e
mt = MTData(df)
mt.generate_similarity_scores()
uq = UncertaintyEstimator(scores=mt.similarity_scores)
targets = [1e-3, 1e-2]
s, l = uq.gather_scores()
fpr, tpr, th = metrics.roc_curve(l, s, drop_intermediate=False)
wilson = [uq.get_binerror_ci(threshold=th[np.searchsorted(fpr, a, side="right") - 1]) for a in targets]
uq.run_bootstrap(B=100)
ci, ci_auc = uq.get_roc_ci(target_fpr=targets)
print("FNMR@FMR double-or-nothing", (1 - ci[::-1]).round(4).tolist(), "Wilson (FNMR, FMR)", wilson)
"""
FLOOR = "import numpy, pandas, pyarrow.parquet, numba"
STACK = "import typer, rich.progress, numpy, pyarrow.parquet"  # what any command line reading Parquet needs
KERNEL = "import numba\n@numba.njit(cache=True)\ndef one(x):\n    return x.sum()\n"  # a module with one cached kernel
PHASES = r"""
import sys, time, importlib
t0 = time.perf_counter()
from matchaudit.cli import app
import matchaudit.auditing, matchaudit.data, matchaudit.auditing.results_json
T = {"start-up: imports": time.perf_counter() - t0}
def wrap(mod, attr, label):
    owner = importlib.import_module(mod)
    *path, name = attr.split(".")
    for p in path:
        owner = getattr(owner, p)
    f = getattr(owner, name)
    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, timed)
for mod, attr, label in [
        ("matchaudit.data", "load_samples", "load and validate"),
        ("matchaudit.auditing", "evaluate", "exact metrics (DET, EER, AUC, minDCF, thresholds)"),
        ("matchaudit.auditing", "compute_intervals", "intervals: Wilson + bootstrap counting (engine)"),
        ("matchaudit.auditing", "score_analyses", "calibration, score distributions (sorted pass)"),
        ("matchaudit.auditing.results_json", "write_results", "results.json + CSV"),
        ("matchaudit.auditing", "Audit._figures", "figures (imports included)")]:
    wrap(mod, attr, label)
t1 = time.perf_counter()
try:
    app(sys.argv[1:])
except SystemExit:
    pass
T["command, all phases"] = time.perf_counter() - t1
for k, v in T.items():
    print(f"{k}\t{v:.3f}")
"""


def write_data(K: int, folder: Path) -> tuple[Path, Path, Path]:
    """The reference job's data (bench/reference_job.py) at K identities, as a user's files."""
    g = np.random.default_rng(0)
    m, d = 5, 128
    ident = np.repeat(np.arange(K), m)
    emb = (g.standard_normal((K, d))[ident] + 1.6 * g.standard_normal((K * m, d))).astype(np.float32)
    samples, embeddings, idents = folder / f"samples{K}.parquet", folder / f"emb{K}.npy", folder / f"ident{K}.txt"
    pd.DataFrame({"sample_id": [f"s{i}" for i in range(K * m)], "identity": [f"id{k}" for k in ident]}
                 ).to_parquet(samples)
    np.save(embeddings, emb)
    np.savetxt(idents, ident, fmt="%d")
    return samples, embeddings, idents


def thresholds(samples: Path, embeddings: Path) -> str:
    """The thresholds at the targets (what cimat's Wilson intervals are computed at)."""
    import matchaudit as ma

    r = ma.audit(ma.load_samples(samples, embeddings), fmr=TARGETS, measures=ma.MeasureOptions(weightings=("pooled",)),
                 intervals=False)
    return ",".join(repr(float(r.at_fmr(t).loc["all", "threshold"])) for t in TARGETS)


def in_process(samples: Path, embeddings: Path, ts: str, repeat: int = 5) -> float:
    """Best seconds of cimat's job through the library in this process (loaded data, after a warm-up call)."""
    import matchaudit as ma

    data = ma.load_samples(samples, embeddings)
    kw = dict(fmr=TARGETS, thresholds=tuple(float(t) for t in ts.split(",")),
              intervals=ma.IntervalOptions("wilson,double-or-nothing", n_resamples=B),
              measures=ma.MeasureOptions(weightings=("pooled",), calibration=False))
    ma.audit(data, **kw)
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        ma.audit(data, **kw)
        best = min(best, time.perf_counter() - t)
    return best


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t


def best_of(cmd: list[str], env: dict[str, str], n: int = 5) -> float:
    return min(timed(cmd, env) for _ in range(n))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--K", type=int, nargs="+", default=[200, 400, 800])
    ap.add_argument("--cimat-python", help="a Python with cimat 0.1.2 installed (omit: matchaudit only)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds per K")
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True, help="phase profiles")
    args = ap.parse_args()
    py = sys.executable
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    floor = best_of([py, "-c", FLOOR], dict(os.environ))
    print(f"floor (a fresh Python importing NumPy, pandas, PyArrow, Numba): {floor:.2f} s")
    print(f"  without pandas and Numba (Typer, Rich, NumPy, PyArrow: a command line reading Parquet): "
          f"{best_of([py, '-c', STACK], dict(os.environ)):.2f} s; `matchaudit audit --help` (computes nothing): "
          f"{best_of([py, '-m', 'matchaudit', 'audit', '--help'], dict(os.environ)):.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "one_kernel.py").write_text(KERNEL)
        call = [py, "-c", FLOOR + "; import sys; sys.path.insert(0, sys.argv[1]); import one_kernel; "
                "one_kernel.one(numpy.ones(3))", str(tmp)]
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba-floor"))
        timed(call, env)  # compiles and caches the kernel
        print(f"  the same, then calling one cached Numba kernel (its first call sets Numba up): "
              f"{best_of(call, env):.2f} s")
        for K in args.K:
            samples, embeddings, idents = write_data(K, tmp)
            ts = thresholds(samples, embeddings)
            base = [py, "-m", "matchaudit", "audit", "--samples", str(samples), "--embeddings", str(embeddings),
                    "--fmr", ",".join(map(str, TARGETS)), "--n-resamples", str(B), "--quiet",
                    "--ci-method", "wilson,double-or-nothing", "--threshold", ts]
            jobs = {"cimat's job": base + ["--weighting", "pooled", "--no-calibration", "--no-figures"],
                    "full audit": base}
            rows: dict[str, list[float]] = {}
            for r in range(args.repeat):
                if args.cimat_python:
                    rows.setdefault("cimat", []).append(
                        timed([args.cimat_python, "-c", CIMAT_JOB, str(embeddings), str(idents)], dict(os.environ)))
                for name, cmd in jobs.items():
                    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / f"numba{K}-{r}-{len(name)}"))
                    subprocess.run([py, "-m", "matchaudit.warmup"], env=env, check=True)  # what install does
                    cmd = cmd + ["--out", str(tmp / "out")]
                    rows.setdefault(f"{name}, first run", []).append(timed(cmd, env))
                    rows.setdefault(f"{name}, second run", []).append(timed(cmd, env))
            rows["cimat's job in process (ma.audit)"] = [in_process(samples, embeddings, ts)]
            ref = min(rows["cimat"]) if "cimat" in rows else None
            print(f"\nK = {K} ({K * 5:,} samples, {K * 5 * (K * 5 - 1) // 2:,} comparisons)")
            for name, v in rows.items():
                ratio = f"  {ref / min(v):7.1f}x cimat" if ref and name != "cimat" else ""
                print(f"  {name:28s} best {min(v):7.2f} s  median {float(np.median(v)):7.2f} s{ratio}")
            for name, cmd in jobs.items() if args.profile else ():
                print(f"  profile of a second run, {name}:")
                out = subprocess.run([py, "-c", PHASES] + cmd[3:] + ["--out", str(tmp / "out")],
                                     capture_output=True, text=True, check=True).stdout
                for line in out.strip().splitlines():
                    k, v = line.split("\t")
                    print(f"    {k:58s} {float(v):6.2f} s")


if __name__ == "__main__":
    main()
