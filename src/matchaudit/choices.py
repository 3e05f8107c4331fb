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

SCOPE = {"recentered": "these identities", "naive": "these identities", "gaussian": "these identities",
         "vertex": "a new population of identities", "double-or-nothing": "a new population of identities",
         "subsets": "a new population of identities", "two-level": "a new population of identities",
         "wilson": "a new population of identities", "wald": "a new population of identities",
         "jackknife": "a new population of identities", "wilson-naive": "independent comparisons",
         "clopper-pearson": "independent comparisons"}
"""The question each interval method answers: "these identities" (samples redrawn within the identities at hand:
how much the rate would move with other images or recordings of the same people), "a new population of
identities" (identities redrawn, or their clustering in the variance: how much it would move with other people,
the question the identity-level group tests answer), or "independent comparisons" (no clustering: too narrow)."""

PAIRED_SCHEMES = ("double-or-nothing", "vertex")
"""Identity bootstraps that compare two models on the same comparisons (:mod:`matchaudit.estimators.compare`)."""

FORMATS = ("tidy", "bob", "bob-csv", "kaldi", "kaldi-eer", "pyeer", "voxceleb", "voxsrc", "wespeaker", "speechbrain",
           "nist-sre", "bosaris", "frvt", "pair-table", "score-matrix", "identity-embeddings")
"""Input formats of ``--format`` (:mod:`matchaudit.cli.formats`)."""

BACKENDS = ("cpu", "dask", "gpu")
"""Where the engine's counting passes run (:mod:`matchaudit.engine.backends`)."""

FTA_POLICIES = ("refuse", "exclude", "count")
"""Comparisons without a score (failures to acquire or compare): refuse the input, exclude and report them, or
count them as errors (:class:`matchaudit.model.Failures`)."""

DUPLICATE_POLICIES = ("keep-both", "first", "mean", "refuse")
"""A comparison listed more than once ((a, b) and (b, a) are the same sample pair): count every row, as
trial-list scorers count trial lines (the default, with a warning); keep the first row; one row with the mean of
their scores; or refuse the input (:func:`matchaudit.data.validate.resolve_duplicates`)."""

CLASSIFIER_METRICS = ("fnr", "tpr", "fpr", "tnr", "accuracy", "positive_rate", "auc")
"""Metrics of a classifier table's group test (:mod:`matchaudit.estimators.classifier`)."""

__all__ = ["BACKENDS", "BOOTSTRAP", "CLASSIFIER_METRICS", "CLOSED_FORM", "DUPLICATE_POLICIES", "FORMATS",
           "FTA_POLICIES", "INTERVAL_METHODS", "PAIRED_SCHEMES", "SCOPE"]

LABELFREE_KERNELS = ("normal", "t", "sas")
"""Two-piece kernels of the label-free model (:mod:`matchaudit.labelfree.twopiece`)."""

LABELFREE_FAMILIES = tuple(f"{k}{scale}{mix}" for mix in ("", "-mix") for scale in ("", "-atanh") for k in LABELFREE_KERNELS)
"""Label-free score models of ``--family`` besides ``auto``: a kernel on the scores or (``-atanh``) on Fisher's z of
cosine-like scores, the non-matches one component or (``-mix``) a bulk and a shoulder
(:func:`matchaudit.labelfree.twopiece.parse`)."""
