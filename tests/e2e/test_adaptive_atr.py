"""Adaptive ATR in the Spark job (issue 31; Gu et al. §2.2–2.6, ARCHITECTURE §6): on
``local[2]`` with ``groups = 2``, least-loaded segments, master switching and the T climb,
the deduplicated results equal the oracle through a master switch and a restart from the
checkpoint.

Stream s1 (the configured first master) is slow and s2, s3 are fast, so Eq. 2's overhead
falls by far more than ``switch_margin`` once the fast stream leads: the routing state
in the checkpoint must record the switch before the first run is stopped mid-stream
(``StreamingQuery.stop``, so the running micro-batch is not committed and the restart
replays it under the routing state it first had).

With ``HARVEST_E2E_RECORD`` set to a path, the test writes what it observed there as JSON
(the switch, the batches before the stop and after the restart, the result counts): the
``spark_e2e`` part of `harvest bench diffusion` runs this test and reads it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.workloads import WorkloadSpec, generate, parse_model
from pipeline.core.settings import Settings
from pipeline.spark.job import start_job
from pipeline.spark.route_log import read_states
from pipeline.spark.submit import job_config, prepare_topics
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import SERDE, encoded_messages, publish, run_job
from tests.e2e.test_join_job import BAND, result_ids, truth

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

ADAPTIVE = {"routing": "atr", "groups": 2, "master_stream": "s1",
            "segment_keys": "least-loaded", "adapt_master": True, "adapt_interval_ms": 1500,
            "switch_margin": 0.1, "adapt_segment": True, "segment_ms": 1000,
            "segment_min_ms": 500, "segment_max_ms": 3000, "segment_step_ms": 500,
            "max_offsets_per_trigger": 150}


def _switches(checkpoint: Path) -> list[list[int]]:
    """The master switches the newest routing state records: [boundary, old, new]."""
    states = read_states(str(checkpoint))
    if not states:
        return []
    router: dict[str, Any] | None = states[max(states)]["router"]
    return [] if router is None else [list(s) for s in router["switches"]]


def _committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.is_dir() else 0


def test_adaptive_atr_equals_the_oracle_through_a_master_switch_and_a_restart(
        spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
        tmp_path: Path) -> None:
    records = generate(WorkloadSpec(
        "sensors", streams=3, rates=(4.0, 30.0, 30.0), duration_s=12.0,
        disorder=(parse_model("exp:mean=150"),), seed=5))
    spec = exact_spec(BAND, max_delay(records), {"workload": "sensors", **ADAPTIVE})
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "sensors"))
    checkpoint = tmp_path / "ck"

    # 1. run until the routing state holds a master switch, then stop mid-stream
    cfg = job_config(spec, job_settings, mode="join", checkpoint=str(checkpoint),
                     topic_prefix=topic_prefix)
    prepare_topics(cfg, job_settings)
    query = start_job(spark, cfg, SERDE)
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and query.isActive:
            if _switches(checkpoint) and _committed(checkpoint) >= 3:
                break
            time.sleep(0.2)
    finally:
        query.stop()
    assert query.exception() is None
    switched = _switches(checkpoint)
    assert switched and switched[0][1:] == [0, switched[0][2]] and switched[0][2] in (1, 2), \
        f"no master switch s1 → a fast stream before the stop: {switched}"
    stopped_at = _committed(checkpoint)

    # 2. restart from the checkpoint and run to the end of the input
    report = run_job(spark, spec, job_settings, topic_prefix, checkpoint)
    assert report.input_rows > 0 and _committed(checkpoint) > stopped_at  # mid-stream

    got = result_ids(kafka_bootstrap, topic_prefix)
    assert set(got) == truth(spec, records)  # deduplicated by id (at-least-once)
    final = read_states(str(checkpoint))
    router = final[max(final)]["router"]
    assert router["master"] in (1, 2) and len(router["log"]["epochs"]) >= 1
    _record(switches=switched, batches_before_stop=stopped_at,
            batches_after_restart=_committed(checkpoint), input_records=len(records),
            results_distinct=len(got), results_written=sum(got.values()),
            oracle_results=len(truth(spec, records)),
            equals_oracle=set(got) == truth(spec, records), final_master=router["master"],
            epochs=len(router["log"]["epochs"]), groups=ADAPTIVE["groups"])


def _record(**observed: Any) -> None:
    """What the test observed, for `harvest bench diffusion --only spark_e2e`."""
    path = os.environ.get("HARVEST_E2E_RECORD")
    if path:
        Path(path).write_text(json.dumps(observed, indent=1))
