"""Planning from data: the variance components of a pilot (its identity counts at one threshold, one pass) and the
protocol study that checks the predicted variances against fresh simulated data sets."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matchaudit import checks
from matchaudit.data import from_embeddings
from matchaudit.definitions import Rule
from matchaudit.engine import identity_counts
from matchaudit.estimators.planning import Components, components, predict
from matchaudit.model import MatchData
from matchaudit.protocols import design_protocol, random_protocol
from matchaudit.scores import pair_scores
from matchaudit.simulation import simulate_vmf


def pilot_components(data: MatchData, threshold: float, rule: Rule = ">=", group: str | None = None
                     ) -> tuple[Components, Components]:
    """(FNMR, FMR) components at ``threshold`` from a pilot (:func:`~matchaudit.estimators.planning.components`)."""
    ic = identity_counts(data, [checks.number(threshold, "threshold", finite=False)], rule)
    return components(ic, list(data.group_names), group)


def protocol_study(groups, threshold: float, n_genuine: int, n_impostor: int, n_sets: int, *, dim: int = 16,
                   samples_per_identity=(2, 24), pilot_seed: int = 10_000, level: float = 0.95) -> pd.DataFrame:
    """Empirical SD of FNMR/FMR over ``n_sets`` fresh vMF data sets (new population each), for the designed
    and the random protocol of the same budget, next to the prediction from one pilot data set (all pairs).
    Used by ``tests/test_planning.py`` (reduced) and ``bench/protocol_design.py`` (full)."""
    def draw(seed):
        return simulate_vmf(groups, dim=dim, samples_per_identity=samples_per_identity, seed=seed)

    pilot = draw(pilot_seed)
    fn, fm = pilot_components(from_embeddings(pilot.embeddings, pilot.samples.identity.values), threshold)
    out: dict[str, list] = {"designed": [], "random": []}
    usage: dict[str, list] = {"designed": [], "random": []}
    for i in range(n_sets):
        sim = draw(i)
        ids, who = sim.samples.sample_id.values, sim.samples.identity.values
        pos = {s: j for j, s in enumerate(ids)}
        for name, make in (("designed", design_protocol), ("random", random_protocol)):
            p = make(ids, who, n_genuine, n_impostor, seed=i)
            a = np.fromiter((pos[s] for s in p.sample_a), np.int64)
            b = np.fromiter((pos[s] for s in p.sample_b), np.int64)
            s = pair_scores(sim.embeddings, a, b)
            out[name].append(((s[p.genuine] < threshold).mean(), (s[~p.genuine] >= threshold).mean()))
            usage[name].append(p.sums())
    rows = []
    for name in out:
        x = np.array(out[name])
        mean_sums = {k: float(np.mean([u[k] for u in usage[name]])) for k in usage[name][0]}
        pr = predict(fn, fm, mean_sums, level)
        for j, rate in enumerate(("FNMR", "FMR")):
            rows.append({"protocol": name, "rate": rate, "mean": x[:, j].mean(), "empirical_sd": x[:, j].std(ddof=1),
                         "predicted_sd": pr[f"{rate.lower()}_sd"], "predicted_width": pr[f"{rate.lower()}_width"],
                         "n_sets": n_sets, "pilot_icc": (fn if rate == "FNMR" else fm).icc})
    df = pd.DataFrame(rows)
    df["ratio_empirical_to_predicted"] = df.empirical_sd / df.predicted_sd
    return df


__all__ = ["pilot_components", "protocol_study"]
