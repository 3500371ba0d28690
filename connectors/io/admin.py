"""Kafka admin helpers: wait until a broker answers, create topics idempotently, grant ACLs.

Used by the broker launcher (`harvest kafka up`), the test fixtures and every producer,
consumer or Spark helper that needs its topics to exist before it starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ClusterMetadata,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from connectors.io.security import (
    ClientErrors,
    authentication_error,
    authorization_error,
    await_metadata,
    is_authorization_failure,
)
from connectors.io.topics import validate_topic
from pipeline.core.errors import ConfigError, InfraError, KafkaUnavailableError, TopicError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

Clock = Callable[[], float]
# librdkafka logs every refused connection at level 3; a readiness probe expects those.
_QUIET = {"log_level": "0"}


def admin_client(
    bootstrap: str, client_config: Mapping[str, str] | None = None, quiet: bool = False,
    errors: ClientErrors | None = None,
) -> AdminClient:
    """An AdminClient for ``bootstrap`` plus security settings
    (``Settings.kafka_client_config()``); ``quiet`` silences librdkafka's own log lines;
    ``errors`` collects the client's error callbacks (authentication failures)."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, **(client_config or {})}
    if quiet:
        conf.update(_QUIET)
    if errors is not None:
        conf["error_cb"] = errors
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
    naming the address and the last error after ``timeout`` seconds, and
    :class:`KafkaAuthenticationError` as soon as the broker rejects the credentials.
    """
    if timeout <= 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
    start = clock()
    errors = ClientErrors()
    admin = admin_client(bootstrap, client_config, quiet=True, errors=errors)
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
        admin.poll(0)
        if errors.auth is not None:
            raise authentication_error(bootstrap, client_config or {}, errors.auth.str())
        if on_wait is not None:
            on_wait(clock() - start)
        time.sleep(min(0.5, max(0.0, timeout - (clock() - start))))


def _metadata(admin: AdminClient, bootstrap: str, timeout: float,
              client_config: Mapping[str, str] | None = None,
              errors: ClientErrors | None = None) -> ClusterMetadata:
    """Cluster metadata; authentication failures and ACL denials are told apart from an
    unreachable broker (:func:`connectors.io.security.await_metadata`)."""
    metadata: ClusterMetadata = await_metadata(admin, bootstrap, client_config or {}, errors,
                                               timeout)
    return metadata


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _ready(metadata: ClusterMetadata, name: str) -> bool:
    topic = metadata.topics.get(name)
    if topic is None or topic.error is not None or not topic.partitions:
        return False
    return all(p.leader >= 0 and p.error is None for p in topic.partitions.values())


def _warn_partition_counts(metadata: ClusterMetadata, names: list[str],
                           partitions: int) -> None:
    """Log each existing topic of ``names`` whose partition count is not ``partitions``
    (it is left unchanged)."""
    for name in names:
        existing = metadata.topics.get(name)
        if existing is not None and existing.partitions and len(existing.partitions) != partitions:
            log.warning(
                "topic exists with another partition count; left unchanged",
                topic=name, partitions=len(existing.partitions), requested=partitions,
            )


def _create(admin: AdminClient, topics: list[NewTopic], bootstrap: str, timeout: float,
            client_config: Mapping[str, str] | None) -> list[str]:
    """Create ``topics``; the names this call created (one created meanwhile by someone
    else counts as success but is not listed)."""
    futures = admin.create_topics(topics, operation_timeout=timeout, request_timeout=timeout)
    created: list[str] = []
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            if _error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            denied = is_authorization_failure(exc)
            if denied is not None:
                raise authorization_error(client_config or {}, denied.str(),
                                          f"create topic {name!r}") from exc
            raise TopicError(f"cannot create topic {name!r} on {bootstrap}: {exc}") from exc
        created.append(name)
    return created


def ensure_topics(
    bootstrap: str,
    names: Iterable[str],
    partitions: int = 1,
    *,
    replication_factor: int | None = None,
    config: Mapping[str, str] | None = None,
    client_config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    clock: Clock = time.monotonic,
) -> list[str]:
    """Create the topics in ``names`` that do not exist yet and wait until all have leaders.

    Idempotent: existing topics are left untouched (a different partition count is logged,
    not changed) and a concurrent creation by someone else counts as success. Returns the
    names this call created; ``replication_factor`` None: the broker's
    ``default.replication.factor`` (``min(3, N)`` on a local N-node cluster). Raises
    :class:`ConfigError` for an invalid name or partition
    count, :class:`KafkaUnavailableError` when the broker does not answer and
    :class:`TopicError` when a topic cannot be created or is not ready within ``timeout``.
    """
    wanted = list(dict.fromkeys(validate_topic(n) for n in names))
    if partitions < 1:
        raise ConfigError(f"partitions must be >= 1, got {partitions!r}")
    if replication_factor is not None and replication_factor < 1:
        raise ConfigError(f"replication_factor must be >= 1, got {replication_factor!r}")
    if not wanted:
        return []
    start = clock()
    errors = ClientErrors()
    admin = admin_client(bootstrap, client_config, errors=errors)
    metadata = _metadata(admin, bootstrap, timeout, client_config, errors)
    _warn_partition_counts(metadata, wanted, partitions)
    missing = [n for n in wanted if n not in metadata.topics]
    created: list[str] = []
    if missing:
        factor = -1 if replication_factor is None else replication_factor
        topics = [NewTopic(n, num_partitions=partitions, replication_factor=factor,
                           config=dict(config or {})) for n in missing]
        created = _create(admin, topics, bootstrap, timeout, client_config)
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
        metadata = _metadata(admin, bootstrap, timeout, client_config, errors)


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
    present = [n for n in wanted
               if n in _metadata(admin, bootstrap, timeout, client_config).topics]
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


def partition_leaders(
    bootstrap: str, client_config: Mapping[str, str] | None = None, timeout: float = 10.0
) -> dict[int, list[tuple[str, int]]]:
    """Node id → the ``(topic, partition)`` pairs it leads (internal topics included;
    a partition without a leader is under no node)."""
    metadata = _metadata(admin_client(bootstrap, client_config, quiet=True), bootstrap,
                         timeout, client_config)
    out: dict[int, list[tuple[str, int]]] = {int(b): [] for b in metadata.brokers}
    for name, topic in sorted(metadata.topics.items()):
        for number, part in sorted(topic.partitions.items()):
            if part.leader >= 0:
                out.setdefault(int(part.leader), []).append((name, int(number)))
    return out


def leader_of(bootstrap: str, topic: str, partition: int = 0,
              client_config: Mapping[str, str] | None = None, timeout: float = 10.0) -> int:
    """The node id leading ``topic``'s ``partition``; :class:`TopicError` when it has none."""
    for node, parts in partition_leaders(bootstrap, client_config, timeout).items():
        if (topic, partition) in parts:
            return node
    raise TopicError(f"{topic}[{partition}] on {bootstrap} has no leader")


def list_topic_names(
    bootstrap: str, client_config: Mapping[str, str] | None = None, timeout: float = 10.0
) -> set[str]:
    """Names of all topics on the cluster (internal ones like ``__consumer_offsets`` too)."""
    return set(_metadata(admin_client(bootstrap, client_config), bootstrap, timeout,
                         client_config).topics)


@dataclass(frozen=True)
class Acl:
    """One ALLOW ACL: ``principal`` (``User:name``) may ``operation`` on the resource.

    ``resource`` is ``topic``, ``group``, ``cluster`` or ``transactional_id``; ``name``
    ``*`` with the literal
    pattern means every resource of that type (``kafka-cluster`` for the cluster).
    """

    principal: str
    resource: str
    operation: str
    name: str = "*"

    def binding(self) -> AclBinding:
        """The confluent-kafka binding (host ``*``, literal pattern, ALLOW)."""
        kinds = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP,
                 "cluster": ResourceType.BROKER,
                 "transactional_id": ResourceType.TRANSACTIONAL_ID}
        if self.resource not in kinds:
            raise ConfigError(f"acl resource: expected topic|group|cluster|transactional_id, "
                              f"got {self.resource!r}")
        try:
            operation = AclOperation[self.operation.upper()]
        except KeyError:
            raise ConfigError(f"acl operation: unknown {self.operation!r}") from None
        name = "kafka-cluster" if self.resource == "cluster" else self.name
        return AclBinding(kinds[self.resource], name, ResourcePatternType.LITERAL,
                          self.principal, "*", operation, AclPermissionType.ALLOW)


def create_acls(bootstrap: str, acls: Iterable[Acl], *,
                client_config: Mapping[str, str] | None = None,
                timeout: float = 30.0) -> int:
    """Create the ACLs (idempotent: an existing binding is left as it is); returns how
    many were requested. Raises :class:`InfraError` naming the ACL that failed."""
    bindings = [a.binding() for a in acls]
    if not bindings:
        return 0
    admin = admin_client(bootstrap, client_config)
    for binding, future in admin.create_acls(bindings, request_timeout=timeout).items():
        try:
            future.result()
        except KafkaException as exc:
            raise InfraError(f"cannot create ACL {binding} on {bootstrap}: {exc}") from exc
    return len(bindings)
