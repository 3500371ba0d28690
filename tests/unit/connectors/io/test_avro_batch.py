"""Vectorized flat-record encoder vs. fastavro and the official `avro` package (oracles)."""

from __future__ import annotations

import io
import json
from typing import Any

import avro.io
import avro.schema
import fastavro
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.io.avro_batch import FlatRecordEncoder, zigzag_varints
from connectors.io.serde import AvroSerde
from pipeline.core.errors import FastPathError, SerializationError
from pipeline.core.settings import PROJECT_ROOT

EXAMPLES = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "long": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "int": st.integers(min_value=-(2**31), max_value=2**31 - 1),
    "double": st.floats(width=64),  # NaN and infinities too: compared as bytes
    "float": st.floats(width=32),
    "string": st.text(max_size=10),
    "bytes": st.binary(max_size=10),
    "boolean": st.booleans(),
}
# (fastavro cannot write a ``bytes`` default given as a JSON string, so none is drawn)
DEFAULTS = {"long": 7, "int": -3, "double": 2.5, "float": 0.5, "string": "d", "boolean": True}


def reference_varint(value: int) -> bytes:
    """Avro spec: zig-zag, then 7 bits per byte, low group first, high bit = more follows."""
    z = (value << 1) ^ (value >> 63)
    z &= 2**64 - 1
    out = bytearray()
    while True:
        group = z & 0x7F
        z >>= 7
        if z:
            out.append(group | 0x80)
        else:
            out.append(group)
            return bytes(out)


@st.composite
def flat_schema_and_records(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kinds = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=6))
    with_default = draw(st.lists(st.booleans(), min_size=len(kinds), max_size=len(kinds)))
    fields: list[dict[str, Any]] = []
    for i, (kind, has_default) in enumerate(zip(kinds, with_default, strict=True)):
        field: dict[str, Any] = {"name": f"f{i}", "type": kind}
        if has_default and kind in DEFAULTS:
            field["default"] = DEFAULTS[kind]
        fields.append(field)
    schema = {"type": "record", "name": "flat", "namespace": "harvest", "fields": fields}
    records = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        record = {}
        for field in fields:
            omit = "default" in field and draw(st.booleans())
            if not omit:
                record[field["name"]] = draw(VALUES[field["type"]])
        records.append(record)
    return schema, records


def fastavro_bytes(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema, named_schemas={}), record)
    return buf.getvalue()


@EXAMPLES
@given(values=st.lists(VALUES["long"], min_size=1, max_size=50))
def test_zigzag_varints_match_the_spec(values: list[int]) -> None:
    lengths, groups = zigzag_varints(np.array(values, dtype=np.int64))
    for i, v in enumerate(values):
        expected = reference_varint(v)
        assert int(lengths[i]) == len(expected)
        assert bytes(groups[: len(expected), i]) == expected


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"),
     (2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01")],
)
def test_zigzag_known_values(value: int, encoded: str) -> None:
    lengths, groups = zigzag_varints(np.array([value], dtype=np.int64))
    assert bytes(groups[: int(lengths[0]), 0]).hex() == encoded


@EXAMPLES
@given(case=flat_schema_and_records(), header=st.binary(max_size=10))
def test_batch_bytes_equal_fastavro_per_record(
    case: tuple[dict[str, Any], list[dict[str, Any]]], header: bytes
) -> None:
    schema, records = case
    encoder = FlatRecordEncoder.for_schema(schema)
    assert encoder is not None
    assert encoder.encode(records, header) == [header + fastavro_bytes(schema, r) for r in records]


@EXAMPLES
@given(case=flat_schema_and_records())
def test_official_avro_package_reads_batch_bytes(
    case: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    schema, records = case
    encoder = FlatRecordEncoder.for_schema(schema)
    assert encoder is not None
    reader = avro.io.DatumReader(avro.schema.parse(json.dumps(schema)))
    for record, data in zip(records, encoder.encode(records), strict=True):
        decoded: dict[str, Any] = reader.read(avro.io.BinaryDecoder(io.BytesIO(data)))  # type: ignore[assignment]
        for field in schema["fields"]:
            name = field["name"]
            want = record.get(name, field.get("default"))
            got = decoded[name]
            if field["type"] in ("float", "double"):  # NaN-safe: compare the IEEE bits
                dtype = np.float32 if field["type"] == "float" else np.float64
                assert dtype(got).tobytes() == dtype(want).tobytes()
            else:
                assert got == want


def test_sensor_schema_gets_the_fast_path_and_nested_schemas_do_not() -> None:
    serde = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    assert serde.entry("sensor_reading").batch_encoder is not None
    assert serde.entry("dead_letter").batch_encoder is not None
    for name in ("news_item", "join_result", "operator_metrics"):
        assert serde.entry(name).batch_encoder is None


SENSOR = json.loads((PROJECT_ROOT / "schemas" / "sensor_reading.avsc").read_text())
GOOD = {"stream": "s", "seq": 1, "event_time": 2, "arrival_time": 3, "value": 4.0}


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "seq": 2**63},  # long out of range
        {**GOOD, "seq": 1.5},  # float in a long column
        {**GOOD, "seq": "1"},
        {**GOOD, "value": "x"},
        {**GOOD, "stream": 5},
        {**GOOD, "stream": None},
        {k: v for k, v in GOOD.items() if k != "seq"},  # missing, no default
        "not a record",
    ],
    ids=["long-range", "float-long", "str-long", "str-double", "int-string", "none-string",
         "missing", "not-a-mapping"],
)
def test_unsupported_values_leave_the_fast_path_and_fail_like_fastavro(bad: Any) -> None:
    encoder = FlatRecordEncoder.for_schema(SENSOR)
    assert encoder is not None
    with pytest.raises(FastPathError):
        encoder.encode([GOOD, bad])
    # The fallback behaves exactly like per-record encoding: the same bytes (fastavro
    # truncates 1.5 to 1 for a long) or the same error, naming the record's index.
    serde = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    try:
        expected = serde.encode("sensor_reading", bad)
    except SerializationError:
        with pytest.raises(SerializationError, match="record #1 does not match schema"):
            serde.encode_many("sensor_reading", [GOOD, bad])
    else:
        assert serde.encode_many("sensor_reading", [GOOD, bad])[1] == expected


def test_int_range_is_checked() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "i", "type": "int"}]}
    encoder = FlatRecordEncoder.for_schema(schema)
    assert encoder is not None
    assert encoder.encode([{"i": 2**31 - 1}]) == [fastavro_bytes(schema, {"i": 2**31 - 1})]
    with pytest.raises(FastPathError):
        encoder.encode([{"i": 2**31}])


def test_empty_batch() -> None:
    encoder = FlatRecordEncoder.for_schema(SENSOR)
    assert encoder is not None and encoder.encode([], b"h") == []


def test_very_wide_values_fall_back_to_per_record_encoding() -> None:
    serde = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    letters = [{"reason": "r", "topic": "t", "partition": 0, "offset": i,
                "raw": bytes([i % 256]) * 9_000, "time": 1} for i in range(600)]
    encoder = serde.entry("dead_letter").batch_encoder
    assert encoder is not None
    with pytest.raises(FastPathError, match="too wide"):
        encoder.encode(letters)
    assert serde.encode_many("dead_letter", letters) == [
        serde.encode("dead_letter", r) for r in letters
    ]
