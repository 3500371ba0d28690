"""Tail drop: a bounded input queue in front of the full join, and nothing else.

``[shedding] mode = "taildrop"`` makes no shedding decision: every tuple that finds room
in the input queue is joined with full scans, and an arrival that finds the queue full
is dropped. It is the baseline any shedder has to beat: what an overloaded join does
when nobody sheds but its input buffer is bounded (GrubJoin §III-B: tuples are dropped
when a finite input buffer overflows).

* virtual CPU: the queue holds ``queue`` tuples (the paper's 10), exactly the unshed
  simulation `harvest bench grubjoin` ran before this mode existed;
* wall clock (Spark): the queue is bounded in waiting time, ``queue_ms`` of modelled
  backlog (default Δ), :class:`~pipeline.operators.virtual_cpu.WallQueue`: the job drops
  instead of falling behind its input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.events import Event
from pipeline.operators.hooks import PluginEnv, ProbeFeedback, ProbePlan
from pipeline.operators.virtual_cpu import (
    BudgetReading,
    WallQueue,
    make_queue_budget,
    restore_queue_budget,
)

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig, SheddingConfig


def queue_budget(sh: SheddingConfig, env: PluginEnv) -> Any:
    """The bounded-queue budget of ``sh`` (virtual: ``queue`` tuples; wall: ``queue_ms``)."""
    return make_queue_budget(sh.budget, sh.capacity, sh.queue, float(sh.queue_bound_ms),
                             sh.utilization, env.clock, env.speedup)


def queue_row(reading: BudgetReading, budget: Any) -> dict[str, Any]:
    """The budget's part of a metrics row."""
    row: dict[str, Any] = {
        "beta": round(min(reading.beta, 1e6), 6),
        "queue_drops": reading.dropped,
        "queue_overflows": reading.overflows,
        "pushed": reading.pushed,
        "consumed": reading.consumed,
        "cost": round(reading.cost, 3),
    }
    if isinstance(budget, WallQueue):
        row["backlog_ms"] = round(budget.backlog_ms(), 3)
    return row


class TailDropShedder:
    """``[shedding] mode = "taildrop"``: admit while the input queue has room, scan fully."""

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        self.config = config
        self.budget = queue_budget(config.shedding, env)

    @classmethod
    def create(cls, config: EngineConfig, env: PluginEnv) -> TailDropShedder:
        """The engine's factory; a wall budget times with ``env.clock``."""
        return cls(config, env)

    def admit(self, event: Event, now: int) -> bool:
        return bool(self.budget.admit(now))

    def plan(self, direction: int) -> ProbePlan | None:
        return None

    def charge(self, cost: float, now: int) -> None:
        self.budget.charge(cost, now)

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        return None

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Every Δ: the queue's metrics (nothing adapts)."""
        reading = self.budget.measure(now, self.config.shedding.adapt_interval_ms)
        return {"time": now, "mode": "taildrop", **queue_row(reading, self.budget)}

    def snapshot(self) -> dict[str, Any]:
        return {"mode": "taildrop", "budget": self.budget.snapshot()}

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> TailDropShedder:
        if snap.get("mode") != "taildrop":
            raise OperatorStateError(f"not a taildrop shedder snapshot: {snap.get('mode')!r}")
        obj = cls(config, env)
        try:
            obj.budget = restore_queue_budget(obj.budget, snap["budget"])
        except (KeyError, TypeError) as exc:
            raise OperatorStateError(f"cannot restore taildrop shedder: {exc!r}") from exc
        return obj
