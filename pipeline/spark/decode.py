"""Kafka input → envelope rows: single-object header check + spark-avro ``from_avro``.

ARCHITECTURE §7 wire format: ``C3 01`` + 8-byte CRC-64-AVRO fingerprint + Avro body. The header
is checked in Spark SQL (binary ``substring`` compared with the expected bytes) and only
the body is handed to ``from_avro`` in PERMISSIVE mode, so an undecodable record becomes
a row with a ``reason`` instead of a failed query. Rows with a reason go to the
dead-letter topic (ARCHITECTURE §7: bad records are never lost); the others are the envelope stream
(``stream_idx, stream, seq, event_time, arrival_time`` + the workload's attributes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.avro.functions import from_avro, to_avro

from pipeline.core.errors import ConfigError
from pipeline.spec.model import JobSpec

HEADER_LEN = 10
MAGIC = b"\xc3\x01"
ENVELOPE_KEYS = ("stream", "seq", "event_time", "arrival_time")
#: ``[job] fetch_max_wait_ms``'s default (:func:`kafka_source`)
FETCH_MAX_WAIT_MS: int = JobSpec.model_fields["fetch_max_wait_ms"].default
#: the source's client calls (``kafka.default.api.timeout.ms``, ``kafka.request.timeout.ms``;
#: Kafka's defaults 60 s and 30 s) and how often the driver asks for offsets again
#: (``fetchOffset.numRetries``, Spark's default 3): 30 attempts of 5 s, 1 s apart, ride
#: through three minutes without a broker, as 3 attempts of 60 s did (:func:`kafka_source`)
OFFSET_CALL_TIMEOUT_MS = 5_000
OFFSET_ATTEMPTS = 30


@dataclass(frozen=True)
class DecodeConfig:
    """What a valid input record looks like: its schema, fingerprint and stream topics."""

    schema_name: str
    schema_json: str
    fingerprint: bytes
    streams: tuple[str, ...]
    topics: tuple[str, ...]
    #: the attributes the join predicate reads: NaN or ±Inf in one of them is a reason
    finite: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.fingerprint) != 8:
            raise ConfigError(
                f"fingerprint: expected 8 bytes, got {len(self.fingerprint)} "
                f"({self.fingerprint.hex()!r})"
            )
        if len(self.streams) != len(self.topics):
            raise ConfigError(
                f"topics: one per stream, got {len(self.topics)} topics {list(self.topics)} "
                f"for {len(self.streams)} streams {list(self.streams)}"
            )

    @property
    def field_names(self) -> tuple[str, ...]:
        """The record's fields in schema order."""
        fields = json.loads(self.schema_json)["fields"]
        return tuple(str(f["name"]) for f in fields)

    def field_type(self, name: str) -> Any:
        """The Avro type of field ``name``."""
        for f in json.loads(self.schema_json)["fields"]:
            if f["name"] == name:
                return f["type"]
        raise ConfigError(f"{name}: not a field of {self.schema_name}")

    @property
    def attribute_names(self) -> tuple[str, ...]:
        """The workload attributes: every field but the envelope keys."""
        return tuple(n for n in self.field_names if n not in ENVELOPE_KEYS)

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "schema_name": self.schema_name,
            "schema_json": self.schema_json,
            "fingerprint": self.fingerprint.hex(),
            "streams": list(self.streams),
            "topics": list(self.topics),
            "finite": list(self.finite),
        }

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> DecodeConfig:
        """Inverse of :meth:`snapshot`."""
        return cls(
            schema_name=str(snap["schema_name"]),
            schema_json=str(snap["schema_json"]),
            fingerprint=bytes.fromhex(str(snap["fingerprint"])),
            streams=tuple(snap["streams"]),
            topics=tuple(snap["topics"]),
            finite=tuple(snap.get("finite", ())),
        )


def kafka_source(
    spark: SparkSession,
    bootstrap: str,
    topics: tuple[str, ...],
    max_offsets_per_trigger: int | None,
    client_options: Mapping[str, str],
    fetch_max_wait_ms: int = FETCH_MAX_WAIT_MS,
) -> DataFrame:
    """A streaming read of ``topics`` from the earliest offset (spark-sql-kafka).

    ``fetch_max_wait_ms`` is the executors' consumers' ``fetch.max.wait.ms``: how long the
    broker may hold a fetch that finds no new record (Kafka's default: 500 ms). Each
    task's consumer, cached between micro-batches, leaves a fetch past its offset range
    at the broker (the Kafka client sends the next fetch before it returns records, and
    keeps one fetch per broker in flight), and a near-empty micro-batch's scan stage
    waited about that long every batch: its span grew with the setting, ~100–180 ms at
    10, ~340–365 ms at 250, 630–730 ms at 500 (docs/NOTES.md, issue 29). A range that
    holds records is answered at once whatever the setting, so a backlog drain does not
    depend on it.

    The driver asks for the latest offsets with an ``Admin`` client whose call, once it has
    a partition's leader, keeps waiting for that node: after a leader's SIGKILL the call
    hung until the dead node was started again (28 s in the chaos bench; with the default
    ``default.api.timeout.ms`` up to 60 s), while the partition had a new leader 4–7 s
    after the kill. Spark retries a failed offset request with a new client, which asks
    for the leaders afresh, so each call is bounded by :data:`OFFSET_CALL_TIMEOUT_MS` and
    retried :data:`OFFSET_ATTEMPTS` times (docs/NOTES.md, issue 33, session 15)."""
    timeout = str(OFFSET_CALL_TIMEOUT_MS)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.fetch.max.wait.ms", str(fetch_max_wait_ms))
        .option("kafka.default.api.timeout.ms", timeout)
        .option("kafka.request.timeout.ms", timeout)
        .option("fetchOffset.numRetries", str(OFFSET_ATTEMPTS))
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
    )
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    for key, value in client_options.items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()


def _bin(data: bytes) -> Column:
    return sf.lit(bytearray(data))


def _topic_stream(cfg: DecodeConfig) -> Column:
    """The stream name a record's topic belongs to (null for an unexpected topic)."""
    pairs: list[Column] = []
    for topic, stream in zip(cfg.topics, cfg.streams, strict=True):
        pairs += [sf.lit(topic), sf.lit(stream)]
    return sf.create_map(*pairs)[sf.col("topic")]


def _stream_index(cfg: DecodeConfig) -> Column:
    pairs: list[Column] = []
    for i, stream in enumerate(cfg.streams):
        pairs += [sf.lit(stream), sf.lit(i)]
    return sf.create_map(*pairs)[sf.col("rec.stream")]


def _is_nonfinite(v: Column) -> Column:
    return sf.isnan(v) | (sf.abs(v) == sf.lit(float("inf")))


def nonfinite_reason(value: Column, name: str, kind: str, key: str = "") -> tuple[Column, Column]:
    """(condition, reason) of the rule "no NaN or ±Inf in an attribute the predicate
    reads": ``kind`` is ``scalar`` (float/double), ``map`` (values of a string → double
    map) or ``array`` (of doubles). A null is not this rule's business."""
    where = f"attribute '{name}'" + (f" ({key})" if key else "")
    if kind == "map":
        bad = sf.coalesce(sf.exists(sf.map_values(value), _is_nonfinite), sf.lit(False))
        return bad, sf.lit(f"non-finite value (NaN or Infinity) in {where}, which the join "
                           "predicate reads")
    if kind == "array":
        bad = sf.coalesce(sf.exists(value, _is_nonfinite), sf.lit(False))
        return bad, sf.lit(f"non-finite value (NaN or Infinity) in {where}, which the join "
                           "predicate reads")
    bad = sf.coalesce(_is_nonfinite(value.cast("double")), sf.lit(False))
    return bad, sf.format_string(f"non-finite value %s in {where}, which the join predicate "
                                 "reads", value.cast("string"))


def avro_kind(avro_type: Any) -> str | None:
    """``scalar`` / ``map`` / ``array`` for a float-valued Avro type (nullable unions
    unwrapped), None for anything that cannot hold NaN."""
    t = avro_type
    if isinstance(t, list):
        rest = [b for b in t if b != "null"]
        t = rest[0] if len(rest) == 1 else None
    if isinstance(t, dict) and t.get("type") in ("map", "array"):
        inner = avro_kind(t["values"] if t["type"] == "map" else t["items"])
        return str(t["type"]) if inner == "scalar" else None
    if isinstance(t, dict):
        t = t.get("type")
    return "scalar" if t in ("float", "double") else None


def _complete(rec: Column, cfg: DecodeConfig) -> Column:
    """The record decoded with every field present (PERMISSIVE may give a struct of nulls)."""
    cond = rec.isNotNull()
    for name in cfg.field_names:
        cond = cond & rec.getField(name).isNotNull()
    return sf.coalesce(cond, sf.lit(False))


def _reason(cfg: DecodeConfig) -> Column:
    """Why a decoded row is rejected (null when it is valid): the checks of :func:`decode`
    in order, over the columns of its first projection."""
    expected_stream = _topic_stream(cfg)
    reason = (
        sf.when(sf.col("raw") == _bin(b""), sf.lit("empty record value"))
        .when(sf.length("raw") < HEADER_LEN,
              sf.format_string("short record: %d bytes < %d-byte single-object header",
                              sf.length("raw"), sf.lit(HEADER_LEN)))
        .when(~sf.col("_header_ok"),
              sf.concat(sf.lit("bad single-object marker "),
                       sf.lower(sf.hex(sf.substring("raw", 1, 2))), sf.lit(" (expected c301)")))
        .when(~sf.col("_fp_ok"),
              sf.concat(sf.lit("unknown writer schema fingerprint "),
                       sf.lower(sf.hex(sf.substring("raw", 3, 8))),
                       sf.lit(f" (expected {cfg.fingerprint.hex()} = {cfg.schema_name})")))
        .when(sf.col("_canonical").isNull(),
              sf.format_string("undecodable %s body of %d bytes (truncated or corrupt Avro)",
                              sf.lit(cfg.schema_name), sf.length("raw") - HEADER_LEN))
        .when(sf.length("raw") - HEADER_LEN != sf.length("_canonical"),
              sf.format_string("%d trailing bytes after a %s record of %d bytes",
                               sf.length("raw") - HEADER_LEN - sf.length("_canonical"),
                               sf.lit(cfg.schema_name), sf.length("_canonical")))
        .when(_stream_index(cfg).isNull(),
              sf.format_string(f"unknown stream '%s' (spec streams: {','.join(cfg.streams)})",
                              sf.col("rec.stream")))
        .when(expected_stream.isNotNull() & (sf.col("rec.stream") != expected_stream),
              sf.format_string("stream %s read from topic %s of stream %s",
                              sf.col("rec.stream"), sf.col("topic"), expected_stream))
        .when(sf.col("rec.event_time") < 0,
              sf.format_string("negative event_time %d", sf.col("rec.event_time")))
        .when(sf.col("rec.arrival_time") < sf.col("rec.event_time"),
              sf.format_string("arrival_time %d before event_time %d",
                              sf.col("rec.arrival_time"), sf.col("rec.event_time")))
    )
    for name in cfg.finite:
        kind = avro_kind(cfg.field_type(name))
        if kind is not None:
            bad, text = nonfinite_reason(sf.col(f"rec.{name}"), name, kind)
            reason = reason.when(bad, text)
    return reason


def decode(raw: DataFrame, cfg: DecodeConfig, *, valid_only: bool = False) -> DataFrame:
    """Kafka rows → ``topic, partition, offset, key, raw, reason, stream_idx`` + record
    fields + ``kafka_ms`` (the record's Kafka timestamp, epoch ms).

    ``reason`` is null for a valid record, else says why it was rejected (bad marker,
    unknown fingerprint, undecodable/truncated body, trailing bytes, unknown stream, stream/topic
    mismatch, negative event time, arrival before event time, NaN or ±Inf in an attribute of
    ``cfg.finite``).

    ``valid_only``: the valid rows only. Not the same as filtering the result on
    ``reason``: Spark pushes a filter through deterministic projections by inlining
    their aliases, so ``reason IS NULL`` lands on the Kafka rows with ``from_avro`` and
    ``to_avro`` copied into every branch that reads the record (measured: 102 µs per
    row instead of 4). Here the filter reads a nondeterministic column of the projection
    that computes ``reason`` (the task's partition id, always ≥ 0), which the optimizer
    neither pushes a filter through nor prunes while the filter reads it.
    """
    value = sf.col("value")
    size = sf.length(value)
    header_ok = (size >= HEADER_LEN) & (sf.substring(value, 1, 2) == _bin(MAGIC))
    fp_ok = sf.substring(value, 3, 8) == _bin(cfg.fingerprint)
    body = sf.expr(f"substring(value, {HEADER_LEN + 1}, length(value) - {HEADER_LEN})")
    # decoded once, in a projection of its own: referenced by the checks below in the
    # same projection, ``from_avro`` inside a CASE WHEN would run once per reference
    # (Spark does not share a subexpression that only conditional branches contain)
    decoded = raw.select(
        "topic", "partition", "offset", "key",
        sf.coalesce(value, _bin(b"")).alias("raw"),
        sf.when(header_ok & fp_ok, from_avro(body, cfg.schema_json, {"mode": "PERMISSIVE"}))
        .alias("rec"),
        header_ok.alias("_header_ok"),
        fp_ok.alias("_fp_ok"),
        sf.unix_millis(sf.col("timestamp")).alias("_kafka_ms"),
    )
    rec = sf.col("rec")
    df = decoded.select(
        "*",
        # Avro binary encoding is canonical: a body longer than its record re-encoded
        # carries trailing bytes (the Python serde rejects those too)
        sf.when(_complete(rec, cfg), to_avro(rec, cfg.schema_json)).alias("_canonical"),
    )
    reason = _reason(cfg)
    fields = [sf.col(f"rec.{n}").alias(n) for n in cfg.field_names]
    out = df.select(
        "topic", "partition", "offset", "key", "raw",
        reason.alias("reason"),
        _stream_index(cfg).alias("stream_idx"),
        *fields,
        sf.col("_kafka_ms").alias("kafka_ms"),
        *([sf.spark_partition_id().alias("_task")] if valid_only else []),
    )
    if not valid_only:
        return out
    return out.where(sf.col("reason").isNull() & (sf.col("_task") >= 0)).drop("_task")


def envelope(decoded: DataFrame, cfg: DecodeConfig) -> DataFrame:
    """The rows the join stage takes: ``stream_idx`` + record fields + ``kafka_ms`` (the
    record's Kafka timestamp, for the wall budget's lag guard) + ``dl_key, dl_value``
    (non-null only on rejected rows, which carry no valid fields)."""
    return decoded.select("stream_idx", *cfg.field_names, "kafka_ms", "dl_key", "dl_value")
