"""`harvest produce` against a real broker: what is consumed equals the --dump, exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.serde import AvroSerde
from connectors.io.topics import input_topic
from connectors.workloads import read_jsonl
from pipeline.cli.main import main
from pipeline.core.settings import PROJECT_ROOT

SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")


def _read(bootstrap: str, topic: str) -> list[Consumed]:
    config = ConsumerConfig(
        bootstrap=bootstrap, from_beginning=True, until_end=True, idle_timeout_s=20.0
    )
    items = list(consume([topic], config=config, serde=SERDE))
    assert all(isinstance(i, Consumed) for i in items)
    return [i for i in items if isinstance(i, Consumed)]


@pytest.mark.kafka
def test_acceptance_sensors_round_trip(
    kafka_bootstrap: str,
    topic_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's acceptance: produce 3 × 5000 sensors, consume s1, equal to the dump."""
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    dump = tmp_path / "sensors.jsonl"
    code = main([
        "produce", "sensors", "--streams", "3", "--rate", "500", "--duration", "10",
        "--seed", "7", "--fast", "--dump", str(dump), "--topic-prefix", topic_prefix,
        "--disorder", "zipf:max=20000,skew=2",
    ])
    assert code == 0
    err = capsys.readouterr().err
    assert "delivered 15,000" in err and "failed 0" in err

    dumped = read_jsonl(dump)
    assert len(dumped) == 15_000
    s1_topic = input_topic(topic_prefix, "sensors", "s1")

    # the CLI consumer, as a user would run it
    assert main(["consume", s1_topic, "--format", "jsonl", "--from-beginning",
                 "--timeout", "10"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    expected_s1 = [r for r in dumped if r["stream"] == "s1"]
    assert len(lines) == len(expected_s1) == 5_000
    assert {r["seq"] for r in lines} == set(range(1, 5_001))
    by_seq = {r["seq"]: r for r in lines}
    for want in expected_s1:
        got = by_seq[want["seq"]]
        assert (got["event_time"], got["value"]) == (want["event_time"], want["value"])

    # every stream: same records, same (arrival) order, keyed by stream
    for stream in ("s1", "s2", "s3"):
        items = _read(kafka_bootstrap, input_topic(topic_prefix, "sensors", stream))
        assert [i.record for i in items] == [r for r in dumped if r["stream"] == stream]
        assert {i.key for i in items} == {stream.encode()}
        assert {i.schema for i in items} == {"sensor_reading"}


@pytest.mark.kafka
def test_paced_news_with_per_stream_disorder(
    kafka_bootstrap: str,
    topic_prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Paced (×20) news publishing: every item arrives with its keyword map intact."""
    monkeypatch.setenv("HARVEST_BOOTSTRAP_SERVERS", kafka_bootstrap)
    dump = tmp_path / "news.jsonl"
    code = main([
        "produce", "news", "--streams", "2", "--rate", "40", "--duration", "20",
        "--lags", "0,3", "--disorder", "none;exp:mean=400", "--speedup", "20",
        "--dump", str(dump), "--topic-prefix", topic_prefix, "--partitions", "2",
    ])
    assert code == 0
    dumped = read_jsonl(dump)
    for stream in ("s1", "s2"):
        items = _read(kafka_bootstrap, input_topic(topic_prefix, "news", stream))
        assert [i.record for i in items] == [r for r in dumped if r["stream"] == stream]
        assert len({i.partition for i in items}) == 1  # one key per stream: one partition
