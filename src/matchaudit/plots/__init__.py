"""The figures of an audit and of the other commands: DET curves on the probit (or log) axis, FMR and FNMR against
the threshold, APE and score-distribution figures, and the helpers they share (labels, legends, colours, saving).
Presentation only: every figure draws numbers it is given."""
