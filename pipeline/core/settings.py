"""Process settings (pydantic-settings): env prefix ``HARVEST_``, optional ``.env`` file.

One frozen :class:`Settings` object is built in an entry point (the CLI) and passed down;
library code never reads the environment itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipeline.core.errors import ConfigError, KafkaAuthenticationError
from pipeline.core.resources import cache_dir, data_dir, is_checkout
from pipeline.core.secrets import ClientOptions

#: the checkout's root when harvest runs from one (else the site-packages of the wheel)
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _cache_default() -> Path:
    return cache_dir(PROJECT_ROOT, dict(os.environ), Path.home())


def _results_default(data: dict[str, Any]) -> Path:
    """``bench/results`` in a checkout (committed figures), else ``<cache>/results``."""
    if is_checkout(PROJECT_ROOT):
        return PROJECT_ROOT / "bench" / "results"
    return Path(data["cache_dir"]) / "results"


class Settings(BaseSettings):
    """Settings shared by every `harvest` subcommand.

    >>> Settings(topic_prefix="run7").topic_prefix
    'run7'
    """

    model_config = SettingsConfigDict(
        env_prefix="HARVEST_", env_file=".env", extra="ignore", frozen=True
    )

    bootstrap_servers: str | None = Field(
        default=None,
        description="Kafka bootstrap servers; default: the local broker's address "
        "recorded by `harvest kafka up`, else 127.0.0.1:9092",
    )
    topic_prefix: str = Field(default="harvest", pattern=r"^[A-Za-z0-9._-]+$")
    #: jars, broker data, checkpoints: the checkout's ``.cache``, else ``~/.cache/harvest``
    cache_dir: Path = Field(default_factory=_cache_default)
    #: the checkout's folders, else the wheel's package data (pipeline.core.resources)
    schemas_dir: Path = Field(default_factory=lambda: data_dir("schemas", PROJECT_ROOT))
    #: example specs (``specs/demo.toml`` is the demo's and the pipeline bench's)
    examples_dir: Path = Field(default_factory=lambda: data_dir("examples", PROJECT_ROOT))
    #: broker templates and Spark compose files (``kafka/server.properties.template``)
    infra_dir: Path = Field(default_factory=lambda: data_dir("infra", PROJECT_ROOT))
    #: where benchmarks and the demo write their JSON + PNG (``bench/results`` in a
    #: checkout, else ``<cache_dir>/results``)
    results_dir: Path = Field(default_factory=_results_default)
    kafka_port: int = Field(default=9092, ge=1, le=65535)
    log_format: Literal["auto", "console", "json"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    #: PEM file of the CA that signed the brokers' certificates (librdkafka
    #: ``ssl.ca.location``; the Spark job's Java clients get it as a PEM truststore)
    ssl_ca_location: Path | None = None
    java_home: Path | None = None
    schema_registry_url: str | None = Field(
        default=None,
        description="Confluent-compatible Schema Registry base URL (for Apicurio "
        "``<host>/apis/ccompat/v7``); default: the local registry's URL recorded by "
        "`harvest registry up`",
    )
    #: the registry's HTTP basic auth, ``user:password`` (https: verified with
    #: ``ssl_ca_location`` when set)
    schema_registry_user_info: SecretStr | None = None
    #: the Spark JVM's malloc: ``auto`` = jemalloc when ``make native`` installed it
    native_allocator: Literal["auto", "glibc"] = "auto"
    #: RocksDB state store memory per Spark JVM (block cache + write buffers), MB
    state_memory_mb: int = Field(default=64, ge=8, le=1_048_576)
    #: the default of `harvest submit` / `harvest demo`'s ``--ui``: the Spark UI on
    #: 127.0.0.1 (the tests' conftest sets it off; ``--ui`` still turns it on)
    spark_ui: bool = True

    @property
    def jars_dir(self) -> Path:
        """Where `harvest setup` puts the broker and connector jars (``kafka/``, ``spark/``)."""
        return self.cache_dir / "jars"

    @property
    def demo_spec(self) -> Path:
        """The demo's job spec (also the pipeline benchmark's)."""
        return self.examples_dir / "specs" / "demo.toml"

    @property
    def kafka_dir(self) -> Path:
        """Data, logs, pid file and recorded bootstrap address of the local broker."""
        return self.cache_dir / "kafka"

    @property
    def registry_dir(self) -> Path:
        """Distribution, logs, pid file and recorded URL of the local Schema Registry."""
        return self.cache_dir / "registry"

    def resolved_schema_registry_url(self) -> str | None:
        """The registry to use: explicit setting, then the local registry's record, else
        None (no registry)."""
        if self.schema_registry_url:
            return self.schema_registry_url.rstrip("/")
        record = self.registry_dir / "url"
        if record.exists():
            text = record.read_text().strip()
            if text:
                return text
        return None

    def resolved_bootstrap(self) -> str:
        """The bootstrap servers to use: explicit setting, then the local broker's record."""
        if self.bootstrap_servers:
            return self.bootstrap_servers
        record = self.kafka_dir / "bootstrap"
        if record.exists():
            text = record.read_text().strip()
            if text:
                return text
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def uses_sasl(self) -> bool:
        """True for ``SASL_PLAINTEXT`` / ``SASL_SSL``."""
        return self.security_protocol.startswith("SASL_")

    def check_credentials(self) -> None:
        """Raise :class:`KafkaAuthenticationError` when SASL is on without a user/password
        (the client could never authenticate; librdkafka would refuse to start)."""
        if self.uses_sasl and (not self.sasl_username or self.sasl_password is None):
            raise KafkaAuthenticationError(
                f"cannot authenticate: HARVEST_SECURITY_PROTOCOL={self.security_protocol} "
                "needs HARVEST_SASL_USERNAME and HARVEST_SASL_PASSWORD (for the local "
                "`harvest kafka up --secure` broker: `set -a; . "
                f"{self.kafka_dir / 'clients'}/<principal>.env; set +a`)"
            )

    def kafka_client_config(self) -> ClientOptions:
        """librdkafka settings for security (empty for PLAINTEXT); the password stays
        masked in the mapping's ``repr``. Raises :class:`KafkaAuthenticationError` for SASL
        without credentials."""
        self.check_credentials()
        conf: dict[str, str | SecretStr] = {}
        if self.security_protocol != "PLAINTEXT":
            conf["security.protocol"] = self.security_protocol
        if self.sasl_mechanism:
            conf["sasl.mechanism"] = self.sasl_mechanism
        if self.sasl_username:
            conf["sasl.username"] = self.sasl_username
        if self.sasl_password is not None:
            conf["sasl.password"] = self.sasl_password
        if self.ssl_ca_location is not None:
            conf["ssl.ca.location"] = str(self.ssl_ca_location)
        return ClientOptions(conf)


def load_settings(**overrides: object) -> Settings:
    """Build the settings, turning validation failures into :class:`ConfigError`."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"invalid setting HARVEST_{field.upper()}: {first['msg']} (got {first.get('input')!r})"
        ) from exc
