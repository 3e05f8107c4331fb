"""Fixtures shared by several test modules."""

from __future__ import annotations

import fcntl
import os

import pytest

from matchaudit.machine import idle_threads_sleep

idle_threads_sleep()  # as the command line does: the workers share the cores (halves the simulations' CPU time)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first (the one that makes the shared demo run at the very start), then the other readers of
    the demo run, then the rest (stable order otherwise). `make test` has pytest-xdist hand tests out one at a time
    (--maxschedchunk 1), so the long tests start at once on both workers, the first reader makes the demo run while
    the other worker is busy with slow tests (a worker that reached a reader while the other made the run waited on
    its lock: 27 s idle), and the last tests handed out are short ones (tests timed with a pytest plugin, session 36:
    with xdist's default chunks one worker got every slow test and ended 58 s after the other)."""
    def rank(item: pytest.Item) -> int:
        reads_demo = "demo_run" in getattr(item, "fixturenames", ())
        if item.get_closest_marker("slow") is not None:
            return 0 if reads_demo else 1
        return 2 if reads_demo else 3

    items.sort(key=rank)


@pytest.fixture
def meter_log(monkeypatch) -> list[tuple]:
    """Every progress display's state after each advance, as (label, done, total, unit); displays print a line at
    every advance off a terminal (``EVERY = 0``)."""
    from matchaudit import progress

    seen: list[tuple] = []
    real = progress.Meter.advance

    def spy(self, n=1):
        real(self, n)
        seen.append((self.label, self.done, self.total, self.unit))

    monkeypatch.setattr(progress, "EVERY", 0.0)
    monkeypatch.setattr(progress.Meter, "advance", spy)
    return seen


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """One `matchaudit demo` run for the whole session, shared by the parallel workers (the CLI and report tests
    read it; none may change what it wrote except by adding report.html). Under pytest-xdist every worker's temp
    folder sits in the session's folder: the first worker to take the lock there makes the run, the others wait
    and read it (xdist's own grouping, --dist loadgroup, does not group under pytest 9)."""
    from typer.testing import CliRunner

    from matchaudit.cli import app

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "demo-run"
    with open(shared / "demo-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "results.json").is_file():
            res = CliRunner().invoke(app, ["demo", "--out", str(out), "--quiet"])
            assert res.exit_code == 0, res.output
    return out
