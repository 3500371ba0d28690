"""The input validator's stream time (ours; ARCHITECTURE §7): per stream, the lower median
of its last ``clock_size`` accepted arrivals, recomputed lazily once :data:`REFRESH`
arrivals made it stale — a cheap clock that still no single tuple can move, lagging its
window by a few tuples at most. :class:`StreamTime` holds every stream's clock, the
common clock of all streams together and the stream time seen elsewhere (the runtime's
reference).

Shared by the per-tuple rules (:mod:`~pipeline.operators.validation.validator`) and the
batch path (:mod:`~pipeline.operators.validation.batch`), which replays the same clocks
over a whole run.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import numpy as np

__all__ = ["REFRESH", "MedianClock", "StreamTime", "batch_reference", "lower_median"]

#: a clock's median is recomputed after this many new arrivals
REFRESH = 4


def lower_median(values: Iterable[int]) -> int:
    """The lower median: an actual arrival time, never an average of two."""
    ordered = sorted(values)
    return int(ordered[(len(ordered) - 1) // 2])


def batch_reference(arrivals: np.ndarray) -> int:
    """The stream time one routing task's batch vouches for: the upper edge of its bulk,
    ``q50 + 2·(q50 − q25)`` of the valid rows' arrivals, capped at their largest (ours).

    For a batch whose arrivals spread evenly over a span ``[a, b]`` this is ``b``: a
    backlog drained in micro-batches of minutes of stream time vouches for its newest
    tuples, not for its middle (with the median alone, an instance that takes over an
    ATR segment mid-batch rejected its first tuples as ``future`` once the batch spanned
    more than ``2 × max_future_ms``). A hostile share ``h`` of far-future rows moves it
    only within the batch's own span while ``h < 1/2``: the median and the lower quartile
    stay on valid rows, so it is at most ``b + 2·span`` (``b + span·h/(1 − h)`` for
    evenly spread arrivals), as the median alone could not be moved. Empty: 0."""
    if len(arrivals) == 0:
        return 0
    q25, q50 = np.quantile(arrivals, [0.25, 0.5], method="lower")
    return int(min(int(arrivals.max()), int(q50) + 2 * (int(q50) - int(q25))))


class MedianClock:
    """The last ``size`` arrivals, their cached lower median and how stale it is."""

    def __init__(self, size: int) -> None:
        self.ring: deque[int] = deque(maxlen=size)
        self.cached: int | None = None
        self.stale = 0

    def observe(self, arrival: int) -> None:
        self.ring.append(arrival)
        self.stale += 1

    def read(self, quorum: int) -> int | None:
        """The clock (None below ``quorum`` arrivals), refreshed when stale or unknown."""
        if len(self.ring) < quorum:
            return None
        if self.cached is None or self.stale >= REFRESH:
            self.cached = lower_median(self.ring)
            self.stale = 0
        return self.cached

    def invalidate(self) -> None:
        """The next read recomputes the median."""
        self.cached = None

    def clear(self) -> None:
        """No arrivals (the staleness count runs on)."""
        self.ring.clear()
        self.cached = None

    def take_run(self, arrivals: list[int], cached: int | None, stale: int) -> None:
        """The state after a run of verdicts and ``arrivals`` whose cached value and
        staleness the batch path computed (:func:`~pipeline.operators.validation.batch.
        clock_trace`)."""
        self.cached, self.stale = cached, stale
        self.ring.extend(arrivals)


class StreamTime:
    """Each stream's clock, the common clock of all streams and the outside reference.

    ``quorum``: arrivals a clock needs before it reads (the end-of-input flush lowers it
    to 1); ``reference``: stream time as the runtime sees it beyond this instance's own
    tuples (Spark: the routing tasks' :func:`batch_reference`), None = unknown.
    """

    def __init__(self, streams: int, size: int, quorum: int) -> None:
        self.streams = [MedianClock(size) for _ in range(streams)]
        self.common = MedianClock(size)
        self.quorum = quorum
        self.reference: int | None = None

    def observe(self, stream: int, arrival: int) -> None:
        """An accepted arrival of ``stream`` feeds its clock and the common one."""
        self.streams[stream].observe(arrival)
        self.common.observe(arrival)

    def stream_clock(self, stream: int) -> int | None:
        """The stream's clock, or None before its quorum."""
        return self.streams[stream].read(self.quorum)

    def common_clock(self) -> int | None:
        """The clock of all streams together, or None before a quorum."""
        return self.common.read(self.quorum)

    def clear(self) -> None:
        """Every clock empty (the bootstrap then feeds its accepted tuples)."""
        for clock in self.streams:
            clock.clear()
        self.common.clear()
