"""The names a user can choose from, each list defined once here: interval methods, input formats, backends,
paired comparison schemes and classifier metrics.

A leaf module (no imports), so the command line lists the choices in its help without loading the modules that
implement them (``matchaudit --help`` starts in a fraction of a second); those modules take their names from here.
"""

CLOSED_FORM = ("wilson", "wilson-naive", "wald", "clopper-pearson", "jackknife")
"""Closed-form intervals for an error rate at a fixed threshold (:mod:`matchaudit.estimators.intervals`)."""

BOOTSTRAP = ("recentered", "naive", "gaussian", "vertex", "double-or-nothing", "subsets", "two-level")
"""Bootstrap intervals and bands (:mod:`matchaudit.estimators.bootstrap`)."""

INTERVAL_METHODS = CLOSED_FORM + BOOTSTRAP
"""Every ``--ci-method`` of an audit."""

PAIRED_SCHEMES = ("double-or-nothing", "vertex")
"""Identity bootstraps that compare two models on the same comparisons (:mod:`matchaudit.estimators.compare`)."""

FORMATS = ("tidy", "bob", "bob-csv", "kaldi", "voxceleb", "voxsrc", "wespeaker", "nist-sre", "frvt", "pair-table",
           "score-matrix", "identity-embeddings")
"""Input formats of ``--format`` (:mod:`matchaudit.cli.formats`)."""

BACKENDS = ("cpu", "dask", "gpu")
"""Where the engine's counting passes run (:mod:`matchaudit.engine.backends`)."""

FTA_POLICIES = ("refuse", "exclude", "count")
"""Comparisons without a score (failures to acquire or compare): refuse the input, exclude and report them, or
count them as errors (:class:`matchaudit.model.Failures`)."""

CLASSIFIER_METRICS = ("fnr", "tpr", "fpr", "tnr", "accuracy", "positive_rate", "auc")
"""Metrics of a classifier table's group test (:mod:`matchaudit.estimators.classifier`)."""

__all__ = ["BACKENDS", "BOOTSTRAP", "CLASSIFIER_METRICS", "CLOSED_FORM", "FORMATS", "FTA_POLICIES", "INTERVAL_METHODS",
           "PAIRED_SCHEMES"]
