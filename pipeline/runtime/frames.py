"""The join instance's frames: envelope rows in, output rows out — plain pandas + NumPy.

Input: a micro-batch's envelope rows (a pandas frame per route key, as Spark's
``transformWithStateInPandas`` hands them over) become :class:`Event` objects column by
column (:func:`events_of`), and their Kafka coordinates and payload bytes go into the
member store one column slice per stream (:func:`remember`), not one call per row.
Output: result, metric and dead-letter rows as frames of :func:`output_columns`, the one
schema (:func:`output_ddl`) of the processor's output.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.operators.events import Event, ResultRows
from pipeline.operators.validation.config import Rejected
from pipeline.runtime.members import UNKNOWN, MemberStore

#: the columns every output row has (``kind`` = result | metric | deadletter); a job's
#: output adds four columns per stream: :func:`output_ddl`
BASE_DDL = (
    "kind string, instance string, id string, result_time long, "
    "emit_time long, time long, wall_time long, z double, harvest_fractions string, "
    "k_ms long, recall_target double, instant_recall_target double, "
    "estimated_recall double, measured_recall double, rate_in double, rate_out double, "
    "queue_drops long, state_size long, extra string, dl_key binary, dl_value binary, "
    "payload binary, dl_reason string, dl_topic string, dl_partition int, dl_offset long, "
    "dl_raw binary"
)
#: a result's member of stream k: its seq, event time and Kafka coordinates (-1 unknown),
#: one column each (:func:`member_column`) — numbers, not text: Arrow carries them as
#: they are and Spark SQL builds the ``members`` array from them (issue 28)
MEMBER_FIELDS = (("seq", "long"), ("time", "long"), ("partition", "int"),
                 ("offset", "long"))


def member_column(k: int, field: str) -> str:
    """The output column of ``field`` (of :data:`MEMBER_FIELDS`) of stream ``k``'s member."""
    return f"member{k}_{field}"


def output_ddl(m: int) -> str:
    """The processor's output schema for an m-way join: :data:`BASE_DDL` + the members."""
    members = ", ".join(f"{member_column(k, f)} {t}" for k in range(m)
                        for f, t in MEMBER_FIELDS)
    return f"{BASE_DDL}, {members}"


@functools.cache
def output_columns(m: int) -> tuple[str, ...]:
    """The column names of :func:`output_ddl`, in order."""
    return tuple(part.strip().split(" ")[0] for part in output_ddl(m).split(","))


TICK_STREAM = -1  # routing liveness rows: not events, only "the query has input"
DEADLETTER_KEY = -1  # route key of rejected input rows: passed through as kind=deadletter


# ---------------------------------------------------------------------- input
def sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The event rows (ticks skipped) in arrival order (ties: stream, seq)."""
    if frame.empty or "stream_idx" not in frame.columns:
        return frame.iloc[0:0]
    rows = frame[frame["stream_idx"] != TICK_STREAM]
    if rows.empty:
        return rows
    return rows.sort_values(["arrival_time", "stream_idx", "seq"], kind="stable")


def _ints(col: pd.Series) -> list[int]:
    """A column as Python ints (``int(v)`` of each value; integer columns as they are)."""
    if col.dtype.kind in "iu":
        return col.tolist()
    return [int(v) for v in col.tolist()]


def _is_map_column(values: list[Any]) -> bool:
    """Whether a column's values are Arrow maps (lists of (key, value) pairs), judged by
    its first non-empty value; an array column's values are lists or arrays of items."""
    for v in values:
        if isinstance(v, list) and v:
            return isinstance(v[0], tuple)
        if v is not None and not isinstance(v, list):
            return False
    return bool(values) and all(v is None or isinstance(v, list) for v in values)


def events_of(rows: pd.DataFrame, attributes: Sequence[str], needed: set[str]
              ) -> list[Event]:
    """Sorted envelope rows → events; each event carries the attributes of ``attributes``
    that are in ``needed`` (what the predicate reads; the engine never looks at others).
    An Arrow map arrives as a list of (key, value) pairs and becomes a dict; an Arrow
    array (an ``overlap`` set) becomes a list of its items."""
    if rows.empty:
        return []
    attrs: dict[str, list[Any]] = {}
    for name in attributes:
        if name in needed:
            values = rows[name].tolist()
            if _is_map_column(values):
                values = [dict(v) if v is not None else None for v in values]
            elif any(isinstance(v, np.ndarray) for v in values[:1]):
                # an Arrow array as NumPy: plain lists, so attributes compare with ==
                values = [v.tolist() if isinstance(v, np.ndarray) else v for v in values]
            attrs[name] = values
    head = (_ints(rows["stream_idx"]), _ints(rows["seq"]), _ints(rows["event_time"]),
            _ints(rows["arrival_time"]))
    if len(attrs) == 1:  # the usual case: one attribute, one small dict per event
        ((name, values),) = attrs.items()
        return [Event(s, q, t, a, {name: v})
                for s, q, t, a, v in zip(*head, values, strict=True)]
    names = list(attrs)
    columns = [attrs[n] for n in names]
    return [Event(s, q, t, a, dict(zip(names, vals, strict=True)))
            for s, q, t, a, *vals in zip(*head, *columns, strict=True)]


def _coordinates(rows: pd.DataFrame, name: str) -> np.ndarray:
    """A coordinate column as int64, :data:`~pipeline.runtime.members.UNKNOWN` for a
    missing value or column (what ``MemberStore.add`` makes of ``_opt_int``)."""
    n = len(rows)
    if name not in rows.columns:
        return np.full(n, UNKNOWN, np.int64)
    col = rows[name]
    if col.dtype.kind in "iu":
        return col.to_numpy(np.int64)
    if col.dtype.kind == "f":
        values = col.to_numpy(np.float64)
        ok = np.isfinite(values)
        return np.where(ok, np.trunc(np.where(ok, values, 0.0)), UNKNOWN).astype(np.int64)
    out = [opt_int(v) for v in col.tolist()]
    return np.array([UNKNOWN if v is None else v for v in out], np.int64)


def remember(store: MemberStore, rows: pd.DataFrame, events: Sequence[Event]) -> None:
    """``store.add`` of each event with its row's coordinates and payload bytes (``rows``
    and ``events`` in the same order), one column slice per stream: the same entries in
    the same per-stream order as adding them one by one."""
    if not store.keep or not events:
        return
    n = len(events)
    streams = np.fromiter((ev.stream for ev in events), np.int64, n)
    seqs = np.fromiter((ev.seq for ev in events), np.int64, n)
    ts = np.fromiter((ev.ts for ev in events), np.int64, n)
    parts = _coordinates(rows, "partition")
    offsets = _coordinates(rows, "offset")
    payloads: list[Any] = [None] * n
    if store.payload and "payload" in rows.columns:
        payloads = [bytes(p) if p is not None else None for p in rows["payload"].tolist()]
    for j in np.unique(streams).tolist():
        idx = np.flatnonzero(streams == j)
        store.add_run(j, seqs[idx].tolist(), ts[idx].tolist(), parts[idx].tolist(),
                      offsets[idx].tolist(), [payloads[i] for i in idx.tolist()])


def row_info(rows: pd.DataFrame, i: int) -> dict[str, Any]:
    """What a held or rejected tuple needs later: key, coordinates, bytes, payload."""
    row = rows.iloc[i]

    def get(name: str) -> Any:
        value = row[name] if name in rows.columns else None
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value

    raw, key, pay = get("raw"), get("dl_key"), get("payload")
    return {"key": bytes(key) if key is not None else None,
            "partition": opt_int(get("partition")), "offset": opt_int(get("offset")),
            "raw": bytes(raw) if raw is not None else b"",
            "payload": bytes(pay) if pay is not None else None}


def opt_int(value: Any) -> int | None:
    if value is None:
        return None
    f = float(value)
    return int(f) if math.isfinite(f) else None


def opt_float(value: Any) -> float | None:
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


# ---------------------------------------------------------------------- output
def output_frame(rows: list[dict[str, Any]], m: int) -> pd.DataFrame:
    """Rows (subsets of the output columns of an m-way join) → a frame with every output
    column."""
    out = pd.DataFrame(rows)
    columns = output_columns(m)
    for col in columns:
        if col not in out.columns:
            out[col] = None
    return out[list(columns)]


#: most rows of one output frame: Spark reads each frame the processor yields as one Arrow
#: record batch, and one batch of a drain's results (millions of rows) overran the JVM's
#: Arrow allocator (issue 29); Spark's own input batches default to 10,000 rows
MAX_OUTPUT_ROWS = 10_000
#: most bytes of one output frame as an Arrow record batch (:func:`row_bytes`): 10,000
#: result rows with large payloads would still make one batch of gigabytes
MAX_OUTPUT_BYTES = 16 << 20
#: Arrow bytes of one value of any column besides its string / binary data, rounded up:
#: 8 bytes of a long or double (or a 4-byte offset) and a validity bit (each buffer's
#: padding, at most 64 bytes per buffer and batch, is not counted)
FIXED_VALUE_BYTES = 9


def _data_bytes(values: list[Any]) -> np.ndarray:
    """UTF-8 / binary bytes of each value of a column without nulls (0 for a value that
    is neither text nor bytes: fixed width)."""
    n = len(values)
    try:  # a text column: one join in C tells whether characters are bytes
        ascii_only = "".join(values).isascii()
    except TypeError:
        ascii_only = None
    if ascii_only:
        return np.fromiter(map(len, values), np.int64, n)
    if ascii_only is None:
        try:  # a binary column
            b"".join(values)
            return np.fromiter(map(len, values), np.int64, n)
        except TypeError:
            pass
    return np.fromiter((len(v.encode()) if isinstance(v, str)
                        else len(v) if isinstance(v, bytes | bytearray)
                        else 0 for v in values), np.int64, n)


def row_bytes(frame: pd.DataFrame) -> np.ndarray:
    """An upper bound of the bytes each row of ``frame`` takes in an Arrow record batch:
    :data:`FIXED_VALUE_BYTES` per column plus the UTF-8 / binary data of its text and
    bytes values."""
    out = np.full(len(frame), FIXED_VALUE_BYTES * frame.shape[1], np.int64)
    for name in frame.columns:
        col = frame[name]
        if col.dtype != object:
            continue
        present = col.notna().to_numpy()
        if present.all():
            out += _data_bytes(col.tolist())
        elif present.any():
            out[present] += _data_bytes(col[present].tolist())
    return out


def cuts(sizes: np.ndarray, max_rows: int, max_bytes: int) -> list[tuple[int, int]]:
    """Consecutive ``[start, stop)`` slices covering rows of ``sizes`` bytes, greedily as
    long as each holds at most ``max_rows`` rows and ``max_bytes`` bytes; a row larger
    than ``max_bytes`` gets a slice of its own."""
    n = len(sizes)
    ends = np.cumsum(sizes)
    out: list[tuple[int, int]] = []
    start, base = 0, 0
    while start < n:
        stop = int(np.searchsorted(ends, base + max_bytes, side="right"))
        stop = min(max(stop, start + 1), start + max_rows, n)
        out.append((start, stop))
        base = int(ends[stop - 1])
        start = stop
    return out


def bounded(frames: Sequence[pd.DataFrame], max_rows: int = MAX_OUTPUT_ROWS,
            max_bytes: int = MAX_OUTPUT_BYTES) -> list[pd.DataFrame]:
    """``frames`` cut into consecutive slices of at most ``max_rows`` rows and
    ``max_bytes`` bytes as Arrow batches (:func:`row_bytes`; a single larger row alone):
    same rows, same order; empty frames dropped."""
    out: list[pd.DataFrame] = []
    for f in frames:
        if not len(f):
            continue
        slices = cuts(row_bytes(f), max_rows, max_bytes)
        out += [f] if len(slices) == 1 else [f.iloc[a:b] for a, b in slices]
    return out


def dead_letter_frame(rows: pd.DataFrame, m: int) -> pd.DataFrame:
    """Rejected input rows (routed to :data:`DEADLETTER_KEY`) → ``kind=deadletter`` rows."""
    out = output_frame([{"kind": "deadletter"}] * len(rows), m)
    out["dl_key"] = rows["dl_key"].to_numpy()
    out["dl_value"] = rows["dl_value"].to_numpy()
    return out


def result_frame(rows: ResultRows, instance: str, emit_ms: int,
                 members: MemberStore) -> pd.DataFrame:
    """Join result rows → output rows: each member's seq, event time and Kafka coordinates
    in its own columns (:func:`member_column`), ``payload`` the members' payload bytes. A
    result whose payload is incomplete is left out (the caller counts it). Built column by
    column from the engine's (seq, ts) columns: no :class:`JoinResult` objects, no text
    per result but its id (issue 28)."""
    m = len(rows.streams)
    payloads: list[bytes | None] = []
    if members.payload:
        payloads = members.payloads(rows)
        kept = np.fromiter((p is not None for p in payloads), bool, len(payloads))
        if not kept.all():
            rows = rows.take(kept)
            payloads = [p for p in payloads if p is not None]
    n = len(rows)
    if not n:
        return output_frame([], m).iloc[0:0]
    # object columns filled in place and handed over uncopied: pandas' own conversion of
    # Python lists (and its copy) cost more than building the columns
    columns: dict[str, Any] = {c: np.empty(n, object) for c in output_columns(m)}
    columns["kind"][:] = "result"
    columns["instance"][:] = instance
    columns["id"][:] = rows.ids()
    if members.payload:  # else the column stays None
        columns["payload"][:] = payloads
    columns["result_time"] = rows.result_times()
    columns["emit_time"] = np.full(n, emit_ms, np.int64)
    for k in range(m):
        partition, offset = members.coordinates_of(rows, k)
        columns[member_column(k, "seq")] = rows.seqs[:, k]
        columns[member_column(k, "time")] = rows.tss[:, k]
        columns[member_column(k, "partition")] = partition.astype(np.int32)
        columns[member_column(k, "offset")] = offset
    return pd.DataFrame(columns, copy=False)


def dead_letter_rows(rows: pd.DataFrame, rejected: Sequence[Rejected], instance: str,
                     topics: Sequence[str], m: int) -> pd.DataFrame | None:
    """``kind=deadletter`` rows of rejected tuples of an m-way join (encoded as
    ``dead_letter`` records in Spark SQL): a tuple's ``info`` is its position in ``rows``
    or, for one held from an earlier batch, its detached :func:`row_info`; ``topics`` name
    each stream's input topic. None when nothing was rejected."""
    out = []
    for r in rejected:
        info = row_info(rows, r.info) if isinstance(r.info, int) else r.info
        out.append({"kind": "deadletter", "instance": instance,
                    "dl_key": info["key"], "dl_reason": r.reason,
                    "dl_topic": topics[r.event.stream] if topics else "",
                    "dl_partition": info["partition"], "dl_offset": info["offset"],
                    "dl_raw": info["raw"]})
    return output_frame(out, m) if out else None
