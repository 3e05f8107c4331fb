"""The API reference is generated from the docstrings and kept current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_api_reference_is_current():
    res = subprocess.run([sys.executable, str(ROOT / "tools/gen_api.py"), "--check"])
    assert res.returncode == 0, "docs/api.md is stale: run .venv/bin/python tools/gen_api.py"
