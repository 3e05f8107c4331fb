"""matchaudit: how far you can trust a 1:1 matching system's error rates.

Load or build the comparisons, then audit, test, compare, estimate without labels, or plan a protocol:

>>> import matchaudit as ma
>>> data = ma.simulate(seed=0).as_data()  # or ma.load_samples("samples.parquet", "embeddings.npy", group_by="group")
>>> result = ma.audit(data, fmr=1e-3, intervals=ma.IntervalOptions(n_resamples=100))
>>> result.at_fmr(1e-3).loc[["A", "B", "C"], "fnmr"].round(4).tolist()
[0.0018, 0.1163, 0.0006]

Everything not listed in ``__all__`` is internal: its names and signatures may change between versions.
"""

__version__ = "0.1.0"

from importlib import import_module
from typing import Any

_WHERE = {  # public name -> module defining it; imported on first use, so `import matchaudit` and the CLI start fast
    "Audit": "matchaudit.auditing", "audit": "matchaudit.auditing", "MeasureOptions": "matchaudit.auditing",
    "IntervalOptions": "matchaudit.auditing", "TestOptions": "matchaudit.auditing",
    "EquivalenceOptions": "matchaudit.auditing", "CarriedThresholds": "matchaudit.auditing",
    "audit_conditions": "matchaudit.auditing.conditions", "ConditionAudit": "matchaudit.estimators.conditions",
    "check": "matchaudit.claims", "compare": "matchaudit.api", "diff": "matchaudit.api", "plan": "matchaudit.api", "test_gap": "matchaudit.api",
    "test_gaps": "matchaudit.api", "test_equivalence": "matchaudit.api",
    "from_embeddings": "matchaudit.data", "from_scores": "matchaudit.data",
    "load_comparisons": "matchaudit.data", "load_samples": "matchaudit.data",
    "InputError": "matchaudit.errors", "log_mlflow": "matchaudit.tracking", "estimate": "matchaudit.labelfree", "simulate": "matchaudit.simulation",
}
_ALIASES = {"simulate": "simulate_vmf"}

__all__ = ["Audit", "CarriedThresholds", "ConditionAudit", "EquivalenceOptions", "InputError", "IntervalOptions", "MeasureOptions", "TestOptions", "audit",
           "audit_conditions", "check", "compare", "diff", "estimate", "from_embeddings", "from_scores", "load_comparisons", "load_samples", "log_mlflow", "plan", "simulate", "test_equivalence", "test_gap", "test_gaps"]


def __getattr__(name: str) -> Any:
    """The public names, each imported from its module when first asked for (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module 'matchaudit' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), _ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
