"""Join the user's own topics: a foreign producer → Kafka → Spark job → results with payload.

A test-only producer using plain confluent-kafka and fastavro (not harvest's producer)
writes three 3-partition topics with three layouts: ``north`` (single-object Avro, a
``timestamp-millis`` event time), ``south`` (bare Avro bodies, ``timestamp-micros``, an
id field), ``east`` (JSON, ISO-8601 times). Kafka CreateTime timestamps model the arrival
disorder. The job joins them with ``payload = ["*"]``; then

* the de-duplicated results equal the oracle on `harvest dump` of the same topics
  (`harvest consume --spec --format jsonl` → `harvest evaluate`: recall = precision = 1);
* every result's members carry their Kafka coordinates and payload values equal to the
  records the producer wrote;
* the malformed records of each format are in the dead-letter topic with their reasons,
  and `harvest dump` left out exactly those.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed
from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT, Settings
from pipeline.spec.model import load_spec
from tests.e2e.conftest import read_topic, run_job

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

DATA = PROJECT_ROOT / "tests" / "data" / "own_topics"
#: event times start a minute ago (the broker's retention and timestamp checks see
#: recent CreateTimes)
T0 = (int(time.time()) - 60) * 1000
PER_STREAM = 60
STEP_MS = 250
MAX_DELAY_MS = 400
SLACK_MS = 3000  # ≥ the delays plus the cross-partition skew of a micro-batch boundary


def _schema(name: str) -> Any:
    return fastavro.parse_schema(json.loads((DATA / f"{name}.avsc").read_text()),
                                 named_schemas={})


def _body(schema: Any, rec: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, rec)
    return buf.getvalue()


def _single_object(schema: Any, rec: dict[str, Any]) -> bytes:
    """``C3 01`` + little-endian CRC-64-AVRO fingerprint of the canonical form + body."""
    canonical = fastavro.schema.to_parsing_canonical_form(schema)
    fp = bytes.fromhex(fastavro.schema.fingerprint(canonical, "CRC-64-AVRO"))
    return b"\xc3\x01" + fp + _body(schema, rec)


class ForeignProducer:
    """Writes records the way another team's service would: its own schemas and keys."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.bootstrap, self.prefix = bootstrap, prefix
        self.north, self.south = _schema("north"), _schema("south")
        self.sent: list[tuple[str, int, bytes, int, dict[str, Any] | None, str | None]] = []

    def create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = [NewTopic(f"{self.prefix}.{s}", num_partitions=3, replication_factor=1)
                  for s in ("north", "south", "east")]
        for future in admin.create_topics(topics).values():
            future.result()

    def add(self, stream: str, partition: int, value: bytes, create_ms: int,
            record: dict[str, Any] | None, bad: str | None = None) -> None:
        self.sent.append((stream, partition, value, create_ms, record, bad))

    def publish(self) -> dict[tuple[str, int, int], tuple[dict[str, Any] | None, str | None]]:
        """Produce in CreateTime order; returns (stream, partition, offset) → record."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5,
                             "enable.idempotence": True})
        where: dict[tuple[str, int, int], tuple[dict[str, Any] | None, str | None]] = {}
        for stream, partition, value, create_ms, record, bad in sorted(
                self.sent, key=lambda s: s[3]):
            def done(err: Any, msg: Any, stream: str = stream, record: Any = record,
                     bad: Any = bad) -> None:
                assert err is None, err
                where[(stream, msg.partition(), msg.offset())] = (record, bad)
            producer.produce(f"{self.prefix}.{stream}", value=value, partition=partition,
                             key=f"{stream}-{partition}".encode(), timestamp=create_ms,
                             on_delivery=done)
            producer.poll(0)
        assert producer.flush(30) == 0
        assert len(where) == len(self.sent)
        return where


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def generate(p: ForeignProducer, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(PER_STREAM):
        for stream in ("north", "south", "east"):
            ts = T0 + i * STEP_MS + rng.randint(0, STEP_MS - 1)
            arrival = ts + rng.randint(0, MAX_DELAY_MS)
            part = rng.randrange(3)
            temp = round(rng.uniform(10.0, 11.2), 3)
            if stream == "north":
                rec = {"station": f"n-{part}-{i}", "ts": ts, "temp_c": temp,
                       "pos": {"lat": 52.0 + i / 100, "lon": 13.0},
                       "humidity": None if i % 4 == 0 else 0.5}
                p.add(stream, part, _single_object(p.north, rec), arrival, rec)
            elif stream == "south":
                rec = {"obs_id": 1000 + i, "time_us": ts * 1000 + rng.randint(0, 999),
                       "temperature": temp, "sensor": "ABC"[i % 3], "pos": {"x": i}}
                p.add(stream, part, _body(p.south, rec), arrival, rec)
            else:
                rec = {"when": _iso(ts), "t": temp, "label": f"e{i}", "count": i}
                if i % 5 == 0:
                    rec["note"] = "windy"
                p.add(stream, part, json.dumps(rec).encode(), arrival, rec)
        if i % 15 == 7:  # malformed records of each format, interleaved
            arrival = T0 + i * STEP_MS
            good_n = _single_object(p.north, {"station": "x", "ts": arrival, "temp_c": 1.0,
                                               "pos": {"lat": 0.0, "lon": 0.0},
                                               "humidity": None})
            p.add("north", 0, good_n[:-3], arrival, None, "undecodable avro body")
            p.add("north", 1, b"\xc3\x01" + b"\x00" * 8 + good_n[10:], arrival, None,
                  "unknown writer schema fingerprint")
            good_s = _body(p.south, {"obs_id": 1, "time_us": arrival * 1000,
                                     "temperature": 1.0, "sensor": "A", "pos": {"x": 1}})
            p.add("south", 2, good_s + b"\x01", arrival, None, "1 trailing bytes")
            p.add("east", 0, b"<station>not json</station>", arrival, None,
                  "not a JSON object")
            p.add("east", 1, json.dumps({"when": _iso(arrival), "t": "warm", "label": "b",
                                         "count": 1}).encode(), arrival, None,
                  "field 't' (inputs.east.attribute) has a value of the wrong type")
            p.add("east", 2, json.dumps({"t": 1.0, "label": "b", "count": 1}).encode(),
                  arrival, None, "missing value for field 'when' (inputs.east.event_time)")


def _spec(tmp_path: Path, prefix: str) -> Path:
    for f in DATA.glob("*.avsc"):
        shutil.copy(f, tmp_path / f.name)
    text = (DATA / "spec.toml").read_text().replace('"own.', f'"{prefix}.').replace(
        "slack_ms = 2000", f"slack_ms = {SLACK_MS}")
    text += ("\n[job]\ntrigger_ms = 500\nidle_flush_ms = 2000\nshuffle_partitions = 2\n"
             "max_offsets_per_trigger = 150\n")
    (tmp_path / "spec.toml").write_text(text)
    return tmp_path / "spec.toml"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0, argv
    return capsys.readouterr().out


def _expected_payload(stream: str, rec: dict[str, Any]) -> dict[str, Any]:
    if stream == "east":
        return {"when": rec["when"], "t": float(rec["t"]), "label": rec["label"],
                "count": rec["count"], "note": rec.get("note")}
    return rec


def test_foreign_topics_join_equals_oracle_with_payload_and_dead_letters(
        spark: SparkSession, job_settings: Settings, kafka_bootstrap: str,
        topic_prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    producer = ForeignProducer(kafka_bootstrap, topic_prefix)
    producer.create_topics()
    generate(producer, seed=5)
    sent = producer.publish()
    bad = {k: v[1] for k, v in sent.items() if v[1] is not None}
    assert len(bad) == 4 * 6
    spec_path = _spec(tmp_path, topic_prefix)
    spec = load_spec(spec_path)
    results_topic = f"{topic_prefix}.joined"

    report = run_job(spark, spec, job_settings, topic_prefix, tmp_path / "ck")
    assert report.input_rows == len(sent)
    assert report.deadletters == len(bad)

    # the user's side: dump → oracle, consume --spec → evaluate
    dump, truth, got = tmp_path / "dump.jsonl", tmp_path / "true.jsonl", tmp_path / "got.jsonl"
    summary = json.loads(_cli(capsys, "dump", "--spec", str(spec_path), "--output", str(dump),
                              "--timeout", "5"))
    assert summary["tuples"] == len(sent) - len(bad) and summary["rejected"] == len(bad)
    _cli(capsys, "oracle", "--spec", str(spec_path), "--input", str(dump), "--output",
         str(truth))
    got.write_text(_cli(capsys, "consume", results_topic, "--spec", str(spec_path),
                        "--format", "jsonl", "--from-beginning", "--timeout", "5"))
    quality = json.loads(_cli(capsys, "evaluate", "--truth", str(truth), "--results",
                              str(got), "--json"))
    assert quality["true"] > 50, "the workload must produce join results"
    assert quality["recall"] == 1.0 and quality["precision"] == 1.0, quality
    assert quality["produced"] == quality["true"] == report.results

    # every result carries its members' coordinates and the producer's values
    results = [json.loads(line) for line in got.read_text().splitlines()]
    for res in results:
        assert list(res)[-3:] == ["north", "south", "east"]
        for m in res["members"]:
            rec, why = sent[(m["stream"], m["partition"], m["offset"])]
            assert why is None and rec is not None
            assert res[m["stream"]] == _expected_payload(m["stream"], rec)
            if m["stream"] == "south":
                assert m["seq"] == rec["obs_id"]
            else:
                assert m["seq"] == (m["partition"] << 40) + m["offset"]
    # the table view decodes them too
    table = _cli(capsys, "consume", results_topic, "--spec", str(spec_path), "--max", "3",
                 "--from-beginning", "--timeout", "5")
    assert "join_result (3 records)" in table

    # malformed records of each format: dead-lettered with their reasons, none lost
    dead = read_topic(kafka_bootstrap, f"{results_topic}.deadletter")
    reasons = Counter()
    for item in dead:
        assert isinstance(item, Consumed)
        rec = item.record
        stream = rec["topic"].rsplit(".", 1)[-1]
        want = bad[(stream, rec["partition"], rec["offset"])]
        assert rec["reason"].startswith(want), (rec["reason"], want)
        reasons[stream] += 1
    assert len(dead) == len(bad) and reasons == {"north": 8, "south": 4, "east": 12}
