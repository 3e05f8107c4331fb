"""An audit on disk and back (#46 item 3): :meth:`Audit.save` writes ``results.json`` (every table, fixed schema),
the CSVs, the figures and ``curves.npz`` (the arrays the figures are drawn from: the full DET curves, the DET bands,
the APE curves and the score histograms, which results.json does not hold); :meth:`Audit.load` reads them back
into an :class:`~matchaudit.auditing.core.Audit` whose tables, arrays, figures and re-saved results.json equal the
original's. ``curves.npz`` is plain NumPy (no pickles): one JSON string ``layout`` naming the arrays ``a0``,
``a1``, ... where the structures hold them.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from matchaudit import checks
from matchaudit.auditing.options import IntervalOptions, TestOptions
from matchaudit.errors import InputError
from matchaudit.estimators.calibration import CalibrationResult
from matchaudit.estimators.distributions import DistributionResult, Histogram
from matchaudit.metrics.calibration import ApeCurve
from matchaudit.metrics.evaluate import AuditConfig, AuditResult
from matchaudit.auditing.results_json import load_results, results_file

if TYPE_CHECKING:
    from matchaudit.auditing.core import Audit

ARRAYS = "curves.npz"
_RESULT_TABLES = ("operating_points", "curve_summaries", "cross_group_fmr", "fairness")
_AUDIT_TABLES = {"intervals": "interval_records", "tests": "test_records", "equivalence": "equivalence_records",
                 "failures": "failure_records", "attacks": "attack_records", "portability": "portability_records"}
_OPTIONS = ("intervals", "tests")  # the option sections the Audit adds to its config's record


def _pack(x: Any, arrays: list[np.ndarray]) -> Any:
    """``x`` as JSON values with each array replaced by ``{"array": k}`` (``arrays[k]``)."""
    if isinstance(x, np.ndarray):
        arrays.append(x)
        return {"array": len(arrays) - 1}
    if isinstance(x, dict):
        return {str(k): _pack(v, arrays) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_pack(v, arrays) for v in x]
    return x.item() if isinstance(x, np.generic) else x


def _unpack(x: Any, arrays: Any) -> Any:
    if isinstance(x, dict):
        return arrays[f"a{x['array']}"] if set(x) == {"array"} else {k: _unpack(v, arrays) for k, v in x.items()}
    if isinstance(x, list):
        return [_unpack(v, arrays) for v in x]
    return x


def _digest(results_json: Path) -> str:
    return hashlib.sha256(results_json.read_bytes()).hexdigest()


def write_arrays(audit: Audit, path: Path, det_scale: str) -> Path:
    """``curves.npz`` of ``audit`` at ``path`` (module doc), beside the results.json just written for it, whose
    SHA-256 it records (arrays of another audit are never drawn as this one's), with the figures' ``det_scale``."""
    cal, dist = audit.calibration_result, audit.distribution_result
    layout = {"results_json": _digest(path.parent / "results.json"), "det_scale": det_scale, "det": audit.exact.det,
              "bands": audit.bands,
              "calibration": None if cal is None else {**asdict(cal), "records": None},
              "distributions": None if dist is None else {**asdict(dist), "records": None}}
    arrays: list[np.ndarray] = []
    text = json.dumps(_pack(layout, arrays))  # NaN and inf in the structures are Python's JSON (read back by it)
    np.savez_compressed(path, layout=np.array(text), **{f"a{k}": a for k, a in enumerate(arrays)})
    return path


def _read_arrays(path: Path, results_json: Path) -> dict[str, Any] | None:
    """The structures of ``curves.npz`` at ``path``, or None when there is none (an audit saved by a matchaudit
    before 0.x, or a folder that lost it); an InputError when it is not one of matchaudit's, or not the one written
    with ``results_json``."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = _unpack(json.loads(str(npz["layout"])), {k: npz[k] for k in npz.files})
        _check_layout(stored)
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror or e}).", param="path") from None
    except (ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise InputError(f"{path}: not a curves.npz written by matchaudit ({e}); move it away to load the tables "
                         "alone, or re-run the audit.", param="path") from None
    if stored["results_json"] != _digest(results_json):
        raise InputError(f"{path} was not written with {results_json} (another audit's, or results.json was changed "
                         "since): move it away to load the tables alone, or re-run the audit.", param="path")
    return stored


def _check_layout(stored: Any) -> None:
    """A ValueError unless ``stored`` has the structures :func:`write_arrays` writes (curves as 1-D arrays of one
    length per curve)."""
    if not isinstance(stored, dict) or not {"results_json", "det", "bands", "calibration", "distributions"} <= set(
            stored):
        raise ValueError("its layout lacks the audit's structures")
    for c in stored["det"]:
        arrays = [c["threshold"], c["fmr"], c["fnmr"]]
        if not all(isinstance(a, np.ndarray) and a.ndim == 1 and a.shape == arrays[0].shape for a in arrays):
            raise ValueError("a DET curve is not three arrays of one length")
    for b in stored["bands"]:
        if not all(isinstance(b[k], np.ndarray) for k in ("fmr", "estimate", "lower", "upper")):
            raise ValueError("a DET band is not arrays")


def _options(kind: type, recorded: dict[str, Any] | None) -> Any:
    if recorded is None:
        return None
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in recorded.items()})


def load_audit(path: Any, curves: Any = True) -> Audit:
    """The :class:`Audit` saved in ``path`` (the folder :meth:`Audit.save` wrote, or its results.json): every
    table from results.json (schema-checked, non-finite numbers as floats), the arrays from ``curves.npz`` beside
    it (with ``curves``). Without them the tables load and :attr:`Audit.missing_arrays` says why no figure can be
    redrawn. Anything that cannot be read back is an InputError naming the file."""
    curves = checks.flag(curves, "curves")
    source = results_file(Path(checks.path(path, "path")), "path")
    doc = load_results(source, "path")
    stored = _read_arrays(source.parent / ARRAYS, source) if curves else None
    try:
        return _rebuild(doc, stored, curves, source)
    except (InputError, KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise InputError(f"{source}: its records cannot be read back into an audit ({e}); re-run the audit or give "
                         "its unmodified output.", param="path") from None


def _rebuild(doc: dict[str, Any], stored: dict[str, Any] | None, curves: bool, source: Path) -> Audit:
    from matchaudit.auditing.core import Audit

    config = doc["config"]
    exact = AuditResult(AuditConfig.from_dict({k: v for k, v in config.items() if k not in _OPTIONS}), {**doc["summary"], "warnings": list(doc["summary"]["warnings"])},
                        *(doc[t] for t in _RESULT_TABLES))
    missing = (None if stored is not None else "loaded without its curves (curves=False)" if not curves
               else f"{source.parent / ARRAYS} is missing (the audit was saved by an older matchaudit, or the file was "
               "removed): its figures cannot be redrawn")
    audit = Audit(exact, _options(IntervalOptions, config.get("intervals")), _options(TestOptions, config.get("tests")),
                  command=doc["command"], version=doc["matchaudit_version"], missing_arrays=missing,
                  det_scale=stored["det_scale"] if stored is not None else None)
    for key, name in _AUDIT_TABLES.items():
        setattr(audit, name, doc.get(key))
    for records, options, what in ((audit.interval_records, audit.interval_options, "intervals"),
                                   (audit.test_records, audit.test_options, "tests")):
        if (records is None) != (options is None):
            raise ValueError(f"{what} and config.{what} go together")
    exact.det, audit.bands = (stored["det"], stored["bands"]) if stored is not None else ([], [])
    for key, kind, name in (("calibration", CalibrationResult, "calibration_result"),
                            ("score_distributions", DistributionResult, "distribution_result")):
        if doc.get(key) is not None:
            setattr(audit, name, _analysis(kind, doc[key], stored, audit.interval_options))
    return audit


def _analysis(kind: type, records: list[dict[str, Any]], stored: dict[str, Any] | None,
              options: IntervalOptions | None) -> Any:
    """The calibration (``kind`` :class:`CalibrationResult`) or score-distribution result of ``records`` with its
    arrays from ``stored`` (curves.npz); without them, no arrays and its settings from the records and ``options``
    (the tables load, the figures are refused: :attr:`Audit.missing_arrays`)."""
    calibration = kind is CalibrationResult
    if stored is not None:
        fields = stored["calibration" if calibration else "distributions"]
        arrays = ({"ape": tuple(ApeCurve(**a) for a in fields["ape"]),
                   "operating_points": tuple(map(tuple, fields["operating_points"])), "groups": tuple(fields["groups"])}
                  if calibration else {"histograms": tuple(Histogram(**h) for h in fields["histograms"])})
        return kind(**{**fields, **arrays, "records": tuple(records)})
    if not records:
        raise ValueError("an empty table of calibration or score distributions")
    first = records[0]
    common = {"records": tuple(records), "method": first["method"], "level": first["level"],
              "n_resamples": first["n_resamples"], "seed": options.seed if options is not None else 0}
    if calibration:
        return kind(ape=(), llr=bool(first["llr"]), operating_points=(), **common)
    return kind(edges=np.zeros(0), histograms=(), **common)


__all__ = ["ARRAYS", "load_audit", "write_arrays"]
