"""The user's own formats in Spark SQL (pipeline.spark.inputs) against the Python rules
of `harvest dump` (pipeline.runtime.tuples): every record is accepted by both or
rejected by both with a reason naming the field, and an accepted one becomes the same
tuple (seq, times, attribute, Kafka coordinates, payload bytes)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import fastavro
import pytest
from pyspark.sql import SparkSession

from connectors.io.avsc import fingerprint, strip_logical
from connectors.io.foreign import ForeignSerde
from connectors.io.serde import MAGIC
from pipeline.core.errors import SerializationError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import resolve_inputs
from pipeline.runtime.tuples import to_tuple
from pipeline.spark.inputs import decode_inputs, payload_schemas
from pipeline.spec.model import load_spec

pytestmark = pytest.mark.spark

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"
PLAN = resolve_inputs(load_spec(DATA / "spec.toml"), PROJECT_ROOT / "schemas")
NORTH, SOUTH, EAST = PLAN.streams
STAMP = datetime(2026, 11, 26, 12, 0, 0, 250000, tzinfo=UTC)


def _body(schema: dict[str, Any], rec: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas={}), rec)
    return buf.getvalue()


def north(**over: Any) -> bytes:
    rec = {"station": "n-1", "ts": 1767000012345, "temp_c": 12.5,
           "pos": {"lat": 1.0, "lon": 2.0}, "humidity": 0.25, **over}
    return MAGIC + fingerprint(NORTH.schema) + _body(NORTH.schema, rec)


def south(**over: Any) -> bytes:
    rec = {"obs_id": 7, "time_us": 1767000012345999, "temperature": 3.5, "sensor": "B",
           "pos": {"x": 4}, **over}
    return _body(SOUTH.schema, rec)


def east(**over: Any) -> bytes:
    rec = {"when": "2026-01-01T00:00:00.123Z", "t": 1, "label": "a", "count": 2, **over}
    return json.dumps({k: v for k, v in rec.items() if v is not ...}).encode()


CASES: list[tuple[str, bytes]] = [
    ("own.north", north()),
    ("own.north", north(humidity=None)),
    ("own.north", north()[:-4]),
    ("own.north", north() + b"\x00"),
    ("own.north", b"\xc3\x01" + b"\x00" * 8 + north()[10:]),
    ("own.north", b"plain text, not avro at all"),
    ("own.north", b"\xc3\x01\x02"),
    ("own.north", b""),
    ("own.south", south()),
    ("own.south", south(time_us=1767000012345000)),
    ("own.south", south()[:5]),
    ("own.south", south() + b"\x02\x04"),
    ("own.east", east()),
    ("own.east", east(when="2026-01-01 00:00:01", note="hi")),
    ("own.east", east(t="warm")),
    ("own.east", east(t=...)),
    ("own.east", east(t=None)),
    ("own.east", east(when="yesterday")),
    ("own.east", east(when=...)),
    ("own.east", east(count="many")),
    ("own.east", east(count=1.5)),
    ("own.east", east(when="1969-12-31T23:59:59Z")),
    ("own.east", b"[1, 2, 3]"),
    ("own.east", b"{not json"),
]


def _python(topic: str, value: bytes, partition: int, offset: int) -> dict[str, Any] | str:
    plan = next(s for s in PLAN.streams if s.topic == topic)
    try:
        rec = ForeignSerde(plan.format, plan.schema).decode(value)[1]
        return to_tuple(plan, rec, partition, offset, int(STAMP.timestamp() * 1000))
    except SerializationError as exc:
        return str(exc)


def _payload(stream: str, data: bytes) -> dict[str, Any]:
    schema = fastavro.parse_schema(strip_logical(payload_schemas(PLAN)[stream]),
                                   named_schemas={})
    buf = io.BytesIO(data)
    rec = fastavro.schemaless_reader(buf, schema, None)
    assert buf.tell() == len(data)
    assert isinstance(rec, dict)
    return rec


def test_spark_and_dump_agree_on_every_record(spark: SparkSession) -> None:
    rows = [(t, i % 3, 100 + i, b"k", v, STAMP) for i, (t, v) in enumerate(CASES)]
    raw = spark.createDataFrame(rows, "topic string, partition int, offset long, "
                                      "key binary, value binary, timestamp timestamp")
    got = {r["offset"]: r for r in decode_inputs(raw, PLAN).collect()}
    accepted = 0
    for i, (topic, value) in enumerate(CASES):
        row, want = got[100 + i], _python(topic, value, i % 3, 100 + i)
        assert bytes(row["raw"]) == value
        if isinstance(want, str):
            assert row["reason"] is not None, (i, want)
            head = want.split(":")[0] if want.startswith("not a JSON") else want[:40]
            assert row["reason"].startswith(head), (i, row["reason"], want)
            continue
        accepted += 1
        assert row["reason"] is None, (i, row["reason"])
        env = {k: row[k] for k in ("stream", "seq", "event_time", "arrival_time",
                                   "partition", "offset", "temp_c")}
        assert env == {k: want[k] for k in env}, i
        assert _payload(want["stream"], bytes(row["payload"])) == want["payload"], i
    assert accepted == 6


def _result_rows(spark: SparkSession, plan: Any, payloads: list[bytes | None]) -> Any:
    """Processor-like result rows: one result over the three members' payload bytes."""
    from pipeline.runtime.frames import member_column
    from pipeline.spark.results import result_value

    members = [(i, 10 + i, i, 40 + i) for i in range(3)]  # north, south, east
    member_ddl = ", ".join(f"{member_column(k, 'seq')} long, {member_column(k, 'time')} long, "
                           f"{member_column(k, 'partition')} int, "
                           f"{member_column(k, 'offset')} long" for k in range(3))
    sep = b"," if plan.output_format == "json" else b""
    payload = sep.join(p for p in payloads if p is not None) if all(payloads) else None
    df = spark.createDataFrame(
        [("r1", 12, "0", 99, payload, *[v for m in members for v in m])],
        "id string, result_time long, instance string, emit_time long, payload binary, "
        + member_ddl)
    base = json.dumps(json.loads((PROJECT_ROOT / "schemas" / "join_result.avsc").read_text()))
    return df.select(result_value(plan, base).alias("value")).collect()[0]["value"]


def test_results_with_payload_as_avro_and_json(spark: SparkSession, tmp_path: Any) -> None:
    import shutil

    for f in DATA.glob("*.avsc"):
        shutil.copy(f, tmp_path / f.name)
    text = (DATA / "spec.toml").read_text()
    (tmp_path / "spec.toml").write_text(text.replace('payload = ["*"]',
                                                     'payload = ["*"]\nformat = "json"'))
    json_plan = resolve_inputs(load_spec(tmp_path / "spec.toml"), PROJECT_ROOT / "schemas")
    values = [("own.north", north()), ("own.south", south()), ("own.east", east())]
    rows = [(t, 0, i, b"k", v, STAMP) for i, (t, v) in enumerate(values)]
    raw = spark.createDataFrame(rows, "topic string, partition int, offset long, "
                                      "key binary, value binary, timestamp timestamp")
    want = [_python(t, v, 0, i) for i, (t, v) in enumerate(values)]
    for plan in (PLAN, json_plan):
        got = sorted(decode_inputs(raw, plan).collect(), key=lambda r: r["offset"])
        value = bytes(_result_rows(spark, plan, [bytes(r["payload"]) for r in got]))
        if plan.output_format == "json":
            rec = json.loads(value.decode("utf-8"))
        else:
            schema = fastavro.parse_schema(strip_logical(plan.output_schema),
                                           named_schemas={})
            assert value[:10] == MAGIC + fingerprint(plan.output_schema)
            rec = fastavro.schemaless_reader(io.BytesIO(value[10:]), schema, None)
        assert isinstance(rec, dict)
        assert list(rec)[:5] == ["id", "result_time", "members", "instance", "emit_time"]
        assert rec["members"][2] == {"stream": "east", "seq": 2, "event_time": 12,
                                     "partition": 2, "offset": 42}
        for w in want:
            assert isinstance(w, dict)
            assert rec[w["stream"]] == w["payload"], (plan.output_format, w["stream"])
