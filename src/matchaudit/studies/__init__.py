"""Studies: the orchestration that draws pilots or simulated populations, runs the passes over them and hands the
outputs to the estimators (the coverage study of the intervals, the protocol study of the planning rules). Above the
estimators, beside :mod:`matchaudit.auditing`: a study is a job of its own, not a step of an audit."""
