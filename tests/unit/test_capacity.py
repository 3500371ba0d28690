"""The full-join capacity estimate used by the demo and the pipeline benchmark."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from pipeline.capacity import capacity_from_cost, measure_capacity
from pipeline.errors import ConfigError
from pipeline.oracle import oracle
from tests.unit.operators.streams import make_dump, make_spec


@pytest.mark.parametrize(
    ("r0", "c0", "groups", "speedup", "u", "expected"),
    [
        (100.0, 0.8, 1, 1.0, 0.8, 100.0),  # the sample used exactly the budget
        (100.0, 0.2, 1, 1.0, 0.8, 200.0),  # a quarter of the cost -> twice the rate (r²)
        (100.0, 0.2, 2, 2.0, 0.8, 200.0),  # two instances, twice as fast a replay
        (50.0, 0.1, 2, 4.0, 0.8, 100.0),
    ],
)
def test_capacity_formula(
    r0: float, c0: float, groups: int, speedup: float, u: float, expected: float
) -> None:
    got = capacity_from_cost(r0, c0, groups, speedup, u)
    assert math.isclose(got, expected, rel_tol=1e-9)
    # at r_cap the modelled per-instance cost equals the budget
    assert math.isclose(c0 * (got / r0) ** 2 / groups, u / speedup, rel_tol=1e-9)


def test_capacity_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match="capacity"):
        capacity_from_cost(0.0, 1.0, 1, 1.0, 0.8)


def test_measure_capacity_times_the_exact_join() -> None:
    spec = make_spec(3, "band", [200, 200, 200],
                     shedding={"mode": "grubjoin", "budget": "wall"},
                     job={"groups": 2})
    dump = make_dump(3, 3, 30, max_gap=20, max_delay=50)
    ticks: Iterator[float] = iter([10.0, 12.5])  # the join "took" 2.5 s
    cap = measure_capacity(spec, dump, sample_rate=40.0, sample_seconds=5.0, speedup=2.0,
                           clock=lambda: next(ticks))
    assert cap.results == len(oracle(spec.join, dump))  # shedding forced off, K = max delay
    assert cap.cost_per_stream_second == pytest.approx(0.5)
    assert cap.capacity_rate == pytest.approx(40.0 * math.sqrt(0.8 * 2 / (2.0 * 0.5)))
    assert "r_cap" in cap.describe()
