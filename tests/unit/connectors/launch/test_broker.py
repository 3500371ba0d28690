"""connectors.launch.broker without a running broker: prerequisites, pid handling, stop/status."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connectors.launch.broker import BrokerStatus, LocalKafka, is_broker_process
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.service import log_tail
from connectors.launch.service import read_int as read_pid
from pipeline.core.errors import InfraError, KafkaUnavailableError
from pipeline.core.settings import Settings

INFRA = Settings().infra_dir


def _broker(tmp_path: Path, jars_dir: Path | None = None) -> LocalKafka:
    return LocalKafka(
        BrokerConfig(kafka_dir=tmp_path / "kafka", jars_dir=jars_dir or tmp_path / "jars",
                     infra_dir=INFRA)
    )


def test_up_without_jars_says_run_make_jars(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    with pytest.raises(InfraError, match="make jars"):
        broker.up(timeout=5)
    assert not broker.config.pid_file.exists()
    assert not broker.config.bootstrap_file.exists()


def test_up_with_bad_java_home_names_it(tmp_path: Path) -> None:
    config = BrokerConfig(
        kafka_dir=tmp_path / "kafka", jars_dir=tmp_path / "jars", infra_dir=INFRA,
        java_home=tmp_path / "jdk",
    )
    with pytest.raises(InfraError, match="jdk"):
        LocalKafka(config).up(timeout=5)


def test_status_of_a_fresh_dir_is_stopped(tmp_path: Path) -> None:
    status = _broker(tmp_path).status()
    assert status == BrokerStatus(False, None, None, tmp_path / "kafka" / "logs" / "server.log")
    assert "stopped" in status.describe()


def test_stale_pid_file_counts_as_stopped_and_down_cleans_it(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    broker = _broker(tmp_path)
    broker.config.kafka_dir.mkdir(parents=True)
    broker.config.pid_file.write_text(f"{dead.pid}\n")
    broker.config.bootstrap_file.write_text("127.0.0.1:1\n")
    assert not broker.status().running
    assert broker.down() is False
    assert not broker.config.pid_file.exists()
    assert not broker.config.bootstrap_file.exists()


def test_a_live_process_that_is_not_kafka_is_not_the_broker() -> None:
    assert not is_broker_process(os.getpid())


def test_a_live_kafka_named_process_is_recognised() -> None:
    # A real child whose command line contains kafka.Kafka (like the JVM's does).
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "kafka.Kafka"]
    )
    try:
        # right after spawning, /proc/<pid>/cmdline can still be empty (exec in progress)
        deadline = time.monotonic() + 10.0
        cmdline = Path("/proc") / str(child.pid) / "cmdline"
        while not cmdline.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert is_broker_process(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not is_broker_process(child.pid)


@pytest.mark.parametrize(
    ("content", "expected"), [("123\n", 123), ("", None), ("abc", None), (None, None)]
)
def test_read_pid(tmp_path: Path, content: str | None, expected: int | None) -> None:
    path = tmp_path / "kafka.pid"
    if content is not None:
        path.write_text(content)
    assert read_pid(path) == expected


def test_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join(f"line {i}" for i in range(100)))
    tail = log_tail(log, tmp_path / "missing.log", lines=3)
    assert tail.splitlines()[1:] == ["line 97", "line 98", "line 99"]
    assert "missing.log" not in tail
    assert log_tail(tmp_path / "missing.log") == "(no log written)"


def _fake_jars(tmp_path: Path) -> Path:
    """A jars dir that passes the marker check but holds no classes (an empty jar file)."""
    jars = tmp_path / "jars"
    (jars / "kafka").mkdir(parents=True)
    (jars / "kafka" / "kafka_2.13-4.4.0.jar").write_bytes(b"")
    return jars


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_failed_storage_format_reports_the_tool_output(tmp_path: Path) -> None:
    broker = _broker(tmp_path, _fake_jars(tmp_path))
    with pytest.raises(InfraError, match=r"(?s)storage format exited.*StorageTool"):
        broker.up(timeout=20)
    assert not broker.config.pid_file.exists()


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_jvm_exiting_during_start_up_reports_the_log_tail(tmp_path: Path) -> None:
    broker = _broker(tmp_path, _fake_jars(tmp_path))
    broker.config.data_dir.mkdir(parents=True)
    (broker.config.data_dir / "meta.properties").write_text("# pretend it is formatted\n")
    with pytest.raises(KafkaUnavailableError, match=r"(?s)exited with code 1.*kafka\.Kafka"):
        broker.up(timeout=20)
    assert not broker.config.pid_file.exists()
    assert not broker.status().running
