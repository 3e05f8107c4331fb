"""matchaudit: how far you can trust a 1:1 matching system's error rates.

Load or build the comparisons, then audit, test, compare, estimate without labels, or plan a protocol:

>>> import matchaudit as ma
>>> data = ma.simulate(seed=0).as_data()  # or ma.load_samples("samples.parquet", "embeddings.npy", group_by="group")
>>> result = ma.audit(data, fmr=1e-3, n_resamples=100)
>>> result.at_fmr(1e-3).loc[["A", "B", "C"], "fnmr"].round(4).tolist()
[0.0018, 0.1163, 0.0006]

Everything not listed in ``__all__`` is internal: its names and signatures may change between versions.
"""

__version__ = "0.1.0"

from matchaudit.api import compare, plan, test_gap  # noqa: E402
from matchaudit.auditing import Audit, audit  # noqa: E402
from matchaudit.data import from_embeddings, from_scores, load_comparisons, load_samples  # noqa: E402
from matchaudit.errors import InputError  # noqa: E402
from matchaudit.labelfree import estimate  # noqa: E402
from matchaudit.simulate import simulate_vmf as simulate  # noqa: E402

__all__ = ["Audit", "InputError", "audit", "compare", "estimate", "from_embeddings", "from_scores",
           "load_comparisons", "load_samples", "plan", "simulate", "test_gap"]
