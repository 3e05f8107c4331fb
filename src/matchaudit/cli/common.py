"""Shared CLI plumbing: turning input errors into a message and exit status 2, parsing list options."""

from __future__ import annotations

import functools
import os
import re
import tempfile
import warnings
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Callable, Iterable, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from matchaudit import interrupt
from matchaudit.errors import InputError
from matchaudit.interrupt import EXIT_INTERRUPTED, EXIT_TERMINATED
from matchaudit import outputs

F = TypeVar("F", bound=Callable[..., object])
err_console = Console(stderr=True)
console = Console()

EXIT_INPUT = 2
"""Exit status for bad input (a message, no traceback). 0 = success; 1 = an unexpected failure; 130 = Ctrl-C."""


FLAGS = {
    "fmr": "--fmr", "fnmr": "--fnmr", "fnmr_targets": "--fnmr", "thresholds": "--threshold", "threshold": "--threshold", "rule": "--rule",
    "weightings": "--weighting", "threshold_impostors": "--threshold-impostors", "dcf_p_target": "--dcf-p-target",
    "dcf_c_miss": "--dcf-c-miss", "dcf_c_fa": "--dcf-c-fa", "zero_policy": "--zero-policy", "ci_method": "--ci-method",
    "level": "--level", "n_resamples": "--n-resamples", "seed": "--seed", "band": "--band",
    "test_resamples": "--test-resamples", "n_permutations": "--n-permutations", "metric": "--metric",
    "alternative": "--alternative", "n_bootstrap": "--n-bootstrap",
    "unit": "--unit", "variance": "--variance", "studentize": "--studentize", "genuine": "--genuine",
    "impostor": "--impostor", "group_by": "--group-by", "backend": "--backend", "workers": "--workers",
    "scheduler": "--scheduler", "sampler": "--sampler", "id_col": "--id-col", "identity_col": "--identity-col",
    "score_col": "--score-col", "label_col": "--label-col", "group_col": "--group-col", "metadata_key": "--metadata-key",
    "embedding_cols": "--embedding-col", "y_true": "--y-true", "y_pred": "--y-pred", "y_score": "--y-score",
    "group": "--group", "roc_methods": "--roc-methods", "fixed_methods": "--fixed-methods",
    "group_kappas": "--group-kappas", "dim": "--dim", "embeddings_path": "--embeddings",
    "embedding_col": "--embedding-col", "metadata_path": "--metadata", "sample_cols": "--sample-cols",
    "identity_cols": "--identity-cols", "fmr_targets": "--fmr", "samples_per_identity": "--samples-per-identity",
    "n_identities": "--identities", "datasets": "--datasets", "identities": "--identities", "chains": "--chains",
    "draws": "--draws", "warmup": "--warmup", "family": "--family", "effective_scores": "--effective-scores", "report": "--report", "thresholds_from": "--thresholds-from", "targets": "--threshold-fmr",
    "memory_gb": "--memory", "spill_dir": "--spill-dir", "compare": "--compare", "estimate": "--estimate", "margin": "--equivalence",
    "scale": "--equivalence-scale", "groups": "--groups", "alpha": "--alpha", "fta_policy": "--fta-policy",
    "duplicates": "--duplicates", "n_datasets": "--datasets", "samples": "--samples", "levels": "--levels",
    "return_code_col": "--return-code-col", "speaker_of": "--speaker-of", "subject_of": "--subject-of",
    "column_ids": "--column-ids", "score_cols": "--score-cols", "det_scale": "--det-scale",
    "dcf": "--dcf", "llr": "--llr", "heatmap_order": "--heatmap-order", "heatmap_aggregate": "--heatmap-aggregate",
    "comparisons": "--versus", "test_comparisons": "--tests-versus",
    "out": "--out", "tracking_uri": "--tracking-uri", "experiment": "--experiment", "run_name": "--run-name",
    "comparison": "--comparison", "junit": "--junit", "eer": "--eer", "fmr_threshold": "--fmr-threshold", "one_sided": "--one-sided", "exclude_small_groups": "--exclude-small-groups", "small_group_identities": "--small-group-identities",
    "condition_cols": "--condition-cols", "conditions": "--condition-cols", "reference": "--condition-reference",
}
"""The CLI flag of each library parameter that :class:`InputError` names (``param``): the message is the
library's, in neutral words, prefixed with the flag the user typed."""


_PARAM = re.compile(r"\b([a-z]+(?:_[a-z]+)+)(=(?:\.\.\.)?)?")
_QUOTED = re.compile(r"\b([a-z]+(?:_[a-z]+)*)='([^']*)'")


def _flags_in(text: str) -> str:
    """Library parameter names in a message (``score_col=...``, ``group_by=['x']``, ``metric='euclidean'``) as the
    flags a CLI user types (``--score-col``, ``--group-by ['x']``, ``--metric euclidean``)."""
    def quoted(m: re.Match) -> str:
        flag = FLAGS.get(m.group(1))
        return m.group(0) if flag is None else f"{flag} {m.group(2)}"

    def sub(m: re.Match) -> str:
        flag = FLAGS.get(m.group(1))
        return m.group(0) if flag is None else flag + (" " if m.group(2) == "=" else "")
    return _PARAM.sub(sub, _QUOTED.sub(quoted, text))


def message(error: InputError) -> str:
    """The error as the CLI prints it: ``--flag: <message>`` when the library named a parameter with a flag
    (``--flag <value>...`` when the message opens with the parameter), every parameter in the text as its flag."""
    text, param = str(error), error.param or ""
    flag = FLAGS.get(param)
    if flag is not None:
        opens = text[len(param):len(param) + 1] in (" ", "=") and text.startswith(param)
        text = f"{flag} {text[len(param) + 1:]}" if opens else f"{flag}: {text}"
    return _flags_in(text)


def user_errors(fn: F) -> F:
    """Run a command; an :class:`InputError` (or a refused allocation, MemoryError) becomes ``Error: <message>``
    on stderr and exit status 2, and
    Ctrl-C a one-line notice and exit status 130 (SIGTERM: 143; the shell's convention), without a traceback and
    with every staged output removed (the engine
    stops between sub-tiles, so that comes within a fraction of a second; a Ctrl-C during JIT compilation
    waits for the compiler, see :mod:`matchaudit.interrupt`). The command's all-pairs scores are computed once
    (:func:`matchaudit.scores.tile_cache`, imported here: ``--help`` does not load Numba)."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            from matchaudit.scores import tile_cache

            with interrupt.sigint_deferred_in_compiler(), warnings.catch_warnings(), tile_cache():
                # the library's own warnings are in the results (and printed as "Warning:" lines); NumPy's and
                # matplotlib's would print source paths in the middle of the output
                warnings.simplefilter("ignore")
                out = fn(*args, **kwargs)
                interrupt.check()  # a Ctrl-C deferred past the last pass still ends the run as interrupted
            return out
        except InputError as e:
            # escaped: a message's own brackets ("[2, 7]", "[0.1, 0.4]") are text, not Rich markup (they vanished)
            err_console.print(f"[bold red]Error:[/] {escape(message(e))}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None
        except interrupt.Terminated:
            err_console.print("Terminated.", highlight=False)
            raise typer.Exit(EXIT_TERMINATED) from None
        except KeyboardInterrupt:
            err_console.print("Interrupted.", highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except MemoryError as e:  # e.g. a huge --n-resamples: the allocation is refused before any work
            detail = f" ({e})" if str(e) else ""
            err_console.print(f"[bold red]Error:[/] not enough memory for this job{detail}. Ask for less (fewer "
                              "resamples, relabellings, or MCMC draws and warm-up: --n-resamples, --test-resamples, "
                              "--draws, --warmup), a smaller --memory budget, or a smaller data set.", highlight=False,
                              soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None
        except OSError as e:  # the file system refused a read or write the checks could not foresee (a full disk)
            where = f" ({e.filename})" if e.filename else ""
            err_console.print(f"[bold red]Error:[/] the file system refused: {escape(str(e.strerror or e))}{escape(where)}. Check that path "
                              "(its permissions, the free space).", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None

    return wrapper  # type: ignore[return-value]


NAME_COLUMN = {"max_width": 20, "overflow": "ellipsis", "no_wrap": True}
"""Console table settings of a column of group names (C6: a 5,000-character name pushed the numbers off-screen)."""


def folder_path(value: str | Path) -> Path:
    """The parser of every ``--out`` folder: an empty value is refused (Typer would read '' as '.', and a run wrote
    its outputs into the current directory)."""
    if not str(value).strip():
        raise typer.BadParameter("an empty path; give a folder (e.g. results) or a file.")
    return Path(value)


def output_dir(out: Path, command: str, inputs: Iterable[Path | str | None] = (), flag: str = "--out") -> Path:
    """Check before any work that ``command`` would replace nothing in the output directory ``out`` that it did not
    write, nor any of the run's ``inputs`` (:func:`matchaudit.outputs.check`), and that ``out`` can be made and
    written, or say why not (an existing file, no permission): a user learns it at once, not after a long run."""
    outputs.check(out, command, inputs)
    return _writable_dir(out, flag)


def output_file(path: Path, command: str, inputs: Iterable[Path | str | None] = (), flag: str = "--out") -> Path:
    """:func:`output_dir` for one file ``path`` that ``command`` writes (its own set in its folder): never an input
    or a file matchaudit did not write, in a folder that can be written."""
    outputs.check(path.parent, command, inputs, (path.name,), flag.lstrip("-").replace("-", "_"))
    _writable_dir(path.parent, flag)
    return path


def _writable_dir(out: Path, flag: str) -> Path:
    """Check that the folder ``out`` can be made and written in. A directory made to check is removed again (the
    outputs create it when they are written), so a run refused for its input leaves no empty folder behind."""
    missing = [p for p in [out, *out.parents] if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{flag} {out}: cannot create the directory ({e.strerror}).") from None
    refused = _cannot_write_in(out)
    for p in missing:  # deepest first
        p.rmdir()
    if refused:
        raise InputError(f"{flag} {out}: cannot write in the directory ({refused}); give another.")
    return out


def _cannot_write_in(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (None: it can), found by making and removing a file there: asking
    the permissions (``os.access``) says yes to root on folders that take no file (/proc, some mounts), and the run
    then ended in a traceback when it wrote its outputs."""
    try:
        tempfile.TemporaryFile(dir=folder, prefix=".matchaudit-probe-").close()
    except OSError as e:
        return e.strerror or str(e)
    return None


def report_file(results_json: Path, report: str | None, flag: str, inputs: Iterable[Path | str | None] = (),
                out: Path | None = None) -> Path:
    """Check before any work where the HTML report of ``results_json`` goes and that it can be written there:
    ``report`` is a file, or a folder (a path ending in a separator: made if missing) for report.html inside it;
    nothing is replaced that an earlier report did not write, never an input (``inputs``, the results, the audit's
    own files; :func:`matchaudit.outputs.check_report`). ``out``: the command's output directory, already checked
    by :func:`output_dir` and made by the run, so a file directly inside it is fine. Returns the report's path."""
    if report is not None and not report.strip():
        raise InputError(f"{flag} '': an empty path; give a file or a folder, or leave {flag} out.")
    target, _ = outputs.check_report(results_json, report, inputs, flag.lstrip("-"))
    folder = target.parent
    if out is not None and os.path.abspath(folder) == os.path.abspath(out):
        return target
    if not folder.is_dir() and str(report or "").endswith(("/", os.sep)):
        _writable_dir(folder, flag)
        return target
    if not folder.is_dir():
        raise InputError(f"{flag} {target}: the folder {folder} does not exist; create it or give another path.")
    refused = _cannot_write_in(folder)
    if refused or (target.exists() and not os.access(target, os.W_OK)):
        raise InputError(f"{flag} {target}: not writable{f' ({refused})' if refused else ''}; give another path.")
    return target


def status(quiet: bool, message: str) -> AbstractContextManager:
    """A Rich spinner around a long step (nothing with --quiet)."""
    return nullcontext() if quiet else console.status(message, spinner="dots")


def margin(text: str | None, flag: str = "--equivalence") -> tuple[float, float] | None:
    """``"0.8,1.25"`` -> (0.8, 1.25) (an equivalence margin lo,hi); None for None."""
    if text is None:
        return None
    values = floats(text, flag)
    if len(values) != 2:
        raise InputError(f"{flag} {text!r}: give two numbers lo,hi, e.g. 0.8,1.25.")
    return values[0], values[1]


def dcf_points(text: str | None) -> tuple[tuple[float, float, float], ...] | None:
    """``"0.01,1,1;0.05,1,1"`` -> ((0.01, 1, 1), (0.05, 1, 1)) (``--dcf`` operating points); None for None. The
    values themselves are checked by the library."""
    if text is None:
        return None
    points = tuple(floats(part, "--dcf") for part in text.split(";") if part.strip())
    if not points or any(len(p) != 3 for p in points):
        raise InputError(f"--dcf {text!r}: give P_target,C_miss,C_fa triples separated by ';', e.g. "
                         "'0.01,1,1;0.05,1,1'.")
    return points  # type: ignore[return-value]


def floats(text: str, option: str) -> tuple[float, ...]:
    """``"1e-2,1e-3"`` -> (0.01, 0.001); a clear error otherwise."""
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"{option} {text!r}: give comma-separated numbers, e.g. 1e-2,1e-3,1e-4.") from None


def names(text: str | None) -> tuple[str, ...]:
    """``"gender,ethnicity"`` -> ("gender", "ethnicity"); empty -> ()."""
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())
