"""The join instance's frames: envelope rows in, output rows out — plain pandas + NumPy.

Input: a micro-batch's envelope rows (a pandas frame per route key, as Spark's
``transformWithStateInPandas`` hands them over) become :class:`Event` objects column by
column (:func:`events_of`), and their Kafka coordinates and payload bytes go into the
member store one column slice per stream (:func:`remember`), not one call per row.
Output: result, metric and dead-letter rows as frames of :data:`OUTPUT_COLUMNS`, the one
schema (:data:`OUTPUT_DDL`) of the processor's output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.operators.events import Event, JoinResult
from pipeline.operators.validation.config import Rejected
from pipeline.runtime.members import UNKNOWN, MemberStore

#: columns of the processor's output (one schema, ``kind`` = result | metric)
OUTPUT_DDL = (
    "kind string, instance string, id string, result_time long, members string, "
    "emit_time long, time long, wall_time long, z double, harvest_fractions string, "
    "k_ms long, recall_target double, instant_recall_target double, "
    "estimated_recall double, measured_recall double, rate_in double, rate_out double, "
    "queue_drops long, state_size long, extra string, dl_key binary, dl_value binary, "
    "payload binary, dl_reason string, dl_topic string, dl_partition int, dl_offset long, "
    "dl_raw binary"
)
OUTPUT_COLUMNS = tuple(part.strip().split(" ")[0] for part in OUTPUT_DDL.split(","))
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
def output_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows (subsets of the output columns) → a frame with every output column."""
    out = pd.DataFrame(rows)
    for col in OUTPUT_COLUMNS:
        if col not in out.columns:
            out[col] = None
    return out[list(OUTPUT_COLUMNS)]


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


def dead_letter_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Rejected input rows (routed to :data:`DEADLETTER_KEY`) → ``kind=deadletter`` rows."""
    out = output_frame([{"kind": "deadletter"}] * len(rows))
    out["dl_key"] = rows["dl_key"].to_numpy()
    out["dl_value"] = rows["dl_value"].to_numpy()
    return out


def result_frame(results: list[JoinResult], instance: str, emit_ms: int,
                 members: MemberStore | None = None) -> pd.DataFrame:
    """Join results → output rows (``members`` as JSON with the Kafka coordinates,
    decoded again in Spark SQL; ``payload``: the members' payload bytes). A result whose
    payload is incomplete is left out (the caller counts it). Built column by column."""
    if members is not None and members.payload:
        payloads = [members.payload_of(r) for r in results]
        if any(p is None for p in payloads):
            keep = [i for i, p in enumerate(payloads) if p is not None]
            results = [results[i] for i in keep]
            payloads = [payloads[i] for i in keep]
    else:
        payloads = [None] * len(results)
    if not results:
        return output_frame([]).iloc[0:0]
    texts = (members.members_texts(results) if members is not None
             else [json.dumps(r.to_json()["members"]) for r in results])
    n = len(results)
    columns: dict[str, Any] = dict.fromkeys(OUTPUT_COLUMNS)
    columns.update({"kind": ["result"] * n, "instance": [instance] * n,
                    "id": [r.id for r in results],
                    "result_time": [r.result_time for r in results], "members": texts,
                    "emit_time": [emit_ms] * n, "payload": payloads})
    return pd.DataFrame({c: columns[c] if columns[c] is not None else np.empty(n, object)
                         for c in OUTPUT_COLUMNS})


def dead_letter_rows(rows: pd.DataFrame, rejected: Sequence[Rejected], instance: str,
                     topics: Sequence[str]) -> pd.DataFrame | None:
    """``kind=deadletter`` rows of rejected tuples (encoded as ``dead_letter`` records in
    Spark SQL): a tuple's ``info`` is its position in ``rows`` or, for one held from an
    earlier batch, its detached :func:`row_info`; ``topics`` name each stream's input
    topic. None when nothing was rejected."""
    out = []
    for r in rejected:
        info = row_info(rows, r.info) if isinstance(r.info, int) else r.info
        out.append({"kind": "deadletter", "instance": instance,
                    "dl_key": info["key"], "dl_reason": r.reason,
                    "dl_topic": topics[r.event.stream] if topics else "",
                    "dl_partition": info["partition"], "dl_offset": info["offset"],
                    "dl_raw": info["raw"]})
    return output_frame(out) if out else None
