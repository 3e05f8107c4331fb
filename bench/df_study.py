"""#43 item 3, the level_df study's measurements, outside the library: :func:`matching_statistics` runs
``matching_passes.matching_statistics`` unchanged while recording what it computes (by wrapping, for the call only,
``Design.of`` for the sides, ``relabellings`` for the relabelled labels, ``ClusterTerms.of`` for the identity terms,
``_log_ratio`` for the observed and relabelled rates, variances, squared shares and comparisons, and
``ThresholdError.pair_terms`` for the threshold's term on the log scale), then adds to ``details``:

- ``df_variants``: {name: (observed (1, m), relabelled (R, m))} candidate effective df's of the log ratio (``cur``,
  ``kc``, ``model``, ``kc_half``, ``comb``, ``kcomb``: :func:`df_variants`; ``noterm``: the code's df without the
  threshold's term), fixed-threshold statistics only;
- ``study_ex0``: the threshold's term in the observed log ratio's variance (FNMR@FMR with the term);
- ``pooled``: (observed, relabelled) score-type variances (:func:`pooled`), FNMR and FNMR@FMR.

Used by bench/level_df.py, bench/level_df_diag.py and bench/level_thr_diag.py (the library carries no study hook)."""

from __future__ import annotations

import sys
from contextlib import contextmanager

import numpy as np

sys.path.insert(0, "src")
from matchaudit.auditing import matching_passes  # noqa: E402
from matchaudit.estimators import matching_tests as mt  # noqa: E402
from matchaudit.estimators.clustered_rates import ClusterTerms, ThresholdError  # noqa: E402


@contextmanager
def _recording():
    """Wrap the library functions the study reads for the duration of one call; yields the record."""
    rec = {"design": [], "labels": [], "terms": [], "log_ratio": [], "pair_terms": []}
    saved = {"log_ratio": mt._log_ratio, "relabellings": mt.relabellings, "design": mt.Design.__dict__["of"],
             "at": ClusterTerms.__dict__["of"], "pair_terms": ThresholdError.pair_terms}
    design_of, terms_at = mt.Design.of, ClusterTerms.of

    def log_ratio(x, v, w, n, pairs):
        out = saved["log_ratio"](x, v, w, n, pairs)
        rec["log_ratio"].append(((x, v, w, n), out))
        return out

    def relabellings(*a, **k):
        out = saved["relabellings"](*a, **k)
        rec["labels"].append(out[0])
        return out

    def of(cls, *a, **k):
        out = design_of(*a, **k)
        rec["design"].append(out)
        return out

    def at(cls, *a, **k):
        out = terms_at(*a, **k)
        rec["terms"].append(out)
        return out

    def pair_terms(self, labels, sides, pairs, per_side=None):
        out = saved["pair_terms"](self, labels, sides, pairs, per_side)
        if per_side is not None:  # the log ratio's term (the other call is the difference's)
            rec["pair_terms"].append(out)
        return out

    mt._log_ratio, mt.relabellings = log_ratio, relabellings
    mt.Design.of, ClusterTerms.of = classmethod(of), classmethod(at)
    ThresholdError.pair_terms = pair_terms
    try:
        yield rec
    finally:
        mt._log_ratio, mt.relabellings = saved["log_ratio"], saved["relabellings"]
        mt.Design.of, ClusterTerms.of = saved["design"], saved["at"]
        ThresholdError.pair_terms = saved["pair_terms"]


def matching_statistics(data, metric, groups=None, **kw) -> mt.MatchingStatistics:
    """``matching_passes.matching_statistics(data, metric, groups, **kw)`` with the study's ``details`` added:
    ``df_variants``, ``study_ex0`` and ``pooled`` (see the module docstring)."""
    with _recording() as rec:
        st = matching_passes.matching_statistics(data, metric, groups, **kw)
    if rec["pair_terms"]:
        st.details["study_ex0"] = rec["pair_terms"][-1][0][0]
    fixed = metric in ("fnmr", "fmr") or (metric == "fnmr_at_fmr" and kw.get("threshold_impostors", "all") == "all")
    if len(rec["log_ratio"]) != 2 or not fixed:  # not the studentized log ratio at a fixed threshold
        return st
    ((x, vx, wx, nx), (_, v, w)), ((xp, vp, wp, n_p), (_, v_perm, w_perm)) = rec["log_ratio"]
    sides, pairs, labels, terms = rec["design"][0].sides, rec["design"][0].pairs, rec["labels"][0], rec["terms"][0]
    obs = data.identity_group[None, :]
    ex = rec["pair_terms"][-1] if rec["pair_terms"] else None
    a = identity_weights(metric, terms)
    dv = {k: (o, p_) for (k, o), (_, p_) in zip(
        df_variants(x, vx, wx, nx, pairs, a, obs, sides, ex, data.n_identities).items(),
        df_variants(xp, vp, wp, n_p, pairs, a, labels, sides, None, data.n_identities).items())}
    dv["noterm"] = (mt._degrees(v, w), mt._degrees(v_perm, w_perm))
    st.details["df_variants"] = dv
    if metric != "fmr":
        st.details["pooled"] = (pooled(terms.g, terms.e, obs, sides, pairs),
                                pooled(terms.g, terms.e, labels, sides, pairs))
    return st


def identity_weights(metric: str, terms: ClusterTerms) -> np.ndarray:
    """Working-model weight of each identity's variance share under independence: its comparisons in the metric."""
    if metric == "fmr":
        return (np.asarray(terms.M.sum(axis=1)).ravel() if terms.M is not None
                else terms.sizes * terms.sizes.sum())
    return terms.g


def df_variants(x, v, w, n, pairs, a, labels, sides, ex, n_ids):
    """(R, m) candidate effective df's of the log ratio: ``cur`` v^2/w; ``kc`` 2 V^2 / (W - E2) (Satterthwaite with
    the squared shares' variance, E2 = sum_s V_s^2 / K_s the squared shares expected under the working model);
    ``model`` V^2 / E2 (Welch with working-model shares)."""
    q = mt._half_error_rate(x, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        Vs, Ws = v / q**2, w / q**4
        Ks = []
        for side in np.asarray(sides, bool):
            m = side[labels].astype(float)
            Ks.append((m @ a) ** 2 / (m @ (a * a)))
        Ks = np.stack(Ks, axis=1)
        E2s = Vs**2 / Ks
        V = np.stack([Vs[:, i] + Vs[:, j] for i, j in pairs], axis=1)
        W = np.stack([Ws[:, i] + Ws[:, j] for i, j in pairs], axis=1)
        E2 = np.stack([E2s[:, i] + E2s[:, j] for i, j in pairs], axis=1)

        def kc(V, W, E2):
            d = W - E2
            return np.where(d > 0, 2 * V**2 / d, np.inf)

        def model(V, E2):
            return np.where(E2 > 0, V**2 / E2, np.inf)

        degrees = mt._degrees
        out = {"cur": degrees(V, W), "kc": kc(V, W, E2), "model": model(V, E2),
               "kc_half": np.minimum(degrees(V, W) * 2, kc(V, W, E2))}
        if ex is not None:
            V2, W2, E22 = np.maximum(V + ex[0], 0.0), W + ex[1], E2 + ex[0] ** 2 / n_ids
            out = {"cur": np.minimum(out["cur"], degrees(V2, W2)), "kc": np.minimum(out["kc"], kc(V2, W2, E22)),
                   "model": np.minimum(out["model"], model(V2, E22)),
                   "kc_half": np.minimum(out["kc_half"], np.minimum(2 * degrees(V2, W2), kc(V2, W2, E22))),
                   "comb": degrees(V2, W2), "kcomb": kc(V2, W2, E22)}
        else:
            out |= {"comb": out["cur"], "kcomb": out["kc"]}
    return out


def pooled(g, e, labels, sides, pairs):
    """Score-type studentization of the log ratio (FNMR): each side's clustered variance at the pair's pooled rate,
    ``sum_k (e_k - p g_k)^2 / G_s^2``, over ``q^2`` (``q`` the pooled half-error rate): (variance, squared shares,
    working-model E2) per pair, each (R, m)."""
    masks = [side[labels].astype(float) for side in np.asarray(sides, bool)]
    V, W, E2 = (np.empty((labels.shape[0], len(pairs))) for _ in range(3))
    with np.errstate(divide="ignore", invalid="ignore"):
        for j, (a, b) in enumerate(pairs):
            Ea, Eb, Na, Nb = masks[a] @ e, masks[b] @ e, masks[a] @ g, masks[b] @ g
            p = (Ea + Eb) / (Na + Nb)
            q = (Ea + Eb + 0.5) / (Na + Nb)
            r2 = (e[None, :] - p[:, None] * g[None, :]) ** 2
            ca, cb = masks[a] * r2 / (Na**2 * q**2)[:, None], masks[b] * r2 / (Nb**2 * q**2)[:, None]
            va, vb = ca.sum(1), cb.sum(1)
            V[:, j], W[:, j] = va + vb, (ca**2).sum(1) + (cb**2).sum(1)
            Ka = (masks[a] @ g) ** 2 / (masks[a] @ (g * g))
            Kb = (masks[b] @ g) ** 2 / (masks[b] @ (g * g))
            E2[:, j] = va**2 / Ka + vb**2 / Kb
    return V, W, E2
