"""The whole pipeline against `harvest kafka up --secure` (SASL_SSL + ACLs), run through
the CLI with nothing but the client files: ``set -a; . clients/<principal>.env``.

A private secure broker under this module's own HARVEST_CACHE_DIR (other ports than the
session's plaintext broker, which keeps running):

a. produce (as ``producer``) → `harvest submit` (as ``job``) → consume (as ``reader``):
   the results equal the oracle, and no password is in any command's output, the Spark
   log (the submit's stderr), the broker's logs or any file under the checkpoint;
   `harvest top` (as ``reader``) on the finished run shows every result and no lag;
b. a client without credentials, or with a wrong password, fails within 30 s naming
   the authentication failure (exit 1);
c. ``reader`` producing into an input topic is refused naming the authorization (exit 1);
d. one broker at a time: `kafka up` (plaintext) while the secure one runs exits 1 naming
   `harvest kafka down`, and `kafka status` says which mode runs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from connectors.launch import secure as sec
from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.ports import ephemeral_port
from pipeline.core.jsonl import read_jsonl
from pipeline.core.settings import PROJECT_ROOT, load_settings
from pipeline.quality.oracle import oracle
from pipeline.spec.model import load_spec
from pipeline.testing.streams import max_delay

pytestmark = [pytest.mark.kafka]


@dataclass(frozen=True)
class SecureBroker:
    """The module's secure broker: its cache dir, client files and every secret."""

    cache: Path
    config: BrokerConfig
    bootstrap: str
    secrets: tuple[str, ...]
    up_output: str

    def env(self, principal: str | None, **extra: str) -> dict[str, str]:
        """A clean environment (no inherited HARVEST_*) plus ``principal``'s client file."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARVEST_")}
        env.update(HARVEST_CACHE_DIR=str(self.cache), HARVEST_LOG_FORMAT="json")
        if principal is not None:
            env.update(sec.read_env_file(self.config.secure_layout.client_file(principal)))
        else:
            env["HARVEST_BOOTSTRAP_SERVERS"] = self.bootstrap
        env.update(extra)
        return env


def harvest(args: list[str], env: Mapping[str, str], timeout: float = 120.0
            ) -> subprocess.CompletedProcess[str]:
    """Run one `harvest` command; stdout and stderr captured."""
    return subprocess.run([sys.executable, "-m", "pipeline.cli.main", *args], cwd=PROJECT_ROOT,
                          env=dict(env), capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """`harvest kafka up --secure` under a private HARVEST_CACHE_DIR (jars linked in)."""
    cache = tmp_path_factory.mktemp("secure-cache")
    (cache / "jars").symlink_to(load_settings().jars_dir.resolve(), target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVEST_")}
    env.update(HARVEST_CACHE_DIR=str(cache), HARVEST_KAFKA_PORT=str(ephemeral_port()),
               HARVEST_LOG_FORMAT="json")
    config = BrokerConfig.from_settings(load_settings(cache_dir=cache), secure=True)
    try:
        done = harvest(["kafka", "up", "--secure", "--timeout", "120"], env, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
        creds = sec.Credentials.load(config.secure_layout.credentials_file)
        bootstrap = config.bootstrap_file.read_text().strip()
        yield SecureBroker(cache, config, bootstrap, tuple(creds.secrets()),
                           done.stdout + done.stderr)
    finally:
        LocalKafka(config).down()


def assert_no_secret(broker: SecureBroker, where: str, data: str | bytes) -> None:
    raw = data.encode() if isinstance(data, str) else data
    for secret in broker.secrets:
        assert secret.encode() not in raw, f"a password leaked into {where}"


def test_status_says_secure_and_a_plaintext_up_is_refused(secure_broker: SecureBroker) -> None:
    env = secure_broker.env(None)
    status = harvest(["kafka", "status"], env)
    assert status.returncode == 0, status.stderr
    assert f"running at {secure_broker.bootstrap}" in status.stdout
    assert "mode secure" in status.stdout
    up = harvest(["kafka", "up"], env)
    assert up.returncode == 1
    assert "a secure broker already runs" in up.stderr and "harvest kafka down" in up.stderr
    assert "secure" in harvest(["kafka", "status"], env).stdout  # still the same broker
    layout = secure_broker.config.secure_layout
    for private in (secure_broker.config.properties_file, layout.credentials_file,
                    layout.keystore, *(layout.client_file(p) for p in sec.PRINCIPALS)):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    assert sorted(p.name for p in layout.tls_dir.iterdir()) == ["broker.p12", "ca.p12",
                                                                "ca.pem"]
    assert_no_secret(secure_broker, "`kafka up --secure` output", secure_broker.up_output)
    assert_no_secret(secure_broker, "`kafka status` output", status.stdout + status.stderr)


@pytest.mark.parametrize(("principal", "extra"), [
    pytest.param(None, {}, id="plaintext-client"),
    pytest.param(None, {"HARVEST_SECURITY_PROTOCOL": "SASL_SSL",
                        "HARVEST_SASL_MECHANISM": "SCRAM-SHA-512"}, id="sasl-without-user"),
    pytest.param("reader", {"HARVEST_SASL_PASSWORD": "not-the-password"}, id="wrong-password"),
])
def test_a_client_without_valid_credentials_fails_naming_authentication(
        secure_broker: SecureBroker, principal: str | None, extra: dict[str, str]) -> None:
    env = secure_broker.env(principal, **extra)
    for args in (["produce", "sensors", "--duration", "2", "--rate", "5", "--fast",
                  "--topic-prefix", "noauth"],
                 ["consume", "noauth.in.sensors.s1", "--from-beginning", "--timeout", "5"]):
        start = time.monotonic()
        done = harvest(args, env, timeout=60)
        took = time.monotonic() - start
        assert done.returncode == 1, done.stderr[-2000:]
        assert took < 30, f"{args[0]} took {took:.1f} s to fail"
        assert "KafkaAuthenticationError" in done.stderr
        assert "authenticat" in done.stderr.lower()


def test_reader_may_not_produce(secure_broker: SecureBroker) -> None:
    producer = harvest(["produce", "sensors", "--duration", "1", "--rate", "5", "--fast",
                        "--topic-prefix", "ro"], secure_broker.env("producer"))
    assert producer.returncode == 0, producer.stderr[-2000:]
    refused = harvest(["produce", "sensors", "--duration", "1", "--rate", "5", "--fast",
                       "--topic-prefix", "ro"], secure_broker.env("reader"), timeout=60)
    assert refused.returncode == 1, refused.stderr[-2000:]
    assert "KafkaAuthorizationError" in refused.stderr
    assert "not authorized: principal 'reader'" in refused.stderr
    assert "authorization failed" in refused.stderr.lower()
    new_topic = harvest(["produce", "sensors", "--duration", "1", "--rate", "5", "--fast",
                         "--topic-prefix", "ro2"], secure_broker.env("reader"), timeout=60)
    assert new_topic.returncode == 1 and "KafkaAuthorizationError" in new_topic.stderr
    assert "create topic" in new_topic.stderr


SPEC = """\
[join]
streams = ["s1", "s2", "s3"]
window_ms = 1500
predicate = "band"
attribute = "value"
epsilon = 0.3
[disorder]
mode = "fixed"
slack_ms = {slack}
[job]
workload = "sensors"
routing = "atr"
groups = 2
segment_ms = 2000
trigger_ms = 500
idle_flush_ms = 2000
shuffle_partitions = 2
max_offsets_per_trigger = 400
"""


@pytest.mark.spark
@pytest.mark.e2e
@pytest.mark.slow
def test_produce_join_consume_over_sasl_ssl_equals_oracle_and_leaks_no_password(
        secure_broker: SecureBroker, tmp_path: Path) -> None:
    prefix = "sec"
    dump = tmp_path / "input.jsonl"
    outputs: dict[str, str] = {}

    produced = harvest(["produce", "sensors", "--streams", "3", "--rate", "25", "--duration",
                        "12", "--disorder", "exp:mean=150", "--seed", "11", "--fast",
                        "--dump", str(dump), "--topic-prefix", prefix],
                       secure_broker.env("producer"))
    outputs["produce"] = produced.stdout + produced.stderr
    assert produced.returncode == 0, produced.stderr[-3000:]
    records = read_jsonl(dump)

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC.format(slack=max_delay(records)))
    checkpoint = tmp_path / "ck"
    job = harvest(["submit", "--spec", str(spec_path), "--master", "local[2]",
                   "--topic-prefix", prefix, "--checkpoint", str(checkpoint),
                   "--until-idle", "4", "--no-ui"], secure_broker.env("job"), timeout=600)
    outputs["submit (report + Spark log)"] = job.stdout + job.stderr
    assert job.returncode == 0, job.stderr[-3000:]
    report = json.loads(job.stdout.strip().splitlines()[-1])
    assert report["input_rows"] == len(records)

    consumed = harvest(["consume", f"{prefix}.results", "--from-beginning", "--format", "jsonl",
                        "--timeout", "5"], secure_broker.env("reader"))
    outputs["consume"] = consumed.stderr
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    ids = [json.loads(line)["id"] for line in consumed.stdout.splitlines() if line.strip()]
    truth = {r.id for r in oracle(load_spec(spec_path).join, records)}
    assert truth, "the workload must produce join results"
    assert set(ids) == truth
    assert report["results"] == len(ids)

    # `harvest top` on the finished run, as the reader: every result, the lag is zero
    top = harvest(["top", "--spec", str(spec_path), "--topic-prefix", prefix, "--checkpoint",
                   str(checkpoint), "--from-beginning", "--duration", "6", "--json"],
                  secure_broker.env("reader"))
    outputs["top"] = top.stdout + top.stderr
    assert top.returncode == 0, top.stderr[-3000:]
    last = json.loads(top.stdout.strip().splitlines()[-1])
    assert last["totals"]["results"] == len(ids) and last["totals"]["undecodable_results"] == 0
    assert last["instances"] and all(r["z"] is not None for r in last["instances"])
    assert last["job"]["batches"] > 0 and last["job"]["lag"]["total"] == 0

    if (PROJECT_ROOT / "pipeline" / "cli" / "dump_cmd.py").exists():  # `harvest dump` (#14)
        reader = secure_broker.env("reader", HARVEST_TOPIC_PREFIX=prefix)
        dumped = harvest(["dump", "--spec", str(spec_path), "--output",
                          str(tmp_path / "d.jsonl"), "--timeout", "5"], reader)
        outputs["dump"] = dumped.stdout + dumped.stderr
        assert dumped.returncode == 0, dumped.stderr[-3000:]
        assert len(read_jsonl(tmp_path / "d.jsonl")) == len(records)

    for where, text in outputs.items():
        assert_no_secret(secure_broker, where, text)
    files = [p for p in checkpoint.rglob("*") if p.is_file()]
    assert any(p.parent.name == "offsets" for p in files)  # the grep saw the checkpoint
    for path in files:
        assert_no_secret(secure_broker, f"checkpoint file {path}", path.read_bytes())
    for path in secure_broker.config.logs_dir.rglob("*"):
        if path.is_file():
            assert_no_secret(secure_broker, f"broker log {path}", path.read_bytes())
