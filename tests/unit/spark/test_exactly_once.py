"""Exactly-once delivery without a broker or Spark: the spec key, the sink's config, the
test hook, and the writer's skip-or-write decision per micro-batch (ARCHITECTURE §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from connectors.io.transactional import TransactionalConfig
from pipeline.core.errors import ConfigError
from pipeline.core.settings import load_settings
from pipeline.spark import exactly_once
from pipeline.spark.exactly_once import BatchWriter, ExactlyOnceConfig, commits_topic
from pipeline.spark.job import exactly_once_config
from pipeline.spark.submit import job_config
from pipeline.spec.model import Spec, parse_spec

JOIN = {"streams": ["s1", "s2"], "window_ms": 100, "predicate": "band", "attribute": "value"}


def spec(**output: Any) -> Spec:
    return parse_spec({"join": JOIN, "output": output})


def test_delivery_defaults_to_at_least_once() -> None:
    plain = parse_spec({"join": JOIN})
    assert plain.output.delivery == "at-least-once"
    assert plain.output.transaction_timeout_ms == 60_000
    eo = spec(delivery="exactly-once", transaction_timeout_ms=120_000)
    assert eo.output.delivery == "exactly-once"
    # [output] without [inputs]: today's topics
    assert eo.output.topics("p") == ("p.results", "p.metrics", "p.deadletter")


@pytest.mark.parametrize(("output", "key"), [
    ({"delivery": "exactly_once"}, "delivery"),
    ({"delivery": "at-most-once"}, "delivery"),
    ({"transaction_timeout_ms": 999}, "transaction_timeout_ms"),
    ({"transaction_timeout_ms": 900_001}, "transaction_timeout_ms"),
])
def test_bad_delivery_keys_are_named(output: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=f"output.{key}"):
        spec(**output)


def test_exactly_once_config_from_the_job(tmp_path: Path) -> None:
    settings = load_settings(bootstrap_servers="h:1", cache_dir=tmp_path)
    cfg = job_config(spec(delivery="exactly-once", transaction_timeout_ms=5000), settings,
                     topic_prefix="run7")
    eo = exactly_once_config(cfg)
    assert eo.commits_topic == "run7.results.commits"
    assert eo.bootstrap == "h:1" and eo.transaction_timeout_ms == 5000
    sink = eo.sink_config("1234-abcd")
    assert sink.transactional_id == "harvest-1234-abcd" and sink.sink_id == "1234-abcd"
    own = job_config(spec(delivery="exactly-once", topic="joined"), settings)
    assert exactly_once_config(own).commits_topic == "joined.commits"


def test_commits_topic_is_validated() -> None:
    with pytest.raises(ConfigError):
        commits_topic("r" * 245)


def test_transactional_producer_settings() -> None:
    conf = TransactionalConfig(bootstrap="h:1", transactional_id="harvest-q", commits_topic="c",
                               sink_id="q", client_config={"security.protocol": "SSL"},
                               transaction_timeout_ms=30_000).librdkafka()
    assert conf["transactional.id"] == "harvest-q"
    assert conf["transaction.timeout.ms"] == 30_000
    assert conf["enable.idempotence"] is True and conf["acks"] == "all"
    assert conf["security.protocol"] == "SSL"
    assert "message.timeout.ms" not in conf  # librdkafka: = the transaction timeout


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"transactional_id": ""}, "transactional_id"),
    ({"transaction_timeout_ms": 10}, "transaction_timeout_ms"),
    ({"attempts": 0}, "attempts"),
    ({"commits_topic": "bad topic"}, "topic"),
])
def test_transactional_config_errors(kwargs: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"bootstrap": "h:1", "transactional_id": "t", "commits_topic": "c",
                            "sink_id": "q"}
    with pytest.raises(ConfigError, match=message):
        TransactionalConfig(**{**base, **kwargs})


@pytest.mark.parametrize("value", ["open", "later:/tmp/x", "committed:"])
def test_stall_hook_must_name_stage_and_file(monkeypatch: pytest.MonkeyPatch,
                                             value: str) -> None:
    monkeypatch.setenv(exactly_once.STALL_ENV, value)
    with pytest.raises(ConfigError, match=exactly_once.STALL_ENV):
        BatchWriter(ExactlyOnceConfig(bootstrap="h:1", commits_topic="c"))


class FakeSink:
    """What the writer asks of the transactional sink."""

    def __init__(self, last_committed: int | None) -> None:
        self.last_committed = last_committed
        self.written: list[tuple[int, list[str], list[bytes | None], list[bytes]]] = []

    def write(self, batch_id: int, topics: list[str], keys: list[bytes | None],
              values: list[bytes]) -> Any:
        self.written.append((batch_id, topics, keys, values))
        self.last_committed = batch_id
        return exactly_once.BatchWrite(batch_id, len(values), 1, 0.0, 0.0)


class FakeBatch:
    """A micro-batch DataFrame that counts how often it is run."""

    def __init__(self, rows: list[tuple[str, bytes | None, bytes]]) -> None:
        self.rows = rows
        self.actions = 0

    def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
        self.actions += 1
        topics, keys, values = zip(*self.rows, strict=True) if self.rows else ((), (), ())
        return pa.table({"topic": pa.array(topics, pa.string()),
                         "key": pa.array(keys, pa.binary()),
                         "value": pa.array(values, pa.binary())})


def writer_with(sink: FakeSink) -> BatchWriter:
    writer = BatchWriter(ExactlyOnceConfig(bootstrap="h:1", commits_topic="c"))
    writer.sink = sink  # type: ignore[assignment]
    writer.bind("q")
    return writer


def test_replayed_batch_is_skipped_without_running_it() -> None:
    sink = FakeSink(last_committed=4)
    writer = writer_with(sink)
    for batch_id in (3, 4):
        batch = FakeBatch([("r", b"k", b"v")])
        writer(batch, batch_id)  # type: ignore[arg-type]
        assert batch.actions == 0  # the stateful join must not run again
    assert sink.written == [] and writer.skipped == [3, 4]


def test_new_batch_runs_once_and_commits_all_its_rows() -> None:
    sink = FakeSink(last_committed=4)
    writer = writer_with(sink)
    batch = FakeBatch([("r", b"id1", b"v1"), ("m", b"0", b"v2"), ("d", None, b"v3")])
    writer(batch, 5)  # type: ignore[arg-type]
    assert batch.actions == 1
    assert sink.written == [(5, ["r", "m", "d"], [b"id1", b"0", None], [b"v1", b"v2", b"v3"])]
    writer(FakeBatch([("r", b"k", b"v")]), 5)  # type: ignore[arg-type]
    assert len(sink.written) == 1 and writer.skipped == [5]


def test_empty_batch_opens_no_transaction() -> None:
    sink = FakeSink(last_committed=None)
    writer = writer_with(sink)
    batch = FakeBatch([])
    writer(batch, 0)  # type: ignore[arg-type]
    assert batch.actions == 1 and sink.written == []
