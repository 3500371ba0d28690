"""Topics behind a Schema Registry: confluent-kafka's AvroSerializer → Kafka (Confluent
wire format) → Spark job → results in the Confluent format.

Three 3-partition topics written with confluent-kafka's own ``AvroSerializer`` (TOPIC
subjects): ``a`` switches from v1 to v2 (a field added with a default) half-way, both
registered before the job starts, so a's reader is v2; ``b`` gets v2 registered *while
the job runs* and records of it after; ``c`` stays on v1. Topic ``a`` also holds a
record with a bad magic byte and one with a schema id the registry does not know. Then

* the job's de-duplicated results equal the oracle on `harvest dump` of the same topics
  (`harvest consume --spec` → `harvest evaluate`: recall = precision = 1);
* a's v1 members carry v2's default in their payload;
* only the two bad records are dead letters, with their reasons: b's new version lost
  nothing (the job restarted itself with the registry re-read);
* results, metrics and dead letters decode with confluent-kafka's ``AvroDeserializer``.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import topic_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import SparkSession

from connectors.io.confluent import wire_header
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from pipeline.cli.main import main
from pipeline.core.settings import Settings, load_settings
from pipeline.spark.submit import JobReport, job_config, submit_supervised
from pipeline.spec.model import load_spec
from tests.e2e.test_own_topics import _cli

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.registry]

V1 = {"type": "record", "name": "Reading", "namespace": "acme",
      "fields": [{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                 {"name": "temp", "type": "double"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "site", "type": "string", "default": "none"}]}
T0 = (int(time.time()) - 60) * 1000
PER_STREAM = 40
STEP_MS = 250
UNKNOWN_ID = 2**31 - 11


class RegistryProducer:
    """Writes the way a team's service does: AvroSerializer, TOPIC subjects."""

    def __init__(self, bootstrap: str, registry: SchemaRegistry, prefix: str) -> None:
        self.prefix, self.registry = prefix, registry
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.conf = {"subject.name.strategy": topic_subject_name_strategy,
                     "auto.register.schemas": True}
        AdminClient({"bootstrap.servers": bootstrap})
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.rng = random.Random(7)

    def topic(self, s: str) -> str:
        return f"{self.prefix}.{s}"

    def create_topics(self) -> None:
        new = [NewTopic(self.topic(s), num_partitions=3, replication_factor=1) for s in "abc"]
        for future in self.admin.create_topics(new).values():
            future.result()

    def send(self, stream: str, schema: dict[str, Any], rows: range) -> int:
        serialize = AvroSerializer(self.registry.client, json.dumps(schema), conf=self.conf)
        ctx = SerializationContext(self.topic(stream), MessageField.VALUE)
        for i in rows:
            ts = T0 + i * STEP_MS + self.rng.randint(0, STEP_MS - 1)
            rec: dict[str, Any] = {"ts": ts, "temp": round(self.rng.uniform(10.0, 11.0), 3)}
            if schema is V2:
                rec["site"] = f"{stream}{i}"
            self.producer.produce(self.topic(stream), serialize(rec, ctx),
                                  partition=self.rng.randrange(3), timestamp=ts + 100)
        assert self.producer.flush(30) == 0
        return len(rows)

    def send_raw(self, stream: str, value: bytes) -> None:
        self.producer.produce(self.topic(stream), value, partition=0, timestamp=T0)
        assert self.producer.flush(30) == 0


def _spec(tmp_path: Path, prefix: str) -> Path:
    inputs = "".join(f'[inputs.{s}]\ntopic = "{prefix}.{s}"\nformat = "avro-confluent"\n'
                     'event_time = "ts"\n\n' for s in "abc")
    text = ('[join]\nstreams = ["a", "b", "c"]\nwindow_ms = 1500\npredicate = "band"\n'
            'attribute = "temp"\nepsilon = 0.2\n\n[disorder]\nmode = "fixed"\n'
            'slack_ms = 3000\n\n' + inputs +
            f'[output]\ntopic = "{prefix}.joined"\npayload = ["*"]\n'
            'format = "avro-confluent"\n\n'
            '[job]\ntrigger_ms = 500\nidle_flush_ms = 2000\nshuffle_partitions = 2\n'
            'max_offsets_per_trigger = 150\n')
    (tmp_path / "spec.toml").write_text(text)
    return tmp_path / "spec.toml"


def _wait_for(bootstrap: str, topic: str, timeout_s: float) -> None:
    """Until ``topic`` holds a record (the job has produced its first output)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w{time.time()}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                return
        raise AssertionError(f"no output on {topic} within {timeout_s} s")
    finally:
        consumer.close()


def _decoded(bootstrap: str, registry: SchemaRegistry, topic: str) -> list[dict[str, Any]]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"d{time.time()}",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    deserialize = AvroDeserializer(registry.client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    out, idle = [], time.monotonic()
    try:
        while time.monotonic() - idle < 5:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            out.append(deserialize(msg.value(), ctx))
            idle = time.monotonic()
    finally:
        consumer.close()
    return out


def test_registry_topics_evolve_while_the_job_runs(
        spark: SparkSession, kafka_bootstrap: str, schema_registry: str, topic_prefix: str,
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("HARVEST_SCHEMA_REGISTRY_URL", schema_registry)
    settings: Settings = load_settings(bootstrap_servers=kafka_bootstrap,
                                       cache_dir=tmp_path / "cache",
                                       schema_registry_url=schema_registry)
    registry = SchemaRegistry(RegistryOptions(url=schema_registry))
    p = RegistryProducer(kafka_bootstrap, registry, topic_prefix)
    p.create_topics()
    half = PER_STREAM // 2
    sent = p.send("a", V1, range(half)) + p.send("a", V2, range(half, PER_STREAM))
    sent += p.send("b", V1, range(half)) + p.send("c", V1, range(PER_STREAM))
    p.send_raw("a", b"\xc3\x01" + bytes(12))
    p.send_raw("a", wire_header(UNKNOWN_ID) + b"\x02")

    spec_path = _spec(tmp_path, topic_prefix)
    cfg = job_config(load_spec(spec_path), settings, checkpoint=str(tmp_path / "ck"))
    reports: list[JobReport] = []
    job = threading.Thread(target=lambda: reports.append(
        submit_supervised(spark, cfg, settings, 12.0, 0)))
    job.start()
    _wait_for(kafka_bootstrap, f"{topic_prefix}.joined", 180)
    sent += p.send("b", V2, range(half, PER_STREAM))  # registers b's v2 now
    job.join(300)
    assert not job.is_alive() and reports
    report = reports[0]
    assert report.deadletters == 2, report

    dump, truth = tmp_path / "dump.jsonl", tmp_path / "true.jsonl"
    got = tmp_path / "got.jsonl"
    summary = json.loads(_cli(capsys, "dump", "--spec", str(spec_path), "--output", str(dump),
                              "--timeout", "5"))
    assert summary["tuples"] == sent and summary["rejected"] == 2, summary
    _cli(capsys, "oracle", "--spec", str(spec_path), "--input", str(dump), "--output",
         str(truth))
    got.write_text(_cli(capsys, "consume", f"{topic_prefix}.joined", "--spec",
                        str(spec_path), "--format", "jsonl", "--from-beginning",
                        "--timeout", "5"))
    quality = json.loads(_cli(capsys, "evaluate", "--truth", str(truth), "--results",
                              str(got), "--json"))
    assert quality["true"] > 20, "the workload must produce join results"
    assert quality["recall"] == 1.0 and quality["precision"] == 1.0, quality

    results = _decoded(kafka_bootstrap, registry, f"{topic_prefix}.joined")
    assert {r["id"] for r in results} == {json.loads(x)["id"] for x in got.read_text()
                                          .splitlines()}
    sites = {r["a"]["site"] for r in results}
    assert "none" in sites and sites - {"none"}, sites  # v1 members carry v2's default
    assert all(set(r["b"]) == {"ts", "temp"} for r in results)  # b's reader: v1
    dead = _decoded(kafka_bootstrap, registry, f"{topic_prefix}.joined.deadletter")
    reasons = sorted(d["reason"] for d in dead)
    assert len(reasons) == 2
    assert reasons[0].startswith("bad magic byte 0xc3")
    assert reasons[1].startswith(f"unknown schema id {UNKNOWN_ID}")
    assert _decoded(kafka_bootstrap, registry, f"{topic_prefix}.joined.metrics")
    assert main(["schema", "--subject", f"{topic_prefix}.joined-value"]) == 0
