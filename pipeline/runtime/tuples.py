"""A decoded input record → the tuple the engine joins, as a dump line (``harvest dump``).

The rules are the Spark job's (:mod:`pipeline.spark.inputs`): the event time in epoch ms
(``timestamp-micros`` divided down, ISO-8601 strings parsed, UTC when no zone is given),
the arrival time from a field or the Kafka timestamp, ``seq`` from the id field or from
the Kafka coordinates (``partition · 2^40 + offset``), the predicate's attributes under
their ``[join]`` names, the payload fields under ``payload``. A record that lacks one of
these values or has one of the wrong type raises :class:`SerializationError` whose
message names the field and the spec key — the dead-letter reason.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from connectors.io.foreign import WrongType
from pipeline.core.errors import SerializationError
from pipeline.runtime.inputs import StreamPlan, TimeField
from pipeline.spec.inputs import PARTITION_SHIFT

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def offset_seq(partition: int, offset: int) -> int:
    """``seq`` of a record identified by its Kafka coordinates."""
    return (partition << PARTITION_SHIFT) + offset


def iso_ms(text: str) -> int:
    """Epoch ms of an ISO-8601 time (UTC when it has no zone); ValueError if it is none."""
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return ((dt - _EPOCH) // _MICRO) // 1000


def _value(rec: Mapping[str, Any], field: str, key: str, nullable: bool = False) -> Any:
    value = rec.get(field)
    if isinstance(value, WrongType):
        raise SerializationError(
            f"field '{field}' ({key}) has a value of the wrong type: {value}")
    if value is None and not nullable:
        raise SerializationError(f"missing value for field '{field}' ({key})")
    return value


def _time(rec: Mapping[str, Any], tf: TimeField) -> int:
    value = _value(rec, tf.field, tf.key)
    if tf.unit == "iso":
        try:
            return iso_ms(str(value))
        except ValueError:
            raise SerializationError(
                f"field '{tf.field}' ({tf.key}): {str(value)[:60]!r} is not an ISO-8601 time"
            ) from None
    return int(value) // 1000 if tf.unit == "us" else int(value)


def json_ready(value: Any) -> Any:
    """A decoded value as JSON data: bytes become base64 strings (as ``harvest consume``)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value


def _own(plan: StreamPlan, rec: Mapping[str, Any]) -> None:
    """The checks of harvest's own topics (as the job's own-topic decoder)."""
    if rec.get("stream") != plan.stream:
        raise SerializationError(f"stream {rec.get('stream')} read from topic {plan.topic} "
                                 f"of stream {plan.stream}")
    if int(rec["event_time"]) < 0:
        raise SerializationError(f"negative event_time {rec['event_time']}")
    if int(rec["arrival_time"]) < int(rec["event_time"]):
        raise SerializationError(
            f"arrival_time {rec['arrival_time']} before event_time {rec['event_time']}")


def _finite(value: Any, field: str, key: str) -> Any:
    """The job's rule: no NaN or ±Inf in an attribute the predicate reads."""
    values = value.values() if isinstance(value, Mapping) else [value]
    for v in values:
        if isinstance(v, float) and not math.isfinite(v):
            raise SerializationError(f"non-finite value {v} in attribute '{field}' ({key}), "
                                     "which the join predicate reads")
    return value


def to_tuple(plan: StreamPlan, rec: Mapping[str, Any], partition: int, offset: int,
             kafka_ms: int | None) -> dict[str, Any]:
    """The dump line of one decoded record of ``plan``'s topic."""
    if plan.own:
        _own(plan, rec)
        row = {k: json_ready(v) for k, v in rec.items()}
        row.update(partition=partition, offset=offset)
    else:
        event = _time(rec, plan.event_time)
        if event < 0:
            raise SerializationError(f"negative event time {event} in field "
                                     f"'{plan.event_time.field}' ({plan.event_time.key})")
        if plan.arrival_time is not None:
            arrival = _time(rec, plan.arrival_time)
        elif kafka_ms is None:
            raise SerializationError("record without a Kafka timestamp "
                                     f"(inputs.{plan.stream}.arrival_time = \"kafka\")")
        else:
            arrival = kafka_ms
        seq = offset_seq(partition, offset) if plan.id_field is None else int(
            _value(rec, plan.id_field, f"inputs.{plan.stream}.id"))
        row = {"stream": plan.stream, "seq": seq, "event_time": event, "arrival_time": arrival,
               "partition": partition, "offset": offset}
        for attr in plan.attributes:
            row[attr.name] = _finite(_value(rec, attr.field, attr.key), attr.field, attr.key)
    if plan.payload:
        nullable = plan.nullable
        row["payload"] = {f: json_ready(_value(rec, f, "output.payload", nullable[f]))
                          for f in plan.payload}
    return row
