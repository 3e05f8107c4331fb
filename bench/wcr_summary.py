"""Summary of bench/results/wcr_level.csv: per variant, the level designs' (all but 10% hard and the power row)
minimum and maximum rejection rate, how many lie in [0.04, 0.06], and the power row. Usage:
``python bench/wcr_summary.py [csv]`` -> printed (and bench/results/wcr_summary.txt)."""
import csv
import sys
from collections import defaultdict
from pathlib import Path

path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/wcr_level.csv"
rows = list(csv.DictReader(open(path)))
lv, pw, hard = defaultdict(dict), {}, {}
for r in rows:
    if r["design"].startswith("POWER"):
        pw[r["variant"]] = float(r["rate"])
    elif "10% hard" in r["design"] and not r["design"].startswith("4 groups"):
        hard[r["variant"]] = float(r["rate"])
    else:
        lv[r["variant"]][r["design"]] = float(r["rate"])
out = []
n = len(next(iter(lv.values())))
out.append(f"{n} level designs (10% hard apart); variant: min, max, in [0.04, 0.06], above 0.06; 10% hard; power")
for v, d in sorted(lv.items(), key=lambda kv: (-sum(0.04 <= x <= 0.06 for x in kv[1].values()), max(kv[1].values()))):
    x = list(d.values())
    worst = max(d, key=lambda k: abs(d[k] - 0.05))
    out.append(f"{v:22s} min {min(x):.3f} max {max(x):.3f} in {sum(0.04 <= y <= 0.06 for y in x):2d}/{n} "
               f"above {sum(y > 0.06 for y in x):2d}  hard {hard.get(v, float('nan')):.3f}  power {pw.get(v, float('nan')):.3f}"
               f"  worst: {worst[:40]} {d[worst]:.3f}")
print("\n".join(out))
Path(path.replace(".csv", "_summary.txt")).write_text("\n".join(out) + "\n")
