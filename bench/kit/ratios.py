"""The output of a shedding method over the baselines measured at the same point (the
ratios GrubJoin's evaluation reports: Gedik et al., GrubJoin (TKDE), §VI)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _output_ratio(a: float | None, b: float | None) -> float | None:
    """a / b; None when either is unknown or b is not positive."""
    if a is None or b is None or not b > 0:
        return None
    return float(a) / float(b)


def add_baseline_ratios(rows: list[dict[str, Any]], keys: tuple[str, ...],
                        methods: tuple[str, ...], baselines: tuple[str, ...],
                        eligible: Callable[[dict[str, Any]], bool] | None = None,
                        value: str = "output_rate") -> list[dict[str, Any]]:
    """Annotate every row of a shedding method in ``methods`` with its output over each
    baseline measured at the same point (rows equal on ``keys``): ``ratio_vs`` {baseline:
    ratio}, ``best_baseline`` (the baseline with the most output among those that are
    ``eligible``, e.g. within the latency bound) and ``ratio_vs_best_baseline``. A point
    without an eligible baseline, or whose best baseline produced nothing, gets None.
    Returns ``rows`` (changed in place)."""
    ok = eligible if eligible is not None else (lambda row: True)
    for row in rows:
        if row.get("method") not in methods:
            continue
        peers = [r for r in rows if r.get("method") in baselines
                 and all(r.get(k) == row.get(k) for k in keys)]
        by = {r["method"]: r for r in peers}
        row["ratio_vs"] = {b: _output_ratio(row.get(value), by[b].get(value))
                           for b in baselines if b in by}
        fair = [r for r in peers if ok(r) and r.get(value) is not None]
        best = max(fair, key=lambda r: float(r[value]), default=None)
        row["best_baseline"] = None if best is None else best["method"]
        row["ratio_vs_best_baseline"] = None if best is None else _output_ratio(
            row.get(value), best[value])
    return rows
