"""What a result says about its members beyond (stream, seq, event_time): the input
records' Kafka coordinates and payload bytes, kept beside the engine.

The engine stores only (ts, seq, features) per tuple; a result names its members by
(stream, seq). :class:`MemberStore` keeps, per stream, ``seq → (partition, offset,
payload)`` for the tuples that may still appear in a result and drops the others: a
future result's member of stream j has ts ≥ ⋈T − W_j (every probe has ts ≥ ⋈T, the join
time, which only grows). Entries are dropped in arrival order, so one whose ts is still
in range holds back older-arriving ones behind it until it expires too (bounded by the
disorder). When ids are Kafka coordinates (``seq = partition · 2^40 + offset``) and
there is no payload, nothing is stored: the coordinates are read off ``seq``.

Payload bytes are each member's payload already encoded (an Avro body of the stream's
payload record, or the JSON text ``"stream":{...}``); a result's payload is their
concatenation in stream order, joined by ``separator`` (Avro: nothing — a record's
binary encoding is its fields' encodings one after the other; JSON: a comma).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from pipeline.operators.events import JoinResult
from pipeline.spec.inputs import PARTITION_SHIFT

_LOW = (1 << PARTITION_SHIFT) - 1
UNKNOWN = -1


class MemberStore:
    """Kafka coordinates and payload bytes of the tuples one instance may still join."""

    def __init__(self, streams: Sequence[str], windows: Sequence[int], *,
                 offset_ids: bool = False, payload: bool = False,
                 separator: bytes = b"") -> None:
        self.streams = tuple(streams)
        self.windows = tuple(windows)
        self.offset_ids = offset_ids
        self.payload = payload
        self.separator = separator
        self.keep = payload or not offset_ids
        self.info: list[dict[int, tuple[int, int, bytes | None]]] = [{} for _ in streams]
        self.order: list[deque[tuple[int, int]]] = [deque() for _ in streams]

    def __len__(self) -> int:
        return sum(len(d) for d in self.info)

    def add(self, stream: int, seq: int, ts: int, partition: int | None,
            offset: int | None, payload: bytes | None) -> None:
        """Remember one arriving tuple."""
        if not self.keep:
            return
        self.info[stream][seq] = (UNKNOWN if partition is None else int(partition),
                                  UNKNOWN if offset is None else int(offset), payload)
        self.order[stream].append((ts, seq))

    def evict(self, join_time: int) -> None:
        """Drop what no future result can contain (ts < ⋈T − W_j), in arrival order."""
        for j, (info, order) in enumerate(zip(self.info, self.order, strict=True)):
            bound = join_time - self.windows[j]
            while order and order[0][0] < bound:
                _, seq = order.popleft()
                info.pop(seq, None)

    def coordinates(self, stream: int, seq: int) -> tuple[int, int]:
        """``(partition, offset)`` of a member (-1, -1 if unknown)."""
        if self.offset_ids:
            return seq >> PARTITION_SHIFT, seq & _LOW
        got = self.info[stream].get(seq)
        return (got[0], got[1]) if got is not None else (UNKNOWN, UNKNOWN)

    def members_json(self, result: JoinResult) -> list[dict[str, Any]]:
        """The result's members with their Kafka coordinates (stream order)."""
        out = []
        for k, m in enumerate(result.members):
            partition, offset = self.coordinates(k, m.seq)
            out.append({"stream": m.stream, "seq": m.seq, "event_time": m.event_time,
                        "partition": partition, "offset": offset})
        return out

    def payload_of(self, result: JoinResult) -> bytes | None:
        """The members' payload bytes concatenated (None without payload, or if one is
        not known — which the eviction bound rules out)."""
        if not self.payload:
            return None
        parts = []
        for k, m in enumerate(result.members):
            got = self.info[k].get(m.seq)
            if got is None or got[2] is None:
                return None
            parts.append(got[2])
        return self.separator.join(parts)

    def snapshot(self) -> dict[str, Any]:
        """Plain, picklable state."""
        return {"info": [dict(d) for d in self.info], "order": [list(o) for o in self.order]}

    def restore(self, snap: dict[str, Any] | None) -> MemberStore:
        """Load :meth:`snapshot` state into this (freshly configured) store."""
        if snap:
            self.info = [dict(d) for d in snap["info"]]
            self.order = [deque(o) for o in snap["order"]]
        return self

