"""Kafka input → envelope rows: single-object header check + spark-avro ``from_avro``.

DESIGN §7 wire format: ``C3 01`` + 8-byte CRC-64-AVRO fingerprint + Avro body. The header
is checked in Spark SQL (binary ``substring`` compared with the expected bytes) and only
the body is handed to ``from_avro`` in PERMISSIVE mode, so an undecodable record becomes
a row with a ``reason`` instead of a failed query. Rows with a reason go to the
dead-letter topic (DESIGN §8 "nothing is lost"); the others are the envelope stream
(``stream_idx, stream, seq, event_time, arrival_time`` + the workload's attributes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

HEADER_LEN = 10
MAGIC = b"\xc3\x01"
ENVELOPE_KEYS = ("stream", "seq", "event_time", "arrival_time")


@dataclass(frozen=True)
class DecodeConfig:
    """What a valid input record looks like: its schema, fingerprint and stream topics."""

    schema_name: str
    schema_json: str
    fingerprint: bytes
    streams: tuple[str, ...]
    topics: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.fingerprint) != 8:
            raise ValueError(f"fingerprint: expected 8 bytes, got {self.fingerprint.hex()}")
        if len(self.streams) != len(self.topics):
            raise ValueError(f"topics: {len(self.topics)} topics for {len(self.streams)} streams")

    @property
    def field_names(self) -> tuple[str, ...]:
        """The record's fields in schema order."""
        fields = json.loads(self.schema_json)["fields"]
        return tuple(str(f["name"]) for f in fields)

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
        )


def kafka_source(
    spark: SparkSession,
    bootstrap: str,
    topics: tuple[str, ...],
    max_offsets_per_trigger: int | None,
    client_options: Mapping[str, str],
) -> DataFrame:
    """A streaming read of ``topics`` from the earliest offset (spark-sql-kafka)."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
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
    return F.lit(bytearray(data))


def _topic_stream(cfg: DecodeConfig) -> Column:
    """The stream name a record's topic belongs to (null for an unexpected topic)."""
    pairs: list[Column] = []
    for topic, stream in zip(cfg.topics, cfg.streams, strict=True):
        pairs += [F.lit(topic), F.lit(stream)]
    return F.create_map(*pairs)[F.col("topic")]


def _stream_index(cfg: DecodeConfig) -> Column:
    pairs: list[Column] = []
    for i, stream in enumerate(cfg.streams):
        pairs += [F.lit(stream), F.lit(i)]
    return F.create_map(*pairs)[F.col("rec.stream")]


def decode(raw: DataFrame, cfg: DecodeConfig) -> DataFrame:
    """Kafka rows → ``topic, partition, offset, key, raw, reason, stream_idx`` + record fields.

    ``reason`` is null for a valid record, else says why it was rejected (bad marker,
    unknown fingerprint, undecodable/truncated body, unknown stream, stream/topic
    mismatch, negative event time, arrival before event time).
    """
    value = F.col("value")
    size = F.length(value)
    header_ok = (size >= HEADER_LEN) & (F.substring(value, 1, 2) == _bin(MAGIC))
    fp_ok = F.substring(value, 3, 8) == _bin(cfg.fingerprint)
    body = F.expr(f"substring(value, {HEADER_LEN + 1}, length(value) - {HEADER_LEN})")
    rec = F.when(header_ok & fp_ok, from_avro(body, cfg.schema_json, {"mode": "PERMISSIVE"}))
    df = raw.select(
        "topic", "partition", "offset", "key",
        F.coalesce(value, _bin(b"")).alias("raw"),
        rec.alias("rec"),
        header_ok.alias("_header_ok"),
        fp_ok.alias("_fp_ok"),
    )
    expected_stream = _topic_stream(cfg)
    reason = (
        F.when(F.col("raw") == _bin(b""), F.lit("empty record value"))
        .when(F.length("raw") < HEADER_LEN,
              F.format_string("short record: %d bytes < %d-byte single-object header",
                              F.length("raw"), F.lit(HEADER_LEN)))
        .when(~F.col("_header_ok"),
              F.concat(F.lit("bad single-object marker "),
                       F.lower(F.hex(F.substring("raw", 1, 2))), F.lit(" (expected c301)")))
        .when(~F.col("_fp_ok"),
              F.concat(F.lit("unknown writer schema fingerprint "),
                       F.lower(F.hex(F.substring("raw", 3, 8))),
                       F.lit(f" (expected {cfg.fingerprint.hex()} = {cfg.schema_name})")))
        .when(F.col("rec").isNull() | F.col("rec.stream").isNull(),
              F.format_string("undecodable %s body of %d bytes (truncated or corrupt Avro)",
                              F.lit(cfg.schema_name), F.length("raw") - HEADER_LEN))
        .when(_stream_index(cfg).isNull(),
              F.format_string(f"unknown stream '%s' (spec streams: {','.join(cfg.streams)})",
                              F.col("rec.stream")))
        .when(expected_stream.isNotNull() & (F.col("rec.stream") != expected_stream),
              F.format_string("stream %s read from topic %s of stream %s",
                              F.col("rec.stream"), F.col("topic"), expected_stream))
        .when(F.col("rec.seq").isNull() | F.col("rec.event_time").isNull()
              | F.col("rec.arrival_time").isNull(),
              F.lit("missing seq, event_time or arrival_time"))
        .when(F.col("rec.event_time") < 0,
              F.format_string("negative event_time %d", F.col("rec.event_time")))
        .when(F.col("rec.arrival_time") < F.col("rec.event_time"),
              F.format_string("arrival_time %d before event_time %d",
                              F.col("rec.arrival_time"), F.col("rec.event_time")))
    )
    fields = [F.col(f"rec.{n}").alias(n) for n in cfg.field_names]
    return df.select(
        "topic", "partition", "offset", "key", "raw",
        reason.alias("reason"),
        _stream_index(cfg).alias("stream_idx"),
        *fields,
    )


def valid_records(decoded: DataFrame, cfg: DecodeConfig) -> DataFrame:
    """The envelope stream: decoded rows without a reason."""
    cols = ["stream_idx", *cfg.field_names]
    return decoded.where(F.col("reason").isNull()).select(*cols)


def rejected_records(decoded: DataFrame) -> DataFrame:
    """The rows for the dead-letter topic (``reason, topic, partition, offset, raw``)."""
    return decoded.where(F.col("reason").isNotNull()).select(
        "reason", "topic", "partition", "offset", "key", "raw"
    )
