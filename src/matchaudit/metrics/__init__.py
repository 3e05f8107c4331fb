"""Exact plug-in metrics: tallies of comparisons (``tally``), rate queries (``rates``), fairness
measures (``fairness``) and the per-group evaluation behind ``matchaudit audit`` (``evaluate``)."""
