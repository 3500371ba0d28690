"""A drain whose micro-batches each make over a million results completes (issue 29):
the processor hands its output to Spark in bounded Arrow frames, so the JVM's Arrow
allocator never sees one batch's results at once, with the session's default memory
(``local[2]``, 1 GB driver) at ``groups`` = 1 and 2 — at 2, the setting whose drain died
with ``OutOfMemoryException`` in ``ArrowOutputProcessorImpl.loadBatch``, over two
micro-batches (state carried between them); at 1 over one, to keep the test short.

The input is small and the output large: an equi join on two keys (two instances under
hash routing with G = 2), :data:`N` tuples per stream, key and segment, all of a segment
within one window, so each segment gives ``N³`` results per key (> 1 M per segment). The
backlog drains in one micro-batch per segment (``max_offsets_per_trigger``); segments
lie further apart than the window, so no result spans two. Every result is counted once (the topic's
end offsets), and a sample read back is a true result: its members share a key and a
segment (both encoded in ``seq``) and its id is theirs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.topics import results_topic
from pipeline.core.settings import Settings
from pipeline.operators.events import Member, result_id
from pipeline.spark.job import start_job
from pipeline.spark.submit import job_config, prepare_topics
from pipeline.testing.streams import exact_spec
from tests.e2e.conftest import SERDE, encoded_messages, publish

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

N = 81  # 81³ = 531,441 results per key and segment
KEYS = (1, 2)  # stable_hash mod 2: instance 1 and instance 0
SEGMENT_MS = 10_000  # > the window: no result spans two segments
STEP_MS = 10  # N tuples of a stream and key within N · STEP_MS < the window
STREAMS = ("s1", "s2", "s3")
EQUI = {"streams": list(STREAMS), "window_ms": 2_000, "predicate": "equi",
        "attribute": "a1"}
PER_BATCH = len(KEYS) * N ** 3


def records(segments: int) -> list[dict[str, Any]]:
    """In arrival order (= event time): ``seq`` = segment · 10,000 + i · 10 + key."""
    out = []
    for seg in range(segments):
        for i in range(N):
            t = seg * SEGMENT_MS + i * STEP_MS
            for key in KEYS:
                for s in STREAMS:
                    out.append({"stream": s, "seq": seg * 10_000 + i * 10 + key,
                                "event_time": t, "arrival_time": t, "value": 1.0,
                                "a1": key, "x": 0.0, "y": 0.0})
    return out


def drain(query: Any, input_rows: int, results: int, max_s: float
          ) -> list[tuple[int, int]]:
    """``(input rows, results)`` of each micro-batch, once ``input_rows`` were read and
    ``results`` written (or ``max_s`` passed); then the query is stopped."""
    seen: dict[int, tuple[int, int]] = {}
    deadline = time.monotonic() + max_s
    try:
        while query.isActive and time.monotonic() < deadline:
            for p in query.recentProgress:
                out = p.observedMetrics.get("out") if p.observedMetrics else None
                seen[p.batchId] = (int(p.numInputRows), int(out["results"]) if out else 0)
            done = [sum(c) for c in zip(*seen.values(), strict=True)] if seen else [0, 0]
            if done[0] >= input_rows and done[1] >= results:
                break
            time.sleep(0.5)
    finally:
        query.stop()
    return [seen[b] for b in sorted(seen)]


def end_offsets(bootstrap: str, topic: str) -> int:
    """Records in ``topic``: the sum of its partitions' high watermarks."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "harvest-e2e-ends"})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in parts)
    finally:
        consumer.close()


def sample(bootstrap: str, topic: str, n: int) -> list[dict[str, Any]]:
    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, max_records=n,
                         idle_timeout_s=5.0)
    out = []
    for item in consume([topic], config=cfg, serde=SERDE):
        assert isinstance(item, Consumed), item
        out.append(item.record)
    return out


@pytest.mark.parametrize(("groups", "segments"), [(1, 1), (2, 2)])
def test_a_drain_of_million_result_batches_completes(
        spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
        tmp_path: Path, groups: int, segments: int) -> None:
    rows = records(segments)
    spec = exact_spec(EQUI, 0, {"workload": "equi", "routing": "hash", "groups": groups,
                                "max_offsets_per_trigger": len(rows) // segments})
    publish(kafka_bootstrap, encoded_messages(rows, topic_prefix, "equi"))
    cfg = job_config(spec, job_settings, mode="join", checkpoint=str(tmp_path / "ck"),
                     topic_prefix=topic_prefix)
    prepare_topics(cfg, job_settings)

    query = start_job(spark, cfg, SERDE)
    batches = drain(query, len(rows), segments * PER_BATCH, max_s=600)
    assert query.exception() is None

    fed = [b for b in batches if b[0] > 0]
    assert [b[0] for b in fed] == [len(rows) // segments] * segments
    assert all(b[1] > 1_000_000 for b in fed), batches
    assert sum(b[1] for b in batches) == segments * PER_BATCH
    assert end_offsets(kafka_bootstrap, results_topic(topic_prefix)) == segments * PER_BATCH
    for rec in sample(kafka_bootstrap, results_topic(topic_prefix), 2_000):
        members = rec["members"]
        assert len({m["seq"] % 10 for m in members}) == 1  # one key
        assert len({m["seq"] // 10_000 for m in members}) == 1  # one segment
        assert rec["id"] == result_id([Member(m["stream"], m["seq"], m["event_time"])
                                       for m in members])
