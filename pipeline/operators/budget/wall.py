"""The wall-clock budget sources behind the throttle (ARCHITECTURE §5; GrubJoin §IV-A).

* :class:`WallBudget` — the real CPU. An injected clock (seconds) times the work between
  ``admit`` and ``charge``; β = headroom = (interval / speed-up × utilization) / time
  spent. No queue: nothing is dropped, the join is only throttled. Inside Spark (ours)
  the operator instance also reports, per micro-batch (:meth:`WallBudget.observe_batch`),
  the wall time it spent outside admit→charge (K-slack, synchronizer, result building),
  which counts as spent, and how far behind the input it is (the age of its freshest
  input record over a latency target): above 1 the next reading's β and headroom are
  capped by its inverse, whatever the CPU accounting says — Spark's own per-row work
  (decode, Arrow, Kafka) is invisible to the clock but shows up there. The instance
  also names the batch's freshest input when the batch starts
  (:meth:`WallBudget.begin_batch`), so the same age is known while the batch runs.
* :class:`WallQueue` — ours: the wall clock behind a bounded input queue, for the
  shedders that drop arrivals instead of throttling (``taildrop``, ``randomdrop-static``).
  A single server in stream time whose service times are the measured wall seconds of
  each tuple (scaled by speed-up / utilization): a tuple arriving at ``now`` is dropped
  when the modelled backlog ``busy_until − now`` exceeds ``bound_ms``. In a FIFO queue a
  tuple's wait is fixed by the work ahead of it, so this is tail drop with a queue bounded
  in waiting time rather than in tuples. Only clock *differences* enter the state, so a
  snapshot restores exactly under a new clock. The service times are stretched by how
  far behind its input the job is: by the last batch's lag ratio, and inside a batch by
  the batch's own lag so far when that is larger (:meth:`WallQueue.stretch_at`).

The deterministic source, the virtual CPU: :mod:`pipeline.operators.budget.virtual_cpu`;
the factory that picks a source by ``shedding.budget``:
:mod:`pipeline.operators.budget.factory`; a whole run through the queue at once:
:mod:`pipeline.operators.budget.queue`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.budget.overflow import OverflowCount
from pipeline.operators.budget.reading import BudgetReading


@dataclass(frozen=True)
class WallBudgetConfig:
    speedup: float = 1.0
    utilization: float = 0.8

    def __post_init__(self) -> None:
        if not self.speedup > 0:
            raise ConfigError(f"speedup: must be > 0, got {self.speedup}")
        if not 0.0 < self.utilization <= 1.0:
            raise ConfigError(f"utilization: must be in (0, 1], got {self.utilization}")


class WallBudget:
    """Wall-clock budget with an injected clock (seconds, monotonic)."""

    def __init__(self, config: WallBudgetConfig, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.started = 0.0
        self.spent = 0.0  # seconds in the current interval
        self.pushed = 0
        self.cost = 0.0
        self.timed_total = 0.0  # seconds timed between admit and charge, ever
        self.lag_cap: float | None = None  # 1 / lag ratio of the last batch, until read
        self.overhead = 0.0  # seconds of spent reported by observe_batch, this interval
        #: the running batch's freshest input (Kafka ms, epoch) and lag target (ms)
        self.batch_fresh_ms: float | None = None
        self.batch_target_ms = 0.0

    def admit(self, now: int) -> bool:
        self.pushed += 1
        self.started = self.clock()
        return True

    def charge(self, cost: float, now: int) -> None:
        self._take(cost)

    def _take(self, cost: float) -> float:
        """Charge the wall time since :meth:`admit` and the model ``cost``; the time taken."""
        took = max(0.0, self.clock() - self.started)
        self.spent += took
        self.timed_total += took
        self.cost += cost
        return took

    def admit_run(self, n: int) -> None:
        """Ours (the engine's batch path): ``n`` tuples admitted at once; their charge
        (:meth:`charge_run`) times the whole run."""
        self.pushed += n
        self.started = self.clock()

    def charge_run(self, costs: list[float]) -> None:
        """The run admitted last cost ``costs`` (one per tuple), summed in order as
        :meth:`charge` would."""
        took = max(0.0, self.clock() - self.started)
        self.spent += took
        self.timed_total += took
        for c in costs:
            self.cost += c

    def charge_results(self, n: int, seconds_each: float) -> None:
        """Ours: ``n`` results were found, each costing ``seconds_each`` of wall time that
        the clock does not see (``[shedding] result_us``: Spark encodes and writes a
        result row after the processor returns it). Counted as the join's spending, so
        a harvest that finds more results leaves less headroom."""
        self.spent += max(0, n) * max(0.0, seconds_each)

    def begin_batch(self, fresh_ms: float | None, target_ms: float) -> None:
        """Ours: a micro-batch starts whose freshest input was appended at ``fresh_ms``
        (epoch ms, the clock's epoch; None: unknown) against a lag target of
        ``target_ms``; :meth:`batch_lag` then reads its age while it runs."""
        self.batch_fresh_ms = fresh_ms if target_ms > 0 else None
        self.batch_target_ms = float(target_ms)

    def batch_lag(self, now_s: float) -> float | None:
        """The running batch's lag ratio at ``now_s`` (clock seconds): its freshest
        input's age over the lag target; None outside a batch or without timestamps."""
        fresh = self.batch_fresh_ms
        if fresh is None:
            return None
        return max(0.0, now_s * 1000.0 - fresh) / self.batch_target_ms

    def observe_batch(self, overhead_s: float, lag_ratio: float | None) -> None:
        """Ours: a micro-batch's wall time outside admit→charge counts as spent, and
        ``lag_ratio`` (freshest input's age / latency target) > 1 caps the next reading
        at 1 / lag_ratio (see the module docstring). The batch has ended."""
        self.batch_fresh_ms = None
        self.spent += max(0.0, overhead_s)
        self.overhead += max(0.0, overhead_s)
        if lag_ratio is not None and lag_ratio > 0:
            cap = 1.0 / lag_ratio
            self.lag_cap = cap if self.lag_cap is None else min(self.lag_cap, cap)

    def measure(self, now: int, interval_ms: int) -> BudgetReading:
        available = interval_ms / 1000.0 / self.config.speedup * self.config.utilization
        ratio = available / self.spent if self.spent > 0 else float("inf")
        lag_cap = self.lag_cap
        if lag_cap is not None:
            ratio = min(ratio, lag_cap)
            self.lag_cap = None
        reading = BudgetReading(beta=ratio, headroom=ratio, pushed=self.pushed,
                                consumed=self.pushed, dropped=0, cost=self.cost,
                                available=available, spent=self.spent,
                                overhead=self.overhead, lag_cap=lag_cap)
        self.spent = 0.0
        self.overhead = 0.0
        self.pushed = 0
        self.cost = 0.0
        return reading

    def snapshot(self) -> dict[str, Any]:
        return {"spent": self.spent, "pushed": self.pushed, "cost": self.cost,
                "timed_total": self.timed_total, "lag_cap": self.lag_cap,
                "overhead": self.overhead, "batch_fresh_ms": self.batch_fresh_ms,
                "batch_target_ms": self.batch_target_ms}

    def restored(self, snap: dict[str, Any]) -> WallBudget:
        """A wall budget of the same config and clock with the state of ``snap``."""
        return WallBudget.from_snapshot(self.config, self.clock, snap)

    def wall(self) -> WallBudget | None:
        """This budget: it times the join's work on the wall clock."""
        return self

    def queue(self) -> WallQueue | None:
        """None: nothing is dropped, the join is only throttled."""
        return None

    @classmethod
    def from_snapshot(cls, config: WallBudgetConfig, clock: Callable[[], float],
                      snap: dict[str, Any]) -> WallBudget:
        obj = cls(config, clock)
        try:
            obj.spent = float(snap["spent"])
            obj.pushed = int(snap["pushed"])
            obj.cost = float(snap["cost"])
            obj.timed_total = float(snap.get("timed_total", 0.0))
            obj.overhead = float(snap.get("overhead", 0.0))
            cap = snap.get("lag_cap")
            obj.lag_cap = None if cap is None else float(cap)
            fresh = snap.get("batch_fresh_ms")
            obj.batch_fresh_ms = None if fresh is None else float(fresh)
            obj.batch_target_ms = float(snap.get("batch_target_ms", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"wall budget: bad snapshot {snap!r}") from exc
        return obj


@dataclass(frozen=True)
class WallQueueConfig:
    speedup: float = 1.0
    utilization: float = 0.8
    #: largest modelled backlog (ms of stream time) an arrival may join
    bound_ms: float = 5_000.0
    #: stretch service times by the running batch's own lag too (:meth:`WallQueue.stretch_at`)
    batch_lag: bool = False
    #: serve a batch's time outside admit→charge (:meth:`WallQueue.observe_batch`) as
    #: backlog; False: only the join's own service times fill the queue
    serve_overhead: bool = True

    def __post_init__(self) -> None:
        WallBudgetConfig(self.speedup, self.utilization)  # same checks
        if not self.bound_ms > 0:
            raise ConfigError(f"queue_ms: must be > 0, got {self.bound_ms}")


class WallQueue(WallBudget, OverflowCount):
    """Wall clock + a queue bounded in waiting time (module docstring; ours).

    ``busy_until`` (stream ms) is when the modelled server is free: each admitted tuple
    adds its measured seconds × 1000 × speed-up / utilization, and a micro-batch's time
    outside admit→charge (:meth:`observe_batch`) is added the same way. A batch that
    ended more than one lag target behind its input (lag ratio r > 1: Spark's own work
    is not on the clock) stretches the next service times by r until the next batch
    reports; inside a batch whose own lag so far is larger, by that
    (:meth:`stretch_at`): a batch that runs long — the first one after start-up, a burst
    of results — sheds its own tail instead of leaving the next batch behind by more
    than the staleness bound, whose cut at the source drops whole seconds of input."""

    def __init__(self, config: WallQueueConfig, clock: Callable[[], float]) -> None:
        super().__init__(WallBudgetConfig(config.speedup, config.utilization), clock)
        self.queue_config = config
        self.busy_until = 0.0
        self.last_now = 0.0
        self.stretch = 1.0
        self.admitted = 0
        self.dropped = 0
        self.dropped_mark = 0
        self.overflows = 0
        self.last_dropped = False
        #: wall seconds of the tuple charged last (read by the static random drop)
        self.last_took = 0.0

    def stretch_at(self, now_s: float) -> float:
        """The service-time stretch at ``now_s`` (clock seconds): the last batch's lag
        ratio, or the running batch's own (:meth:`WallBudget.batch_lag`) when larger
        (with ``batch_lag`` on, ``[shedding] batch_lag``)."""
        lag = self.batch_lag(now_s) if self.queue_config.batch_lag else None
        return self.stretch if lag is None else max(self.stretch, lag)

    def _serve(self, seconds: float, stretch: float | None = None) -> None:
        cfg = self.queue_config
        self.busy_until = max(self.busy_until, self.last_now) + (
            seconds * 1000.0 * cfg.speedup / cfg.utilization
            * (self.stretch if stretch is None else stretch))

    def admit(self, now: int) -> bool:
        self.pushed += 1
        self.last_now = max(self.last_now, float(now))
        if self.busy_until - now > self.queue_config.bound_ms:
            return self.refuse()
        self.last_dropped = False
        self.admitted += 1
        self.started = self.clock()
        return True

    def charge(self, cost: float, now: int) -> None:
        took = self._take(cost)
        self.last_took = took
        self.last_now = max(self.last_now, float(now))
        self._serve(took, self.stretch_at(self.started + took))

    def charge_results(self, n: int, seconds_each: float) -> None:
        """As :meth:`WallBudget.charge_results`, and the server is busy that much longer
        (unstretched: this time is not the invisible part the lag ratio stands for), so
        a burst of results makes the arrivals behind it wait, and drops them past the
        bound, while it is being paid for — not at the batch's end."""
        super().charge_results(n, seconds_each)
        self._serve(max(0, n) * max(0.0, seconds_each), 1.0)

    def observe_batch(self, overhead_s: float, lag_ratio: float | None) -> None:
        super().observe_batch(overhead_s, lag_ratio)
        if self.queue_config.serve_overhead:
            self._serve(max(0.0, overhead_s))
        self.stretch = max(1.0, lag_ratio) if lag_ratio is not None else 1.0

    def backlog_ms(self) -> float:
        """Modelled backlog at the last arrival (ms of stream time)."""
        return max(0.0, self.busy_until - self.last_now)

    def measure(self, now: int, interval_ms: int) -> BudgetReading:
        """As :meth:`WallBudget.measure`, with the queue's drops; β = consumed / pushed
        capped by the time ratio."""
        pushed = self.pushed
        dropped = self.dropped - self.dropped_mark
        reading = super().measure(now, interval_ms)
        consumed = pushed - dropped
        beta = min(reading.beta, consumed / pushed if pushed else 1.0)
        overflows, self.overflows = self.overflows, 0
        self.dropped_mark = self.dropped
        return BudgetReading(beta=beta, headroom=reading.headroom, pushed=pushed,
                             consumed=consumed, dropped=dropped, cost=reading.cost,
                             overflows=overflows, available=reading.available,
                             spent=reading.spent, overhead=reading.overhead,
                             lag_cap=reading.lag_cap)

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "busy_until": self.busy_until,
                "last_now": self.last_now, "stretch": self.stretch,
                "admitted": self.admitted, "dropped": self.dropped,
                "dropped_mark": self.dropped_mark, "overflows": self.overflows,
                "last_dropped": self.last_dropped, "last_took": self.last_took}

    def restored(self, snap: dict[str, Any]) -> WallQueue:
        """A wall queue of the same config and clock with the state of ``snap``."""
        return WallQueue.from_queue_snapshot(self.queue_config, self.clock, snap)

    def queue(self) -> WallQueue | None:
        """This budget: arrivals wait in a queue bounded in waiting time."""
        return self

    @classmethod
    def from_queue_snapshot(cls, config: WallQueueConfig, clock: Callable[[], float],
                            snap: dict[str, Any]) -> WallQueue:
        base = WallBudget.from_snapshot(WallBudgetConfig(config.speedup, config.utilization),
                                        clock, snap)
        obj = cls(config, clock)
        obj.spent, obj.pushed, obj.cost = base.spent, base.pushed, base.cost
        obj.timed_total, obj.lag_cap = base.timed_total, base.lag_cap
        obj.overhead = base.overhead
        obj.batch_fresh_ms, obj.batch_target_ms = base.batch_fresh_ms, base.batch_target_ms
        try:  # a plain wall budget's snapshot restores as an empty queue
            obj.busy_until = float(snap.get("busy_until", 0.0))
            obj.last_now = float(snap.get("last_now", 0.0))
            obj.stretch = float(snap.get("stretch", 1.0))
            obj.admitted = int(snap.get("admitted", base.pushed))
            obj.dropped = int(snap.get("dropped", 0))
            obj.dropped_mark = int(snap.get("dropped_mark", 0))
            obj.overflows = int(snap.get("overflows", 0))
            obj.last_dropped = bool(snap.get("last_dropped", False))
            obj.last_took = float(snap.get("last_took", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"wall queue: bad snapshot {snap!r}") from exc
        return obj
