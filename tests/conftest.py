"""Root test fixtures.

``kafka_bootstrap`` (session) finds a real broker, in the order of ARCHITECTURE §8:

1. ``KAFKA_BOOTSTRAP_SERVERS`` when set (checked to answer within 30 s);
2. testcontainers' Kafka module when a Docker engine answers a 1-second ``/_ping``;
3. the local broker from ``infra/`` (:class:`connectors.launch.broker.LocalKafka`, i.e.
   `harvest kafka up`): started if needed, and stopped at session end only if this
   session started it.

It reports which one it used on the terminal and in the summary. ``topic_prefix`` gives
every test its own topic prefix so tests sharing the broker never see each other's data.

``kafka_cluster`` (session) is a local three-node cluster (`harvest kafka up --brokers 3`)
under its own HARVEST_CACHE_DIR, for the leader-failover tests: one per session, since
starting three JVMs takes half a minute.

``schema_registry`` (session) is the Confluent-compatible URL of a real Schema Registry:
``SCHEMA_REGISTRY_URL`` when set, else the local Apicurio registry
(:class:`connectors.launch.registry.LocalRegistry`, i.e. `harvest registry up`), started
if needed and stopped at session end only if this session started it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from connectors.io.admin import wait_for_broker
from connectors.launch.broker import LocalKafka
from connectors.launch.broker_config import BrokerConfig
from connectors.launch.cluster import LocalCluster
from connectors.launch.docker_probe import docker_engine_answers
from connectors.launch.registry import LocalRegistry, RegistryConfig, answers
from pipeline.core.settings import PROJECT_ROOT, load_settings

_KAFKA_SOURCES: list[str] = []

# The tests keep the Spark UI off: every `harvest submit` / `harvest demo` they start, in
# this process or as a child that inherits the environment, unless it passes --ui.
os.environ.setdefault("HARVEST_SPARK_UI", "false")


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


@dataclass(frozen=True)
class KafkaCluster:
    """The session's three-node cluster: the environment that points harvest commands at
    it (its HARVEST_CACHE_DIR and HARVEST_BOOTSTRAP_SERVERS), its bootstrap servers and
    its launcher."""

    env: dict[str, str]
    bootstrap: str
    launcher: LocalCluster

    def harvest(self, *args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
        """Run ``harvest <args>`` against the cluster."""
        return subprocess.run([sys.executable, "-m", "pipeline.cli.main", *args],
                              cwd=PROJECT_ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A three-node local cluster (see the module docstring), stopped at session end."""
    cache = tmp_path_factory.mktemp("cluster-cache")
    (cache / "jars").symlink_to(load_settings().jars_dir.resolve(), target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARVEST_")}
    env.update(HARVEST_CACHE_DIR=str(cache), HARVEST_LOG_FORMAT="json")
    launcher = LocalCluster(BrokerConfig.from_settings(load_settings(cache_dir=cache)))
    try:
        cluster = KafkaCluster(env, "", launcher)
        done = cluster.harvest("kafka", "up", "--brokers", "3", "--timeout", "180")
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        record = launcher.record()
        assert record is not None
        env["HARVEST_BOOTSTRAP_SERVERS"] = record.bootstrap
        _announce(request, f"{record.bootstrap} (local 3-node cluster under {cache})",
                  "kafka_cluster")
        yield KafkaCluster(env, record.bootstrap, launcher)
    finally:
        launcher.down()


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
