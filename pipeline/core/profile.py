"""Where a micro-batch's time goes, phase by phase, on an injected timer (ours; issue 28).

A :class:`PhaseProfile` is a lap timer: :meth:`PhaseProfile.lap` charges the time since
the previous lap to a named phase. The join instance and the engine's batch path call it
at their phase boundaries when a profile is attached (``None`` otherwise: one attribute
test per boundary, nothing else), and the runtime reports :meth:`PhaseProfile.rows`:
µs per admitted tuple and the share of the profiled time, per phase — the ``profile``
rows ``{workload, method, phase, us_per_tuple, share}`` of ``pipeline.json`` once the
bench adds the workload and method. The timer is injected (seconds, e.g.
``time.perf_counter``): nothing here reads a clock of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PHASES", "UNSHEDDABLE", "PhaseProfile"]

#: the instance's phases in the order a micro-batch runs them
PHASES = (
    "input",  # Arrow → pandas, sorting the rows, rows → events, member store
    "validation",  # far-future / late / duplicate checks (validator)
    "kslack_sync",  # K-slack, the Synchronizer, the K policy's arrival statistics
    "adaptation",  # the K policy's and the shedder's steps at their L / Δ boundaries
    "admission",  # the shedder's admission and plans (queue, draws)
    "insertion",  # window insertion and expiry
    "probing",  # probing the windows (the part harvesting sheds)
    "join_stats",  # the K policy's join statistics, feedback, cost accounting
    "results",  # result rows → JoinResult, ownership, result frame
    "state",  # the state save (incremental pieces)
    "output",  # metric rows and output frames
)
#: the phases window harvesting cannot shed (everything but probing)
UNSHEDDABLE = tuple(p for p in PHASES if p != "probing")


class PhaseProfile:
    """Lap timer over named phases (module docstring)."""

    def __init__(self, timer: Callable[[], float]) -> None:
        self.timer = timer
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.tuples = 0  # tuples admitted (the denominator of us_per_tuple)
        self.batches = 0
        self._last = 0.0

    def start(self) -> None:
        """Begin timing (the next lap counts from now)."""
        self._last = self.timer()

    def lap(self, phase: str) -> None:
        """Charge the time since the last lap (or :meth:`start`) to ``phase``."""
        now = self.timer()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + (now - self._last)
        self._last = now

    def add(self, phase: str, seconds: float) -> None:
        """Charge ``seconds`` timed elsewhere (e.g. Arrow decoding before the instance)."""
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    def total(self) -> float:
        return sum(self.seconds.values())

    def us_per_tuple(self, phases: tuple[str, ...] = UNSHEDDABLE) -> float:
        """µs per admitted tuple over ``phases`` (default: what harvesting cannot shed)."""
        if self.tuples <= 0:
            return 0.0
        return sum(self.seconds.get(p, 0.0) for p in phases) * 1e6 / self.tuples

    def rows(self) -> list[dict[str, Any]]:
        """``{phase, us_per_tuple, share}`` per phase (share of the profiled time)."""
        total = self.total()
        n = max(1, self.tuples)
        return [{"phase": p, "us_per_tuple": round(s * 1e6 / n, 3),
                 "share": round(s / total, 4) if total > 0 else 0.0}
                for p, s in self.seconds.items()]

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (metrics rows, JSON)."""
        return {"tuples": self.tuples, "batches": self.batches,
                "seconds": {p: round(s, 6) for p, s in self.seconds.items()}}
