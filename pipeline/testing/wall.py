"""A counter clock and GrubJoin on the wall queue behind it, for simulated machines.

The shedder's wall budget reads an injected clock; a test moves a :class:`ManualClock`
by the seconds its simulated machine spends, so nothing reads real time.
"""

from __future__ import annotations

from pipeline.operators.contract import PluginEnv
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec

__all__ = ["ManualClock", "wall_grubjoin"]


class ManualClock:
    """Seconds that move only when the test adds to ``t``."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def wall_grubjoin(clock: ManualClock, **shedding: object) -> GrubJoinShedder:
    """A 3-way band-join GrubJoin on the wall queue (10 s windows, 1 s basic windows and
    Δ, utilization 0.6, no shredding); ``shedding`` overrides or adds ``[shedding]`` keys."""
    spec = make_spec(3, "band", [10_000] * 3, shedding={
        "mode": "grubjoin", "budget": "wall", "basic_window_ms": 1_000,
        "adapt_interval_ms": 1_000, "utilization": 0.6, "shred_rate": 0.0, **shedding})
    return GrubJoinShedder(resolve_engine(spec), PluginEnv(clock=clock, speedup=1.0))
