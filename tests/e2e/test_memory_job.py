"""Producers → Kafka → Spark join job with ``[memory] mode = "prob"`` → Kafka (issue #18):
every instance's join windows stay within M tuples (the metrics' ``window_state``), the
policy evicts, and every result is a true one (precision 1, each once)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed
from connectors.io.topics import metrics_topic, results_topic
from pipeline.core.settings import Settings
from pipeline.quality.oracle import oracle
from pipeline.spec.model import parse_spec
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import encoded_messages, publish, read_topic, run_job, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

EQUI = {"streams": ["s1", "s2", "s3"], "window_ms": 1500, "predicate": "equi",
        "attribute": "a1"}
BUDGET = 30  # per instance; the exact join holds ~3 × 25/s × 1.5 s ≈ 115 tuples


def test_prob_memory_bound_holds_in_the_spark_job(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path,
) -> None:
    records = workload("equi", rate=25.0, duration_s=12.0, disorder="exp:mean=150", seed=5)
    base = exact_spec(EQUI, max_delay(records), {"workload": "equi", "routing": "hash",
                                                 "groups": 2, "max_offsets_per_trigger": 500})
    spec = parse_spec({**base.model_dump(exclude={"inputs", "output"}),
                       "memory": {"mode": "prob", "max_tuples": BUDGET}})
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "equi"))

    report = run_job(spark, spec, job_settings, topic_prefix, tmp_path / "ck")

    got: Counter[str] = Counter()
    for item in read_topic(kafka_bootstrap, results_topic(topic_prefix)):
        assert isinstance(item, Consumed), item
        got[str(item.record["id"])] += 1
    truth = {r.id for r in oracle(spec.join, records)}
    assert got and set(got) <= truth and max(got.values()) == 1  # precision 1, once
    assert len(got) < len(truth)  # the bound did cost results
    assert report.results == len(got)
    extras: list[dict[str, Any]] = []
    for m in read_topic(kafka_bootstrap, metrics_topic(topic_prefix)):
        assert isinstance(m, Consumed)
        extra = m.record["extra"]
        extras.append(json.loads(extra) if isinstance(extra, str) else dict(extra))
    assert extras and all("window_state" in e for e in extras)
    assert max(e["window_state"] for e in extras) <= BUDGET
    assert all(e["memory_budget"] == BUDGET for e in extras)
    assert max(e["evictions"] for e in extras) > 0
