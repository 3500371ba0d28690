"""Producers → Kafka → Spark join job → Kafka, compared with the oracle (ARCHITECTURE §8).

a. exactness: shedding off and K ≥ max delay ⇒ the results, deduplicated by id, are the
   oracle's exactly (band join with ATR G = 1 and G = 4, equi join with hash G = 4, band
   join with ``[join] index = true`` and ATR G = 2);
b. crash recovery: SIGKILL the `harvest submit` process group mid-stream, restart from
   the checkpoint, and the deduplicated results still equal the oracle (at-least-once);
   with ``[output] delivery = "exactly-once"``, SIGKILL it right after a transaction
   committed (before Spark recorded the batch) and then mid-transaction: a read_committed
   consumer sees every result once, equal to the oracle, and the open transaction is
   aborted by the restart;
c. malformed input interleaved into an input topic lands in the dead-letter topic with
   its reason and bytes, and the results are unaffected.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.topics import deadletter_topic, metrics_topic, results_topic
from pipeline.core.settings import PROJECT_ROOT, Settings
from pipeline.quality.oracle import oracle
from pipeline.spec.model import Spec
from pipeline.testing.streams import exact_spec, max_delay
from tests.e2e.conftest import (
    SERDE,
    encoded_messages,
    publish,
    read_topic,
    run_job,
    workload,
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

BAND = {"streams": ["s1", "s2", "s3"], "window_ms": 1500, "predicate": "band",
        "attribute": "value", "epsilon": 0.3}
EQUI = {"streams": ["s1", "s2", "s3"], "window_ms": 1500, "predicate": "equi",
        "attribute": "a1"}


def result_ids(bootstrap: str, prefix: str) -> Counter[str]:
    """Result id → how many times it was written to ``<prefix>.results``."""
    ids: Counter[str] = Counter()
    for item in read_topic(bootstrap, results_topic(prefix)):
        assert isinstance(item, Consumed), item
        ids[str(item.record["id"])] += 1
    return ids


def truth(spec: Spec, records: list[dict[str, Any]]) -> set[str]:
    ids = {r.id for r in oracle(spec.join, records)}
    assert ids, "the workload must produce join results, or the comparison proves nothing"
    return ids


CASES = [
    pytest.param("sensors", BAND, {"routing": "atr", "groups": 1}, id="band-atr-G1"),
    pytest.param("sensors", BAND, {"routing": "atr", "groups": 4, "segment_ms": 2000},
                 id="band-atr-G4"),
    pytest.param("equi", EQUI, {"routing": "hash", "groups": 4}, id="equi-hash-G4"),
    # [join] index reaches the Spark workers (resolved engine config, not the spec)
    pytest.param("sensors", {**BAND, "index": True},
                 {"routing": "atr", "groups": 2, "segment_ms": 2000}, id="band-index-atr-G2"),
]


def malformed(good: bytes, i: int) -> tuple[str, bytes]:
    """One bad record of each kind, derived from a good one, with its expected reason."""
    kind = i % 3
    if kind == 0:
        return "bad single-object marker", bytes((7 * i + j * 31 + 1) % 256 for j in range(23))
    if kind == 1:
        return "unknown writer schema fingerprint", SERDE.header("news_item") + good[10:]
    return "undecodable sensor_reading body", good[: len(good) - 4]


def with_malformed(good: list[tuple[str, bytes | None, bytes]], every: int
                   ) -> tuple[list[tuple[str, bytes | None, bytes]], dict[bytes, str]]:
    """``good`` with a malformed record after every ``every``-th record of stream s2."""
    messages: list[tuple[str, bytes | None, bytes]] = []
    bad: dict[bytes, str] = {}
    for i, (topic, key, value) in enumerate(good):
        messages.append((topic, key, value))
        if i % every == 7 and topic.endswith(".s2"):
            reason, raw = malformed(value, len(bad))
            bad[raw] = reason
            messages.append((topic, b"bad", raw))
    return messages, bad


@pytest.mark.parametrize(("workload_name", "join", "routing"), CASES)
def test_join_job_equals_oracle_and_dead_letters_malformed_input(
    spark: SparkSession, job_settings: Settings, kafka_bootstrap: str, topic_prefix: str,
    tmp_path: Path, workload_name: str, join: dict[str, Any], routing: dict[str, Any],
) -> None:
    records = workload(workload_name, rate=25.0, duration_s=12.0, disorder="exp:mean=150",
                       seed=11)
    spec = exact_spec(join, max_delay(records), {"workload": workload_name, **routing,
                                                 "max_offsets_per_trigger": 500})
    messages, bad = with_malformed(encoded_messages(records, topic_prefix, workload_name), 25)
    assert len(set(bad.values())) == 3
    publish(kafka_bootstrap, messages)

    report = run_job(spark, spec, job_settings, topic_prefix, tmp_path / "ck")

    # a. exactness: K >= max delay, no shedding => the oracle's results, each once
    got = result_ids(kafka_bootstrap, topic_prefix)
    assert set(got) == truth(spec, records)
    assert max(got.values()) == 1  # no restart here, so not even duplicates
    assert report.input_rows == len(messages)
    assert report.results == len(got)
    metrics = read_topic(kafka_bootstrap, metrics_topic(topic_prefix))
    assert all(isinstance(m, Consumed) for m in metrics)
    instances = {m.record["instance"] for m in metrics if isinstance(m, Consumed)}
    assert instances <= {str(k) for k in range(spec.job.groups)}
    # c. every malformed record is in the dead-letter topic with its reason and bytes
    dead = read_topic(kafka_bootstrap, deadletter_topic(topic_prefix))
    assert report.deadletters == len(dead) == len(bad)
    for item in dead:
        assert isinstance(item, Consumed)
        rec = item.record
        assert rec["reason"].startswith(bad[rec["raw"]]), rec["reason"]
        assert rec["topic"] == f"{topic_prefix}.in.{workload_name}.s2"
        assert rec["partition"] == 0 and rec["offset"] >= 0
    assert {bytes(i.record["raw"]) for i in dead if isinstance(i, Consumed)} == set(bad)


def _committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def _submit(spec_path: Path, prefix: str, checkpoint: Path, settings: Settings,
            log: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HARVEST_BOOTSTRAP_SERVERS": settings.resolved_bootstrap(),
           "HARVEST_LOG_FORMAT": "json", **(extra_env or {})}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.main", "submit", "--spec", str(spec_path),
             "--master", "local[2]", "--topic-prefix", prefix, "--checkpoint", str(checkpoint),
             "--until-idle", "4"],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=out, start_new_session=True,
        )


@pytest.mark.slow
def test_crash_and_restart_from_checkpoint_equals_oracle(
    job_settings: Settings, kafka_bootstrap: str, topic_prefix: str, tmp_path: Path,
) -> None:
    records = workload("sensors", rate=25.0, duration_s=12.0, disorder="exp:mean=150",
                       seed=23)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        '[join]\nstreams = ["s1", "s2", "s3"]\nwindow_ms = 1500\npredicate = "band"\n'
        'attribute = "value"\nepsilon = 0.3\n'
        f'[disorder]\nmode = "fixed"\nslack_ms = {max_delay(records)}\n'
        '[job]\nworkload = "sensors"\nrouting = "atr"\ngroups = 2\nsegment_ms = 2000\n'
        'trigger_ms = 500\nidle_flush_ms = 2000\nshuffle_partitions = 2\n'
        'max_offsets_per_trigger = 200\n'
    )
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "sensors"))
    checkpoint = tmp_path / "ck"
    log = tmp_path / "submit.log"

    first = _submit(spec_path, topic_prefix, checkpoint, job_settings, log)
    try:
        deadline = time.monotonic() + 300
        while _committed_batches(checkpoint) < 2 and first.poll() is None:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        assert first.poll() is None, "the job ended before it could be killed"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    killed_at = _committed_batches(checkpoint)
    assert killed_at * 200 < len(records), "killed too late to test recovery"

    second = _submit(spec_path, topic_prefix, checkpoint, job_settings, log)
    try:
        assert second.wait(timeout=400) == 0, log.read_text()[-3000:]
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()

    from pipeline.spec.model import load_spec

    spec = load_spec(spec_path)
    got = result_ids(kafka_bootstrap, topic_prefix)
    assert set(got) == truth(spec, records)


SPEC_EO = (
    '[join]\nstreams = ["s1", "s2", "s3"]\nwindow_ms = 1500\npredicate = "band"\n'
    'attribute = "value"\nepsilon = 0.3\n'
    '[disorder]\nmode = "fixed"\nslack_ms = {slack}\n'
    '[job]\nworkload = "sensors"\nrouting = "atr"\ngroups = 2\nsegment_ms = 2000\n'
    'trigger_ms = 500\nidle_flush_ms = 2000\nshuffle_partitions = 2\n'
    'max_offsets_per_trigger = 200\n'
    # a transaction left open by a crash can only end by the restart's fencing here
    '[output]\ndelivery = "exactly-once"\ntransaction_timeout_ms = 600000\n'
)


def _stalled(proc: subprocess.Popen[bytes], marker: Path, log: Path) -> int:
    """Wait until the sink's test hook stalls (``marker`` appears), SIGKILL the whole
    process group (driver + JVM); the batch id it stalled in."""
    try:
        deadline = time.monotonic() + 400
        while not marker.exists():
            assert proc.poll() is None, "the job ended before its sink stalled: " + (
                log.read_text()[-3000:])
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(0.5)  # the marker's content is written
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return int(json.loads(marker.read_text())["batch_id"])


def _log_events(log: Path, event: str) -> list[dict[str, Any]]:
    """The JSON log lines of ``event`` in the submit log."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if event in line and line.startswith("{"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return [e for e in out if e.get("event") == event]


def _consume_read_committed(bootstrap: str, topic: str, tmp_path: Path) -> Counter[str]:
    """``harvest consume TOPIC --read-committed`` from the beginning: id → count."""
    env = {**os.environ, "HARVEST_BOOTSTRAP_SERVERS": bootstrap}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.main", "consume", topic, "--from-beginning",
         "--read-committed", "--format", "jsonl", "--timeout", "5"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, check=True, timeout=300)
    return Counter(json.loads(line)["id"] for line in done.stdout.decode().splitlines())


@pytest.mark.slow
def test_exactly_once_crash_after_commit_and_mid_transaction_equals_oracle(
    job_settings: Settings, kafka_bootstrap: str, topic_prefix: str, tmp_path: Path,
) -> None:
    from connectors.io.transactional import (
        TransactionalConfig,
        last_stable_offsets,
        read_last_committed,
    )
    from pipeline.spark.exactly_once import STALL_ENV
    from pipeline.spec.model import load_spec

    records = workload("sensors", rate=25.0, duration_s=12.0, disorder="exp:mean=150",
                       seed=23)
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC_EO.format(slack=max_delay(records)))
    publish(kafka_bootstrap, encoded_messages(records, topic_prefix, "sensors"))
    checkpoint = tmp_path / "ck"
    log = tmp_path / "submit.log"
    outputs = (results_topic(topic_prefix), metrics_topic(topic_prefix),
               deadletter_topic(topic_prefix))

    # 1. killed right after a transaction committed, before Spark's commit log has it
    first = _submit(spec_path, topic_prefix, checkpoint, job_settings, log,
                    {STALL_ENV: f"committed:{tmp_path / 'stall1'}"})
    committed = _stalled(first, tmp_path / "stall1", log)
    assert not (checkpoint / "commits" / str(committed)).exists()
    query_id = json.loads((checkpoint / "metadata").read_text())["id"]
    commits = TransactionalConfig(bootstrap=kafka_bootstrap, transactional_id="unused",
                                  commits_topic=f"{outputs[0]}.commits", sink_id=query_id)
    assert read_last_committed(commits) == committed

    # 2. the restart skips that batch (not run again), then is killed mid-transaction
    second = _submit(spec_path, topic_prefix, checkpoint, job_settings, log,
                     {STALL_ENV: f"open:{tmp_path / 'stall2'}"})
    open_batch = _stalled(second, tmp_path / "stall2", log)
    assert open_batch > committed
    skipped = _log_events(log, "micro-batch already committed to Kafka; skipped")
    assert [e["batch_id"] for e in skipped] == [committed]
    stable = {t: last_stable_offsets(kafka_bootstrap, t) for t in outputs}
    assert any(lso < hw for parts in stable.values() for lso, hw in parts.values()), stable
    assert open_batch * 200 < len(records), "stalled too late to test recovery"

    # 3. the restart fences the dead driver's producer: its transaction is aborted
    third = _submit(spec_path, topic_prefix, checkpoint, job_settings, log)
    try:
        assert third.wait(timeout=400) == 0, log.read_text()[-3000:]
    finally:
        if third.poll() is None:
            os.killpg(third.pid, signal.SIGKILL)
            third.wait()
    for topic in outputs:  # read_committed readers reach the end: nothing left open
        for lso, hw in last_stable_offsets(kafka_bootstrap, topic).values():
            assert lso == hw, (topic, lso, hw)

    spec = load_spec(spec_path)
    got = _consume_read_committed(kafka_bootstrap, outputs[0], tmp_path)
    assert max(got.values()) == 1, [i for i, n in got.items() if n > 1][:5]
    assert set(got) == truth(spec, records)
    # the aborted records are still in the log: a read_uncommitted reader sees more
    seen = sum(len(read_topic(kafka_bootstrap, t)) for t in outputs)
    kept = sum(len(list(consume([t], config=ConsumerConfig(
        bootstrap=kafka_bootstrap, from_beginning=True, until_end=True, idle_timeout_s=5.0,
        read_committed=True), serde=SERDE))) for t in outputs)
    assert seen > kept
