"""Estimators: intervals, bands, tests and label-free models — pure functions of resampled statistics."""
