"""Hypothesis 2 (#43 item 3): does the threshold's delta term over-count? Over data sets of the threshold designs,
the empirical variance of the observed log ratio T(t_hat) against the mean clustered variance at t_hat (no term) and
with the term, and E[S^2], P(|S| > 1.96) for S = T / sqrt(v) both ways (normal reading, no df). Usage: N"""
import sys

import numpy as np

sys.path.insert(0, "src")
sys.path.insert(0, "bench")
import df_study  # noqa: E402
import level_df as L  # noqa: E402
import test_level as tl  # noqa: E402

n = int(sys.argv[1])
for lab, groups in tl.THRESHOLD[:5] + L.NEWTHR[1:]:
    T, V, X = [], [], []
    for i in range(n):
        data, alpha, _ = tl.threshold_design(20_000 + i, groups, impostors=20_000)
        st = df_study.matching_statistics(data, "fnmr_at_fmr", None, n_resamples=9, seed=i, fmr_target=alpha)
        ex = st.details.get("study_ex0")
        ex = 0.0 if ex is None else float(ex[0])
        T.append(float(st.t[0])); V.append(float(st.v[0]) - ex); X.append(ex)
    T, V, X = map(np.array, (T, V, X))
    s0, s1 = T / np.sqrt(V), T / np.sqrt(V + X)
    print(f"{lab}: var(T) {T.var():.4f} mean v {V.mean():.4f} mean v+term {(V + X).mean():.4f} | E S0^2 {np.mean(s0**2):.3f}"
          f" E S1^2 {np.mean(s1**2):.3f} | P|S0|>1.96 {np.mean(abs(s0) > 1.96):.3f} P|S1|>1.96 {np.mean(abs(s1) > 1.96):.3f}"
          f" | term>0 share {np.mean(X > 0):.2f}", flush=True)
