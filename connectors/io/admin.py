"""Kafka admin helpers: wait until a broker answers, create topics idempotently.

Used by the broker launcher (`harvest kafka up`), the test fixtures and every producer,
consumer or Spark helper that needs its topics to exist before it starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

from connectors.io.topics import validate_topic
from pipeline.core.errors import ConfigError, KafkaUnavailableError, TopicError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

Clock = Callable[[], float]
# librdkafka logs every refused connection at level 3; a readiness probe expects those.
_QUIET = {"log_level": "0"}


def admin_client(
    bootstrap: str, client_config: Mapping[str, str] | None = None, quiet: bool = False
) -> AdminClient:
    """An AdminClient for ``bootstrap`` plus security settings
    (``Settings.kafka_client_config()``); ``quiet`` silences librdkafka's own log lines."""
    conf: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap, **(client_config or {})
    }
    if quiet:
        conf.update(_QUIET)
    return AdminClient(conf)


def wait_for_broker(
    bootstrap: str,
    timeout: float = 60.0,
    client_config: Mapping[str, str] | None = None,
    *,
    probe_timeout: float = 2.0,
    on_wait: Callable[[float], None] | None = None,
    clock: Clock = time.monotonic,
) -> int:
    """Block until ``bootstrap`` answers a metadata request; return the number of brokers.

    Probes with ``AdminClient.list_topics`` every ~0.5 s. ``on_wait(elapsed_s)`` is called
    after each failed probe (for progress output). Raises :class:`KafkaUnavailableError`
    naming the address and the last error after ``timeout`` seconds.
    """
    if timeout <= 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
    start = clock()
    admin = admin_client(bootstrap, client_config, quiet=True)
    last_error = "no answer"
    while True:
        remaining = timeout - (clock() - start)
        if remaining <= 0:
            raise KafkaUnavailableError(
                f"Kafka at {bootstrap} did not answer a metadata request within "
                f"{timeout:g} s (last error: {last_error})"
            )
        try:
            metadata = admin.list_topics(timeout=max(0.1, min(probe_timeout, remaining)))
        except KafkaException as exc:
            last_error = str(exc.args[0]) if exc.args else repr(exc)
        else:
            if metadata.brokers:
                return len(metadata.brokers)
            last_error = "metadata without brokers"
        if on_wait is not None:
            on_wait(clock() - start)
        time.sleep(min(0.5, max(0.0, timeout - (clock() - start))))


def _metadata(admin: AdminClient, bootstrap: str, timeout: float) -> ClusterMetadata:
    try:
        return admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailableError(
            f"Kafka at {bootstrap} did not answer a metadata request within {timeout:g} s: {exc}"
        ) from exc


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _ready(metadata: ClusterMetadata, name: str) -> bool:
    topic = metadata.topics.get(name)
    if topic is None or topic.error is not None or not topic.partitions:
        return False
    return all(p.leader >= 0 and p.error is None for p in topic.partitions.values())


def ensure_topics(
    bootstrap: str,
    names: Iterable[str],
    partitions: int = 1,
    *,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
    client_config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    clock: Clock = time.monotonic,
) -> list[str]:
    """Create the topics in ``names`` that do not exist yet and wait until all have leaders.

    Idempotent: existing topics are left untouched (a different partition count is logged,
    not changed) and a concurrent creation by someone else counts as success. Returns the
    names this call created. Raises :class:`ConfigError` for an invalid name or partition
    count, :class:`KafkaUnavailableError` when the broker does not answer and
    :class:`TopicError` when a topic cannot be created or is not ready within ``timeout``.
    """
    wanted = list(dict.fromkeys(validate_topic(n) for n in names))
    if partitions < 1:
        raise ConfigError(f"partitions must be >= 1, got {partitions!r}")
    if replication_factor < 1:
        raise ConfigError(f"replication_factor must be >= 1, got {replication_factor!r}")
    if not wanted:
        return []
    start = clock()
    admin = admin_client(bootstrap, client_config)
    metadata = _metadata(admin, bootstrap, timeout)
    for name in wanted:
        existing = metadata.topics.get(name)
        if existing is not None and existing.partitions and len(existing.partitions) != partitions:
            log.warning(
                "topic exists with another partition count; left unchanged",
                topic=name, partitions=len(existing.partitions), requested=partitions,
            )
    missing = [n for n in wanted if n not in metadata.topics]
    created: list[str] = []
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(n, num_partitions=partitions, replication_factor=replication_factor,
                         config=dict(config or {}))
                for n in missing
            ],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        for name, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                if _error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                raise TopicError(f"cannot create topic {name!r} on {bootstrap}: {exc}") from exc
            created.append(name)
        log.info("topics created", topics=created, partitions=partitions, bootstrap=bootstrap)
    pending = list(wanted)
    while True:
        pending = [n for n in pending if not _ready(metadata, n)]
        if not pending:
            return created
        if clock() - start > timeout:
            raise TopicError(
                f"topics {pending} on {bootstrap} have no leader after {timeout:g} s"
            )
        time.sleep(0.1)
        metadata = _metadata(admin, bootstrap, timeout)


def delete_topics(
    bootstrap: str,
    names: Iterable[str],
    *,
    client_config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> list[str]:
    """Delete the listed topics that exist; return the names deleted (missing ones skipped)."""
    wanted = list(dict.fromkeys(validate_topic(n) for n in names))
    if not wanted:
        return []
    admin = admin_client(bootstrap, client_config)
    present = [n for n in wanted if n in _metadata(admin, bootstrap, timeout).topics]
    if not present:
        return []
    deleted: list[str] = []
    for name, future in admin.delete_topics(
        present, operation_timeout=timeout, request_timeout=timeout
    ).items():
        try:
            future.result()
        except KafkaException as exc:
            if _error_code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            raise TopicError(f"cannot delete topic {name!r} on {bootstrap}: {exc}") from exc
        deleted.append(name)
    return deleted


def list_topic_names(
    bootstrap: str, client_config: Mapping[str, str] | None = None, timeout: float = 10.0
) -> set[str]:
    """Names of all topics on the cluster (internal ones like ``__consumer_offsets`` too)."""
    return set(_metadata(admin_client(bootstrap, client_config), bootstrap, timeout).topics)
