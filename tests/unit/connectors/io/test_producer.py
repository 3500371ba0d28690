"""Producer configuration: librdkafka settings, validation, snapshots (no broker needed)."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.io.producer_config import Pacing, ProducerConfig, ProduceReport
from pipeline.core.errors import ConfigError, DeliveryError
from pipeline.core.settings import Settings


def test_librdkafka_settings_are_idempotent_batched_and_compressed() -> None:
    conf = ProducerConfig(bootstrap="h:1", client_config={"security.protocol": "SSL"}).librdkafka()
    assert conf["enable.idempotence"] is True
    assert conf["acks"] == "all"
    assert conf["compression.type"] == "lz4"
    assert 5 <= conf["linger.ms"] <= 20
    assert conf["batch.size"] >= 1_000_000
    assert conf["delivery.report.only.error"] is True
    assert conf["bootstrap.servers"] == "h:1" and conf["security.protocol"] == "SSL"


def test_from_settings_uses_bootstrap_and_security() -> None:
    settings = Settings(bootstrap_servers="10.0.0.1:9093", security_protocol="SASL_SSL",
                        sasl_mechanism="PLAIN", sasl_username="u", sasl_password="s3cret")
    config = ProducerConfig.from_settings(settings, linger_ms=5)
    assert config.bootstrap == "10.0.0.1:9093" and config.linger_ms == 5
    assert config.client_config == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                    "sasl.username": "u", "sasl.password": "s3cret"}
    assert "s3cret" not in repr(config)


def test_snapshot_round_trip() -> None:
    config = ProducerConfig(bootstrap="h:1", linger_ms=7, topic_partitions=3, create_topics=False)
    assert ProducerConfig.from_snapshot(config.snapshot()) == config


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bootstrap": " "}, "bootstrap: empty"),
        ({"bootstrap": "h:1", "linger_ms": -1}, "linger_ms: must be >= 0, got -1"),
        ({"bootstrap": "h:1", "connect_timeout_s": 0}, "connect_timeout_s"),
        ({"bootstrap": "h:1", "flush_timeout_s": -2.0}, "got 10.0/-2.0"),
        ({"bootstrap": "h:1", "topic_partitions": 0}, "topic_partitions: must be >= 1, got 0"),
    ],
)
def test_invalid_config_names_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ProducerConfig(**kwargs)


@pytest.mark.parametrize("speedup", [0.0, -1.0, float("nan")])
def test_pacing_rejects_non_positive_speedup(speedup: float) -> None:
    with pytest.raises(ConfigError, match="speedup: must be > 0"):
        Pacing(speedup=speedup)


@pytest.mark.parametrize(
    ("report", "raises"),
    [
        (ProduceReport(sent=3, delivered=3), False),
        (ProduceReport(sent=3, delivered=2, failed=1, errors=["t: too large"]), True),
        (ProduceReport(sent=3, delivered=2), True),
    ],
)
def test_raise_on_failure(report: ProduceReport, raises: bool) -> None:
    if raises:
        with pytest.raises(DeliveryError, match="1 of 3 records not delivered"):
            report.raise_on_failure()
    else:
        report.raise_on_failure()


def test_rate() -> None:
    assert ProduceReport(sent=10, delivered=10, seconds=2.0).rate == 5.0
    assert ProduceReport().rate == 0.0
