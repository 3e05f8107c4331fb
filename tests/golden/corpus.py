"""The fixed corpus of audits whose results must not change in a redesign (#46 item 7): each case's
``Audit.to_dict()`` (what results.json holds, less the run's version and command line) as canonical JSON, and its
SHA-256 per section in ``hashes.json`` beside this file (so that a mismatch names the section that moved).
``tests/test_golden.py`` recomputes every case and compares.

A change that moves numbers on purpose regenerates the hashes and says so in its commit:

    .venv/bin/python tests/golden/corpus.py --write          # rewrite hashes.json
    .venv/bin/python tests/golden/corpus.py --dump DIR       # each case's JSON, to diff against an older tree's
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

import matchaudit as ma
from matchaudit.encoding import jsonable
from matchaudit.simulation import DEMO_GROUPS, GroupSpec, simulate_vmf

HASHES = Path(__file__).with_name("hashes.json")
VOLATILE = ("matchaudit_version", "command")  # what a run adds that is not a result


def _demo() -> ma.Audit:
    """The demo's audit (the embedded data set, defaults, FNMR@FMR and FMR@FNMR group tests)."""
    data = simulate_vmf(DEMO_GROUPS, dim=64, samples_per_identity=6, seed=0).as_data()
    return ma.audit(data, fmr=(1e-2, 1e-3, 1e-4), fnmr=(1e-2,), intervals=ma.IntervalOptions(n_resamples=200),
                    tests=ma.TestOptions(n_resamples=99))


def _many_groups() -> ma.Audit:
    """Twelve groups, two of them small: the fairness measures, tests against the rest, small groups excluded."""
    groups = {f"G{g:02d}": GroupSpec(6 if g < 2 else 16, (60.0 + 20 * g, 400.0)) for g in range(12)}
    data = simulate_vmf(groups, dim=32, samples_per_identity=4, seed=5).as_data()
    return ma.audit(data, fmr=(1e-2, 1e-3), measures=ma.MeasureOptions(exclude_small_groups=True),
                    intervals=ma.IntervalOptions(n_resamples=100),
                    tests=ma.TestOptions(n_resamples=99, comparisons="both"))


def _trial_list() -> ma.Audit:
    """A listed comparison table (genuine pairs and a sample of impostor pairs) with every interval method at FMR
    targets and fixed thresholds, both weightings."""
    sim = simulate_vmf(DEMO_GROUPS, dim=32, samples_per_identity=5, seed=3)
    ident = sim.samples["identity"].to_numpy().astype(str)
    group = sim.samples["group"].to_numpy().astype(str)
    a, b = np.triu_indices(ident.size, 1)
    keep = (ident[a] == ident[b]) | (np.random.default_rng(3).random(a.size) < 0.2)
    a, b = a[keep], b[keep]
    emb = np.asarray(sim.embeddings, np.float64)
    sample = sim.samples["sample_id"].to_numpy().astype(str)
    data = ma.from_scores(np.einsum("ij,ij->i", emb[a], emb[b]), ident[a], ident[b], label=ident[a] == ident[b],
                          sample_a=sample[a], sample_b=sample[b], attributes_a={"group": group[a]}, attributes_b={"group": group[b]}, group_by="group")
    return ma.audit(data, fmr=(1e-2, 1e-3), thresholds=(0.3, 0.5),
                    intervals=ma.IntervalOptions(n_resamples=100, method="recentered,wilson,vertex,double-or-nothing,two-level"))


CASES: dict[str, Callable[[], ma.Audit]] = {"demo": _demo, "many_groups": _many_groups, "trial_list": _trial_list}


def document(case: str) -> dict[str, Any]:
    """The case's results as JSON values, without what a run adds (:data:`VOLATILE`)."""
    doc = jsonable(CASES[case]().to_dict())
    return {k: v for k, v in doc.items() if k not in VOLATILE}


def canonical(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False)


def digests(doc: dict[str, Any]) -> dict[str, str]:
    """SHA-256 of each top-level section's canonical JSON."""
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, allow_nan=False).encode()).hexdigest()
            for k, v in sorted(doc.items())}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true", help="rewrite hashes.json")
    p.add_argument("--dump", type=Path, help="write each case's canonical JSON into this folder")
    a = p.parse_args()
    hashes = {}
    for case in CASES:
        doc = document(case)
        hashes[case] = digests(doc)
        if a.dump:
            a.dump.mkdir(parents=True, exist_ok=True)
            (a.dump / f"{case}.json").write_text(canonical(doc))
        print(case, hashlib.sha256(canonical(doc).encode()).hexdigest(), file=sys.stderr)
    if a.write:
        HASHES.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
