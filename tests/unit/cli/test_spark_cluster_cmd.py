"""`harvest spark-cluster`: argument errors exit 2; status of a stopped cluster exits 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.testing.cli import exit_2_stderr


def test_status_when_not_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    assert main(["spark-cluster", "status"]) == 1
    assert "not running" in capsys.readouterr().out


def test_down_when_not_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    assert main(["spark-cluster", "down"]) == 0
    assert "not running" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [(["spark-cluster", "up", "--cores", "0"], "--cores"),
     (["spark-cluster", "up", "--port", "x"], "--port"),
     (["spark-cluster", "restart"], "action")],
)
def test_bad_arguments_exit_2(argv: list[str], needle: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert needle in exit_2_stderr(argv, capsys)


def test_bad_memory_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    assert main(["spark-cluster", "up", "--memory", "lots"]) == 2
    assert "--memory" in capsys.readouterr().err
