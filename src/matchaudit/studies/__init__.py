"""Studies: jobs that draw pilots or simulated populations, run the passes over them and hand the outputs to the
estimators: the coverage study of the intervals (``coverage``, against the vMF model's true rates, ``vmf_truth``)
and the planning study of comparison protocols (``planning``). Above the estimators, beside
:mod:`matchaudit.auditing`: a study is a job of its own, not a step of an audit (#46 item 2)."""
