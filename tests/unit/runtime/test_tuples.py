"""A decoded input record → the tuple the engine joins (the dump line), and the reasons a
record is dead-lettered instead."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from connectors.io.foreign import ForeignSerde
from pipeline.core.errors import SerializationError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.runtime.inputs import StreamPlan, resolve_inputs
from pipeline.runtime.tuples import iso_ms, offset_seq, to_tuple
from pipeline.spec.model import load_spec

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"
SCHEMAS = PROJECT_ROOT / "schemas"
PLAN = resolve_inputs(load_spec(DATA / "spec.toml"), SCHEMAS)
NORTH, SOUTH, EAST = PLAN.streams
N_REC = {"station": "n-1", "ts": 1767000012345, "temp_c": 12.5,
         "pos": {"lat": 1.0, "lon": 2.0}, "humidity": None}


def test_offset_ids_and_kafka_arrival() -> None:
    row = to_tuple(NORTH, N_REC, 2, 41, 1767000013000)
    assert row == {"stream": "north", "seq": 2 * 2**40 + 41, "event_time": 1767000012345,
                   "arrival_time": 1767000013000, "partition": 2, "offset": 41,
                   "temp_c": 12.5, "payload": N_REC}
    assert offset_seq(2, 41) == 2199023255593


def test_id_field_micros_and_attribute_override() -> None:
    rec = {"obs_id": 7, "time_us": 1767000012345999, "temperature": 3.5, "sensor": "B",
           "pos": {"x": 4}}
    row = to_tuple(SOUTH, rec, 1, 5, 1767000013000)
    assert (row["seq"], row["event_time"], row["temp_c"]) == (7, 1767000012345, 3.5)
    assert "temperature" not in row and row["payload"]["temperature"] == 3.5


def test_iso_times() -> None:
    assert iso_ms("1970-01-01T00:00:01.5Z") == 1500
    assert iso_ms("1970-01-01T01:00:00+01:00") == 0
    assert iso_ms("1970-01-01 00:00:02") == 2000  # no zone: UTC
    rec = ForeignSerde("json", EAST.schema).decode(json.dumps(
        {"when": "2026-01-01T00:00:00.123Z", "t": 1, "label": "a", "count": 1}).encode())[1]
    assert to_tuple(EAST, rec, 0, 0, 5)["event_time"] == 1767225600123


def _east(**fields: Any) -> dict[str, Any]:
    base = {"when": "2026-01-01T00:00:00Z", "t": 1.0, "label": "a", "count": 1}
    raw = {k: v for k, v in {**base, **fields}.items() if v is not ...}
    return ForeignSerde("json", EAST.schema).decode(json.dumps(raw).encode())[1]


@pytest.mark.parametrize(
    ("plan", "rec", "reason"),
    [
        (EAST, _east(t=...), "missing value for field 't' (inputs.east.attribute)"),
        (EAST, _east(t="warm"),
         "field 't' (inputs.east.attribute) has a value of the wrong type: \"warm\""),
        (EAST, _east(when="yesterday"),
         "field 'when' (inputs.east.event_time): 'yesterday' is not an ISO-8601 time"),
        (EAST, _east(when=...), "missing value for field 'when' (inputs.east.event_time)"),
        (EAST, _east(count="many"), "field 'count' (output.payload) has a value of the wrong"),
        (EAST, _east(when="1969-12-31T23:59:59Z"), "negative event time -1000"),
        (NORTH, {**N_REC, "temp_c": None}, "missing value for field 'temp_c'"),
    ],
)
def test_bad_values_name_the_field(plan: StreamPlan, rec: dict[str, Any], reason: str) -> None:
    with pytest.raises(SerializationError) as info:
        to_tuple(plan, rec, 0, 0, 10)
    assert reason in str(info.value)


def test_nullable_payload_field_may_be_missing() -> None:
    assert to_tuple(EAST, _east(), 0, 3, 10)["payload"]["note"] is None


def test_arrival_field(tmp_path: Path) -> None:
    for f in DATA.glob("*.avsc"):
        shutil.copy(f, tmp_path / f.name)
    text = (DATA / "spec.toml").read_text().replace(
        'event_time = "time_us"', 'event_time = "time_us"\narrival_time = "obs_id"')
    (tmp_path / "spec.toml").write_text(text)
    south = resolve_inputs(load_spec(tmp_path / "spec.toml"), SCHEMAS).streams[1]
    rec = {"obs_id": 9000, "time_us": 8_000_000, "temperature": 1.0, "sensor": "A",
           "pos": {"x": 1}}
    assert to_tuple(south, rec, 0, 0, None)["arrival_time"] == 9000


def test_own_topic_rows_keep_their_fields(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[join]\nstreams = ["s1", "s2"]\nwindow_ms = 100\npredicate = "band"\n'
                    'attribute = "value"\n[output]\npayload = ["value"]\n')
    s1 = resolve_inputs(load_spec(spec), SCHEMAS, prefix="p").streams[0]
    assert s1.own and s1.topic == "p.in.sensors.s1"
    rec = {"stream": "s1", "seq": 4, "event_time": 10, "arrival_time": 12, "value": 1.5,
           "a1": 0, "x": 0.0, "y": 0.0}
    assert to_tuple(s1, rec, 0, 9, None) == {**rec, "partition": 0, "offset": 9,
                                              "payload": {"value": 1.5}}
    with pytest.raises(SerializationError, match=r"stream s2 read from topic p\.in\.sensors\.s1"):
        to_tuple(s1, {**rec, "stream": "s2"}, 0, 9, None)
