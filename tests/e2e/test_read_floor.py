"""The read-and-decode floor and the raw read of `harvest bench peer` read every record of
the job's input topics: the raw read counts every record, the floor every valid one
(rejected records are not the floor's to pass on)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.core.settings import Settings
from pipeline.spark.floor import start_raw_read, start_read_floor
from pipeline.spark.submit import job_config, prepare_topics
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import SERDE, encoded_messages, publish, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]


def _counted(query: object) -> tuple[int, int]:
    """Input rows and the ``valid`` rows the query's ``out`` observation counted."""
    rows = valid = 0
    for p in query.recentProgress:  # type: ignore[attr-defined]
        rows += int(p.numInputRows)
        out = (p.observedMetrics or {}).get("out")
        if out is not None:
            valid += int(out["valid"])
    return rows, valid


def test_raw_read_and_floor_count_every_record(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path,
) -> None:
    records = workload("equi", rate=40.0, duration_s=10.0, disorder="exp:mean=150", seed=5)
    spec = exact_spec({"streams": ["s1", "s2", "s3"], "window_ms": 1000, "predicate": "equi",
                       "attribute": "a1"}, max_delay(records),
                      {"workload": "equi", "max_offsets_per_trigger": 300})
    messages = encoded_messages(records, topic_prefix, "equi")
    junk = [(messages[0][0], None, b"\x00not avro at all")] * 7
    publish(kafka_bootstrap, messages + junk)
    for name, start in (("raw", lambda c: start_raw_read(spark, c)),
                        ("floor", lambda c: start_read_floor(spark, c, SERDE))):
        cfg = job_config(spec, job_settings, checkpoint=str(tmp_path / name),
                         topic_prefix=topic_prefix)
        prepare_topics(cfg, job_settings)
        query = start(cfg)
        try:
            query.processAllAvailable()
        finally:
            query.stop()
        rows, valid = _counted(query)
        assert rows == len(records) + len(junk), name
        assert valid == (rows if name == "raw" else len(records)), name
