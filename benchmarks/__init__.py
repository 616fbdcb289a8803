"""Benchmarks and evaluation, run from the source checkout (not in the wheel): the `memstream
bench` commands' code, recall, gold precision, calibration, the mem0 runner, reports."""
