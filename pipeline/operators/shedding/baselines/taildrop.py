"""Tail drop: a bounded input queue in front of the full join, and nothing else.

``[shedding] mode = "taildrop"`` makes no shedding decision: every tuple that finds room
in the input queue is joined with full scans, and an arrival that finds the queue full
is dropped. It is the baseline any shedder has to beat: what an overloaded join does
when nobody sheds but its input buffer is bounded (GrubJoin §III-B: tuples are dropped
when a finite input buffer overflows).

* virtual CPU: the queue holds ``queue`` tuples (the paper's 10), exactly the unshed
  simulation of `harvest bench grubjoin`;
* wall clock (Spark): the queue is bounded in waiting time, ``queue_ms`` of modelled
  backlog (default Δ), :class:`~pipeline.operators.budget.wall.WallQueue`: the job drops
  instead of falling behind its input.

**The batch path** (ours; :mod:`~pipeline.operators.engine.batch`): on the wall clock the
engine hands a whole released run to :meth:`TailDropShedder.admit_some`, which admits it
through the queue at once and joins the admitted tuples together
(:mod:`pipeline.operators.budget.queue`: the same decisions and state as tuple by tuple).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.operators.budget.factory import restore_shedder
from pipeline.operators.budget.queue import (
    queue_admit_run,
    queue_budget,
    queue_charge_run,
    queue_row,
)
from pipeline.operators.contract import DropsFromRuns, PluginEnv, WallAccount
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

if TYPE_CHECKING:
    from pipeline.operators.config import EngineConfig


class TailDropShedder(DropsFromRuns):
    """``[shedding] mode = "taildrop"``: admit while the input queue has room, scan fully."""

    def __init__(self, config: EngineConfig, env: PluginEnv) -> None:
        self.config = config
        self.budget = queue_budget(config.shedding, env)
        #: the batch path's predicted modelled ms per admitted tuple (module docstring)
        self.service_ms = 0.0
        self.last_before = 0.0  # the queue's last arrival before the run being joined

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

    def admit_some(self, streams: NDArray[np.int64],
                   nows: NDArray[np.int64]) -> NDArray[np.bool_] | None:
        """The engine's batch path: the admitted tuples of a run (wall clock; None on
        the virtual CPU, whose queue depends on each previous tuple's cost)."""
        queue = self.budget.queue()
        if queue is None:
            return None
        self.last_before = queue.last_now
        return queue_admit_run(queue, nows, self.service_ms)

    def charge_some(self, costs: NDArray[np.float64], nows: NDArray[np.int64]) -> None:
        """The tuples admitted by :meth:`admit_some` cost ``costs``."""
        queue = self.budget.queue()
        assert queue is not None, "charge_some follows an admit_some that returned a mask"
        self.service_ms = queue_charge_run(queue, costs, nows, self.last_before)

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        return None

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Every Δ: the queue's metrics (nothing adapts)."""
        reading = self.budget.measure(now, self.config.shedding.adapt_interval_ms)
        return {"time": now, "mode": "taildrop", **queue_row(reading, self.budget)}

    def wall_budget(self) -> WallAccount | None:
        """The queue when it runs on the wall clock (the runtime reports batches to it)."""
        return self.budget.wall()

    def snapshot(self) -> dict[str, Any]:
        return {"mode": "taildrop", "budget": self.budget.snapshot(),
                "service_ms": self.service_ms}

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> TailDropShedder:
        def load(obj: TailDropShedder) -> None:
            obj.service_ms = float(snap.get("service_ms", 0.0))

        return restore_shedder("taildrop", snap, lambda: cls(config, env), load)
