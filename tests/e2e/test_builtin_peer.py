"""The peer of `harvest bench peer` and `bench pipeline` — Spark's built-in stream-stream
joins (:mod:`pipeline.spark.builtin_join`) — gives the oracle's results once: the chained
equi-join, and the band join written as the standard workaround (an equi-join on
``⌊a/ε⌋`` with the later streams exploded to the neighbouring buckets, then the exact
band filter). A peer that missed or repeated results would make the benchmark's ratio
meaningless."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed
from connectors.io.topics import results_topic
from pipeline.core.settings import Settings
from pipeline.operators.events import Member, result_id
from pipeline.quality.oracle import oracle
from pipeline.spark.builtin_join import start_builtin_join
from pipeline.spark.submit import job_config, prepare_topics
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import SERDE, encoded_messages, publish, read_topic, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

CASES = [
    pytest.param("sensors", {"streams": ["s1", "s2", "s3"], "window_ms": 1500,
                             "predicate": "band", "attribute": "value", "epsilon": 0.3},
                 id="band"),
    pytest.param("equi", {"streams": ["s1", "s2", "s3"], "window_ms": 1500,
                          "predicate": "equi", "attribute": "a1"}, id="equi"),
]


@pytest.mark.parametrize(("workload_name", "join"), CASES)
def test_builtin_peer_equals_oracle(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path, workload_name: str, join: dict[str, Any],
) -> None:
    records = workload(workload_name, rate=25.0, duration_s=12.0, disorder="exp:mean=150",
                       seed=13)
    delay = max_delay(records)
    spec = exact_spec(join, delay, {"workload": workload_name,
                                    "max_offsets_per_trigger": 600})
    cfg = job_config(spec, job_settings, checkpoint=str(tmp_path / "ck"),
                     topic_prefix=topic_prefix)
    prepare_topics(cfg, job_settings)
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, workload_name))

    query = start_builtin_join(spark, cfg, SERDE, delay)
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    got: Counter[str] = Counter()
    for item in read_topic(kafka_bootstrap, results_topic(topic_prefix)):
        assert isinstance(item, Consumed), item
        members = [Member(str(m["stream"]), int(m["seq"]), int(m["event_time"]))
                   for m in item.record["members"]]
        got[result_id(members)] += 1
    truth = {r.id for r in oracle(spec.join, records)}
    assert truth, "the workload must produce join results, or the comparison proves nothing"
    assert set(got) == truth
    assert max(got.values()) == 1
