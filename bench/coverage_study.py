"""Full coverage study (the similarity-scoring paper's appendix B.1 protocol) -> bench/results/coverage_<protocol>.*

    .venv/bin/python bench/coverage_study.py --identities shared --datasets 200 --ids 200 --B 200
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from matchaudit.studies.coverage import CoverageConfig, markdown, pivot, run_coverage


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--identities", default="shared", choices=["shared", "fresh"])
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--ids", type=int, default=200)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--fmr", default="1e-1,1e-2,1e-3,1e-4")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    cfg = CoverageConfig(n_datasets=a.datasets, n_identities=a.ids, samples=a.samples, n_resamples=a.B,
                         fmr_targets=tuple(float(x) for x in a.fmr.split(",")), identities=a.identities)
    t0 = time.time()
    res = run_coverage(cfg, progress=lambda i: print(f"{i}/{a.datasets} {time.time() - t0:.0f}s", flush=True))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"coverage_{a.identities}"
    res.to_frame().to_csv(f"{stem}.csv", index=False)
    Path(f"{stem}.json").write_text(json.dumps({"config": cfg.__dict__, "truth": res.truths,
                                                 "seconds": time.time() - t0, "rows": res.rows}, indent=1, default=str))
    Path(f"{stem}.md").write_text(markdown(pivot(res)))
    print(pivot(res).round(3).to_string())
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
