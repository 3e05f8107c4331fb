"""Ctrl-C during JIT compilation is deferred to the next block, never dropped (matchaudit.interrupt)."""

from __future__ import annotations

import os
import signal

import numba
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from matchaudit import interrupt
from matchaudit.__main__ import main
from matchaudit.cli.common import user_errors
from matchaudit.data import from_embeddings
from matchaudit.interrupt import EXIT_INTERRUPTED

NUMBA_DIR = os.path.dirname(numba.__file__)


def _call_from(filename: str) -> None:
    """Deliver a real SIGINT while the innermost Python frame's code lives in ``filename``."""
    exec(compile("signal.raise_signal(signal.SIGINT)", filename, "exec"), {"signal": signal})


@pytest.fixture(autouse=True)
def _python_s_own_sigint():
    """Each test starts with Python's own handler, whatever this process inherited (a shell starts background
    jobs with SIGINT ignored, and Python keeps that), and leaves the disposition as it found it."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    return from_embeddings(x, identities=np.repeat(np.arange(4), 3))


def test_sigint_in_the_compiler_is_deferred_and_raised_by_the_next_block():
    data = _data()
    with interrupt.sigint_deferred_in_compiler():
        _call_from(os.path.join(NUMBA_DIR, "core", "dispatcher.py"))  # no exception here: the compiler runs on
        assert interrupt.requested()
        with pytest.raises(KeyboardInterrupt):
            next(data.blocks())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the old handler is back
    assert not interrupt.requested()  # and the request is forgotten: later work in this process runs
    next(data.blocks())


def test_sigint_elsewhere_raises_at_once_and_a_new_context_starts_clean():
    with interrupt.sigint_deferred_in_compiler():
        with pytest.raises(KeyboardInterrupt):
            _call_from(os.path.join("somewhere", "user_code.py"))
    with interrupt.sigint_deferred_in_compiler():
        assert not interrupt.requested()
        interrupt.check()  # nothing pending: returns


def test_without_the_context_sigint_is_python_s_own():
    with pytest.raises(KeyboardInterrupt):
        _call_from(os.path.join(NUMBA_DIR, "core", "dispatcher.py"))


def test_an_inherited_ignore_is_kept():
    """A background job of a script starts with SIGINT ignored: the terminal's Ctrl-C is not for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with interrupt.sigint_deferred_in_compiler():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        _call_from(os.path.join("somewhere", "user_code.py"))  # ignored: no exception
        assert not interrupt.requested()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_deferred_ctrl_c_after_the_last_pass_still_ends_the_command_with_130():
    app = typer.Typer()

    @app.command()
    @user_errors
    def job() -> None:
        _call_from(os.path.join(NUMBA_DIR, "core", "compiler.py"))
        print("finished")

    res = CliRunner().invoke(app, [])
    assert res.exit_code == EXIT_INTERRUPTED and "Interrupted." in res.output
    assert not interrupt.requested()


def test_ctrl_c_while_the_commands_load_exits_130_with_one_line(monkeypatch, capsys):
    """The console script imports the commands inside its own handler (imports take a second or two)."""
    import builtins

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "matchaudit.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == EXIT_INTERRUPTED and capsys.readouterr().err == "Interrupted.\n"


def test_the_console_script_runs_a_command():
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "matchaudit", "schema"], capture_output=True, text=True)
    assert res.returncode == 0 and '"$schema"' in res.stdout


def test_ctrl_c_in_a_weakref_callback_or_del_is_recorded_not_printed_and_dropped(monkeypatch):
    """Python prints an exception raised in a ``__del__`` or weakref callback ("Exception ignored in ...") and
    drops it: a SIGTERM landing in ``WeakKeyDictionary``'s callback printed a traceback and the audit ran on."""
    import weakref

    import sys

    class Dies:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)

    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)  # where Python sends what it prints and drops
    with interrupt.sigint_deferred_in_compiler():
        Dies()  # no exception here, and nothing printed
        assert interrupt.requested() and not dropped
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    with interrupt.sigint_deferred_in_compiler():
        _call_from(os.path.join(os.path.dirname(weakref.__file__), "weakref.py"))
        assert interrupt.requested()


def test_an_output_set_is_replaced_whole_or_not_at_all(tmp_path):
    """A signal waiting when the set is about to move keeps the previous set untouched; one that comes while the
    files move is raised after the set is whole."""
    from matchaudit.outputs import staged

    with staged(tmp_path, "test") as tmp:
        (tmp / "test.json").write_text("old")
    with interrupt.sigint_deferred_in_compiler():
        with pytest.raises(KeyboardInterrupt):
            with staged(tmp_path, "test") as tmp:
                (tmp / "test.json").write_text("new")
                _call_from(os.path.join(NUMBA_DIR, "core", "compiler.py"))  # deferred: waiting at the commit
        assert (tmp_path / "test.json").read_text() == "old"
    with interrupt.sigint_deferred_in_compiler():
        with interrupt.committing():
            signal.raise_signal(signal.SIGINT)  # while the files move: recorded
            assert interrupt.requested()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
