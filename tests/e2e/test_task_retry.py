"""A Spark task failure mid-run: ``HARVEST_TEST_FAIL_TASK`` fails the first attempt of the
join tasks of one micro-batch right after they saved state (pipeline.spark.processor),
Spark runs them again (master ``local[2,4]``: up to 4 attempts), and the job's
exactly-once output, read with read_committed, equals the oracle with no result twice —
the retried attempt started from the committed state, not from the failed attempt's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from connectors.io.topics import results_topic
from pipeline.core.settings import PROJECT_ROOT
from pipeline.quality.oracle import oracle
from pipeline.spark.processor import FAIL_TASK_ENV
from pipeline.spec.model import load_spec
from pipeline.testing.streams import max_delay
from tests.e2e.conftest import encoded_messages, publish, workload

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

SPEC = (
    '[join]\nstreams = ["s1", "s2", "s3"]\nwindow_ms = 1500\npredicate = "band"\n'
    'attribute = "value"\nepsilon = 0.3\n'
    '[disorder]\nmode = "fixed"\nslack_ms = {slack}\n'
    '[job]\nworkload = "sensors"\nrouting = "atr"\ngroups = 2\nsegment_ms = 2000\n'
    'trigger_ms = 500\nidle_flush_ms = 2000\nshuffle_partitions = 2\n'
    'max_offsets_per_trigger = 200\n'
    '[output]\ndelivery = "exactly-once"\n'
)
FAILED_BATCH = 2


def read_committed_ids(bootstrap: str, topic: str) -> Counter[str]:
    """``harvest consume TOPIC --read-committed`` from the beginning: id → count."""
    env = {**os.environ, "HARVEST_BOOTSTRAP_SERVERS": bootstrap}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.main", "consume", topic, "--from-beginning",
         "--read-committed", "--format", "jsonl", "--timeout", "5"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, check=True, timeout=300)
    return Counter(json.loads(line)["id"] for line in done.stdout.decode().splitlines())


def test_a_failed_and_retried_join_task_gives_the_oracle_results(
        kafka_bootstrap: str, topic_prefix: str, tmp_path: Path) -> None:
    records = workload("sensors", rate=25.0, duration_s=12.0, disorder="exp:mean=150",
                       seed=31)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC.format(slack=max_delay(records)))
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "sensors"))
    assert len(records) > (FAILED_BATCH + 2) * 200, "the failure must come mid-run"
    log = tmp_path / "submit.log"
    env = {**os.environ, "HARVEST_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "HARVEST_LOG_FORMAT": "json", FAIL_TASK_ENV: str(FAILED_BATCH)}
    with log.open("ab") as out:
        job = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.main", "submit", "--spec", str(spec_path),
             "--master", "local[2,4]", "--topic-prefix", topic_prefix,
             "--checkpoint", str(tmp_path / "ck"), "--until-idle", "4"],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=out, start_new_session=True)
    try:
        assert job.wait(timeout=500) == 0, log.read_text()[-4000:]
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    text = log.read_text(errors="replace")
    assert "InjectedTaskFailureError" in text, text[-3000:]
    assert f"micro-batch {FAILED_BATCH} fails on purpose" in text

    truth = {r.id for r in oracle(load_spec(spec_path).join, records)}
    assert truth
    got = read_committed_ids(kafka_bootstrap, results_topic(topic_prefix))
    assert max(got.values()) == 1, [i for i, n in got.items() if n > 1][:5]
    assert set(got) == truth
