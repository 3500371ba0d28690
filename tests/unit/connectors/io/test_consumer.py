"""Consumer configuration and the dead-letter form of undecodable records (no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.io.consumer import ConsumerConfig, Undecodable
from connectors.io.serde import AvroSerde
from pipeline.core.errors import ConfigError
from pipeline.core.settings import PROJECT_ROOT


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, {"auto.offset.reset": "latest", "enable.auto.commit": False}),
        ({"from_beginning": True}, {"auto.offset.reset": "earliest"}),
        ({"group_id": "g1"}, {"group.id": "g1", "enable.auto.commit": True}),
    ],
)
def test_librdkafka_settings(kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    conf = ConsumerConfig(bootstrap="h:1", **kwargs).librdkafka()
    assert {k: conf[k] for k in expected} == expected
    assert conf["bootstrap.servers"] == "h:1"


def test_fresh_group_id_per_invocation() -> None:
    config = ConsumerConfig(bootstrap="h:1")
    first, second = config.librdkafka()["group.id"], config.librdkafka()["group.id"]
    assert first != second and first.startswith("harvest-consume-")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_records": 0}, "max_records: must be > 0, got 0"),
        ({"idle_timeout_s": 0.0}, "idle_timeout_s: must be > 0"),
        ({"connect_timeout_s": -1.0}, "connect_timeout_s: must be > 0"),
    ],
)
def test_invalid_config_names_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig(bootstrap="h:1", **kwargs)


def test_undecodable_becomes_a_valid_dead_letter_record() -> None:
    bad = Undecodable("harvest.in.sensors.s1", 2, 41, b"\x00garbage", "bad single-object marker")
    letter = bad.dead_letter(wall_ms=1234)
    serde = AvroSerde.from_dir(PROJECT_ROOT / "schemas")
    assert serde.decode(serde.encode("dead_letter", letter)) == ("dead_letter", {
        "reason": "bad single-object marker", "topic": "harvest.in.sensors.s1",
        "partition": 2, "offset": 41, "raw": b"\x00garbage", "time": 1234,
    })


@pytest.mark.parametrize(("read_committed", "level"),
                         [(False, "read_uncommitted"), (True, "read_committed")])
def test_isolation_level(read_committed: bool, level: str) -> None:
    """Kafka's default (read_uncommitted) unless asked; librdkafka's own default differs."""
    conf = ConsumerConfig(bootstrap="h:1", read_committed=read_committed).librdkafka()
    assert conf["isolation.level"] == level
