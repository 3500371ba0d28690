"""How fast can the full (unshed) join go here? — a measured estimate for the demo and bench.

The wall budget of GrubJoin inside Spark (DESIGN §5) gives each operator instance
``utilization / speedup`` seconds of join time per second of stream time. We time the
in-process :class:`~pipeline.operators.engine.Engine` (shedding off) on a short sample of
the workload at ``sample_rate`` tuples/s per stream and get ``c0`` = wall seconds of join
work per stream second. The full m-way join's cost is dominated by scanning the first
window of each direction — r·W comparisons per tuple, r tuples per stream per second —
so it grows as r² (GrubJoin cost model, Gedik et al. Eq. 1 with σ·r·W ≪ 1 partials);
with G route keys sharing it, the full-join capacity r_cap solves
``c0 · (r_cap / r0)² / G = utilization / speedup``, i.e.
``r_cap = r0 · sqrt(utilization · G / (speedup · c0))``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import ConfigError
from pipeline.operators.config import EngineConfig
from pipeline.operators.engine import Engine
from pipeline.operators.events import event_from_dump
from pipeline.spec import Spec


@dataclass(frozen=True, slots=True)
class Capacity:
    """The calibration: sample, measured cost, derived full-join capacity."""

    sample_rate: float  # tuples/s per stream in the sample
    sample_seconds: float  # stream seconds in the sample
    wall_seconds: float  # wall time the full join took on the sample
    results: int  # results of the sample
    cost_per_stream_second: float  # c0 = wall_seconds / sample_seconds
    groups: int
    speedup: float
    utilization: float
    capacity_rate: float  # r_cap, tuples/s per stream

    def describe(self) -> str:
        """One-line derivation, for logs and the demo summary."""
        return (
            f"full join on a {self.sample_seconds:g} s sample at {self.sample_rate:g}/s per "
            f"stream took {self.wall_seconds:.2f} s wall (c0 = {self.cost_per_stream_second:.3f}"
            f" s per stream-second); r_cap = r0·sqrt(u·G/(speedup·c0)) = {self.sample_rate:g}"
            f"·sqrt({self.utilization:g}·{self.groups}/({self.speedup:g}·"
            f"{self.cost_per_stream_second:.3f})) = {self.capacity_rate:.0f}/s per stream"
        )

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON)."""
        return {
            "sample_rate": self.sample_rate, "sample_seconds": self.sample_seconds,
            "wall_seconds": self.wall_seconds, "results": self.results,
            "cost_per_stream_second": self.cost_per_stream_second, "groups": self.groups,
            "speedup": self.speedup, "utilization": self.utilization,
            "capacity_rate": self.capacity_rate,
        }


def capacity_from_cost(
    sample_rate: float, cost_per_stream_second: float, groups: int, speedup: float,
    utilization: float,
) -> float:
    """``r_cap = r0 · sqrt(u · G / (speedup · c0))`` (see the module docstring)."""
    if sample_rate <= 0 or cost_per_stream_second <= 0 or groups < 1 or speedup <= 0:
        raise ConfigError(
            f"capacity: need rate, cost, groups, speedup > 0, got {sample_rate}, "
            f"{cost_per_stream_second}, {groups}, {speedup}"
        )
    return sample_rate * math.sqrt(utilization * groups / (speedup * cost_per_stream_second))


def measure_capacity(
    spec: Spec,
    sample: Sequence[Mapping[str, Any]],
    sample_rate: float,
    sample_seconds: float,
    *,
    speedup: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Capacity:
    """Time the exact full join (shedding off, fixed K = the sample's max delay) on
    ``sample`` (dump records)."""
    max_delay = max((int(r["arrival_time"]) - int(r["event_time"]) for r in sample), default=0)
    exact = spec.model_copy(
        update={
            "shedding": spec.shedding.model_copy(update={"mode": "off"}),
            "disorder": spec.disorder.model_copy(
                update={"mode": "fixed", "slack_ms": max(0, max_delay)}
            ),
        }
    )
    index = {s: i for i, s in enumerate(spec.join.streams)}
    events = [event_from_dump(r, index) for r in sample]
    engine = Engine(EngineConfig.from_spec(exact))
    start = clock()
    results = len(engine.process_many(events)) + len(engine.flush())
    wall = max(clock() - start, 1e-6)
    c0 = wall / sample_seconds
    groups = spec.job.groups
    utilization = spec.shedding.utilization
    return Capacity(
        sample_rate=sample_rate,
        sample_seconds=sample_seconds,
        wall_seconds=wall,
        results=results,
        cost_per_stream_second=c0,
        groups=groups,
        speedup=speedup,
        utilization=utilization,
        capacity_rate=capacity_from_cost(sample_rate, c0, groups, speedup, utilization),
    )
