"""Fixtures and helpers of the end-to-end tests: one shared Spark session, producing a
generated workload to a real broker, running the job in-process, reading topics back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed, ConsumerConfig, Undecodable, consume
from connectors.io.producer import publish_encoded
from connectors.io.producer_config import ProducerConfig
from connectors.io.serde import AvroSerde
from connectors.io.topics import input_topic, schema_for
from connectors.workloads import WorkloadSpec, generate, parse_model
from pipeline.core.settings import PROJECT_ROOT, Settings, load_settings
from pipeline.spark.session import SessionConfig, build_session, connector_jars
from pipeline.spark.submit import JobReport, job_config, submit
from pipeline.spec.model import Spec

SERDE = AvroSerde.from_dir(PROJECT_ROOT / "schemas")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session (2 cores, connector jars) shared by the in-process tests."""
    settings = load_settings()
    session = build_session(SessionConfig(
        master="local[2]", app_name="harvest-e2e", jars=connector_jars(settings),
        shuffle_partitions=2,
    ))
    yield session
    session.stop()


@pytest.fixture
def job_settings(kafka_bootstrap: str, tmp_path: Path) -> Settings:
    """Settings pointing at the test broker; checkpoints under the test's tmp dir."""
    return load_settings(bootstrap_servers=kafka_bootstrap, cache_dir=tmp_path / "cache")


def workload(name: str, *, rate: float, duration_s: float, disorder: str,
             seed: int) -> list[dict[str, Any]]:
    """A generated workload (3 streams s1..s3) in arrival order."""
    spec = WorkloadSpec(name, streams=3, rates=(rate,), duration_s=duration_s,  # type: ignore[arg-type]
                        disorder=(parse_model(disorder),), seed=seed)
    return generate(spec)


def encoded_messages(records: Sequence[Mapping[str, Any]], prefix: str,
                     workload_name: str) -> list[tuple[str, bytes | None, bytes]]:
    """``(topic, key, value)`` per record, single-object encoded, in arrival order."""
    name = schema_for(workload_name)
    values = SERDE.encode_many(name, records)
    return [(input_topic(prefix, workload_name, str(r["stream"])), str(r["stream"]).encode(), v)
            for r, v in zip(records, values, strict=True)]


def publish(bootstrap: str, messages: Sequence[tuple[str, bytes | None, bytes]]) -> None:
    """Produce ``messages`` to the real broker; every one must be acknowledged."""
    report = publish_encoded(messages, config=ProducerConfig(bootstrap=bootstrap))
    report.raise_on_failure()
    assert report.delivered == len(messages)


def read_topic(bootstrap: str, topic: str) -> list[Consumed | Undecodable]:
    """Every record of ``topic`` from the beginning to its current end."""
    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                         idle_timeout_s=5.0)
    return list(consume([topic], config=cfg, serde=SERDE))


def run_job(spark: SparkSession, spec: Spec, settings: Settings, prefix: str,
            checkpoint: Path, *, passthrough: bool = False,
            until_idle_s: float = 4.0) -> JobReport:
    """Run the job in-process on the shared session until it has been idle."""
    cfg = job_config(spec, settings, mode="passthrough" if passthrough else "join",
                     checkpoint=str(checkpoint), topic_prefix=prefix)
    return submit(spark, cfg, settings, until_idle_s)
