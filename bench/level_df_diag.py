"""Which side is off? For a design and a df variant: P(|Z_obs| > 1.96) over data sets (the observed statistic's own
tail, on the normal scale after the t reading) against the mean share of relabelled |Z*| > 1.96 (the permutation
null's tail), and the rejection rate. Usage: python bench/level_df_diag.py N"""
import sys

import numpy as np

sys.path.insert(0, "src")
sys.path.insert(0, "bench")
import df_study  # noqa: E402
import level_df as L  # noqa: E402
import test_level as tl  # noqa: E402
from matchaudit.estimators.permutation import standardize  # noqa: E402

DES = {d[0]: d for d in L.TUNED + L.NEW}
PICK = ["150x3 indep vs 25x15 Beta(0.1,1.9)", "150x3 indep vs 25x105 Beta(0.1,1.9)", "N2 300x2 indep vs 40x30 Gamma(0.3)",
        "N3 30x40 twopoint vs 90x5 indep", "FMR 150x20 indep vs 25x120 Beta(0.1,1.9)"]


def diag(n, label, metric, make, kw):
    res = {v: [[], []] for v in ("cur", "kc", "model", "normal", "noterm")}
    for i in range(n):
        data = make(i)
        st = df_study.matching_statistics(data, metric, None, n_resamples=L.B, seed=i, **kw)
        dv = st.details["df_variants"]
        for name in res:
            df, dfp = (None, None) if name == "normal" else (dv[name][0][0], dv[name][1])
            v = st.v
            if name == "noterm" and st.details.get("study_ex0") is not None:
                v = st.v - st.details["study_ex0"]
            z = standardize(st.t, v, st.t_perm, st.v_perm, True, df, dfp)
            res[name][0].append(float(np.abs(z.statistic[0]) > 1.96))
            res[name][1].append(float(np.mean(np.abs(z.null[:, 0]) > 1.96)))
    print(label, "  ".join(f"{k}: obs {np.mean(a):.3f} perm {np.mean(b):.3f}" for k, (a, b) in res.items()), flush=True)


if __name__ == "__main__":
    n = int(sys.argv[1])
    for lab in PICK:
        _, metric, groups = DES[lab]
        make = ((lambda i, g=groups: tl.impostor_design(30_000 + i, g, 0.05)) if metric == "fmr"
                else (lambda i, g=groups: tl.genuine_design(30_000 + i, g)))
        diag(n, lab, metric, make, {"threshold": 0.5})
    for lab, groups in tl.THRESHOLD[1:3]:
        def make(i, g=groups):
            return tl.threshold_design(20_000 + i, g, impostors=20_000)[0]
        alpha = 20 / 20_000
        diag(n, lab, "fnmr_at_fmr", make, {"fmr_target": alpha})
