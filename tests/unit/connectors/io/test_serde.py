"""Avro single-object serde vs. the official `avro` package (the oracle) on generated records."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import avro.io
import avro.schema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.io.serde import HEADER_LEN, MAGIC, AvroSerde, canonical_form, crc64_fingerprint
from pipeline.core.errors import SchemaNotFoundError, SerializationError
from pipeline.core.settings import PROJECT_ROOT

SCHEMAS_DIR = PROJECT_ROOT / "schemas"
NAMES = ("sensor_reading", "news_item", "item_set", "join_result", "operator_metrics",
         "dead_letter")
SERDE = AvroSerde.from_dir(SCHEMAS_DIR)
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INT = st.integers(min_value=-(2**31), max_value=2**31 - 1)
DOUBLE = st.floats(allow_nan=False, width=64)
TEXT = st.text(max_size=12)


def from_avro(schema: Any) -> st.SearchStrategy[Any]:
    """A Hypothesis strategy for values of an Avro schema (the types our schemas use)."""
    if isinstance(schema, list):
        return st.one_of(*(from_avro(branch) for branch in schema))
    if isinstance(schema, str):
        primitive: dict[str, st.SearchStrategy[Any]] = {
            "null": st.none(),
            "string": TEXT,
            "long": LONG,
            "int": INT,
            "double": DOUBLE,
            "bytes": st.binary(max_size=40),
            "boolean": st.booleans(),
        }
        return primitive[schema]
    kind = schema["type"]
    if kind == "record":
        return st.fixed_dictionaries({f["name"]: from_avro(f["type"]) for f in schema["fields"]})
    if kind == "array":
        return st.lists(from_avro(schema["items"]), max_size=5)
    if kind == "map":
        return st.dictionaries(TEXT, from_avro(schema["values"]), max_size=5)
    return from_avro(kind)


def schema_dict(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS_DIR / f"{name}.avsc").read_text())


RECORDS = {name: from_avro(schema_dict(name)) for name in NAMES}


def avro_decode_body(name: str, data: bytes) -> Any:
    """Decode our bytes with the official package: strip the header, read the body."""
    schema = avro.schema.parse(json.dumps(schema_dict(name)))
    return avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(data[HEADER_LEN:])))


def avro_encode_body(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    avro.io.DatumWriter(avro.schema.parse(json.dumps(schema))).write(
        record, avro.io.BinaryEncoder(buf)
    )
    return buf.getvalue()


# ---- fingerprints --------------------------------------------------------------------


def test_all_schemas_load_in_namespace_harvest() -> None:
    assert SERDE.names == tuple(sorted(NAMES))
    for name in NAMES:
        assert json.loads(SERDE.schema_json(name))["namespace"] == "harvest"


@pytest.mark.parametrize("name", NAMES)
def test_fingerprint_equals_official_avro_package(name: str) -> None:
    official = avro.schema.parse((SCHEMAS_DIR / f"{name}.avsc").read_text())
    assert SERDE.fingerprint(name) == official.fingerprint("CRC-64-AVRO")
    assert SERDE.header(name) == MAGIC + official.fingerprint("CRC-64-AVRO")
    assert SERDE.entry(name).canonical == official.canonical_form


@pytest.mark.parametrize(
    ("schema", "signed_long"),
    [
        # Values of the Java implementation's SchemaNormalization test data (as signed longs).
        ('"null"', 7195948357588979594),
        ('"int"', 8247732601305521295),
    ],
)
def test_fingerprint_known_vectors(schema: str, signed_long: int) -> None:
    fp = crc64_fingerprint(canonical_form(json.loads(schema)))
    assert int.from_bytes(fp, "little", signed=True) == signed_long


# ---- round trips ---------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@EXAMPLES
@given(data=st.data())
def test_round_trip_and_official_decoder_agree(name: str, data: st.DataObject) -> None:
    record = data.draw(RECORDS[name])
    encoded = SERDE.encode(name, record)
    assert encoded[:HEADER_LEN] == MAGIC + SERDE.fingerprint(name)
    assert SERDE.decode(encoded) == (name, record)
    assert avro_decode_body(name, encoded) == record


@pytest.mark.parametrize("name", NAMES)
@EXAMPLES
@given(data=st.data())
def test_decodes_bytes_written_by_official_encoder(name: str, data: st.DataObject) -> None:
    record = data.draw(RECORDS[name])
    body = avro_encode_body(schema_dict(name), record)
    assert SERDE.decode(SERDE.header(name) + body) == (name, record)
    assert SERDE.encode(name, record)[HEADER_LEN:] == body


@EXAMPLES
@given(records=st.lists(RECORDS["sensor_reading"], max_size=20))
def test_encode_many_equals_encode(records: list[dict[str, Any]]) -> None:
    assert SERDE.encode_many("sensor_reading", records) == [
        SERDE.encode("sensor_reading", r) for r in records
    ]


def test_defaults_fill_omitted_optional_fields() -> None:
    record = {"stream": "s1", "seq": 3, "event_time": 10, "arrival_time": 12, "value": 1.5}
    _, decoded = SERDE.decode(SERDE.encode("sensor_reading", record))
    assert decoded == {**record, "a1": 0, "x": 0.0, "y": 0.0}


# ---- schema evolution ----------------------------------------------------------------


def _old_sensor_schema() -> dict[str, Any]:
    schema = schema_dict("sensor_reading")
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in ("a1", "x", "y")]
    return schema


@EXAMPLES
@given(record=RECORDS["sensor_reading"])
def test_old_writer_reads_under_current_schema_with_defaults(record: dict[str, Any]) -> None:
    serde = AvroSerde.from_dir(SCHEMAS_DIR)
    old_schema = _old_sensor_schema()
    old = serde.register(old_schema)
    assert old.fingerprint != serde.fingerprint("sensor_reading")
    old_record = {k: v for k, v in record.items() if k not in ("a1", "x", "y")}
    data = old.header + avro_encode_body(old_schema, old_record)
    assert serde.decode(data) == ("sensor_reading", {**old_record, "a1": 0, "x": 0.0, "y": 0.0})


def test_current_writer_reads_under_explicit_old_reader() -> None:
    serde = AvroSerde.from_dir(SCHEMAS_DIR)
    old = serde.register(_old_sensor_schema())
    record = {"stream": "s2", "seq": 1, "event_time": 5, "arrival_time": 9, "value": -2.0,
              "a1": 7, "x": 1.0, "y": 2.0}
    name, decoded = serde.decode(serde.encode("sensor_reading", record), reader=old)
    assert name == "sensor_reading"
    assert decoded == {"stream": "s2", "seq": 1, "event_time": 5, "arrival_time": 9, "value": -2.0}


def test_register_current_switches_reader_and_keeps_old_writer() -> None:
    serde = AvroSerde.from_dir(SCHEMAS_DIR)
    before = serde.fingerprint("sensor_reading")
    old = serde.register(_old_sensor_schema(), current=True)
    assert serde.fingerprint("sensor_reading") == old.fingerprint != before
    record = {"stream": "s", "seq": 1, "event_time": 1, "arrival_time": 1, "value": 0.0,
              "a1": 4, "x": 0.0, "y": 0.0}
    data = SERDE.encode("sensor_reading", record)  # written with the newer schema
    assert serde.decode(data)[1] == {k: record[k] for k in ("stream", "seq", "event_time",
                                                            "arrival_time", "value")}


def test_incompatible_reader_is_a_serialization_error() -> None:
    record = {"stream": "s", "seq": 1, "event_time": 1, "arrival_time": 1, "value": 0.0}
    data = SERDE.encode("sensor_reading", record)
    with pytest.raises(SerializationError, match=r"cannot decode 'sensor_reading'.*'news_item'"):
        SERDE.decode(data, reader="news_item")


# ---- errors --------------------------------------------------------------------------

GOOD = SERDE.encode(
    "sensor_reading",
    {"stream": "s1", "seq": 1, "event_time": 2, "arrival_time": 3, "value": 4.0},
)


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"", SerializationError, "0 bytes is shorter than the 10-byte"),
        (b"\xc3\x01\x00", SerializationError, "3 bytes is shorter.*c30100"),
        (b"\x00\x01" + GOOD[2:], SerializationError, "bad single-object marker 0001"),
        (b"{\"json\": 1}", SerializationError, "bad single-object marker 7b22"),
        (MAGIC + bytes(range(8)) + GOOD[10:], SchemaNotFoundError, "0001020304050607"),
        (GOOD[:-3], SerializationError, "truncated 'sensor_reading' record"),
        (GOOD[:HEADER_LEN], SerializationError, "truncated"),
        (GOOD + b"\x00\x00", SerializationError, "2 trailing bytes"),
    ],
    ids=["empty", "short", "bad-magic", "json", "unknown-fp", "truncated", "no-body", "trailing"],
)
def test_bad_bytes_raise_clear_errors(data: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        SERDE.decode(data)


@pytest.mark.parametrize(
    ("name", "record", "error", "message"),
    [
        ("nope", {}, SchemaNotFoundError, "unknown schema name 'nope'"),
        ("sensor_reading", {"stream": "s"}, SerializationError, "does not match schema"),
        ("news_item", {"stream": "s", "seq": "x", "event_time": 1, "arrival_time": 1,
                       "story": 1, "agency": "a", "keywords": {}},
         SerializationError, "does not match schema 'news_item'"),
    ],
)
def test_encode_rejects_bad_records(
    name: str, record: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        SERDE.encode(name, record)


def test_encode_many_names_the_bad_index() -> None:
    good = {"stream": "s", "seq": 1, "event_time": 1, "arrival_time": 1, "value": 0.0}
    with pytest.raises(SerializationError, match="record #1 does not match"):
        SERDE.encode_many("sensor_reading", [good, {"stream": 1}])


def test_from_dir_without_schemas(tmp_path: Path) -> None:
    with pytest.raises(SchemaNotFoundError, match=r"no \*\.avsc schema files"):
        AvroSerde.from_dir(tmp_path)


def test_from_dir_with_broken_file(tmp_path: Path) -> None:
    (tmp_path / "broken.avsc").write_text("{not json")
    with pytest.raises(SerializationError, match=r"broken\.avsc"):
        AvroSerde.from_dir(tmp_path)


def test_invalid_schema_is_rejected() -> None:
    with pytest.raises(SerializationError, match="invalid Avro schema"):
        AvroSerde().register({"type": "record", "name": "bad", "fields": [{"name": "f"}]})
