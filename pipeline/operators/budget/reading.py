"""What a CPU budget source measured over one adaptation interval (GrubJoin §IV-A: β,
the share of the input the join consumed; ours: the headroom and the wall-clock parts).
Every source returns one from ``measure``
(:class:`~pipeline.operators.budget.protocol.Budget`).
"""

from __future__ import annotations

from dataclasses import dataclass


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
