"""Leader failover on the session's three-node cluster (``kafka_cluster``): while `harvest
produce` (paced, acks=all, idempotent) and `harvest submit` (exactly-once output,
``--max-restarts``) run, the node leading an input partition is SIGKILLed and started
again, then the node leading the results partition. Every record the producer sent is
delivered once and read by Spark, and the read_committed results equal the oracle with
no result twice."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from connectors.io.admin import leader_of
from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.topics import input_topic, results_topic
from pipeline.core.jsonl import read_jsonl
from pipeline.core.settings import PROJECT_ROOT
from pipeline.quality.oracle import oracle
from pipeline.spec.model import load_spec
from pipeline.testing.streams import max_delay
from tests.conftest import KafkaCluster
from tests.e2e.conftest import SERDE

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

#: seconds a killed node stays down before it is started again
DOWN_S = 6.0


def spawn(args: list[str], env: Mapping[str, str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("ab") as log:
        return subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", *args],
                                cwd=PROJECT_ROOT, env=dict(env), stdout=log, stderr=log,
                                start_new_session=True)


def events(log: Path, name: str) -> list[dict[str, object]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and name in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == name:
                out.append(event)
    return out


def wait_for(pred: Callable[[], bool], timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, f"{what}; log tail:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def records_of(bootstrap: str, topic: str, read_committed: bool = False) -> list[Consumed]:
    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                         idle_timeout_s=5.0, read_committed=read_committed)
    items = list(consume([topic], config=cfg, serde=SERDE))
    assert all(isinstance(i, Consumed) for i in items)
    return [i for i in items if isinstance(i, Consumed)]


def kill_leader_and_restart(cluster: KafkaCluster, topic: str) -> int:
    """SIGKILL the node leading ``topic``[0], wait ``DOWN_S``, start it again; its id."""
    node = leader_of(cluster.bootstrap, topic)
    killed = cluster.harvest("kafka", "stop-node", str(node), "--kill")
    assert killed.returncode == 0, killed.stderr
    time.sleep(DOWN_S)
    started = cluster.harvest("kafka", "start-node", str(node), "--timeout", "120")
    assert started.returncode == 0, started.stdout + started.stderr[-2000:]
    return node


def test_leader_failover_under_a_paced_producer_and_exactly_once_job(
        kafka_cluster: KafkaCluster, topic_prefix: str, tmp_path: Path) -> None:
    env, bootstrap = kafka_cluster.env, kafka_cluster.bootstrap
    dump = tmp_path / "in.jsonl"
    produce = ["produce", "sensors", "--rate", "30", "--duration", "40", "--speedup", "1",
               "--disorder", "exp:mean=150", "--seed", "13", "--topic-prefix", topic_prefix]
    assert kafka_cluster.harvest(*produce, "--dry-run", "--dump", str(dump)).returncode == 0
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        '[join]\nstreams = ["s1", "s2", "s3"]\nwindow_ms = 1500\npredicate = "band"\n'
        'attribute = "value"\nepsilon = 0.3\n'
        f'[disorder]\nmode = "fixed"\nslack_ms = {max_delay(read_jsonl(dump))}\n'
        '[job]\nworkload = "sensors"\nrouting = "atr"\ngroups = 1\ntrigger_ms = 1000\n'
        'idle_flush_ms = 2000\nshuffle_partitions = 1\n'
        '[output]\ndelivery = "exactly-once"\n')
    job_log, producer_log = tmp_path / "submit.log", tmp_path / "produce.log"
    job = spawn(["submit", "--spec", str(spec_path), "--master", "local[2]",
                 "--topic-prefix", topic_prefix, "--checkpoint", str(tmp_path / "ck"),
                 "--until-idle", "20", "--max-restarts", "4"], env, job_log)
    producer: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: any(int(str(e.get("batches", 0))) >= 1
                             for e in events(job_log, "job progress")) or job.poll() is not None,
                 300, "the job did not start", job_log)
        assert job.poll() is None, job_log.read_text()[-3000:]
        producer = spawn([*produce, "--dump", str(dump)], env, producer_log)
        time.sleep(10)
        input_node = kill_leader_and_restart(
            kafka_cluster, input_topic(topic_prefix, "sensors", "s1"))
        time.sleep(3)
        results_node = kill_leader_and_restart(kafka_cluster, results_topic(topic_prefix))
        code = producer.wait(timeout=300)
        assert job.wait(timeout=600) == 0, job_log.read_text()[-4000:]
    finally:
        for proc in (producer, job):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()

    text = producer_log.read_text(errors="replace")
    sent = re.search(r"sent ([\d,]+)\s+delivered ([\d,]+)\s+failed ([\d,]+)", text)
    assert sent, text[-2000:]
    n_sent, delivered, failed = (int(g.replace(",", "")) for g in sent.groups())
    produced = read_jsonl(dump)
    assert (code, n_sent, delivered, failed) == (0, len(produced), len(produced), 0), text[-2000:]

    # the input topics hold every produced record once (acks=all + idempotence)
    held = [c.record for s in ("s1", "s2", "s3")
            for c in records_of(bootstrap, input_topic(topic_prefix, "sensors", s))]
    keys = Counter((r["stream"], r["seq"]) for r in held)
    assert len(keys) == len(produced) and max(keys.values()) == 1

    # Spark read every one, and the read_committed results are the oracle's, once each
    report = json.loads([line for line in job_log.read_text().splitlines()
                         if line.startswith("{") and '"restarts"' in line
                         and '"event"' not in line][-1])
    assert report["input_rows"] >= len(held)
    truth = {r.id for r in oracle(load_spec(spec_path).join, held)}
    assert truth
    got = Counter(str(c.record["id"])
                  for c in records_of(bootstrap, results_topic(topic_prefix), True))
    assert max(got.values()) == 1, [i for i, n in got.items() if n > 1][:5]
    assert set(got) == truth
    print(f"killed node {input_node} (input leader) and node {results_node} (results "
          f"leader); job restarts {report['restarts']}; results {len(got)}")
