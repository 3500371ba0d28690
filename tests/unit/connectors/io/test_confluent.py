"""The Confluent wire format against confluent-kafka's in-process ``mock://`` registry:
header parsing, id → writer schema, projection into a reader schema, every dead-letter
reason, and byte-for-byte agreement with confluent-kafka's own AvroSerializer."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka.schema_registry import topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connectors.io.confluent import (
    ConfluentSerde,
    parse_header,
    wire_header,
)
from connectors.io.registry_client import RegistryOptions, SchemaRegistry, value_subject
from connectors.io.serde import AvroSerde
from pipeline.core.errors import SchemaNotFoundError, SerializationError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.testing.orders import V1, V2


@pytest.fixture
def registry() -> SchemaRegistry:
    return SchemaRegistry(RegistryOptions(url=f"mock://{uuid.uuid4().hex}"))


def _serializer(registry: SchemaRegistry, schema: dict[str, Any]) -> AvroSerializer:
    return AvroSerializer(registry.client, json.dumps(schema),
                          conf={"subject.name.strategy": topic_subject_name_strategy})


def _ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_header_round_trip_and_bad_magic() -> None:
    assert parse_header(wire_header(123456) + b"x") == 123456
    assert wire_header(1) == b"\x00\x00\x00\x00\x01"
    with pytest.raises(SerializationError, match=r"bad magic byte 0xc3"):
        parse_header(b"\xc3\x01" + bytes(12))
    with pytest.raises(SerializationError, match=r"bad magic byte: short record of 3 bytes"):
        parse_header(b"\x00\x00\x01")
    with pytest.raises(SerializationError, match=r"bad magic byte: short record of 0 bytes"):
        parse_header(b"")
    with pytest.raises(SerializationError, match="outside"):
        wire_header(-1)


def test_confluent_serializer_bytes_decode(registry: SchemaRegistry) -> None:
    data = _serializer(registry, V1)({"id": 7, "price": 2.5, "note": "hi"}, _ctx())
    serde = ConfluentSerde(registry)
    assert serde.decode(data) == ("Order", {"id": 7, "price": 2.5, "note": "hi"})
    assert serde.writer_of(data).canonical == serde.writer_of(data).canonical  # cached


def test_every_version_projects_into_the_reader(registry: SchemaRegistry) -> None:
    """v1 records get v2's default; v2 records lose nothing: one shape for all."""
    old = _serializer(registry, V1)({"id": 1, "price": 1.0, "note": "a"}, _ctx())
    new = _serializer(registry, V2)({"id": 2, "price": 2.0, "region": "us"}, _ctx())
    assert parse_header(old) != parse_header(new)
    serde = ConfluentSerde(registry, reader=V2)
    assert serde.decode(old)[1] == {"id": 1, "price": 1.0, "region": "eu"}
    assert serde.decode(new)[1] == {"id": 2, "price": 2.0, "region": "us"}
    versions = registry.versions(value_subject("orders"))
    assert [v.version for v in versions] == [1, 2]
    assert registry.latest("orders-value").schema == V2


def test_unknown_schema_id_is_a_reason(registry: SchemaRegistry) -> None:
    serde = ConfluentSerde(registry)
    with pytest.raises(SchemaNotFoundError, match=r"unknown schema id 99 \(not in the registry"):
        serde.decode(wire_header(99) + b"\x02")
    with pytest.raises(SchemaNotFoundError, match="unknown schema id 99"):  # remembered
        serde.decode(wire_header(99) + b"\x02")


@pytest.mark.parametrize("body", [
    b"\x0e",                      # id only: price and note missing
    b"\x0e" + bytes(8) + b"\x08hi",  # a string longer than what is left
])
def test_undecodable_body_is_a_reason(registry: SchemaRegistry, body: bytes) -> None:
    schema_id = registry.register("orders-value", json.dumps(V1))
    with pytest.raises(SerializationError, match=r"undecodable body") as err:
        ConfluentSerde(registry).decode(wire_header(schema_id) + body)
    assert f"schema id {schema_id} (Order)" in str(err.value)


def test_trailing_bytes_are_ignored_as_by_confluent(registry: SchemaRegistry) -> None:
    data = _serializer(registry, V1)({"id": 7, "price": 2.5, "note": "hi"}, _ctx())
    assert AvroDeserializer(registry.client)(data + b"junk", _ctx())["id"] == 7
    assert ConfluentSerde(registry).decode(data + b"junk")[1]["id"] == 7


def test_unresolvable_reader_is_undecodable(registry: SchemaRegistry) -> None:
    data = _serializer(registry, V1)({"id": 7, "price": 2.5, "note": "hi"}, _ctx())
    reader = {**V1, "fields": [{"name": "missing", "type": "long"}]}
    with pytest.raises(SerializationError, match="undecodable body"):
        ConfluentSerde(registry, reader=reader).decode(data)


def test_bad_magic_without_and_with_fallback(registry: SchemaRegistry) -> None:
    harvest = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    reading = {"stream": "s1", "seq": 1, "event_time": 100, "arrival_time": 130,
               "value": 20.5, "a1": 3, "x": 0.0, "y": 0.0}
    own = harvest.encode("sensor_reading", reading)
    with pytest.raises(SerializationError, match="bad magic byte 0xc3"):
        ConfluentSerde(registry).decode(own)
    assert ConfluentSerde(registry, fallback=harvest).decode(own) == ("sensor_reading", reading)


def test_encode_matches_confluent_and_decodes_with_avro_deserializer(
        registry: SchemaRegistry) -> None:
    serde = ConfluentSerde(registry)
    entry = serde.register_writer(V1, ["orders-value"])
    records = [{"id": i, "price": i / 2, "note": f"n{i}"} for i in range(5)]
    ours = serde.encode_many("Order", records)
    theirs = [_serializer(registry, V1)(r, _ctx()) for r in records]
    assert ours == theirs
    assert ours[0][:5] == wire_header(entry.schema_id)
    deserialize = AvroDeserializer(registry.client)
    assert [deserialize(b, _ctx()) for b in ours] == records
    assert serde.encode("Order", records[0]) == ours[0]


def test_plain_ignores_logical_types(registry: SchemaRegistry) -> None:
    schema = {"type": "record", "name": "E", "fields": [
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    serde = ConfluentSerde(registry)
    serde.register_writer(schema, ["e-value"])
    data = serde.encode("E", {"ts": 1_700_000_000_000})
    assert ConfluentSerde(registry, plain=True).decode(data)[1] == {"ts": 1_700_000_000_000}
    assert ConfluentSerde(registry).decode(data)[1]["ts"].year == 2023


def test_unknown_subject_and_name(registry: SchemaRegistry) -> None:
    with pytest.raises(SchemaNotFoundError, match="subject 'nope-value'"):
        registry.latest("nope-value")
    with pytest.raises(SchemaNotFoundError, match="subject 'nope-value'"):
        registry.versions("nope-value")
    with pytest.raises(SchemaNotFoundError, match="no schema registered for 'Order'"):
        ConfluentSerde(registry).entry("Order")
