"""``avro-confluent`` inputs in Spark SQL (pipeline.spark.inputs) against the Python rules
of ``harvest dump`` (ConfluentSerde + pipeline.runtime.tuples): v1 and v2 records decode
into the reader (v2's default filled in for v1), bad magic byte / unknown schema id /
undecodable body are rejected by both with the same reason, and a schema id the plan does
not know fails the batch (the job's planned restart)."""

from __future__ import annotations

import dataclasses
import io
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import fastavro
import pytest
from pyspark.sql import SparkSession

from connectors.io.confluent import ConfluentSerde, wire_header
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from pipeline.core.errors import SchemaNotFoundError, SerializationError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import resolve_inputs
from pipeline.runtime.tuples import to_tuple
from pipeline.spark.inputs import NEW_SCHEMA_ID, decode_inputs
from pipeline.spec.model import parse_spec

pytestmark = pytest.mark.spark

V1 = {"type": "record", "name": "Reading", "namespace": "acme",
      "fields": [{"name": "ts", "type": "long"}, {"name": "temp", "type": "double"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "site", "type": "string", "default": "x"}]}
STAMP = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
SPEC = parse_spec({
    "join": {"streams": ["a", "b"], "window_ms": 1000, "predicate": "band",
             "attribute": "temp", "epsilon": 0.5},
    "inputs": {s: {"topic": f"t{s}", "format": "avro-confluent", "event_time": "ts"}
               for s in ("a", "b")},
    "output": {"topic": "out", "payload": ["*"]}})


def _body(schema: dict[str, Any], rec: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas={}), rec)
    return buf.getvalue()


def _setup() -> tuple[SchemaRegistry, Any, int, int, int]:
    reg = SchemaRegistry(RegistryOptions(url=f"mock://{uuid.uuid4().hex}"))
    v1 = reg.register("ta-value", json.dumps(V1))
    v2 = reg.register("ta-value", json.dumps(V2))
    b1 = reg.register("tb-value", json.dumps(V1))  # mock:// ids are per registration
    plan = resolve_inputs(SPEC, PROJECT_ROOT / "schemas", registry=reg)
    a = dataclasses.replace(plan.streams[0], dead_ids=frozenset({999}))
    return reg, dataclasses.replace(plan, streams=(a, plan.streams[1])), v1, v2, b1


def _python(reg: SchemaRegistry, plan: Any, topic: str, value: bytes, offset: int
            ) -> dict[str, Any] | str:
    stream = next(s for s in plan.streams if s.topic == topic)
    try:
        rec = ConfluentSerde(reg, reader=stream.schema, plain=True).decode(value)[1]
        return to_tuple(stream, rec, 0, offset, int(STAMP.timestamp() * 1000))
    except (SerializationError, SchemaNotFoundError) as exc:
        return str(exc)


def _raw(spark: SparkSession, cases: list[tuple[str, bytes]]) -> Any:
    rows = [(t, 0, 100 + i, b"k", v, STAMP) for i, (t, v) in enumerate(cases)]
    return spark.createDataFrame(rows, "topic string, partition int, offset long, "
                                       "key binary, value binary, timestamp timestamp")


def test_spark_and_dump_agree_on_confluent_records(spark: SparkSession) -> None:
    reg, plan, v1, v2, b1 = _setup()
    cases = [
        ("ta", wire_header(v1) + _body(V1, {"ts": 1000, "temp": 1.5})),
        ("ta", wire_header(v2) + _body(V2, {"ts": 2000, "temp": 2.5, "site": "s"})),
        ("tb", wire_header(b1) + _body(V1, {"ts": 3000, "temp": 3.5})),
        ("ta", wire_header(v1) + _body(V1, {"ts": 1000, "temp": 1.5}) + b"\x07"),
        ("ta", b"\x01" + wire_header(v1)[1:] + _body(V1, {"ts": 1, "temp": 1.0})),
        ("ta", b"\x00\x00"),
        ("ta", wire_header(999) + _body(V1, {"ts": 1, "temp": 1.0})),
        ("ta", wire_header(v2) + _body(V2, {"ts": 1, "temp": 1.0, "site": "s"})[:-3]),
    ]
    got = {r["offset"]: r for r in decode_inputs(_raw(spark, cases), plan).collect()}
    accepted = 0
    for i, (topic, value) in enumerate(cases):
        row, want = got[100 + i], _python(reg, plan, topic, value, 100 + i)
        if isinstance(want, str):
            assert row["reason"] is not None, (i, want)
            head = want.split(" (")[0].split(":")[0]
            assert row["reason"].startswith(head), (i, row["reason"], want)
            continue
        accepted += 1
        assert row["reason"] is None, (i, row["reason"])
        assert (row["event_time"], row["temp"]) == (want["event_time"], want["temp"]), i
        schema = fastavro.parse_schema(
            next(f["type"] for f in plan.output_schema["fields"] if f["name"] == want["stream"]),
            named_schemas={})
        payload = fastavro.schemaless_reader(io.BytesIO(bytes(row["payload"])), schema, None)
        assert payload == want["payload"], i
    assert accepted == 4
    assert _python(reg, plan, "ta", cases[0][1], 100)["payload"]["site"] == "x"  # type: ignore[index]


def test_a_schema_id_the_plan_does_not_know_fails_the_batch(spark: SparkSession) -> None:
    _, plan, v1, _, _ = _setup()
    cases = [("ta", wire_header(v1) + _body(V1, {"ts": 1, "temp": 1.0})),
             ("tb", wire_header(4242) + _body(V1, {"ts": 1, "temp": 1.0}))]
    with pytest.raises(Exception, match=NEW_SCHEMA_ID + "4242"):
        decode_inputs(_raw(spark, cases), plan).collect()


def test_results_in_the_confluent_format_decode_with_avro_deserializer(
        spark: SparkSession) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from pipeline.spark.results import result_value

    reg, plan, v1, _, b1 = _setup()
    plan = dataclasses.replace(plan, output_format="avro-confluent")
    result_id = reg.register("out-value", plan.output_schema_json)
    cases = [("ta", wire_header(v1) + _body(V1, {"ts": 1000, "temp": 1.5})),
             ("tb", wire_header(b1) + _body(V1, {"ts": 1100, "temp": 1.7}))]
    decoded = sorted(decode_inputs(_raw(spark, cases), plan).collect(),
                     key=lambda r: r["offset"])
    from pipeline.runtime.frames import member_column

    members = [(i, 1000 + 100 * i, 0, 100 + i) for i in range(2)]  # a, b
    member_ddl = ", ".join(f"{member_column(k, 'seq')} long, {member_column(k, 'time')} long, "
                           f"{member_column(k, 'partition')} int, "
                           f"{member_column(k, 'offset')} long" for k in range(2))
    df = spark.createDataFrame(
        [("r1", 1100, "0", 99, b"".join(bytes(r["payload"]) for r in decoded),
          *[v for m in members for v in m])],
        "id string, result_time long, instance string, emit_time long, payload binary, "
        + member_ddl)
    base = json.dumps(json.loads((PROJECT_ROOT / "schemas" / "join_result.avsc").read_text()))
    value = bytes(df.select(result_value(plan, base, wire_header(result_id)).alias("v"))
                  .collect()[0]["v"])
    rec = AvroDeserializer(reg.client)(value, SerializationContext("out", MessageField.VALUE))
    assert rec["id"] == "r1" and [m["stream"] for m in rec["members"]] == ["a", "b"]
    assert rec["a"] == {"ts": 1000, "temp": 1.5, "site": "x"}
    assert rec["b"] == {"ts": 1100, "temp": 1.7}
