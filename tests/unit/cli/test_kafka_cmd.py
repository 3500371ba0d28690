"""`harvest kafka up|down|status` without a broker: exit codes and messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.testing.cli import exit_2_stderr


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HARVEST_CACHE_DIR pointing at an empty dir: no jars, no broker state."""
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HARVEST_BOOTSTRAP_SERVERS", raising=False)
    return tmp_path


def test_console_script_up_without_jars_says_harvest_setup(empty_cache: Path) -> None:
    env = {**os.environ, "HARVEST_CACHE_DIR": str(empty_cache)}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli.main", "kafka", "up"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert done.returncode == 2
    assert "harvest kafka: error: kafka jars not found" in done.stderr
    assert "run `harvest setup`" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (empty_cache / "kafka" / "kafka.pid").exists()


@pytest.mark.parametrize(
    ("argv", "code", "stdout"),
    [
        (["kafka", "status"], 3, "kafka: stopped"),
        (["kafka", "down"], 0, "kafka: was not running"),
    ],
)
def test_status_and_down_without_a_broker(
    empty_cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, stdout: str
) -> None:
    assert main(argv) == code
    assert stdout in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["kafka", "up", "--timeout", "0"], "'0'"),
        (["kafka", "up", "--timeout", "soon"], "'soon'"),
        (["kafka", "restart"], "'restart'"),
    ],
)
def test_bad_arguments_exit_2_naming_the_value(
    empty_cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    assert needle in exit_2_stderr(argv, capsys)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["kafka", "up", "--brokers", "6"], "--brokers: must be in 1..5, got 6"),
        (["kafka", "up", "--brokers", "0"], "'0'"),
        (["kafka", "status", "--brokers", "3"], "--brokers: only with `up`"),
        (["kafka", "down", "--kill"], "--kill: only with `stop-node`"),
        (["kafka", "stop-node"], "node: `stop-node` needs a node id"),
        (["kafka", "start-node"], "node: `start-node` needs a node id"),
        (["kafka", "status", "2"], "node: only with stop-node / start-node, got '2'"),
        (["kafka", "stop-node", "1"], "node: no cluster is up"),
        (["kafka", "start-node", "2"], "node: no cluster is up"),
    ],
)
def test_cluster_arguments_exit_2_naming_the_field(
    empty_cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    assert needle in _exit_2(argv, capsys)


def _exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """stderr of ``harvest argv``, which must exit 2 (argparse) or return 2 (ConfigError)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code  # type: ignore[assignment]
    assert code == 2, f"harvest {' '.join(argv)}: exit {code!r}, not 2"
    return capsys.readouterr().err


def test_bad_node_id_of_a_recorded_cluster_exits_2(
    empty_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from connectors.launch.broker_config import Ports
    from connectors.launch.cluster_layout import ClusterLayout, ClusterRecord

    record = ClusterRecord(3, "abc", {n: Ports(1000 + n, 2000 + n) for n in (1, 2, 3)},
                           up=True)
    record.save(ClusterLayout(empty_cache / "kafka").record_file)
    for action in ("stop-node", "start-node"):
        err = _exit_2(["kafka", action, "7"], capsys)
        assert "node: '7' is not a node of the cluster (ids 1..3)" in err
