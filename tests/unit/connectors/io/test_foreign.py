"""Decoders of the user's own topics: avro (single-object), avro-raw, json."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from connectors.io.avsc import fingerprint
from connectors.io.foreign import ForeignSerde, JsonResultSerde, WrongType, coerce
from connectors.io.serde import MAGIC
from pipeline.core.errors import SerializationError
from pipeline.core.settings import PROJECT_ROOT

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"
NORTH = json.loads((DATA / "north.avsc").read_text())
SOUTH = json.loads((DATA / "south.avsc").read_text())
EAST = json.loads((DATA / "east.avsc").read_text())
N_REC = {"station": "n-1", "ts": 1767000012345, "temp_c": 12.5,
         "pos": {"lat": 1.0, "lon": 2.0}, "humidity": None}


def _body(schema: dict[str, Any], rec: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas={}), rec)
    return buf.getvalue()


def test_single_object_avro_keeps_timestamps_as_longs() -> None:
    serde = ForeignSerde("avro", NORTH)
    data = MAGIC + fingerprint(NORTH) + _body(NORTH, N_REC)
    name, rec = serde.decode(data)
    assert name == "weather.north.Reading"
    assert rec == N_REC  # ts stays the long written, not a datetime


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda d: b"", "empty record value"),
        (lambda d: d[:6], "short record: 6 bytes"),
        (lambda d: b"\x00\x01" + d[2:], "bad single-object marker 0001"),
        (lambda d: d[:2] + b"\x00" * 8 + d[10:], "unknown writer schema fingerprint 0000"),
        (lambda d: d[:-5], "undecodable avro body"),
        (lambda d: d + b"\x00\x00", "2 trailing bytes"),
    ],
)
def test_bad_single_object_records(mangle: Any, reason: str) -> None:
    data = MAGIC + fingerprint(NORTH) + _body(NORTH, N_REC)
    with pytest.raises(SerializationError, match=reason):
        ForeignSerde("avro", NORTH).decode(mangle(data))


def test_raw_avro() -> None:
    rec = {"obs_id": 7, "time_us": 1767000012345678, "temperature": 3.5, "sensor": "B",
           "pos": {"x": 4}}
    serde = ForeignSerde("avro-raw", SOUTH)
    assert serde.decode(_body(SOUTH, rec))[1] == rec
    with pytest.raises(SerializationError, match="undecodable avro-raw body"):
        serde.decode(_body(SOUTH, rec)[:3])


def test_json_types_like_spark_from_json() -> None:
    serde = ForeignSerde("json", EAST)
    good = {"when": "2026-01-01T00:00:00Z", "t": 3, "label": "x", "count": 2}
    rec = serde.decode(json.dumps(good).encode())[1]
    assert rec == {**good, "t": 3.0, "note": None}
    bad = serde.decode(json.dumps({**good, "t": "warm", "count": 1.5}).encode())[1]
    assert isinstance(bad["t"], WrongType) and isinstance(bad["count"], WrongType)
    assert "count" in serde.decode(b'{"when": "x"}')[1]
    for raw in (b"not json", b"[1, 2]", b"\xff\xfe"):
        with pytest.raises(SerializationError, match="not a JSON object"):
            serde.decode(raw)


def test_coerce_nested_and_numbers() -> None:
    rec_t = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"},
                                                        {"name": "b", "type": ["null", "long"]}]}
    assert coerce(rec_t, {"a": 1}) == {"a": 1, "b": None}
    assert isinstance(coerce(rec_t, {"b": 1}), WrongType)  # non-nullable a missing
    assert isinstance(coerce("int", 2**40), WrongType)
    assert coerce("long", 2**40) == 2**40
    assert isinstance(coerce("long", True), WrongType)
    assert coerce("float", 0.1) == pytest.approx(0.1) and coerce("float", 0.1) != 0.1
    assert coerce({"type": "map", "values": "double"}, {"k": 1}) == {"k": 1.0}
    assert coerce("string", 5) == "5"
    assert coerce("bytes", "AAE=") == b"\x00\x01"


def test_json_results() -> None:
    name, rec = JsonResultSerde().decode(b'{"id": "a", "result_time": 1}')
    assert name == "join_result" and rec["id"] == "a"
    with pytest.raises(SerializationError):
        JsonResultSerde().decode(b"nope")
