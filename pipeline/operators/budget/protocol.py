"""The protocol every CPU budget source behind the throttle follows (ARCHITECTURE §5;
GrubJoin §IV-A): admission in front of the join, cost accounting, one
:class:`~pipeline.operators.budget.reading.BudgetReading` per adaptation interval Δ.

The sources are :class:`~pipeline.operators.budget.virtual_cpu.VirtualCpu`
(deterministic, stream time), :class:`~pipeline.operators.budget.wall.WallBudget` and
:class:`~pipeline.operators.budget.wall.WallQueue` (the wall clock); they are made and
restored by :mod:`pipeline.operators.budget.factory`. Callers never ask which class a
budget is: what only some sources can do is reached through the two ability
accessors, which return the budget itself or None —

* :meth:`Budget.wall` — the work is timed on the injected wall clock (the runtime
  reports each micro-batch's time outside the join and its lag; a run of tuples can be
  timed with one clock reading);
* :meth:`Budget.queue` — arrivals queue in front of the join in a queue bounded in
  *waiting time*, so a whole run can be admitted at once
  (:mod:`pipeline.operators.budget.queue`) and the backlog reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pipeline.operators.budget.reading import BudgetReading
    from pipeline.operators.budget.wall import WallBudget, WallQueue


class Budget(Protocol):
    """A budget source: admission in front of the join, cost accounting, β per Δ."""

    def admit(self, now: int) -> bool:
        """Push one tuple at ``now``; False = dropped before the join."""
        ...

    def charge(self, cost: float, now: int) -> None:
        """The tuple admitted last cost ``cost`` units."""

    def measure(self, now: int, interval_ms: int) -> BudgetReading:
        """The reading of the interval that ends at ``now``; starts the next one."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """Plain-data state (picklable)."""
        ...

    def restored(self, snap: dict[str, Any]) -> Budget:
        """A budget of the same kind, config and clock with the state of ``snap``."""
        ...

    def wall(self) -> WallBudget | None:
        """This budget as a wall-clock budget, None when it runs in stream time."""
        ...

    def queue(self) -> WallQueue | None:
        """This budget as a queue bounded in waiting time, None when it has none."""
        ...
