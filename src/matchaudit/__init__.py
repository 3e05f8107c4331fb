"""matchaudit: how far you can trust a 1:1 matching system's error rates.

Exact per-group FMR/FNMR, thresholds at FMR targets, DET curves, EER, AUC, minDCF and fairness measures
(``matchaudit.metrics``) from samples + embeddings or comparison tables (``matchaudit.data``).
"""

__version__ = "0.1.0"
