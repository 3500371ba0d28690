"""The real broker: metadata, idempotent topic creation, `harvest kafka status`, and the
LocalKafka life cycle (start, port fallback, stop, restart on the same storage)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.io.admin import delete_topics, ensure_topics, list_topic_names, wait_for_broker
from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from pipeline.core.errors import ConfigError, KafkaUnavailableError
from pipeline.core.settings import Settings, load_settings

INFRA = Settings().infra_dir

pytestmark = pytest.mark.kafka


def test_broker_answers_metadata(kafka_bootstrap: str) -> None:
    assert wait_for_broker(kafka_bootstrap, timeout=10.0) >= 1


def test_wait_for_broker_times_out_on_a_dead_port() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(KafkaUnavailableError, match=f"127.0.0.1:{port}.*1 s"):
        wait_for_broker(f"127.0.0.1:{port}", timeout=1.0, probe_timeout=0.5)


def test_ensure_topics_is_idempotent(kafka_bootstrap: str, topic_prefix: str) -> None:
    a, b, c = (f"{topic_prefix}.{x}" for x in "abc")
    try:
        assert sorted(ensure_topics(kafka_bootstrap, [a, b])) == [a, b]
        assert ensure_topics(kafka_bootstrap, [a, b]) == []
        assert ensure_topics(kafka_bootstrap, [b, c, c], partitions=3) == [c]
        assert {a, b, c} <= list_topic_names(kafka_bootstrap)
    finally:
        assert sorted(delete_topics(kafka_bootstrap, [a, b, c])) == [a, b, c]
    assert delete_topics(kafka_bootstrap, [a]) == []


def test_ensure_topics_rejects_bad_names_before_touching_kafka(kafka_bootstrap: str) -> None:
    with pytest.raises(ConfigError, match="bad topic!"):
        ensure_topics(kafka_bootstrap, ["fine", "bad topic!"])
    assert "fine" not in list_topic_names(kafka_bootstrap)


def test_cli_status_reports_the_local_broker(kafka_bootstrap: str) -> None:
    status = LocalKafka(BrokerConfig.from_settings(load_settings())).status()
    if not status.running or status.bootstrap != kafka_bootstrap:
        pytest.skip(f"kafka_bootstrap {kafka_bootstrap} is not the local broker")
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.main", "kafka", "status"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"running at {kafka_bootstrap}" in done.stdout


@pytest.fixture
def occupied_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_local_broker_life_cycle(tmp_path: Path, occupied_port: int) -> None:
    """A second, private broker: port fallback, idempotent up, down, restart on old storage."""
    config = BrokerConfig(
        kafka_dir=tmp_path / "kafka",
        jars_dir=load_settings().jars_dir,
        infra_dir=INFRA,
        preferred_port=occupied_port,
        heap="256m",
        stop_timeout_s=20.0,
    )
    broker = LocalKafka(config)
    try:
        first = broker.up(timeout=90)
        assert first.started and first.bootstrap is not None
        port = int(first.bootstrap.rsplit(":", 1)[1])
        assert port != occupied_port
        assert config.bootstrap_file.read_text().strip() == first.bootstrap
        meta = (config.data_dir / "meta.properties").read_text()

        again = broker.up(timeout=30)
        assert (again.started, again.pid, again.bootstrap) == (False, first.pid, first.bootstrap)
        assert ensure_topics(first.bootstrap, ["life.cycle"]) == ["life.cycle"]

        assert broker.down() is True
        assert not broker.status().running
        assert not config.bootstrap_file.exists()

        second = broker.up(timeout=90)
        assert second.started and second.bootstrap == first.bootstrap  # same ports reused
        assert (config.data_dir / "meta.properties").read_text() == meta  # not reformatted
        assert "life.cycle" in list_topic_names(second.bootstrap)  # data survived
    finally:
        broker.down()
    assert first.pid is not None and not os.path.exists(f"/proc/{first.pid}")


def _jvms_using(path: Path) -> list[int]:
    """Pids of live processes whose command line mentions ``path``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(path).encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


@pytest.mark.timeout(120)
def test_start_timeout_stops_the_jvm_and_reports(tmp_path: Path) -> None:
    config = BrokerConfig(
        kafka_dir=tmp_path / "kafka", jars_dir=load_settings().jars_dir, infra_dir=INFRA,
        heap="256m",
    )
    broker = LocalKafka(config)
    with pytest.raises(KafkaUnavailableError, match=r"did not answer within 0\.1 s; stopped it"):
        broker.up(timeout=0.1)
    assert not config.pid_file.exists() and not config.bootstrap_file.exists()
    assert _jvms_using(config.properties_file) == []
    assert not broker.status().running
