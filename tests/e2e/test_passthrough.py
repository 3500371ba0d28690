"""Kafka → Spark job in pass-through mode → Kafka: N records in, the same N out."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed
from connectors.io.topics import deadletter_topic, results_topic
from pipeline.core.settings import Settings
from pipeline.testing.streams import exact_spec
from tests.e2e.conftest import encoded_messages, publish, read_topic, run_job, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]


def test_passthrough_returns_every_record_unchanged(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path,
) -> None:
    records = workload("sensors", rate=20.0, duration_s=10.0, disorder="exp:mean=200", seed=3)
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "sensors"))
    spec = exact_spec({"streams": ["s1", "s2", "s3"], "window_ms": 1000, "predicate": "band",
                       "attribute": "value", "epsilon": 0.1}, 0, {"workload": "sensors"})

    report = run_job(spark, spec, job_settings, topic_prefix, tmp_path / "ck",
                     passthrough=True)

    out = read_topic(kafka_bootstrap, results_topic(topic_prefix))
    assert all(isinstance(item, Consumed) for item in out)
    got = sorted((item.record for item in out if isinstance(item, Consumed)),
                 key=lambda r: (r["stream"], r["seq"]))
    want = sorted(records, key=lambda r: (r["stream"], r["seq"]))
    assert len(got) == len(records) == report.input_rows == report.results
    assert got == want
    assert read_topic(kafka_bootstrap, deadletter_topic(topic_prefix)) == []
