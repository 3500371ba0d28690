"""The deterministic CPU budget source behind the throttle (ARCHITECTURE §5; GrubJoin
§IV-A).

* :class:`VirtualCpu` — deterministic. A server with ``capacity`` cost units per second
  of *stream time* (cost = tuple comparisons + per-tuple cost) behind a bounded input
  queue of ``queue`` tuples (the paper's 10-tuple buffers). A tuple arriving at ``now``
  starts service at max(now, busy_until); it is dropped if ``queue`` tuples are already
  waiting. β = Σα_i / Σλ'_i (tuples consumed / pushed in the interval), headroom =
  utilization target / (cost charged / capacity available); ours: the number of
  overflow episodes (runs of consecutive drops — one long probe makes one, a sustained
  excess several). Same input ⇒ same output.

The wall-clock sources: :mod:`pipeline.operators.budget.wall`; the protocol they share:
:mod:`pipeline.operators.budget.protocol`; the factory that picks one by
``shedding.budget``: :mod:`pipeline.operators.budget.factory`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.budget.overflow import OverflowCount
from pipeline.operators.budget.reading import BudgetReading

if TYPE_CHECKING:
    from pipeline.operators.budget.wall import WallBudget, WallQueue

__all__ = ["VirtualCpu", "VirtualCpuConfig"]


@dataclass(frozen=True)
class VirtualCpuConfig:
    capacity: float  # cost units per second of stream time
    queue: int = 10
    utilization: float = 1.0

    def __post_init__(self) -> None:
        if not self.capacity > 0:
            raise ConfigError(f"capacity: must be > 0, got {self.capacity}")
        if self.queue < 1:
            raise ConfigError(f"queue: must be >= 1, got {self.queue}")
        if not 0.0 < self.utilization <= 1.0:
            raise ConfigError(f"utilization: must be in (0, 1], got {self.utilization}")


class VirtualCpu(OverflowCount):
    """Deterministic single-server queue in stream time (ms)."""

    def __init__(self, config: VirtualCpuConfig) -> None:
        self.config = config
        self.busy_until = 0.0
        self.waiting: deque[float] = deque()  # start times still in the future
        self.pushed = 0
        self.admitted = 0
        self.dropped = 0
        self.cost = 0.0
        self.consumed_before = 0  # consumed count at the last measure()
        self.marks = (0, 0, 0.0)  # pushed, dropped, cost at the last measure()
        self.overflows = 0  # overflow episodes since the last measure()
        self.last_dropped = False

    def _release(self, now: float) -> None:
        while self.waiting and self.waiting[0] <= now:
            self.waiting.popleft()

    def admit(self, now: int) -> bool:
        """Push one tuple at ``now``; False = the queue is full, the tuple is dropped."""
        self.pushed += 1
        self._release(now)
        if len(self.waiting) >= self.config.queue:
            return self.refuse()
        self.last_dropped = False
        start = max(float(now), self.busy_until)
        if start > now:
            self.waiting.append(start)
        self.busy_until = start
        self.admitted += 1
        return True

    def charge(self, cost: float, now: int) -> None:
        """The tuple admitted last cost ``cost`` units: the server is busy that long."""
        start = max(self.busy_until, float(now))
        self.busy_until = start + 1000.0 * cost / self.config.capacity
        self.cost += cost

    def consumed(self, now: int) -> int:
        """Tuples that started service by ``now`` (popped from the input queue)."""
        self._release(now)
        return self.admitted - len(self.waiting)

    def measure(self, now: int, interval_ms: int) -> BudgetReading:
        """β = consumed / pushed over the interval; headroom from the cost charged."""
        consumed_total = self.consumed(now)
        p0, d0, c0 = self.marks
        pushed = self.pushed - p0
        consumed = consumed_total - self.consumed_before
        cost = self.cost - c0
        beta = consumed / pushed if pushed else 1.0
        available = self.config.capacity * interval_ms / 1000.0
        headroom = self.config.utilization * available / cost if cost > 0 else float("inf")
        self.consumed_before = consumed_total
        self.marks = (self.pushed, self.dropped, self.cost)
        overflows, self.overflows = self.overflows, 0
        return BudgetReading(beta=beta, headroom=headroom, pushed=pushed, consumed=consumed,
                             dropped=self.dropped - d0, cost=cost, overflows=overflows)

    def snapshot(self) -> dict[str, Any]:
        return {
            "busy_until": self.busy_until, "waiting": list(self.waiting),
            "pushed": self.pushed,
            "admitted": self.admitted, "dropped": self.dropped, "cost": self.cost,
            "consumed_before": self.consumed_before, "marks": list(self.marks),
            "overflows": self.overflows, "last_dropped": self.last_dropped,
        }

    def restored(self, snap: dict[str, Any]) -> VirtualCpu:
        """A virtual CPU of the same config with the state of ``snap``."""
        return VirtualCpu.from_snapshot(self.config, snap)

    def wall(self) -> WallBudget | None:
        """None: the virtual CPU runs in stream time."""
        return None

    def queue(self) -> WallQueue | None:
        """None: its queue is bounded in tuples, each wait set by the previous costs."""
        return None

    @classmethod
    def from_snapshot(cls, config: VirtualCpuConfig, snap: dict[str, Any]) -> VirtualCpu:
        obj = cls(config)
        try:
            obj.busy_until = float(snap["busy_until"])
            obj.waiting = deque(float(v) for v in snap["waiting"])
            obj.pushed = int(snap["pushed"])
            obj.admitted = int(snap["admitted"])
            obj.dropped = int(snap["dropped"])
            obj.cost = float(snap["cost"])
            obj.consumed_before = int(snap["consumed_before"])
            p, d, c = snap["marks"]
            obj.marks = (int(p), int(d), float(c))
            obj.overflows = int(snap.get("overflows", 0))
            obj.last_dropped = bool(snap.get("last_dropped", False))
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"virtual cpu: bad snapshot {snap!r}") from exc
        return obj
