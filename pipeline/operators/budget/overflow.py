"""Arrivals a bounded input queue drops, and the overflow episodes they form (ours): a run
of consecutive drops is one episode, so one long probe makes one and a sustained excess
several. The virtual CPU (:class:`~pipeline.operators.budget.virtual_cpu.VirtualCpu`) and
the wall queue (:class:`~pipeline.operators.budget.wall.WallQueue`) count them alike.
"""

from __future__ import annotations

__all__ = ["OverflowCount"]


class OverflowCount:
    """The drop counters of a bounded queue; the class that mixes it in sets them in its
    ``__init__`` and snapshot."""

    dropped: int  # arrivals dropped, in total
    overflows: int  # overflow episodes since the last measure()
    last_dropped: bool  # the arrival before was dropped

    def refuse(self) -> bool:
        """Drop one arrival at the full queue (a new overflow episode unless the arrival
        before was dropped too); False, the answer of ``admit``."""
        self.dropped += 1
        if not self.last_dropped:
            self.overflows += 1
            self.last_dropped = True
        return False
