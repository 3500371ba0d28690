"""Settings: env prefix, recorded bootstrap address, validation errors name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import ConfigError
from pipeline.core.settings import load_settings


def test_env_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEST_TOPIC_PREFIX", "run42")
    assert load_settings().topic_prefix == "run42"


def test_bootstrap_resolution_order(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path, kafka_port=9999)
    assert settings.resolved_bootstrap() == "127.0.0.1:9999"
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "bootstrap").write_text("127.0.0.1:19092\n")
    assert settings.resolved_bootstrap() == "127.0.0.1:19092"
    explicit = load_settings(cache_dir=tmp_path, bootstrap_servers="broker:9092")
    assert explicit.resolved_bootstrap() == "broker:9092"


def test_secret_is_hidden_and_passed() -> None:
    settings = load_settings(security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                             sasl_username="u", sasl_password="s3cret")
    assert "s3cret" not in repr(settings)
    assert settings.kafka_client_config()["sasl.password"] == "s3cret"


def test_bad_setting_names_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEST_KAFKA_PORT", "99999")
    with pytest.raises(ConfigError, match="HARVEST_KAFKA_PORT"):
        load_settings()
