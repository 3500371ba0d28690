"""Reproducible benchmarks: each writes bench/results/<name>.json and PNG plots."""
