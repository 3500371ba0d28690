"""`harvest registry`, `schema --subject/--id` and `produce --format avro-confluent`
without a running registry: exit codes, messages, and the producer's registration
against confluent-kafka's ``mock://`` registry."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from connectors.io.confluent import ConfluentSerde, parse_header
from connectors.io.serde import AvroSerde
from pipeline.cli.main import main
from pipeline.cli.produce_cmd import _confluent_serde
from pipeline.core.errors import ConfigError
from pipeline.core.settings import PROJECT_ROOT, Settings
from pipeline.testing.cli import exit_2_stderr


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HARVEST_CACHE_DIR pointing at an empty dir: no registry recorded."""
    monkeypatch.setenv("HARVEST_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HARVEST_SCHEMA_REGISTRY_URL", raising=False)
    return tmp_path


@pytest.mark.parametrize(("argv", "code", "stdout"), [
    (["registry", "status"], 3, "registry: stopped"),
    (["registry", "down"], 0, "registry: was not running"),
])
def test_status_and_down_without_a_registry(empty_cache: Path, capsys: pytest.CaptureFixture[str],
                                            argv: list[str], code: int, stdout: str) -> None:
    assert main(argv) == code
    assert stdout in capsys.readouterr().out


def test_registry_bad_action_and_timeout_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice" in exit_2_stderr(["registry", "start"], capsys)
    assert "--timeout" in exit_2_stderr(["registry", "up", "--timeout", "0"], capsys)


def test_schema_subject_without_registry_exits_2(empty_cache: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--subject", "orders-value"]) == 2
    assert "HARVEST_SCHEMA_REGISTRY_URL: not set" in capsys.readouterr().err


def test_schema_flags_exit_2(empty_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "one of the arguments" in exit_2_stderr(["schema"], capsys)
    assert "not allowed with" in exit_2_stderr(["schema", "--id", "1", "--subject", "s"], capsys)
    assert "--id" in exit_2_stderr(["schema", "--id", "0"], capsys)
    assert main(["schema", "--id", "3", "--version", "2"]) == 2
    assert "--version: only with --subject" in capsys.readouterr().err


def test_produce_format_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--format" in exit_2_stderr(["produce", "sensors", "--format", "protobuf"], capsys)


def test_produce_registers_the_workload_schema_per_topic() -> None:
    settings = Settings(schema_registry_url=f"mock://{uuid.uuid4().hex}")
    own = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    serde = _confluent_serde(settings, own, "sensor_reading", {"s1": "p.in.sensors.s1"})
    assert isinstance(serde, ConfluentSerde)
    reading = {"stream": "s1", "seq": 1, "event_time": 100, "arrival_time": 130,
               "value": 20.5, "a1": 3, "x": 0.0, "y": 0.0}
    data = serde.encode_many("sensor_reading", [reading])[0]
    assert serde.registry.versions("p.in.sensors.s1-value")[0].schema_id == parse_header(data)
    assert serde.decode(data) == ("sensor_reading", reading)


def test_produce_confluent_without_registry_is_a_config_error(empty_cache: Path) -> None:
    settings = Settings(cache_dir=empty_cache)
    with pytest.raises(ConfigError, match="HARVEST_SCHEMA_REGISTRY_URL"):
        _confluent_serde(settings, AvroSerde.from_dir(PROJECT_ROOT / "schemas"),
                         "sensor_reading", {"s1": "t"})


def test_consume_reads_the_confluent_format_given_a_registry(empty_cache: Path) -> None:
    import argparse

    from pipeline.cli.consume_cmd import _serde

    args = argparse.Namespace(spec=None)
    assert not isinstance(_serde(args, Settings(cache_dir=empty_cache)), ConfluentSerde)
    with_registry = Settings(cache_dir=empty_cache, schema_registry_url="mock://consume")
    serde = _serde(args, with_registry)
    assert isinstance(serde, ConfluentSerde)
    reading = {"stream": "s1", "seq": 1, "event_time": 100, "arrival_time": 130,
               "value": 20.5, "a1": 3, "x": 0.0, "y": 0.0}
    own = AvroSerde.from_dir(PROJECT_ROOT / "schemas").encode("sensor_reading", reading)
    assert serde.decode(own) == ("sensor_reading", reading)  # harvest's own records too
