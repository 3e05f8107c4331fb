"""The HTML report of an audit and the sections other commands add to it (compare, estimate). Nothing statistical
lives here; the figures are :mod:`matchaudit.plots`', the audit's files :mod:`matchaudit.auditing.results_json`'s and
:mod:`matchaudit.auditing.stored`'s."""
