"""Producer -> real Kafka broker -> consumer: every record arrives once, equal after decode."""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from connectors.io.admin import ensure_topics
from connectors.io.consumer import Consumed, ConsumerConfig, Undecodable, consume
from connectors.io.producer import publish, publish_encoded
from connectors.io.producer_config import Pacing, ProducerConfig
from connectors.io.serde import AvroSerde
from connectors.io.topics import deadletter_topic, input_topic, metrics_topic, results_topic
from pipeline.cli.main import main
from pipeline.core.errors import DeliveryError, KafkaUnavailableError, SerializationError
from pipeline.core.settings import PROJECT_ROOT
from pipeline.testing.cli import exit_2_stderr

SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")


def sensor_records(n: int, streams: int = 3) -> list[dict[str, Any]]:
    """Records in arrival order; values chosen so no two records are equal."""
    return [
        {
            "stream": f"s{i % streams}",
            "seq": i // streams,
            "event_time": 1_000 * i - (i * 37) % 500,
            "arrival_time": 1_000 * i,
            "value": i * 0.25 - 100.0,
            "a1": (i * 7) % 11,
            "x": float(i % 13),
            "y": -float(i % 17),
        }
        for i in range(n)
    ]


def news_records(n: int, words: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "stream": "reuters" if i % 2 else "ap",
            "seq": i,
            "event_time": 100 * i,
            "arrival_time": 100 * i + 3,
            "story": i // 4,
            "agency": "Reuters" if i % 2 else "AP",
            "keywords": {f"kw{(i + j) % 50}": 1.0 / (j + 1) for j in range(words)},
        }
        for i in range(n)
    ]


def always(topic: str) -> Callable[[Any], str]:
    """A ``topic_of`` sending every record to ``topic``."""
    return lambda record: topic


def read_all(bootstrap: str, topics: list[str], **kw: Any) -> list[Consumed | Undecodable]:
    config = ConsumerConfig(
        bootstrap=bootstrap, from_beginning=True, until_end=True, idle_timeout_s=20.0, **kw
    )
    return list(consume(topics, config=config, serde=SERDE))


def producer_config(bootstrap: str, **kw: Any) -> ProducerConfig:
    return ProducerConfig(bootstrap=bootstrap, **kw)


@pytest.mark.kafka
def test_sensor_records_arrive_exactly_once_and_equal(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    records = sensor_records(6_000)
    topics = [input_topic(topic_prefix, "sensors", f"s{i}") for i in range(3)]
    progress: list[int] = []
    report = publish(
        records,
        config=producer_config(kafka_bootstrap),
        serde=SERDE,
        schema_name="sensor_reading",
        topic_of=lambda r: input_topic(topic_prefix, "sensors", r["stream"]),
        key_of=lambda r: r["stream"].encode(),
        on_progress=progress.append,
    )
    assert (report.sent, report.delivered, report.failed, report.errors) == (6_000, 6_000, 0, [])
    assert report.topics == dict.fromkeys(topics, 2_000)
    assert sum(progress) == 6_000
    report.raise_on_failure()

    got = read_all(kafka_bootstrap, topics)
    assert all(isinstance(item, Consumed) for item in got)
    consumed = [item for item in got if isinstance(item, Consumed)]
    ids = Counter((c.record["stream"], c.record["seq"]) for c in consumed)
    assert len(ids) == 6_000 and set(ids.values()) == {1}
    by_id = {(r["stream"], r["seq"]): r for r in records}
    for item in consumed:
        assert item.record == by_id[(item.record["stream"], item.record["seq"])]
        assert item.schema == "sensor_reading"
        assert item.key == item.record["stream"].encode()
        assert item.topic == input_topic(topic_prefix, "sensors", item.record["stream"])
    # per-topic order is arrival order (one partition per topic)
    for topic in topics:
        seqs = [c.record["seq"] for c in consumed if c.topic == topic]
        assert seqs == sorted(seqs)


@pytest.mark.kafka
def test_every_schema_round_trips_through_the_broker(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    results = [
        {"id": f"r{i}", "result_time": 10 * i,
         "members": [{"stream": "s0", "seq": i, "event_time": 10 * i, "partition": i % 3,
                      "offset": i},
                     {"stream": "s1", "seq": i + 1, "event_time": 10 * i - 3,
                      "partition": 0, "offset": 7 * i}],
         "instance": "g0", "emit_time": 1_700_000_000_000 + i}
        for i in range(50)
    ]
    metrics = [
        {"time": 1000 * i, "wall_time": 5 + i, "instance": "g1", "z": 0.5,
         "harvest_fractions": [1.0, 0.5, 0.25], "k_ms": 200, "recall_target": 0.95,
         "instant_recall_target": None if i % 2 else 0.97, "estimated_recall": 0.96,
         "measured_recall": None, "rate_in": 100.0, "rate_out": 10.0, "queue_drops": i,
         "state_size": 40, "extra": {"beta": 0.9}}
        for i in range(20)
    ]
    letters = [
        {"reason": "bad magic", "topic": "x", "partition": 0, "offset": i,
         "raw": bytes([i, 255, 0]), "time": 12}
        for i in range(10)
    ]
    cases = [
        ("news_item", input_topic(topic_prefix, "news", "all"), news_records(200)),
        ("join_result", results_topic(topic_prefix), results),
        ("operator_metrics", metrics_topic(topic_prefix), metrics),
        ("dead_letter", deadletter_topic(topic_prefix), letters),
    ]
    for schema, topic, records in cases:
        report = publish(records, config=producer_config(kafka_bootstrap), serde=SERDE,
                         schema_name=schema, topic_of=always(topic))
        assert report.delivered == len(records)
        got = read_all(kafka_bootstrap, [topic])
        assert [(g.schema, g.record) for g in got if isinstance(g, Consumed)] == [
            (schema, r) for r in records
        ]


@pytest.mark.kafka
def test_undecodable_records_are_reported_not_fatal(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    topic = input_topic(topic_prefix, "sensors", "s0")
    good = SERDE.encode_many("sensor_reading", sensor_records(3, streams=1))
    garbage = [b"not avro at all", b"\xc3\x01" + b"\x00" * 8 + b"\x02", good[0][:-2]]
    messages = [good[0], garbage[0], good[1], garbage[1], garbage[2], good[2]]
    report = publish_encoded([(topic, None, m) for m in messages],
                             config=producer_config(kafka_bootstrap))
    assert report.delivered == 6

    got = read_all(kafka_bootstrap, [topic])
    assert [type(g).__name__ for g in got] == [
        "Consumed", "Undecodable", "Consumed", "Undecodable", "Undecodable", "Consumed"
    ]
    bad = [g for g in got if isinstance(g, Undecodable)]
    assert [(b.offset, b.raw) for b in bad] == [(1, garbage[0]), (3, garbage[1]), (4, garbage[2])]
    assert "bad single-object marker 6e6f" in bad[0].reason
    assert "unknown writer schema fingerprint 0000000000000000" in bad[1].reason
    assert "truncated" in bad[2].reason
    letter = bad[0].dead_letter(wall_ms=99)
    assert SERDE.decode(SERDE.encode("dead_letter", letter)) == ("dead_letter", letter)
    assert letter["raw"] == garbage[0] and letter["topic"] == topic


@pytest.mark.kafka
def test_delivery_failures_are_counted(kafka_bootstrap: str, topic_prefix: str) -> None:
    topic = input_topic(topic_prefix, "news", "small")
    ensure_topics(kafka_bootstrap, [topic], config={"max.message.bytes": "400"})
    config = producer_config(kafka_bootstrap, create_topics=False)
    small = publish(news_records(4, words=1), config=config, serde=SERDE,
                    schema_name="news_item", topic_of=lambda r: topic)
    assert (small.sent, small.delivered, small.failed) == (4, 4, 0)
    big = publish(news_records(3, words=200), config=config, serde=SERDE,  # > 400 bytes each
                  schema_name="news_item", topic_of=lambda r: topic)
    assert (big.sent, big.delivered, big.failed) == (3, 0, 3)
    assert big.errors and all(topic in e for e in big.errors)
    with pytest.raises(DeliveryError, match="3 of 3 records not delivered"):
        big.raise_on_failure()
    assert len(read_all(kafka_bootstrap, [topic])) == 4


@pytest.mark.kafka
def test_bad_record_stops_publish_after_flushing_the_good_ones(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    topic = input_topic(topic_prefix, "sensors", "s0")
    records: list[dict[str, Any]] = [*sensor_records(2, streams=1), {"stream": "s0", "seq": "x"}]
    with pytest.raises(SerializationError, match="record #2 does not match schema"):
        publish(records, config=producer_config(kafka_bootstrap), serde=SERDE,
                schema_name="sensor_reading", topic_of=lambda r: topic)
    got = read_all(kafka_bootstrap, [topic])
    assert [g.record for g in got if isinstance(g, Consumed)] == records[:2]


class FakeClock:
    """Time that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.kafka
@pytest.mark.parametrize(("speedup", "step_s"), [(1.0, 0.2), (10.0, 0.02), (0.5, 0.4)])
def test_pacing_follows_arrival_times(
    kafka_bootstrap: str, topic_prefix: str, speedup: float, step_s: float
) -> None:
    records = sensor_records(6, streams=1)  # arrivals 0, 200, ..., 1000 ms
    for r in records:
        r["arrival_time"] *= 0.2
        r["arrival_time"] = int(r["arrival_time"])
    clock = FakeClock()
    report = publish(records, config=producer_config(kafka_bootstrap), serde=SERDE,
                     schema_name="sensor_reading",
                     topic_of=lambda r: input_topic(topic_prefix, "sensors", "s0"),
                     pace=Pacing(speedup=speedup, clock=clock, sleep=clock.sleep))
    assert report.delivered == 6
    assert clock.sleeps == pytest.approx([step_s] * 5)


def test_no_broker_fails_fast_with_a_clear_error() -> None:
    config = ProducerConfig(bootstrap="127.0.0.1:1", connect_timeout_s=2.0)
    with pytest.raises(KafkaUnavailableError, match=r"no Kafka broker answered at 127\.0\.0\.1:1"):
        publish(sensor_records(3), config=config, serde=SERDE, schema_name="sensor_reading",
                topic_of=lambda r: "t.in.sensors.s0")
    consumer = ConsumerConfig(bootstrap="127.0.0.1:1", connect_timeout_s=2.0)
    with pytest.raises(KafkaUnavailableError, match=r"127\.0\.0\.1:1"):
        list(consume(["t.results"], config=consumer, serde=SERDE))


@pytest.mark.kafka
def test_cli_consume_jsonl_and_table(
    kafka_bootstrap: str,
    topic_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    topic = input_topic(topic_prefix, "sensors", "s0")
    records = sensor_records(30, streams=1)
    publish(records, config=producer_config(kafka_bootstrap), serde=SERDE,
            schema_name="sensor_reading", topic_of=lambda r: topic)
    publish_encoded([(topic, None, b"garbage")], config=producer_config(kafka_bootstrap))
    capsys.readouterr()  # drop the set-up's log lines

    code = main(["consume", topic, "--format", "jsonl", "--from-beginning", "--timeout", "3"])
    out, err = capsys.readouterr()
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == records
    assert "undecodable record" in err and '"offset": 30' in err

    code = main(["consume", topic, "--from-beginning", "--max", "2", "--timeout", "3"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "sensor_reading (2 records)" in out
    assert "arrival_time" in out and "-99.75" in out
    assert "-100" in out and "s0" in out

    letters = deadletter_topic(topic_prefix)
    letter = {"reason": "r", "topic": topic, "partition": 0, "offset": 7,
              "raw": b"\x00\xffraw", "time": 1}
    publish([letter], config=producer_config(kafka_bootstrap), serde=SERDE,
            schema_name="dead_letter", topic_of=lambda r: letters)
    capsys.readouterr()
    assert main(["consume", letters, "--format", "jsonl", "--from-beginning", "--max", "1"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert base64.b64decode(line["raw"]) == letter["raw"]
    assert {k: v for k, v in line.items() if k != "raw"} == {
        k: v for k, v in letter.items() if k != "raw"
    }


def test_cli_rejects_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (["consume", "t", "--max", "0"], "--max: must be > 0, got '0'"),
        (["consume", "t", "--timeout", "-1"], "--timeout: must be > 0, got '-1'"),
        (["consume", "t", "--format", "xml"], "invalid choice: 'xml'"),
    ]:
        assert message in exit_2_stderr(argv, capsys)
    assert main(["consume", "bad topic"]) == 2
    assert "topic: 'bad topic' may only contain" in capsys.readouterr().err


@pytest.mark.kafka
def test_latest_skips_old_records_and_reads_new_ones(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    topic = input_topic(topic_prefix, "sensors", "s0")
    old = sensor_records(5, streams=1)
    publish(old, config=producer_config(kafka_bootstrap), serde=SERDE,
            schema_name="sensor_reading", topic_of=always(topic))
    quiet = ConsumerConfig(bootstrap=kafka_bootstrap, idle_timeout_s=1.0)
    assert list(consume([topic], config=quiet, serde=SERDE)) == []

    stop = threading.Event()

    def keep_publishing() -> None:  # until the consumer (assigned at the end) sees one
        seq = 100
        while not stop.is_set():
            record = {**old[0], "seq": seq}
            publish([record], config=producer_config(kafka_bootstrap), serde=SERDE,
                    schema_name="sensor_reading", topic_of=always(topic))
            seq += 1
            stop.wait(0.3)

    thread = threading.Thread(target=keep_publishing, daemon=True)
    thread.start()
    try:
        latest = ConsumerConfig(bootstrap=kafka_bootstrap, idle_timeout_s=30.0, max_records=1)
        got = list(consume([topic], config=latest, serde=SERDE))
    finally:
        stop.set()
        thread.join(timeout=30)
    assert len(got) == 1 and isinstance(got[0], Consumed)
    assert got[0].record["seq"] >= 100 and got[0].offset >= len(old)


@pytest.mark.kafka
def test_a_named_group_resumes_where_it_stopped(kafka_bootstrap: str, topic_prefix: str) -> None:
    topic = results_topic(topic_prefix)
    records = [{"id": f"r{i}", "result_time": i, "members": []} for i in range(5)]
    publish(records, config=producer_config(kafka_bootstrap), serde=SERDE,
            schema_name="join_result", topic_of=always(topic))
    group = f"{topic_prefix}-group"
    first = read_all(kafka_bootstrap, [topic], group_id=group, max_records=3)
    rest = read_all(kafka_bootstrap, [topic], group_id=group)
    assert [g.offset for g in first] == [0, 1, 2]
    assert [g.offset for g in rest] == [3, 4]
