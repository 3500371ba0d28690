"""K-slack: the per-stream input-sorting buffer (Ji et al. §II, Fig. 3).

Each arrival advances the stream's local time ^iT = max ts seen; every buffered tuple
with ts + K ≤ ^iT is then emitted in timestamp order. A tuple's raw delay is
delay(e) = ^iT − e.ts with ^iT updated by e itself (0 for an in-order tuple). K can
change at runtime (:meth:`KSlack.release` re-applies a new K without an arrival).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.core.errors import OperatorStateError
from pipeline.operators.events import NEG_INF, Event, event_from_state, event_state

#: (event, raw delay) as it travels K-slack -> Synchronizer -> join
Tagged = tuple[Event, int]


@dataclass(frozen=True, slots=True)
class KSlackConfig:
    """Which stream this buffer serves (K itself comes from the SlackPolicy)."""

    stream: int


I64 = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BufferColumns:
    """A K-slack buffer as columns, in (ts, push counter) order: what the run path
    (:func:`pipeline.operators.disorder.run_front.kslack_run`) reads and leaves, so a
    run costs array operations over the tuples held instead of a Python pass."""

    ts: I64
    counter: I64
    seq: I64
    delay: I64
    #: the buffered events (an object array)
    events: NDArray[Any]

    @classmethod
    def of(cls, items: list[tuple[int, int, Event, int]]) -> BufferColumns:
        """From heap entries ``(ts, counter, event, delay)``, sorted here."""
        ordered = sorted(items)
        n = len(ordered)
        events = np.empty(n, object)
        events[:] = [it[2] for it in ordered]
        return cls(np.fromiter((it[0] for it in ordered), np.int64, n),
                   np.fromiter((it[1] for it in ordered), np.int64, n),
                   np.fromiter((it[2].seq for it in ordered), np.int64, n),
                   np.fromiter((it[3] for it in ordered), np.int64, n), events)

    def entries(self) -> list[tuple[int, int, Event, int]]:
        """The heap entries (sorted, so a valid heap)."""
        return list(zip(self.ts.tolist(), self.counter.tolist(), self.events.tolist(),
                        self.delay.tolist(), strict=True))


class KSlack:
    """Runtime K-slack buffer of one stream: a heap for tuple-at-a-time pushes, or
    :class:`BufferColumns` between runs; each converts to the other when the other
    path needs it."""

    def __init__(self, config: KSlackConfig) -> None:
        self.config = config
        self.local_time = NEG_INF
        self._entries: list[tuple[int, int, Event, int]] = []
        self._columns: BufferColumns | None = None
        self._counter = 0

    @property
    def _heap(self) -> list[tuple[int, int, Event, int]]:
        if self._columns is not None:
            self._entries = self._columns.entries()
            self._columns = None
        return self._entries

    @_heap.setter
    def _heap(self, entries: list[tuple[int, int, Event, int]]) -> None:
        self._entries = entries
        self._columns = None

    def columns(self) -> BufferColumns:
        """The buffer as columns (converted from the heap once, then kept)."""
        if self._columns is None:
            self._columns = BufferColumns.of(self._entries)
            self._entries = []
        return self._columns

    def set_columns(self, columns: BufferColumns) -> None:
        """What a run leaves buffered, in (ts, counter) order."""
        self._columns = columns
        self._entries = []

    def __len__(self) -> int:
        return len(self._columns.ts) if self._columns is not None else len(self._entries)

    def buffered(self) -> Iterator[Event]:
        """The tuples held, in no particular order (the input validator's duplicate check)."""
        if self._columns is not None:
            return iter(self._columns.events.tolist())
        return (item[2] for item in self._entries)

    def holding(self, seqs: I64) -> list[Event]:
        """The buffered tuples whose seq is in ``seqs`` (either representation, unchanged)."""
        if self._columns is not None:
            hit = np.flatnonzero(np.isin(self._columns.seq, seqs))
            return [self._columns.events[j] for j in hit.tolist()]
        wanted = set(seqs.tolist())
        return [item[2] for item in self._entries if item[2].seq in wanted]

    def delay_of(self, ts: int) -> int:
        """Raw delay a tuple with ``ts`` arriving now has: max(^iT, ts) − ts."""
        return max(self.local_time, ts) - ts

    def push(self, event: Event, k: int) -> tuple[int, list[Tagged]]:
        """Buffer ``event``; return its raw delay and the tuples released under K = ``k``."""
        if event.ts > self.local_time:
            self.local_time = event.ts
        delay = self.local_time - event.ts
        heapq.heappush(self._heap, (event.ts, self._counter, event, delay))
        self._counter += 1
        return delay, self.release(k)

    def release(self, k: int) -> list[Tagged]:
        """Emit, in ts order, every buffered tuple with ts + k ≤ ^iT."""
        out: list[Tagged] = []
        heap, bound = self._heap, self.local_time - k
        while heap and heap[0][0] <= bound:
            _, _, ev, delay = heapq.heappop(heap)
            out.append((ev, delay))
        return out

    def flush(self) -> list[Tagged]:
        """End of input: emit everything, in ts order."""
        out = [(ev, d) for _, _, ev, d in sorted(self._heap)]
        self._heap = []
        return out

    def snapshot(self) -> dict[str, Any]:
        return {
            "local_time": self.local_time,
            "counter": self._counter,
            "heap": [(ts, c, event_state(ev), d) for ts, c, ev, d in (
                self._columns.entries() if self._columns is not None else self._entries)],
        }

    @classmethod
    def from_snapshot(cls, config: KSlackConfig, snap: dict[str, Any]) -> KSlack:
        try:
            ks = cls(config)
            ks.local_time = int(snap["local_time"])
            ks._counter = int(snap["counter"])
            ks._heap = [(ts, c, event_from_state(ev), d) for ts, c, ev, d in snap["heap"]]
            heapq.heapify(ks._heap)
        except (KeyError, TypeError, ValueError) as exc:
            raise OperatorStateError(f"cannot restore K-slack snapshot: {exc!r}") from exc
        return ks

