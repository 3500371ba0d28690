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

import itertools
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.core.errors import OperatorStateError
from pipeline.operators.events import ResultRows
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
        # incremental state (:meth:`changes`): per stream, tuples added and evicted so far
        # (arrival counters: entry c of a stream is its c-th add), the counter up to which
        # segments were handed out, and those segments (first, end) while any entry lives
        self.added = [0] * len(self.streams)
        self.evicted = [0] * len(self.streams)
        self._persisted = [0] * len(self.streams)
        self._segments: list[deque[tuple[int, int]]] = [deque() for _ in streams]

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
        self.added[stream] += 1

    def add_run(self, stream: int, seqs: Sequence[int], ts: Sequence[int],
                partitions: Sequence[int], offsets: Sequence[int],
                payloads: Sequence[bytes | None]) -> None:
        """Remember arriving tuples of one stream at once, in arrival order: the same
        entries as :meth:`add` one by one (coordinates already ints, :data:`UNKNOWN` for
        a missing one)."""
        if not self.keep:
            return
        self.info[stream].update(zip(seqs, zip(partitions, offsets, payloads, strict=True),
                                     strict=True))
        self.order[stream].extend(zip(ts, seqs, strict=True))
        self.added[stream] += len(seqs)

    def evict(self, join_time: int) -> None:
        """Drop what no future result can contain (ts < ⋈T − W_j), in arrival order."""
        for j, (info, order) in enumerate(zip(self.info, self.order, strict=True)):
            bound = join_time - self.windows[j]
            while order and order[0][0] < bound:
                _, seq = order.popleft()
                info.pop(seq, None)
                self.evicted[j] += 1

    def coordinates(self, stream: int, seq: int) -> tuple[int, int]:
        """``(partition, offset)`` of a member (-1, -1 if unknown)."""
        if self.offset_ids:
            return seq >> PARTITION_SHIFT, seq & _LOW
        got = self.info[stream].get(seq)
        return (got[0], got[1]) if got is not None else (UNKNOWN, UNKNOWN)

    def coordinates_of(self, rows: ResultRows, k: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`coordinates` of each result row's member of stream ``k``, as two int64
        columns (partition, offset), looked up once per distinct member."""
        seqs = rows.seqs[:, k]
        if self.offset_ids:
            return np.right_shift(seqs, PARTITION_SHIFT), np.bitwise_and(seqs, _LOW)
        uniq, _, code = rows.distinct(k)
        info = self.info[k]
        missing = (UNKNOWN, UNKNOWN, None)
        got = [info.get(q, missing) for q in uniq.tolist()]
        n = len(got)
        parts = np.fromiter((g[0] for g in got), np.int64, n)
        offsets = np.fromiter((g[1] for g in got), np.int64, n)
        return parts[code], offsets[code]

    def payloads(self, rows: ResultRows) -> list[bytes | None]:
        """Each result row's members' payload bytes concatenated in stream order, joined
        by the separator (None without payload, or where one is not known — which the
        eviction bound rules out), looked up once per distinct member."""
        n = len(rows)
        if not self.payload or not n:
            return [None] * n
        columns = []
        for k in range(len(rows.streams)):
            seqs, _, code = rows.distinct(k)
            info = self.info[k]
            got = np.empty(seqs.shape[0], dtype=object)
            got[:] = [e[2] if (e := info.get(q)) is not None else None
                      for q in seqs.tolist()]
            columns.append(got[code].tolist())
        sep = self.separator
        return [None if None in row else sep.join(row)
                for row in zip(*columns, strict=True)]

    def snapshot(self) -> dict[str, Any]:
        """Plain, picklable state."""
        return {"info": [dict(d) for d in self.info], "order": [list(o) for o in self.order]}

    def restore(self, snap: dict[str, Any] | None) -> MemberStore:
        """Load :meth:`snapshot` state into this (freshly configured) store; every entry
        counts as not persisted (the next :meth:`changes` hands out all of them)."""
        if snap:
            self.info = [dict(d) for d in snap["info"]]
            self.order = [deque(o) for o in snap["order"]]
            self.added = [len(o) for o in self.order]
        return self

    # ------------------------------------------------------------------ incremental state
    def changes(self) -> tuple[dict[str, Any], dict[tuple[int, int], dict[str, Any]],
                               list[tuple[int, int]]]:
        """Incremental state, in arrival-order segments: a small header (the counters),
        the segments of the entries added since the previous call — keyed by (stream,
        counter of their first entry), columns ``ts``, ``seq``, ``partition``, ``offset``
        and ``payload`` — and the keys of the segments whose entries are all evicted by
        now. A call costs the entries added since the last one, not the store's size.
        Entries are looked up by ``seq``, which is unique per stream."""
        new: dict[tuple[int, int], dict[str, Any]] = {}
        removed: list[tuple[int, int]] = []
        for j, (info, order, segs) in enumerate(zip(self.info, self.order, self._segments,
                                                    strict=True)):
            start, end = max(self._persisted[j], self.evicted[j]), self.added[j]
            if end > start:
                # the newest end - start entries, read from the right: O(new), not O(store)
                entries = list(itertools.islice(reversed(order), end - start))[::-1]
                new[(j, start)] = _segment(entries, info, self.payload)
                segs.append((start, end))
            self._persisted[j] = end
            while segs and segs[0][1] <= self.evicted[j]:
                removed.append((j, segs.popleft()[0]))
        header = {"added": list(self.added), "evicted": list(self.evicted)}
        return header, new, removed

    def restore_pieces(self, header: Mapping[str, Any],
                       segments: Mapping[tuple[int, int], Mapping[str, Any]]) -> MemberStore:
        """Load :meth:`changes` state (the latest header, every segment not yet removed)
        into this freshly configured store; :class:`OperatorStateError` if they disagree."""
        try:
            self.added = [int(v) for v in header["added"]]
            self.evicted = [int(v) for v in header["evicted"]]
            for (j, start) in sorted(segments):
                seg = segments[(j, start)]
                payloads = seg["payload"]
                info, order = self.info[j], self.order[j]
                rows = zip(seg["ts"].tolist(), seg["seq"].tolist(), seg["partition"].tolist(),
                           seg["offset"].tolist(), strict=True)
                for k, (ts, seq, part, off) in enumerate(rows):
                    if start + k < self.evicted[j]:
                        continue
                    info[seq] = (part, off, payloads[k] if payloads is not None else None)
                    order.append((ts, seq))
                self._segments[j].append((start, start + len(seg["ts"])))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise OperatorStateError(f"cannot restore member segments: {exc!r}") from exc
        for j, order in enumerate(self.order):
            if len(order) != self.added[j] - self.evicted[j]:
                raise OperatorStateError(
                    f"member segments of stream {j}: {len(order)} entries, the header "
                    f"says {self.added[j] - self.evicted[j]}")
        self._persisted = list(self.added)
        return self


def _segment(entries: list[tuple[int, int]], info: dict[int, tuple[int, int, bytes | None]],
             payload: bool) -> dict[str, Any]:
    """Columns of the entries (ts, seq) in arrival order, with what ``info`` holds."""
    n = len(entries)
    got = [info.get(seq, (UNKNOWN, UNKNOWN, None)) for _, seq in entries]
    return {
        "ts": np.fromiter((e[0] for e in entries), np.int64, n),
        "seq": np.fromiter((e[1] for e in entries), np.int64, n),
        "partition": np.fromiter((g[0] for g in got), np.int64, n),
        "offset": np.fromiter((g[1] for g in got), np.int64, n),
        "payload": [g[2] for g in got] if payload else None,
    }
