"""connectors.io.registry_client: options from settings, secrets masked, failures named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from connectors.launch.ports import ephemeral_port
from pipeline.core.errors import ConfigError, InfraError, SerializationError
from pipeline.core.settings import Settings


def test_no_registry_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"HARVEST_SCHEMA_REGISTRY_URL: not set.*registry up"):
        RegistryOptions.from_settings(Settings(cache_dir=tmp_path))


def test_bad_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="HARVEST_SCHEMA_REGISTRY_URL: expected"):
        RegistryOptions(url="127.0.0.1:8081")


def test_user_info_is_masked_and_ca_only_for_https(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    settings = Settings(cache_dir=tmp_path, schema_registry_url="https://sr:8081",
                        schema_registry_user_info=SecretStr("u:pw"), ssl_ca_location=ca)
    conf = RegistryOptions.from_settings(settings).client_conf()
    assert conf["basic.auth.user.info"] == "u:pw"
    assert "pw" not in repr(conf)
    assert conf["ssl.ca.location"] == str(ca)
    plain = Settings(cache_dir=tmp_path, schema_registry_url="http://sr:8081",
                     ssl_ca_location=ca)
    assert "ssl.ca.location" not in RegistryOptions.from_settings(plain).client_conf()


def test_unreachable_registry_is_an_infra_error() -> None:
    url = f"http://127.0.0.1:{ephemeral_port()}/apis/ccompat/v7"
    registry = SchemaRegistry(RegistryOptions(url=url, timeout_s=2.0))
    with pytest.raises(InfraError, match=rf"schema id 1: the registry at {url} does not answer"):
        registry.writer_schema(1)


def test_incompatible_schema_is_refused_with_the_subject() -> None:
    class Refusing:
        def register_schema(self, subject: str, schema: object) -> int:
            from confluent_kafka.schema_registry.error import SchemaRegistryError
            raise SchemaRegistryError(409, 409, "Incompatible artifact")

    registry = SchemaRegistry(RegistryOptions(url="mock://x"), client=Refusing())
    with pytest.raises(SerializationError, match=r"subject 'o-value'.*incompatible"):
        registry.register("o-value", '{"type": "record", "name": "R", "fields": []}')
