"""The #18 permutation experiment's helpers: stream alignment and the per-skew summary."""

from __future__ import annotations

import pytest

from bench.memory.permutations import alignment, summarize
from bench.memory.runs import step_workload


def test_correlated_streams_are_aligned_and_uncorrelated_less() -> None:
    corr = step_workload("t", 50, (1.0, 1.0), seed=3, after=2000, correlated=True)
    unc = step_workload("t", 50, (1.0, 1.0), seed=3, after=2000, correlated=False)
    assert alignment(corr) > 0.98
    assert alignment(unc) < alignment(corr)


def test_summary_counts_inputs_at_target() -> None:
    rows = [{"zipf": 1.0, "prob_over_opt": r, "known_over_opt": r + 0.01}
            for r in (0.90, 0.96, 0.97)]
    s = summarize(rows)["1"]
    assert s["inputs"] == 3
    assert s["inputs_at_or_above_0.96"] == 2
    assert s["min"] == 0.90 and s["max"] == 0.97
    assert s["prob_over_opt_mean"] == pytest.approx(0.9433, abs=1e-4)
