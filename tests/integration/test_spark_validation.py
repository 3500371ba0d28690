"""Validation where records are decoded (Spark SQL, :mod:`pipeline.spark.decode`): NaN and
±Inf in an attribute the predicate reads get a reason naming the rule; a Hypothesis
property over whole batches of good and hostile records (each example decoded as one
DataFrame) — every record gets exactly the rule it breaks, the good ones decode to their
fields."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from connectors.io.serde import AvroSerde
from pipeline.core.settings import PROJECT_ROOT
from pipeline.spark.decode import DecodeConfig, decode

pytestmark = pytest.mark.spark

SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
TOPICS = ("p.in.x.s1", "p.in.x.s2")
CFG = DecodeConfig("sensor_reading", SERDE.schema_json("sensor_reading"),
                   SERDE.fingerprint("sensor_reading"), ("s1", "s2"), TOPICS,
                   finite=("value",))
STAMP = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
SCHEMA = ("topic string, partition int, offset long, key binary, value binary, "
          "timestamp timestamp")


def _record(seq: int, stream: str = "s1", **changes: Any) -> dict[str, Any]:
    rec = {"stream": stream, "seq": seq, "event_time": 100 + seq, "arrival_time": 150 + seq,
           "value": 0.5 + seq, "a1": seq % 3, "x": 1.0, "y": 2.0}
    rec.update(changes)
    return rec


def _decode(spark: SparkSession, rows: list[tuple[str, bytes]]) -> dict[int, Any]:
    raw = spark.createDataFrame([(t, 0, i, None, v, STAMP) for i, (t, v) in enumerate(rows)],
                                SCHEMA)
    return {r["offset"]: r for r in decode(raw, CFG).collect()}


def test_nan_and_inf_in_what_the_predicate_reads(spark: SparkSession) -> None:
    cases = [
        (_record(1, value=math.nan), "non-finite value NaN in attribute 'value'"),
        (_record(2, value=math.inf), "non-finite value Infinity in attribute 'value'"),
        (_record(3, value=-math.inf), "non-finite value -Infinity in attribute 'value'"),
        (_record(4, x=math.nan, y=math.inf), None),  # the band predicate reads only value
        (_record(5), None),
    ]
    got = _decode(spark, [("p.in.x.s1", SERDE.encode("sensor_reading", r)) for r, _ in cases])
    for i, (_, reason) in enumerate(cases):
        if reason is None:
            assert got[i]["reason"] is None
        else:
            assert got[i]["reason"].startswith(reason), got[i]["reason"]
            assert got[i]["reason"].endswith("which the join predicate reads")


# ---------------------------------------------------------------------------- property
KINDS = ("good", "nan", "inf", "truncated", "trailing", "marker", "fingerprint",
         "arrival_before_event", "negative_event", "wrong_topic", "unknown_stream", "empty")
RULE = {
    "good": None, "nan": "non-finite value NaN", "inf": "non-finite value",
    "truncated": "undecodable sensor_reading body", "trailing": "",  # see below
    "marker": "bad single-object marker", "fingerprint": "unknown writer schema fingerprint",
    "arrival_before_event": "arrival_time", "negative_event": "negative event_time",
    "wrong_topic": "stream s1 read from topic p.in.x.s2", "unknown_stream": "unknown stream",
    "empty": "empty record value",
}


def _hostile(kind: str, seq: int, cut: int, value: float) -> tuple[str, bytes]:
    rec = _record(seq, value=value)
    topic = "p.in.x.s1"
    if kind == "nan":
        rec["value"] = math.nan
    elif kind == "inf":
        rec["value"] = -math.inf if cut % 2 else math.inf
    elif kind == "arrival_before_event":
        rec["arrival_time"] = rec["event_time"] - 1 - cut
    elif kind == "negative_event":
        rec["event_time"], rec["arrival_time"] = -1 - cut, 0
    elif kind == "wrong_topic":
        topic = "p.in.x.s2"
    elif kind == "unknown_stream":
        rec["stream"] = "zz"
    data = SERDE.encode("sensor_reading", rec)
    if kind == "truncated":
        data = data[: 10 + cut % (len(data) - 10)]
    elif kind == "trailing":
        data += bytes([1 + cut % 250]) * (1 + cut % 5)
    elif kind == "marker":
        data = b"\x00\x01" + data[2:]
    elif kind == "fingerprint":
        data = SERDE.header("news_item") + data[10:]
    elif kind == "empty":
        data = b""
    return topic, data


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.data_too_large])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10_000),
                          st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=40))
def test_every_record_gets_the_rule_it_breaks(spark: SparkSession,
                                               batch: list[tuple[str, int, float]]) -> None:
    rows = [_hostile(kind, i, cut, value) for i, (kind, cut, value) in enumerate(batch)]
    got = _decode(spark, rows)
    assert len(got) == len(batch)
    for i, (kind, _, value) in enumerate(batch):
        reason = got[i]["reason"]
        if kind == "good":
            assert reason is None, reason
            assert got[i]["seq"] == i and got[i]["value"] == value
            continue
        assert reason is not None, (kind, rows[i])
        if kind == "trailing":
            assert "trailing bytes" in reason or reason.startswith("undecodable"), reason
        else:
            assert reason.startswith(RULE[kind]), (kind, reason)
        assert bytes(got[i]["raw"]) == rows[i][1]  # the dead letter keeps the bytes
