"""Every example of the README runs as written on the files `make demo` writes (`matchaudit-demo/data/`).

The code blocks are read from README.md in order and run, bash through bash and Python through this
interpreter, in a fresh folder holding the demo's data (written by the function `matchaudit demo` calls) and a
`.venv` link to this environment, so the paths are the README's own. Only `make` lines (the set-up commands,
which build the environment this test already runs in) are left out.

They run as in the environment `make demo` builds, the default install: the optional packages this suite adds
(`OPTIONAL`, the `mcmc`, `tracking` and `gpu` extras) cannot be imported by them, so `estimate --sampler auto` is the NumPy
sampler a README reader gets (NumPyro's `estimate` is tested in tests/test_labelfree_cli.py; under NumPyro this
example alone took 61 of the test's ~120 CPU-seconds).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from matchaudit.simulation import write_demo_data

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)
OPTIONAL = ("jax", "mlflow", "numpyro", "torch")  # what `make test` installs beyond the default install


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


def default_install(folder: Path) -> dict[str, str]:
    """An environment for subprocesses in which the ``OPTIONAL`` packages fail to import, as where they are not
    installed (modules of those names, first on the path, that raise ImportError)."""
    folder.mkdir()
    for name in OPTIONAL:
        (folder / f"{name}.py").write_text(f"raise ImportError('{name} is not in the default install')\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))


def test_default_install_hides_the_optional_packages(tmp_path):
    """The hiding works (else the README test below would run NumPyro's sampler, not the reader's)."""
    code = "from matchaudit.labelfree.samplers import resolve; print(resolve('auto'))"
    res = subprocess.run([sys.executable, "-c", code], env=default_install(tmp_path / "hide"), capture_output=True,
                         text=True, check=True)
    assert res.stdout.strip() == "numpy"
    for name in OPTIONAL:
        res = subprocess.run([sys.executable, "-c", f"import {name}"], env=default_install(tmp_path / name),
                             capture_output=True, text=True)
        assert res.returncode == 1 and "not in the default install" in res.stderr


@pytest.mark.slow
def test_every_readme_example_runs_on_the_demo_data(tmp_path):
    write_demo_data(tmp_path / "matchaudit-demo" / "data")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = default_install(tmp_path.parent / f"{tmp_path.name}-default-install")
    outs = []
    for lang, code in readme_blocks():
        cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
        res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env)
        assert res.returncode == 0, f"README example failed (exit {res.returncode}):\n{code}\n{res.stderr[-3000:]}"
        assert "Traceback" not in res.stderr, f"{code}\n{res.stderr[-3000:]}"
        outs += re.findall(r"--out (\S+)", code) + re.findall(r'\.save\("([^"]+)"\)', code)
    assert len(outs) >= 8
    for out in outs:
        written = tmp_path / out
        assert written.is_file() or any(written.iterdir()), f"{out} was not written"
