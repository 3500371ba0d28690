"""The Synchronizer that merges the m K-slack outputs (Ji et al. Alg. 1).

T_sync is the largest timestamp released so far. A tuple with ts > T_sync is buffered;
while the buffer holds at least one tuple of *each* stream, T_sync becomes the buffer's
minimum ts and every buffered tuple with that ts is released. A tuple with
ts ≤ T_sync passes straight through (it is late; the join decides, Alg. 2).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.core.errors import OperatorStateError
from pipeline.operators.disorder.kslack import Tagged
from pipeline.operators.events import NEG_INF, Event, event_from_state, event_state


@dataclass(frozen=True, slots=True)
class SynchronizerConfig:
    """Number of input streams m."""

    streams: int


class Synchronizer:
    """Runtime state of Alg. 1: T_sync, SyncBuf (a heap) and per-stream counts."""

    def __init__(self, config: SynchronizerConfig) -> None:
        self.config = config
        self.sync_time = NEG_INF
        self._heap: list[tuple[int, int, int, Tagged]] = []
        self._counts = [0] * config.streams
        self._missing = config.streams
        self._counter = 0

    def __len__(self) -> int:
        return len(self._heap)

    def buffered(self) -> Iterator[Event]:
        """The tuples held, in no particular order (the input validator's duplicate check)."""
        return (item[3][0] for item in self._heap)

    def push(self, item: Tagged) -> list[Tagged]:
        """Alg. 1 lines 3–10 for one tuple; returns what is released, in order."""
        ev = item[0]
        if ev.ts <= self.sync_time:
            return [item]
        heapq.heappush(self._heap, (ev.ts, self._counter, ev.stream, item))
        self._counter += 1
        if self._counts[ev.stream] == 0:
            self._missing -= 1
        self._counts[ev.stream] += 1
        out: list[Tagged] = []
        while self._missing == 0:
            self.sync_time = self._heap[0][0]
            while self._heap and self._heap[0][0] == self.sync_time:
                self._pop_into(out)
        return out

    def _pop_into(self, out: list[Tagged]) -> None:
        _, _, stream, item = heapq.heappop(self._heap)
        self._counts[stream] -= 1
        if self._counts[stream] == 0:
            self._missing += 1
        out.append(item)

    def flush(self) -> list[Tagged]:
        """End of input: release the whole buffer in ts order."""
        out: list[Tagged] = []
        while self._heap:
            self.sync_time = max(self.sync_time, self._heap[0][0])
            self._pop_into(out)
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "sync_time": self.sync_time,
            "counter": self._counter,
            "heap": [(ts, c, s, (event_state(it[0]), it[1])) for ts, c, s, it in self._heap],
        }

    @classmethod
    def from_snapshot(cls, config: SynchronizerConfig, snap: dict[str, Any]) -> Synchronizer:
        try:
            sync = cls(config)
            sync.sync_time = int(snap["sync_time"])
            sync._counter = int(snap["counter"])
            for ts, c, s, (ev, d) in snap["heap"]:
                sync._heap.append((int(ts), int(c), int(s), (event_from_state(ev), int(d))))
                if sync._counts[int(s)] == 0:
                    sync._missing -= 1
                sync._counts[int(s)] += 1
            heapq.heapify(sync._heap)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise OperatorStateError(f"cannot restore synchronizer snapshot: {exc!r}") from exc
        return sync
