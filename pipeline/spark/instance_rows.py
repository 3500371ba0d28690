"""The join instance's rows (:mod:`pipeline.spark.instance`): envelope rows in, output rows
out — no Spark here, plain pandas + NumPy.

Input: a micro-batch's envelope rows (a pandas frame per route key, as
``transformWithStateInPandas`` hands them over) become :class:`Event` objects column by
column (:func:`events_of`), and their Kafka coordinates and payload bytes go into the
member store one column slice per stream (:func:`remember`), not one call per row.
Output: result, metric and dead-letter rows as frames of :data:`OUTPUT_COLUMNS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pipeline.operators.events import Event, JoinResult
from pipeline.operators.validation.config import Rejected
from pipeline.runtime.members import UNKNOWN, MemberStore

if TYPE_CHECKING:
    from pipeline.spark.instance import JoinInstance

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
#: the wall budget's lag target, a share of the trigger interval: a micro-batch should end
#: before the next one is due, so its freshest input is at most one trigger old when it
#: does (a smaller share trades output for latency headroom)
LAG_TARGET_SHARE = 1.0
_METRIC_KEYS = ("time", "z", "k_ms", "instant_recall_target", "estimated_recall",
                "measured_recall", "queue_drops")


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


def events_of(rows: pd.DataFrame, attributes: Sequence[str], needed: set[str]
              ) -> list[Event]:
    """Sorted envelope rows → events; each event carries the attributes of ``attributes``
    that are in ``needed`` (what the predicate reads; the engine never looks at others).
    An Arrow map arrives as a list of (key, value) pairs and becomes a dict."""
    if rows.empty:
        return []
    attrs: dict[str, list[Any]] = {}
    for name in attributes:
        if name in needed:
            values = rows[name].tolist()
            if values and isinstance(values[0], list):  # Arrow map → list of (key, value)
                values = [dict(v) for v in values]
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


def lag_ratio(frame: pd.DataFrame, end_s: float, trigger_ms: int) -> float | None:
    """Age of the batch's freshest input at ``end_s`` (wall seconds, epoch clock) over
    the lag target (``LAG_TARGET_SHARE × trigger_ms``); None without Kafka timestamps."""
    if "kafka_ms" not in frame.columns:
        return None
    stamps = frame.loc[frame["stream_idx"] != TICK_STREAM, "kafka_ms"].dropna()
    if stamps.empty:
        return None
    age_ms = end_s * 1000.0 - float(stamps.max())
    target_ms = LAG_TARGET_SHARE * trigger_ms
    return max(0.0, age_ms) / target_ms if target_ms > 0 else None


# ---------------------------------------------------------------------- output
def output_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows (subsets of the output columns) → a frame with every output column."""
    out = pd.DataFrame(rows)
    for col in OUTPUT_COLUMNS:
        if col not in out.columns:
            out[col] = None
    return out[list(OUTPUT_COLUMNS)]


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
    payload is incomplete is left out (the caller counts it)."""
    rows = []
    for r in results:
        payload = members.payload_of(r) if members is not None else None
        if members is not None and members.payload and payload is None:
            continue
        listed = members.members_json(r) if members is not None else r.to_json()["members"]
        rows.append({"kind": "result", "instance": instance, "id": r.id,
                     "result_time": r.result_time, "members": json.dumps(listed),
                     "emit_time": emit_ms, "payload": payload})
    return output_frame(rows) if rows else output_frame([]).iloc[0:0]


def dead_letters(inst: JoinInstance, rows: pd.DataFrame, rejected: list[Rejected]
                 ) -> pd.DataFrame | None:
    """``kind=deadletter`` rows of the tuples ``inst`` rejected (encoded as ``dead_letter``
    records in Spark SQL). With ATR a tuple reaches several instances; only the owner of
    its timestamp's segment writes its dead letter, so each is written once."""
    out = []
    router = inst.router
    atr = router.config.mode == "atr"
    topics = inst.config.topics
    for r in rejected:
        if atr and not router.owns(inst.route_key, r.event.ts):
            continue
        info = row_info(rows, r.info) if isinstance(r.info, int) else r.info
        out.append({"kind": "deadletter", "instance": str(inst.route_key),
                    "dl_key": info["key"], "dl_reason": r.reason,
                    "dl_topic": topics[r.event.stream] if topics else "",
                    "dl_partition": info["partition"], "dl_offset": info["offset"],
                    "dl_raw": info["raw"]})
    inst.meta["deadletters"] = int(inst.meta.get("deadletters", 0)) + len(out)
    return output_frame(out) if out else None


def memory_extra(inst: JoinInstance) -> dict[str, float]:
    """With ``[memory]`` on, for ``extra``: the evictions so far, ``window_state`` (tuples in
    the join windows, at most ``memory_budget``) and ``kslack_tuples`` (K-slack and
    Synchronizer, outside the bound); nothing when it is off."""
    mem = inst.engine.memory_metrics()
    if mem is None:
        return {}
    return {key: float(mem[key])
            for key in ("evictions", "window_state", "memory_budget", "kslack_tuples")}


def profile_extra(inst: JoinInstance) -> dict[str, float]:
    """With a phase profile attached, for ``extra``: µs per admitted tuple of each phase
    since it was attached (``profile_us_<phase>``), of all phases but probing
    (``profile_us_unsheddable``) and the tuples counted; nothing when it is off."""
    prof = inst.profile
    if prof is None:
        return {}
    out = {f"profile_us_{r['phase']}": float(r["us_per_tuple"]) for r in prof.rows()}
    out["profile_us_unsheddable"] = round(prof.us_per_tuple(), 3)
    out["profile_tuples"] = float(prof.tuples)
    return out


def metric_rows(inst: JoinInstance, wall_now: int) -> list[dict[str, Any]]:
    """``drain_metrics`` rows of the instance's engine merged per stream time →
    ``operator_metrics`` fields.

    ``rate_in``/``rate_out`` are tuples/results per second of stream time since the
    previous drain (ARCHITECTURE §7); policy-specific numbers go to ``extra``."""
    merged: dict[int, dict[str, Any]] = {}
    for row in inst.engine.drain_metrics():
        merged.setdefault(int(row["time"]), {}).update(row)
    out: list[dict[str, Any]] = []
    if not merged:
        return out
    # counters are only known per micro-batch: average them over the stream time since
    # the previous drain; counters and the engine clock (arrival time) both stand at the
    # end of the batch
    stats, meta = inst.engine.stats, inst.meta
    last_t = meta.get("last_time")
    t_end = int(inst.engine.clock)
    span_s = (t_end - last_t) / 1000.0 if last_t is not None and t_end > last_t else 0.0
    d_in = stats.inputs - int(meta.get("last_inputs", 0))
    d_out = stats.results - int(meta.get("last_results", 0))
    rate_in = d_in / span_s if span_s > 0 else 0.0
    rate_out = d_out / span_s if span_s > 0 else 0.0
    meta.update(last_time=t_end, last_inputs=stats.inputs, last_results=stats.results)
    memory = memory_extra(inst)
    for t in sorted(merged):
        row = merged[t]
        fractions = row.get("harvest_fractions") or []
        flat = [float(v) for r in fractions for v in (r if isinstance(r, list) else [r])]
        extra = {k: float(v) for k, v in row.items()
                 if k not in _METRIC_KEYS and isinstance(v, int | float)
                 and not isinstance(v, bool) and math.isfinite(float(v))}
        extra.update(memory)
        if inst.validator is not None:
            extra.update(inst.validator.metrics())
        if inst.state_bytes:
            extra["state_bytes"] = float(inst.state_bytes)
        extra.update(profile_extra(inst))
        out.append({
            "kind": "metric", "instance": str(inst.route_key),
            "time": t, "wall_time": wall_now,
            "z": float(row.get("z", 1.0)),
            "harvest_fractions": json.dumps(flat),
            "k_ms": int(row.get("k_ms", inst.engine.slack.current_k())),
            "recall_target": float(inst.config.engine.disorder.recall),
            "instant_recall_target": opt_float(row.get("instant_recall_target")),
            "estimated_recall": opt_float(row.get("estimated_recall")),
            "measured_recall": opt_float(row.get("measured_recall")),
            "rate_in": rate_in,
            "rate_out": rate_out,
            "queue_drops": int(row.get("queue_drops", stats.dropped)),
            "state_size": inst.state_size(),
            "extra": json.dumps(extra),
        })
    return out
