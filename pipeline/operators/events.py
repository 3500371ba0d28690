"""Records flowing through the operators: input events, result members and join results.

Ji et al. §II: a tuple e_i of stream S_i carries a timestamp e_i.ts; a result
⟨e_1..e_m⟩ has timestamp max(e_k.ts). ARCHITECTURE §4: a result is identified by its
members' (stream, seq), so its id is deterministic (:func:`result_id`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pipeline.core.errors import SerializationError
from pipeline.core.gcpause import gc_paused

#: keys of a dump record that are not workload attributes
ENVELOPE_KEYS = frozenset({"stream", "seq", "event_time", "arrival_time"})
#: a stream time before every timestamp: the initial ^iT of K-slack, the Synchronizer's
#: time, ⋈T and the engine clock
NEG_INF = -(2**62)


@dataclass(slots=True)
class Event:
    """One input tuple: ``stream`` is the index into ``spec.join.streams``. Never changed
    once built; not a frozen dataclass only because a frozen one's ``__init__`` costs
    ~0.8 µs more per tuple (``object.__setattr__`` per field), on the per-tuple path that
    window harvesting cannot shed (issue 28)."""

    stream: int
    seq: int
    ts: int
    arrival: int
    attrs: Mapping[str, Any] = field(default_factory=dict)


def event_state(ev: Event) -> tuple[int, int, int, int, dict[str, Any]]:
    """``ev`` as plain data in snapshots (K-slack, Synchronizer, the validator's held
    tuples): (stream, seq, ts, arrival, attrs)."""
    return (ev.stream, ev.seq, ev.ts, ev.arrival, dict(ev.attrs))


def event_from_state(state: Any) -> Event:
    """Inverse of :func:`event_state`."""
    stream, seq, ts, arrival, attrs = state
    return Event(int(stream), int(seq), int(ts), int(arrival), dict(attrs))


class Member(NamedTuple):
    """One member tuple of a join result, by stream *name* (a NamedTuple: cheap to build)."""

    stream: str
    seq: int
    event_time: int


class JoinResult(NamedTuple):
    """A join result: deterministic ``id``, ``result_time`` = max member event time."""

    id: str
    result_time: int
    members: tuple[Member, ...]

    def to_json(self) -> dict[str, Any]:
        """The result record ``{"id", "result_time", "members": [...]}``."""
        return {
            "id": self.id,
            "result_time": self.result_time,
            "members": [
                {"stream": m.stream, "seq": m.seq, "event_time": m.event_time}
                for m in self.members
            ],
        }


def result_id(members: Sequence[Member]) -> str:
    """Deterministic id: blake2b-128 hex of ``"s1:12|s2:7|s3:9"`` in the given stream order.

    Event times do not enter it: a result is named by its members' (stream, seq).

    >>> a = result_id([Member("s1", 12, 100), Member("s2", 7, 90)])
    >>> a == result_id([Member("s1", 12, 0), Member("s2", 7, 0)]), len(a)
    (True, 32)
    >>> a == result_id([Member("s2", 7, 90), Member("s1", 12, 100)])
    False
    """
    key = "|".join(f"{m.stream}:{m.seq}" for m in members)
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def make_result(members: Sequence[Member]) -> JoinResult:
    """A :class:`JoinResult` with its id and timestamp derived from ``members``.

    >>> make_result([Member("s1", 12, 100), Member("s2", 7, 90)]).result_time
    100
    """
    return JoinResult(
        id=result_id(members),
        result_time=max(m.event_time for m in members),
        members=tuple(members),
    )


def results_from_arrays(
    streams: Sequence[str], seqs: ArrayLike, tss: ArrayLike
) -> list[JoinResult]:
    """Many results at once from row-aligned ``seqs``/``tss`` (one column per stream).

    Same ids and timestamps as :func:`make_result`, without its per-member overhead: the
    hot path of the engine and of the oracles, which build millions of results. A member
    tuple usually appears in many results (the probing tuple in all of one probe's), so
    each distinct (stream, seq) gets one :class:`Member` and one id fragment, shared.

    >>> r = results_from_arrays(["s1", "s2"], [[12, 7]], [[100, 90]])[0]
    >>> r == make_result([Member("s1", 12, 100), Member("s2", 7, 90)])
    True
    """
    rows = ResultRows.of(streams, [(seqs, tss)])
    if not len(rows):
        return []
    # the results are plain tuples of strings, ints and shared members: the cyclic
    # collector has nothing to find in them, but would re-scan them many times over
    with gc_paused():
        member_cols: list[list[Member]] = []
        for k, name in enumerate(streams):
            uniq, first_ts, code = rows.distinct(k)
            seq_list = uniq.tolist()
            members = np.empty(len(seq_list), dtype=object)
            members[:] = list(map(Member, [name] * len(seq_list), seq_list,
                                  first_ts.tolist()))
            member_cols.append(members[code].tolist())
        ids = rows.ids()
        times = rows.result_times().tolist()
        fields = zip(ids, times, zip(*member_cols, strict=True), strict=True)
        return list(map(tuple.__new__, repeat(JoinResult), fields))


@dataclass(frozen=True, slots=True)
class ResultRows:
    """Join results as columns: row i's member of stream k is ``(streams[k], seqs[i, k],
    tss[i, k])``, rows in join order — what the engine finds, before any
    :class:`JoinResult` object exists. The job's output is built from these columns
    (:func:`pipeline.runtime.frames.result_frame`); :meth:`results` gives the objects."""

    streams: tuple[str, ...]
    seqs: NDArray[np.int64]  # (n, m)
    tss: NDArray[np.int64]  # (n, m)

    @classmethod
    def of(cls, streams: Sequence[str], parts: Sequence[tuple[ArrayLike, ArrayLike]]
           ) -> ResultRows:
        """The rows of ``parts`` ((seqs, tss) blocks, one column per stream) in order."""
        m = len(streams)
        if not parts:
            empty = np.empty((0, m), np.int64)
            return cls(tuple(streams), empty, empty)
        seqs = [np.asarray(p[0], np.int64).reshape(-1, m) for p in parts]
        tss = [np.asarray(p[1], np.int64).reshape(-1, m) for p in parts]
        if len(parts) == 1:
            return cls(tuple(streams), seqs[0], tss[0])
        return cls(tuple(streams), np.concatenate(seqs), np.concatenate(tss))

    def __len__(self) -> int:
        return int(self.seqs.shape[0])

    def then(self, other: ResultRows) -> ResultRows:
        """These rows followed by ``other``'s."""
        return ResultRows.of(self.streams, [(r.seqs, r.tss) for r in (self, other) if len(r)])

    def take(self, rows: NDArray[np.bool_] | NDArray[np.int64]) -> ResultRows:
        """The rows at ``rows`` (positions or a boolean mask), in that order."""
        return ResultRows(self.streams, self.seqs[rows], self.tss[rows])

    def ids(self) -> list[str]:
        """Each row's :func:`result_id`."""
        return result_ids(self.streams, self.seqs)

    def result_times(self) -> NDArray[np.int64]:
        """Each row's result time: its members' largest event time (Ji et al. §II)."""
        if not len(self):
            return np.empty(0, np.int64)
        return np.asarray(self.tss.max(axis=1), np.int64)

    def distinct(self, k: int) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                        NDArray[np.int64]]:
        """Stream ``k``'s distinct members: (ascending seqs, the event time of each — its
        first row's —, each row's index among them). A tuple is in many results; what a
        result says about a member is computed once per distinct member."""
        if not len(self):
            empty = np.empty(0, np.int64)
            return empty, empty, empty
        uniq, code = _factorize(self.seqs[:, k])
        first = np.empty(uniq.shape[0], np.int64)
        first[code[::-1]] = np.arange(len(self) - 1, -1, -1)  # each value's first row
        return uniq, self.tss[first, k], code

    def results(self) -> list[JoinResult]:
        """The rows as :class:`JoinResult` objects (:func:`results_from_arrays`)."""
        return results_from_arrays(self.streams, self.seqs, self.tss)


def result_ids(streams: Sequence[str], seqs: ArrayLike) -> list[str]:
    """:func:`result_id` of each row of ``seqs`` (one column per stream, in ``streams``
    order): the key ``"s1:12|s2:7|s3:9"`` is built column by column in C (fixed-width
    bytes), one text per distinct (stream, seq).

    >>> result_ids(["s1", "s2"], [[12, 7]]) == [result_id([Member("s1", 12, 0),
    ...                                                     Member("s2", 7, 0)])]
    True
    """
    m = len(streams)
    seq_arr = np.asarray(seqs, dtype=np.int64).reshape(-1, m)
    if seq_arr.shape[0] == 0:
        return []
    key = np.empty(0, dtype=np.bytes_)
    for k, name in enumerate(streams):
        uniq, code = _factorize(seq_arr[:, k])
        sep = "|" if k < m - 1 else ""
        keys = np.array([f"{name}:{q}{sep}".encode() for q in uniq.tolist()], dtype=np.bytes_)
        key = keys[code] if k == 0 else _strings.add(key, keys[code])
    blake = hashlib.blake2b
    return [blake(part, digest_size=16).hexdigest() for part in key.tolist()]


#: NumPy's vectorized string functions (``np.strings`` from NumPy 2, ``np.char`` before)
_strings: Any = getattr(np, "strings", np.char)


def _factorize(col: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(ascending distinct values, each row's index among them): a table over the value
    range when it is at most a few times the rows (no sort), else ``np.unique``."""
    lo, hi = int(col.min()), int(col.max())
    if hi - lo <= 4 * col.shape[0] + 1024:
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[col - lo] = True
        code = np.cumsum(present) - 1
        return np.flatnonzero(present) + lo, code[col - lo]
    uniq, inverse = np.unique(col, return_inverse=True)
    return uniq, inverse.reshape(-1)


def result_from_json(record: Mapping[str, Any]) -> JoinResult:
    """Parse a result record; raises :class:`SerializationError` naming the bad field.

    >>> r = make_result([Member("s1", 12, 100), Member("s2", 7, 90)])
    >>> result_from_json(r.to_json()) == r
    True
    """
    try:
        members = tuple(
            Member(stream=str(m["stream"]), seq=int(m["seq"]), event_time=int(m["event_time"]))
            for m in record["members"]
        )
        return JoinResult(
            id=str(record["id"]), result_time=int(record["result_time"]), members=members
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SerializationError(f"bad join result record {dict(record)!r}: {exc!r}") from exc


def event_from_dump(record: Mapping[str, Any], stream_index: Mapping[str, int]) -> Event:
    """Build an :class:`Event` from a dump dict (stream, seq, event_time, arrival_time, attrs).

    ``stream_index`` maps stream names (``spec.join.streams``) to their indices.
    Raises :class:`SerializationError` naming the missing/bad field.

    >>> record = {"stream": "s2", "seq": 4, "event_time": 120, "arrival_time": 130,
    ...           "value": 20.5}
    >>> event = event_from_dump(record, {"s1": 0, "s2": 1})
    >>> event
    Event(stream=1, seq=4, ts=120, arrival=130, attrs={'value': 20.5})
    >>> event_to_dump(event, ["s1", "s2"]) == record
    True
    >>> event_from_dump({"stream": "s9"}, {"s1": 0})
    Traceback (most recent call last):
    ...
    pipeline.core.errors.SerializationError: dump record stream 's9' is not one of ['s1']
    """
    try:
        name = record["stream"]
    except KeyError:
        raise SerializationError(f"dump record without 'stream': {dict(record)!r}") from None
    if name not in stream_index:
        raise SerializationError(
            f"dump record stream {name!r} is not one of {sorted(stream_index)}"
        )
    try:
        seq = int(record["seq"])
        ts = int(record["event_time"])
        arrival = int(record["arrival_time"])
    except KeyError as exc:
        raise SerializationError(f"dump record without {exc.args[0]!r}: {dict(record)!r}") from None
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"dump record with a non-integer field: {dict(record)!r}") from exc
    attrs = {k: v for k, v in record.items() if k not in ENVELOPE_KEYS}
    return Event(stream=stream_index[name], seq=seq, ts=ts, arrival=arrival, attrs=attrs)


def event_to_dump(event: Event, streams: Sequence[str]) -> dict[str, Any]:
    """The dump dict of an :class:`Event` (inverse of :func:`event_from_dump`)."""
    return {
        "stream": streams[event.stream],
        "seq": event.seq,
        "event_time": event.ts,
        "arrival_time": event.arrival,
        **dict(event.attrs),
    }
