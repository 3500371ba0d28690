"""The engine's counters (:class:`EngineStats`): what came in, what the shedder dropped,
what Alg. 2 (Ji et al.) did with the rest, and what the join cost (GrubJoin's unit)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EngineStats:
    """Counters: inputs, results, dropped (shedder), late (inserted, not probed),
    discarded (too late for the window), comparisons (nested-loop tuple comparisons, the
    cost-model unit), checks (pair predicate evaluations actually run), cost
    (comparisons + per-tuple cost)."""

    inputs: int = 0
    results: int = 0
    dropped: int = 0
    late: int = 0
    discarded: int = 0
    comparisons: int = 0
    checks: int = 0
    cost: float = 0.0
