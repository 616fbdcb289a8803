"""Benchmarks and evaluation: LoCoMo bench, query bench, recall, gold precision, calibration, policy report."""
