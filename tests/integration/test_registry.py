"""The Confluent wire format against a real Schema Registry (Apicurio, `harvest registry
up`) and a real broker: compatibility checks, confluent-kafka's own AvroSerializer →
harvest's decoder (with evolution), `harvest produce --format avro-confluent` →
AvroDeserializer, `harvest consume` and `harvest schema --subject` on such topics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connectors.io.admin import ensure_topics
from connectors.io.confluent import ConfluentSerde, parse_header, wire_header
from connectors.io.consumer import Consumed, ConsumerConfig, Undecodable, consume
from connectors.io.registry_client import RegistryOptions, SchemaRegistry, value_subject
from connectors.io.serde import AvroSerde, SchemaEntry
from connectors.io.topics import input_topic
from connectors.workloads import read_jsonl
from pipeline.cli.main import main
from pipeline.core.errors import SerializationError
from pipeline.testing.orders import V1, V2

pytestmark = [pytest.mark.kafka, pytest.mark.registry]


@pytest.fixture
def registry(schema_registry: str) -> SchemaRegistry:
    return SchemaRegistry(RegistryOptions(url=schema_registry))


def _read(bootstrap: str, topic: str, serde: Any) -> list[Consumed | Undecodable]:
    config = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                            idle_timeout_s=20.0)
    return list(consume([topic], config=config, serde=serde))


def test_compatibility_is_backward(registry: SchemaRegistry, topic_prefix: str) -> None:
    subject = value_subject(f"{topic_prefix}.orders")
    first = registry.register(subject, json.dumps(V1))
    second = registry.register(subject, json.dumps(V2))
    assert first != second
    assert [v.schema_id for v in registry.versions(subject)] == [first, second]
    bad = {**V1, "fields": [{"name": "id", "type": "string"}]}
    with pytest.raises(SerializationError, match="incompatible"):
        registry.register(subject, json.dumps(bad))


def test_confluent_serializer_topic_with_evolution_and_bad_records(
        kafka_bootstrap: str, registry: SchemaRegistry, topic_prefix: str) -> None:
    """v1 then v2 records written by confluent-kafka's AvroSerializer decode into the
    latest version (v1 gets v2's default); a bad magic byte and an unknown id are
    rejected with their reasons."""
    topic = f"{topic_prefix}.orders"
    ensure_topics(kafka_bootstrap, [topic], 3)
    ctx = SerializationContext(topic, MessageField.VALUE)
    conf = {"subject.name.strategy": topic_subject_name_strategy}
    old = AvroSerializer(registry.client, json.dumps(V1), conf=conf)
    new = AvroSerializer(registry.client, json.dumps(V2), conf=conf)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(30):
        value = (old({"id": i, "price": i * 1.5, "note": "n"}, ctx) if i < 15
                 else new({"id": i, "price": i * 1.5, "region": "us"}, ctx))
        producer.produce(topic, value, str(i).encode())
    producer.produce(topic, b"\xc3\x01" + bytes(12), b"bad")
    producer.produce(topic, wire_header(2**31 - 7) + b"\x02", b"unknown")
    assert producer.flush(20) == 0

    reader = registry.latest(value_subject(topic)).schema
    items = _read(kafka_bootstrap, topic, ConfluentSerde(registry, reader=reader))
    good = sorted((i.record for i in items if isinstance(i, Consumed)), key=lambda r: r["id"])
    assert [r["id"] for r in good] == list(range(30))
    assert {r["region"] for r in good[:15]} == {"eu"} and {r["region"] for r in good[15:]} == {"us"}
    reasons = sorted(i.reason for i in items if isinstance(i, Undecodable))
    assert len(reasons) == 2
    assert reasons[0].startswith("bad magic byte 0xc3")
    assert reasons[1].startswith(f"unknown schema id {2**31 - 7}")


def test_produce_cli_writes_what_avro_deserializer_reads(
        kafka_bootstrap: str, schema_registry: str, registry: SchemaRegistry, topic_prefix: str,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("HARVEST_SCHEMA_REGISTRY_URL", schema_registry)
    dump = tmp_path / "sensors.jsonl"
    assert main(["produce", "sensors", "--streams", "2", "--rate", "50", "--duration", "4",
                 "--fast", "--dump", str(dump), "--topic-prefix", topic_prefix,
                 "--format", "avro-confluent"]) == 0
    capsys.readouterr()
    topic = input_topic(topic_prefix, "sensors", "s1")
    expected = [r for r in read_jsonl(dump) if r["stream"] == "s1"]

    raw = _read(kafka_bootstrap, topic, _Raw())
    deserialize = AvroDeserializer(registry.client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    values = [i.record["value"] for i in raw if isinstance(i, Consumed)]
    assert [deserialize(v, ctx) for v in values] == expected
    assert {parse_header(v) for v in values} == {registry.latest(f"{topic}-value").schema_id}

    assert main(["consume", topic, "--format", "jsonl", "--from-beginning",
                 "--timeout", "10"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert lines == expected
    assert main(["schema", "--subject", f"{topic}-value"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "sensor_reading"


class _Raw(AvroSerde):
    """A "serde" that hands the raw bytes back (what confluent-kafka's deserializer takes)."""

    def decode(self, data: bytes, reader: str | SchemaEntry | None = None
               ) -> tuple[str, dict[str, Any]]:
        return "raw", {"value": bytes(data)}
