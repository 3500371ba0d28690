"""Reproducible benchmarks: each writes bench/results/<name>.json and PNG plots.

One package per benchmark (``bench.<name>``: its docstring says what it measures and which
paper figure it follows; ``bench.<name>.main.run`` runs it) over :mod:`bench.kit`, the
plumbing they share. :mod:`bench.registry` names the benchmarks `harvest bench` knows.
"""
