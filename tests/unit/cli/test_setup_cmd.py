"""`harvest setup` (a fake lock and a ``file://`` mirror; no network) and the exit-2
message of every command that needs the jars when they are missing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from connectors.launch.jar_fetch import LockedJar
from pipeline.cli import setup_cmd
from pipeline.cli.main import main

BODY = b"the jar"
JAR = LockedJar("org.example:tool:1.0", "tool-1.0.jar", len(BODY),
                hashlib.sha256(BODY).hexdigest())


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HARVEST_CACHE_DIR pointing at an empty folder: no jars."""
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARVEST_BOOTSTRAP_SERVERS", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A one-jar lock and a ``file://`` mirror holding that jar."""
    path = tmp_path / "mirror" / JAR.repository_path
    path.parent.mkdir(parents=True)
    path.write_bytes(BODY)
    monkeypatch.setattr(setup_cmd, "load_lock", lambda: {"kafka": (JAR,), "spark": ()})
    return (tmp_path / "mirror").as_uri()


def test_setup_prints_what_it_fetched_then_is_a_no_op(
        empty_cache: Path, mirror: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["setup", "--repository", mirror, "--no-maven-local"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"fetched kafka/tool-1.0.jar  org.example:tool:1.0  (0.0 MB from {mirror})" in out
    assert f"fetched 1 jars (0.0 MB) into {empty_cache / 'jars'}, SHA-256 verified" in out
    assert (empty_cache / "jars" / "kafka" / "tool-1.0.jar").read_bytes() == BODY
    assert main(argv) == 0
    assert "all 1 jars present and verified" in capsys.readouterr().out
    assert main(["setup", "--check"]) == 0


def test_setup_refuses_a_corrupted_jar(empty_cache: Path, mirror: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mirror" / JAR.repository_path).write_bytes(b"the jaR")
    assert main(["setup", "--repository", mirror, "--no-maven-local"]) == 1
    err = capsys.readouterr().err
    assert "tool-1.0.jar (org.example:tool:1.0)" in err and "refused" in err
    assert not (empty_cache / "jars" / "kafka" / "tool-1.0.jar").exists()


def test_setup_check_exits_2_naming_the_missing_jars(
        empty_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["setup", "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harvest setup: error: 97 of 97 jars missing")
    assert "kafka/HdrHistogram-2.2.2.jar" in err and "run `harvest setup`" in err


@pytest.mark.parametrize(("argv", "needle"), [
    (["kafka", "up"], "kafka jars not found"),
    (["submit", "--spec", "examples/specs/sensors.toml"], "Spark connector jars missing"),
    (["demo", "--rate", "10"], "kafka jars not found"),
])
def test_commands_needing_jars_exit_2_saying_harvest_setup(
        empty_cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"harvest {argv[0]}: error: {needle}")
    assert "run `harvest setup`" in err
    assert "Traceback" not in err
