"""Every example of the README runs as written on the files `make demo` writes (`matchaudit-demo/data/`).

The code blocks are read from README.md in order and run, bash through bash and Python through this
interpreter, in a fresh folder holding the demo's data (written by the function `matchaudit demo` calls) and a
`.venv` link to this environment, so the paths are the README's own. Only `make` lines (the set-up commands,
which build the environment this test already runs in) are left out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from matchaudit.simulation import write_demo_data

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)


def readme_blocks() -> list[tuple[str, str]]:
    """(language, code) of each bash and Python block of README.md, in order, without `make` lines."""
    blocks = []
    for lang, code in BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        if lang == "bash":
            code = "\n".join(line for line in code.splitlines() if not line.startswith("make "))
        if code.strip():
            blocks.append((lang, code))
    return blocks


def test_readme_has_the_examples_this_test_runs():
    """The parser finds every block (a README edit that breaks the fences would otherwise skip them)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [b for lang, b in readme_blocks() if lang == "bash"]
    assert sum(c.count(".venv/bin/matchaudit ") for c in commands) == text.count("\n.venv/bin/matchaudit ")
    assert {"audit", "test", "compare", "estimate", "protocol", "report"} <= {
        m for c in commands for m in re.findall(r"\.venv/bin/matchaudit (\w+)", c)}
    assert any(lang == "python" for lang, _ in readme_blocks())


@pytest.mark.slow
def test_every_readme_example_runs_on_the_demo_data(tmp_path):
    write_demo_data(tmp_path / "matchaudit-demo" / "data")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    outs = []
    for lang, code in readme_blocks():
        cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0, f"README example failed (exit {res.returncode}):\n{code}\n{res.stderr[-3000:]}"
        assert "Traceback" not in res.stderr, f"{code}\n{res.stderr[-3000:]}"
        outs += re.findall(r"--out (\S+)", code) + re.findall(r'\.save\("([^"]+)"\)', code)
    assert len(outs) >= 8
    for out in outs:
        written = tmp_path / out
        assert written.is_file() or any(written.iterdir()), f"{out} was not written"
