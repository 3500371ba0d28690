"""What every CPU budget source behind the throttle shares (ARCHITECTURE §5; GrubJoin
§IV-A): the reading of one adaptation interval and the protocol. The sources are
:class:`~pipeline.operators.budget.virtual_cpu.VirtualCpu` (deterministic, stream time) and
:class:`~pipeline.operators.budget.wall.WallBudget` / ``WallQueue`` (the wall clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class BudgetReading:
    """What a budget measured over one adaptation interval."""

    beta: float
    headroom: float
    pushed: int
    consumed: int
    dropped: int
    cost: float
    #: overflow episodes: runs of consecutive drops (ours; 1 = a single long probe)
    overflows: int = 0
    #: wall budget (ours): seconds available and spent in the interval, and the part of
    #: ``spent`` reported by :meth:`WallBudget.observe_batch` (outside admit→charge)
    available: float = 0.0
    spent: float = 0.0
    overhead: float = 0.0
    #: wall budget (ours): 1 / the last batch's lag ratio when it was behind, else None
    lag_cap: float | None = None


class Budget(Protocol):
    """A budget source: admission in front of the join, cost accounting, β per Δ."""

    def admit(self, now: int) -> bool: ...

    def charge(self, cost: float, now: int) -> None: ...

    def measure(self, now: int, interval_ms: int) -> BudgetReading: ...

    def snapshot(self) -> dict[str, Any]: ...
