"""Input validation in Spark SQL (header check + from_avro PERMISSIVE): every kind of bad
record gets its reason, valid ones decode to the record and re-encode byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.serde import AvroSerde
from pipeline.core.settings import PROJECT_ROOT
from pipeline.spark.decode import DecodeConfig, decode
from pipeline.spark.sinks import passthrough_rows

pytestmark = pytest.mark.spark


SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
CFG = DecodeConfig("sensor_reading", SERDE.schema_json("sensor_reading"),
                   SERDE.fingerprint("sensor_reading"), ("s1", "s2"), ("p.in.x.s1", "p.in.x.s2"))
STAMP = datetime(2026, 11, 26, 12, 0, 0, 250000, tzinfo=UTC)  # a Kafka record timestamp
GOOD = {"stream": "s1", "seq": 4, "event_time": 10, "arrival_time": 12, "value": 1.5,
        "a1": 3, "x": 0.25, "y": -1.0}


def enc(**changes: Any) -> bytes:
    return SERDE.encode("sensor_reading", {**GOOD, **changes})


CASES: list[tuple[str, bytes | None, str | None]] = [
    ("p.in.x.s1", enc(), None),
    ("p.in.x.s1", enc()[:-3], "undecodable sensor_reading body of"),
    ("p.in.x.s1", SERDE.header("news_item") + enc()[10:], "unknown writer schema fingerprint"),
    ("p.in.x.s1", b"\xc3\x01" + b"\x00" * 8 + enc()[10:], "unknown writer schema fingerprint"),
    ("p.in.x.s1", b"random bytes, not avro", "bad single-object marker 7261"),
    ("p.in.x.s1", b"\xc3\x01\x00", "short record: 3 bytes"),
    ("p.in.x.s1", None, "empty record value"),
    ("p.in.x.s2", enc(), "stream s1 read from topic p.in.x.s2 of stream s2"),
    ("p.in.x.s1", enc(stream="zz"), "unknown stream 'zz'"),
    ("p.in.x.s1", enc() + b"xyz", "3 trailing bytes after a sensor_reading record"),
    ("p.in.x.s1", enc(arrival_time=3), "arrival_time 3 before event_time 10"),
    ("p.in.x.s1", enc(event_time=-5, arrival_time=0), "negative event_time -5"),
]


def test_each_bad_record_gets_its_reason(spark: SparkSession) -> None:
    rows = [(t, 0, i, None, v, STAMP) for i, (t, v, _) in enumerate(CASES)]
    raw = spark.createDataFrame(rows, "topic string, partition int, offset long, "
                                      "key binary, value binary, timestamp timestamp")
    got = {r["offset"]: r for r in decode(raw, CFG).collect()}
    for i, (_, value, reason) in enumerate(CASES):
        row = got[i]
        if reason is None:
            assert row["reason"] is None
            assert row["stream_idx"] == 0
            assert {k: row[k] for k in GOOD} == GOOD
            assert row["kafka_ms"] == int(STAMP.timestamp() * 1000)
        else:
            assert row["reason"] is not None and row["reason"].startswith(reason), row["reason"]
        assert bytes(row["raw"]) == (value or b"")


def test_valid_records_re_encode_to_the_same_bytes(spark: SparkSession) -> None:
    values = [enc(seq=i, value=i * 0.5) for i in range(5)]
    raw = spark.createDataFrame(
        [("p.in.x.s1", 0, i, None, v, STAMP) for i, v in enumerate(values)],
        "topic string, partition int, offset long, key binary, value binary, "
        "timestamp timestamp")
    decoded = decode(raw, CFG).selectExpr("*", "key AS dl_key", "CAST(NULL AS BINARY) dl_value")
    out = passthrough_rows(decoded, CFG.field_names, ("p.results", "p.deadletter"),
                           SERDE.header("sensor_reading"), CFG.schema_json).collect()
    assert sorted(bytes(r["value"]) for r in out) == sorted(values)
    assert {r["topic"] for r in out} == {"p.results"}


def _from_avro_calls(df: Any) -> int:
    """``from_avro`` calls in the optimized plan (one per evaluation site)."""
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return int(plan.count("from_avro("))


def test_valid_only_keeps_the_valid_rows_and_decodes_once(spark: SparkSession) -> None:
    rows = [(t, 0, i, None, v, STAMP) for i, (t, v, _) in enumerate(CASES)]
    raw = spark.createDataFrame(rows, "topic string, partition int, offset long, "
                                      "key binary, value binary, timestamp timestamp")
    valid = decode(raw, CFG, valid_only=True)
    assert [r["offset"] for r in valid.collect()] == [
        i for i, (_, _, reason) in enumerate(CASES) if reason is None]
    assert "_task" not in valid.columns
    assert _from_avro_calls(valid) == 1
    # what valid_only is for: a plain filter on reason is pushed onto the Kafka rows
    # with the decoder inlined into every branch that reads the record
    assert _from_avro_calls(decode(raw, CFG).where("reason IS NULL")) > 1
