"""connectors.launch.broker_config: rendered server.properties, port choice, JVM command line."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.launch.broker_config import (
    BrokerConfig,
    Ports,
    java_command,
    new_cluster_id,
    pick_ports,
    render_properties,
)
from connectors.launch.ports import ephemeral_port, port_is_free
from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings

INFRA = Settings().infra_dir


def _parse(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")
    return {k.strip(): v.strip() for k, v in pairs}


@pytest.fixture
def rendered(tmp_path: Path) -> dict[str, str]:
    template = (INFRA / "kafka" / "server.properties.template").read_text()
    return _parse(render_properties(template, Ports(9123, 9124), tmp_path / "data"))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("process.roles", "broker,controller"),
        ("node.id", "1"),
        ("controller.listener.names", "CONTROLLER"),
        ("controller.quorum.bootstrap.servers", "127.0.0.1:9124"),
        ("listeners", "PLAINTEXT://127.0.0.1:9123,CONTROLLER://127.0.0.1:9124"),
        ("advertised.listeners", "PLAINTEXT://127.0.0.1:9123"),
        ("num.partitions", "1"),
        ("auto.create.topics.enable", "true"),
        ("offsets.topic.replication.factor", "1"),
        ("transaction.state.log.replication.factor", "1"),
        ("transaction.state.log.min.isr", "1"),
        ("group.initial.rebalance.delay.ms", "0"),
        ("log.retention.hours", "168"),
    ],
)
def test_single_node_settings(rendered: dict[str, str], key: str, value: str) -> None:
    assert rendered[key] == value


def test_data_dir_is_filled_and_no_placeholder_is_left(tmp_path: Path) -> None:
    template = (INFRA / "kafka" / "server.properties.template").read_text()
    text = render_properties(template, Ports(1, 2), tmp_path / "data")
    assert _parse(text)["log.dirs"] == str(tmp_path / "data")
    assert "${" not in text


def test_unknown_placeholder_is_an_infra_error(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match="placeholder"):
        render_properties("port=${nope}", Ports(1, 2), tmp_path)


@pytest.fixture
def occupied() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def test_preferred_port_is_used_when_free() -> None:
    preferred = ephemeral_port()
    ports = pick_ports(preferred, None)
    assert ports.broker == preferred
    assert ports.controller != ports.broker


def test_busy_preferred_port_falls_back_to_the_previous_one(occupied: int) -> None:
    previous = Ports(ephemeral_port(exclude=[occupied]), ephemeral_port(exclude=[occupied]))
    ports = pick_ports(occupied, previous)
    assert ports.broker == previous.broker
    assert ports.controller == previous.controller


def test_busy_preferred_port_without_history_picks_a_free_one(occupied: int) -> None:
    ports = pick_ports(occupied, None)
    assert ports.broker != occupied
    assert port_is_free(ports.broker) and port_is_free(ports.controller)
    assert ports.controller != ports.broker


def test_controller_never_collides_with_broker(occupied: int) -> None:
    free = ephemeral_port(exclude=[occupied])
    ports = pick_ports(free, Ports(occupied, free))  # previous controller == new broker port
    assert ports.broker == free
    assert ports.controller not in (free, occupied)


def test_cluster_ids_are_valid_kraft_uuids() -> None:
    ids = {new_cluster_id() for _ in range(300)}
    assert len(ids) == 300
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


def test_java_command_uses_the_kafka_jars_and_log4j_config(tmp_path: Path) -> None:
    config = BrokerConfig(kafka_dir=tmp_path / "kafka", jars_dir=tmp_path / "jars",
                          infra_dir=INFRA, heap="384m")
    cmd = java_command(config, Path("/usr/bin/java"), "kafka.Kafka", "server.properties")
    assert cmd[0] == "/usr/bin/java"
    assert "-Xmx384m" in cmd
    assert cmd[cmd.index("-cp") + 1] == str(tmp_path / "jars" / "kafka" / "*")
    assert f"-Dlog4j2.configurationFile={INFRA / 'kafka' / 'log4j2.xml'}" in cmd
    assert f"-Dkafka.logs.dir={tmp_path / 'kafka' / 'logs'}" in cmd
    assert cmd[-2:] == ["kafka.Kafka", "server.properties"]


def test_config_from_settings_uses_cache_dir_and_port(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path, kafka_port=19092)
    config = BrokerConfig.from_settings(settings)
    assert config.kafka_dir == tmp_path / "kafka"
    assert config.jars_dir == tmp_path / "jars"
    assert config.preferred_port == 19092
    assert config.bootstrap_file == settings.kafka_dir / "bootstrap"
    assert (INFRA / "kafka" / "log4j2.xml").is_file()
