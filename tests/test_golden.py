"""Behaviour unchanged (#46 item 7): the fixed corpus of audits (tests/golden/corpus.py: the demo's audit with group
tests, twelve groups with small ones excluded and tests against the rest, a listed trial table with every interval
method at FMR targets and fixed thresholds) gives results whose every section hashes as recorded. A change that
moves a number fails here, naming the case and the sections; if the move is intended, regenerate with
``tests/golden/corpus.py --write`` and say why in the commit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))
import corpus  # noqa: E402

RECORDED = json.loads(corpus.HASHES.read_text())


@pytest.mark.parametrize("case", sorted(corpus.CASES))
def test_results_are_byte_identical_to_the_recorded_corpus(case):
    assert set(RECORDED) == set(corpus.CASES)
    now = corpus.digests(corpus.document(case))
    moved = sorted(k for k in set(now) | set(RECORDED[case]) if now.get(k) != RECORDED[case].get(k))
    assert not moved, f"{case}: sections changed: {moved} (tests/golden/corpus.py --dump DIR to see them)"


def test_the_check_sees_a_changed_number():
    """A single digit moved in one record changes that section's digest and no other (the check can fail)."""
    doc = corpus.document("trial_list")
    before = corpus.digests(doc)
    doc["operating_points"][0]["fnmr"] = float(doc["operating_points"][0]["fnmr"]) + 1e-15
    after = corpus.digests(doc)
    assert [k for k in before if before[k] != after[k]] == ["operating_points"]
