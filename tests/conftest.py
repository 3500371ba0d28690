"""Root test fixtures.

``kafka_bootstrap`` (session) finds a real broker, in the order of ARCHITECTURE §8:

1. ``KAFKA_BOOTSTRAP_SERVERS`` when set (checked to answer within 30 s);
2. testcontainers' Kafka module when a Docker engine answers a 1-second ``/_ping``;
3. the local broker from ``infra/`` (:class:`connectors.launch.broker.LocalKafka`, i.e.
   `harvest kafka up`): started if needed, and stopped at session end only if this
   session started it.

It reports which one it used on the terminal and in the summary. ``topic_prefix`` gives
every test its own topic prefix so tests sharing the broker never see each other's data.

``schema_registry`` (session) is the Confluent-compatible URL of a real Schema Registry:
``SCHEMA_REGISTRY_URL`` when set, else the local Apicurio registry
(:class:`connectors.launch.registry.LocalRegistry`, i.e. `harvest registry up`), started
if needed and stopped at session end only if this session started it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from connectors.io.admin import wait_for_broker
from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.docker_probe import docker_engine_answers
from connectors.launch.registry import LocalRegistry, RegistryConfig, answers
from pipeline.core.settings import load_settings

_KAFKA_SOURCES: list[str] = []


def _announce(request: pytest.FixtureRequest, text: str, fixture: str = "kafka_bootstrap"
              ) -> None:
    """Print which broker (or registry) the session uses now (visible without -s) and in
    the summary."""
    _KAFKA_SOURCES.append(f"{fixture}: {text}")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\n{fixture}: {text}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Repeat the broker choice at the end of the run."""
    for line in _KAFKA_SOURCES:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """Bootstrap servers of a real Kafka broker for tests marked ``kafka``."""
    from_env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if from_env:
        wait_for_broker(from_env, timeout=30.0)
        _announce(request, f"{from_env} (from KAFKA_BOOTSTRAP_SERVERS)")
        yield from_env
        return

    if docker_engine_answers(os.environ.get("DOCKER_HOST"), timeout=1.0):
        from testcontainers.community.kafka import KafkaContainer

        container = KafkaContainer().with_kraft()
        container.start()
        try:
            bootstrap = container.get_bootstrap_server()
            wait_for_broker(bootstrap, timeout=60.0)
            _announce(request, f"{bootstrap} (testcontainers {container.image})")
            yield bootstrap
        finally:
            container.stop()
        return

    broker = LocalKafka(BrokerConfig.from_settings(load_settings()))
    was_running = broker.status().running
    status = broker.up()
    assert status.bootstrap is not None
    how = "already running" if was_running else "started for this session"
    _announce(request, f"{status.bootstrap} (local broker, {how}; pid {status.pid})")
    try:
        yield status.bootstrap
    finally:
        if not was_running:
            broker.down()


@pytest.fixture(scope="session")
def schema_registry(request: pytest.FixtureRequest) -> Iterator[str]:
    """The Confluent-compatible base URL of a real Schema Registry."""
    from_env = os.environ.get("SCHEMA_REGISTRY_URL", "").strip().rstrip("/")
    if from_env:
        assert answers(from_env, timeout=10.0), f"SCHEMA_REGISTRY_URL={from_env} does not answer"
        _announce(request, f"{from_env} (from SCHEMA_REGISTRY_URL)", "schema_registry")
        yield from_env
        return
    registry = LocalRegistry(RegistryConfig.from_settings(load_settings()))
    was_running = registry.status().running
    status = registry.up()
    assert status.url is not None
    how = "already running" if was_running else "started for this session"
    _announce(request, f"{status.url} (local Apicurio, {how}; pid {status.pid})",
              "schema_registry")
    try:
        yield status.url
    finally:
        if not was_running:
            registry.down()


@pytest.fixture
def topic_prefix() -> str:
    """A topic prefix unique to this test, e.g. ``t1a2b3c4d``."""
    return f"t{uuid.uuid4().hex[:8]}"
