"""A broker restart under a supervised job: while `harvest produce` (paced) and `harvest
submit --max-restarts` run, the broker is stopped and started again on the same data
directory. The producer rides through (idempotent, retries) or exits 1 naming the records
it could not deliver — no silent loss; the job rides through or is restarted from its
checkpoint. Every record the broker holds (all that the producer reports delivered) is
read by Spark, and the results, deduplicated by id, equal the oracle over them.

A private plaintext broker under this module's own HARVEST_CACHE_DIR (another port than
the session's broker, which keeps running)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.ports import ephemeral_port
from pipeline.core.jsonl import read_jsonl
from pipeline.core.settings import PROJECT_ROOT, load_settings
from pipeline.quality.oracle import oracle
from pipeline.spec.model import load_spec
from pipeline.testing.streams import max_delay
from tests.e2e.conftest import SERDE

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e, pytest.mark.slow]

PREFIX = "restart"
OUTAGE_S = 15.0


def harvest(args: list[str], env: Mapping[str, str], timeout: float = 240.0
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline.cli.main", *args],
                          cwd=PROJECT_ROOT, env=dict(env), capture_output=True, text=True,
                          timeout=timeout, check=False)


def spawn(args: list[str], env: Mapping[str, str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("ab") as log:
        return subprocess.Popen([sys.executable, "-m", "pipeline.cli.main", *args],
                                cwd=PROJECT_ROOT, env=dict(env), stdout=log, stderr=log,
                                start_new_session=True)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str]]:
    """`harvest kafka up` under a private HARVEST_CACHE_DIR: (environment, bootstrap)."""
    cache = tmp_path_factory.mktemp("restart-cache")
    (cache / "jars").symlink_to(load_settings().jars_dir.resolve(), target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVEST_")}
    env.update(HARVEST_CACHE_DIR=str(cache), HARVEST_KAFKA_PORT=str(ephemeral_port()),
               HARVEST_LOG_FORMAT="json")
    config = BrokerConfig.from_settings(load_settings(cache_dir=cache))
    try:
        done = harvest(["kafka", "up", "--timeout", "120"], env)
        assert done.returncode == 0, done.stdout + done.stderr
        bootstrap = config.bootstrap_file.read_text().strip()
        env["HARVEST_BOOTSTRAP_SERVERS"] = bootstrap
        yield env, bootstrap
    finally:
        LocalKafka(config).down()


def _records(bootstrap: str, topic: str) -> list[Consumed]:
    cfg = ConsumerConfig(bootstrap=bootstrap, from_beginning=True, until_end=True,
                         idle_timeout_s=5.0)
    items = list(consume([topic], config=cfg, serde=SERDE))
    assert all(isinstance(i, Consumed) for i in items)
    return [i for i in items if isinstance(i, Consumed)]


def _events(log: Path, name: str) -> list[dict[str, object]]:
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


def _wait(pred: object, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what}; log tail:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def test_broker_restart_with_a_supervised_job_loses_nothing(
        broker: tuple[dict[str, str], str], tmp_path: Path) -> None:
    env, bootstrap = broker
    dump = tmp_path / "in.jsonl"
    produce_args = ["produce", "sensors", "--rate", "40", "--duration", "30", "--speedup", "1",
                    "--disorder", "exp:mean=150", "--seed", "9", "--topic-prefix", PREFIX]
    # the same records, generated up front for the spec's K (the run produces them again)
    assert harvest([*produce_args, "--dry-run", "--dump", str(dump)], env).returncode == 0
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(
        '[join]\nstreams = ["s1", "s2", "s3"]\nwindow_ms = 1500\npredicate = "band"\n'
        'attribute = "value"\nepsilon = 0.3\n'
        f'[disorder]\nmode = "fixed"\nslack_ms = {max_delay(read_jsonl(dump))}\n'
        '[job]\nworkload = "sensors"\nrouting = "atr"\ngroups = 1\ntrigger_ms = 1000\n'
        'idle_flush_ms = 2000\nshuffle_partitions = 1\n')
    checkpoint = tmp_path / "ck"
    job_log, producer_log = tmp_path / "submit.log", tmp_path / "produce.log"
    job = spawn(["submit", "--spec", str(spec_path), "--master", "local[2]",
                 "--topic-prefix", PREFIX, "--checkpoint", str(checkpoint),
                 "--until-idle", "45", "--max-restarts", "6", "--no-ui"], env, job_log)
    producer: subprocess.Popen[bytes] | None = None
    try:
        _wait(lambda: any(int(str(e.get("batches", 0))) >= 1
                          for e in _events(job_log, "job progress")) or job.poll() is not None,
              300, "the job did not start", job_log)
        assert job.poll() is None, job_log.read_text()[-3000:]
        producer = spawn([*produce_args, "--dump", str(dump)], env, producer_log)
        time.sleep(10)  # a third of the input is out
        down = harvest(["kafka", "down"], env)
        assert down.returncode == 0, down.stderr
        time.sleep(OUTAGE_S)
        up = harvest(["kafka", "up", "--timeout", "120"], env)
        assert up.returncode == 0, up.stdout + up.stderr
        code = producer.wait(timeout=300)
        assert job.wait(timeout=600) == 0, job_log.read_text()[-4000:]
    finally:
        for proc in (producer, job):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()

    # the producer rode through or says how many records it did not deliver
    text = producer_log.read_text(errors="replace")
    sent = re.search(r"sent ([\d,]+)\s+delivered ([\d,]+)\s+failed ([\d,]+)", text)
    assert sent, text[-2000:]
    n_sent, delivered, failed = (int(g.replace(",", "")) for g in sent.groups())
    produced = read_jsonl(dump)
    assert n_sent == len(produced)
    assert (code == 0) == (failed == 0), text[-2000:]
    if code != 0:
        assert f"{failed} of {n_sent} records not delivered" in text or "delivery error" in text

    # what the broker holds: every delivered record, once (idempotence), nothing invented
    held = [c.record for s in ("s1", "s2", "s3")
            for c in _records(bootstrap, f"{PREFIX}.in.sensors.{s}")]
    keys = Counter((r["stream"], r["seq"]) for r in held)
    assert max(keys.values()) == 1
    assert set(keys) <= {(r["stream"], r["seq"]) for r in produced}
    assert len(held) >= delivered

    # Spark read all of it (restarts may read a batch twice) and joined it exactly
    report = json.loads([line for line in job_log.read_text().splitlines()
                         if line.startswith("{") and '"restarts"' in line
                         and '"event"' not in line][-1])
    assert report["input_rows"] >= len(held)
    restarts = _events(job_log, "job restart")
    assert report["restarts"] == len(restarts)
    spec = load_spec(spec_path)
    truth = {r.id for r in oracle(spec.join, held)}
    assert truth
    got = Counter(str(c.record["id"]) for c in _records(bootstrap, f"{PREFIX}.results"))
    assert set(got) == truth
    print(f"producer exit {code} (sent {n_sent}, failed {failed}); job restarts "
          f"{report['restarts']}; results {len(got)}, written twice "
          f"{sum(1 for n in got.values() if n > 1)}")
