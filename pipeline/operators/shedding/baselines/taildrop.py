"""Tail drop: a bounded input queue in front of the full join, and nothing else.

``[shedding] mode = "taildrop"`` makes no shedding decision: every tuple that finds room
in the input queue is joined with full scans, and an arrival that finds the queue full
is dropped. It is the baseline any shedder has to beat: what an overloaded join does
when nobody sheds but its input buffer is bounded (GrubJoin §III-B: tuples are dropped
when a finite input buffer overflows).

* virtual CPU: the queue holds ``queue`` tuples (the paper's 10), exactly the unshed
  simulation `harvest bench grubjoin` ran before this mode existed;
* wall clock (Spark): the queue is bounded in waiting time, ``queue_ms`` of modelled
  backlog (default Δ), :class:`~pipeline.operators.budget.virtual_cpu.WallQueue`: the job drops
  instead of falling behind its input.

**The batch path** (ours; :mod:`~pipeline.operators.engine.batch`): on the wall clock the
engine hands a whole released run to :meth:`TailDropShedder.admit_some`, which plays
:meth:`WallQueue.admit` for each tuple in order (:func:`queue_admit_run`), and joins the
admitted ones at once; :func:`queue_charge_run` then serves them as
:meth:`WallQueue.charge` would, each with an equal share of the run's measured seconds
(one clock reading covers the run). While a run is being admitted its own service times
are not measured yet, so each admitted tuple is predicted to take ``service_ms`` (the
modelled time per tuple of the previous run): a run that would overflow the queue drops
its tail, as tuple by tuple. With a clock that does not move inside a call the decisions
and the state equal the per-tuple path's exactly (tests/unit/operators/
test_drop_batch.py). The virtual CPU's queue depends on each previous tuple's cost in
cost units, so there the engine admits tuple by tuple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import OperatorStateError
from pipeline.operators.budget.protocol import BudgetReading
from pipeline.operators.budget.virtual_cpu import make_queue_budget, restore_queue_budget
from pipeline.operators.budget.wall import WallQueue
from pipeline.operators.contract import PluginEnv
from pipeline.operators.events import Event
from pipeline.operators.join.plan import ProbeFeedback, ProbePlan

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


def queue_admit_run(q: WallQueue, nows: NDArray[np.int64], service_ms: float,
                    offered: NDArray[np.bool_] | None = None) -> NDArray[np.bool_]:
    """:meth:`WallQueue.admit` for each tuple of a run in order (those ``offered``; the
    rest never reach the queue, e.g. dropped at random), each admitted one predicted to
    keep the server busy ``service_ms`` more; returns the admitted mask. The queue's
    counters move as tuple by tuple; ``busy_until`` moves in :func:`queue_charge_run`."""
    n = nows.shape[0]
    kept = np.zeros(n, dtype=bool)
    bound = q.queue_config.bound_ms
    busy, last = q.busy_until, q.last_now
    pushed = dropped = admitted = overflows = 0
    last_dropped = q.last_dropped
    at = range(n) if offered is None else np.flatnonzero(offered).tolist()
    now_list = nows.tolist()
    for k in at:
        now = now_list[k]
        pushed += 1
        last = max(last, float(now))
        if busy - now > bound:
            dropped += 1
            if not last_dropped:
                overflows += 1
                last_dropped = True
            continue
        last_dropped = False
        admitted += 1
        kept[k] = True
        busy = max(busy, last) + service_ms
    q.pushed += pushed
    q.dropped += dropped
    q.admitted += admitted
    q.overflows += overflows
    q.last_dropped = last_dropped
    q.last_now = last
    if admitted:
        q.started = q.clock()
    return kept


def queue_charge_run(q: WallQueue, costs: NDArray[np.float64], nows: NDArray[np.int64],
                     last_before: float) -> float:
    """:meth:`WallQueue.charge` for each tuple admitted by :func:`queue_admit_run` (at
    ``nows``; ``last_before`` = the queue's ``last_now`` before that call), the run's
    measured seconds shared equally; returns the modelled ms per tuple (the next run's
    ``service_ms``). A tuple dropped between two admitted ones changes nothing here: it
    found the server busy beyond its own arrival."""
    n = costs.shape[0]
    if n == 0:
        return 0.0
    took = max(0.0, q.clock() - q.started)
    q.spent += took
    q.timed_total += took
    for c in costs.tolist():
        q.cost += c
    share = took / n
    q.last_took = share
    cfg = q.queue_config
    serve = share * 1000.0 * cfg.speedup / cfg.utilization * q.stretch
    busy, last = q.busy_until, last_before
    for now in nows.tolist():
        last = max(last, float(now))
        busy = max(busy, last) + serve
    q.busy_until, q.last_now = busy, max(q.last_now, last)
    return serve


class TailDropShedder:
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
        if not isinstance(self.budget, WallQueue):
            return None
        self.last_before = self.budget.last_now
        return queue_admit_run(self.budget, nows, self.service_ms)

    def charge_some(self, costs: NDArray[np.float64], nows: NDArray[np.int64]) -> None:
        """The tuples admitted by :meth:`admit_some` cost ``costs``."""
        assert isinstance(self.budget, WallQueue)
        self.service_ms = queue_charge_run(self.budget, costs, nows, self.last_before)

    def observe_probe(self, feedback: ProbeFeedback) -> None:
        return None

    def maybe_adapt(self, now: int) -> dict[str, Any] | None:
        """Every Δ: the queue's metrics (nothing adapts)."""
        reading = self.budget.measure(now, self.config.shedding.adapt_interval_ms)
        return {"time": now, "mode": "taildrop", **queue_row(reading, self.budget)}

    def snapshot(self) -> dict[str, Any]:
        return {"mode": "taildrop", "budget": self.budget.snapshot(),
                "service_ms": self.service_ms}

    @classmethod
    def from_snapshot(cls, config: EngineConfig, snap: dict[str, Any],
                      env: PluginEnv) -> TailDropShedder:
        if snap.get("mode") != "taildrop":
            raise OperatorStateError(f"not a taildrop shedder snapshot: {snap.get('mode')!r}")
        obj = cls(config, env)
        try:
            obj.budget = restore_queue_budget(obj.budget, snap["budget"])
            obj.service_ms = float(snap.get("service_ms", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"cannot restore taildrop shedder: {exc!r}") from exc
        return obj
