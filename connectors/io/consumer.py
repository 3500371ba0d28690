"""Read harvest topics and decode every record with the serde (``harvest consume``).

:func:`consume` yields a :class:`Consumed` per decodable record and an :class:`Undecodable`
(topic, partition, offset, raw bytes, reason) per record the serde rejects, so a bad record
is reported, never fatal and never lost. All partitions of each topic are assigned
directly (no group rebalance), from the beginning or from the end - or, when a group id
is given, from that group's committed offsets (falling back to beginning/end), with the
offsets of what was read committed on the way. ``read_committed`` reads only committed
transactions (exactly-once results, ARCHITECTURE §4). Reading stops after
``max_records`` records, after ``idle_timeout_s`` seconds without a new record, or - with
``until_end`` - once every partition is read up to its end.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors.io.security import AUTHZ_CODES, ClientErrors, authorization_error, await_metadata
from connectors.io.serde import AvroSerde
from connectors.io.topics import validate_topic
from pipeline.core.errors import ConfigError, KafkaUnavailableError, SerializationError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)


@dataclass(frozen=True)
class ConsumerConfig:
    """What to read and when to stop (frozen; build from :class:`Settings`)."""

    bootstrap: str
    client_config: Mapping[str, str] = field(default_factory=dict)
    group_id: str | None = None
    from_beginning: bool = False
    max_records: int | None = None
    idle_timeout_s: float = 10.0
    until_end: bool = False
    connect_timeout_s: float = 10.0
    batch_size: int = 1000
    #: ``isolation.level=read_committed``: skip records of aborted transactions and stop
    #: at the last stable offset (an open transaction holds the reader back until it ends);
    #: otherwise ``read_uncommitted`` (Kafka's default; librdkafka's is read_committed)
    read_committed: bool = False

    def __post_init__(self) -> None:
        if self.max_records is not None and self.max_records <= 0:
            raise ConfigError(f"max_records: must be > 0, got {self.max_records}")
        if not self.idle_timeout_s > 0:
            raise ConfigError(f"idle_timeout_s: must be > 0, got {self.idle_timeout_s}")
        if not self.connect_timeout_s > 0:
            raise ConfigError(f"connect_timeout_s: must be > 0, got {self.connect_timeout_s}")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> ConsumerConfig:
        """Bootstrap + security settings from :class:`Settings`; other fields overridable."""
        return cls(
            bootstrap=settings.resolved_bootstrap(),
            client_config=settings.kafka_client_config(),
            **overrides,
        )

    def librdkafka(self) -> dict[str, Any]:
        """The confluent_kafka ``Consumer`` configuration dict."""
        return {
            **self.client_config,
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group_id or f"harvest-consume-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": self.group_id is not None,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest" if self.from_beginning else "latest",
            "enable.partition.eof": True,
            "isolation.level": "read_committed" if self.read_committed else "read_uncommitted",
        }


@dataclass(frozen=True)
class Consumed:
    """One decoded record and where it came from."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    timestamp_ms: int | None
    schema: str
    record: dict[str, Any]


@dataclass(frozen=True)
class Undecodable:
    """A record the serde rejected, with the reason; :meth:`dead_letter` wraps it."""

    topic: str
    partition: int
    offset: int
    raw: bytes
    reason: str

    def dead_letter(self, wall_ms: int) -> dict[str, Any]:
        """The ``dead_letter`` record for this failure."""
        return {
            "reason": self.reason,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "raw": self.raw,
            "time": wall_ms,
        }


def _wait_for_partitions(
    consumer: Any, topics: Sequence[str], config: ConsumerConfig, clock: Callable[[], float],
    errors: ClientErrors | None = None,
) -> dict[str, list[int]]:
    """Partitions of each topic; waits up to ``idle_timeout_s`` for topics to appear.
    A topic the ACLs hide (``TOPIC_AUTHORIZATION_FAILED``) raises
    :class:`KafkaAuthorizationError`."""
    deadline = clock() + config.idle_timeout_s
    found: dict[str, list[int]] = {}
    while True:
        meta = await_metadata(consumer, config.bootstrap, config.client_config, errors,
                              config.connect_timeout_s)
        for topic in topics:
            info = meta.topics.get(topic)
            if info is not None and info.error is not None and info.error.code() in AUTHZ_CODES:
                raise authorization_error(config.client_config, info.error.str(),
                                          f"describe topic {topic!r}")
            if info is not None and info.error is None and info.partitions:
                found[topic] = sorted(info.partitions)
        missing = [t for t in topics if t not in found]
        if not missing or clock() >= deadline:
            for topic in missing:
                log.warning("topic does not exist; nothing to read from it", topic=topic)
            return found
        time.sleep(0.25)


def _assignment(consumer: Any, names: Sequence[str], config: ConsumerConfig,
                clock: Callable[[], float], errors: ClientErrors) -> list[Any]:
    """Every partition of the topics, each at its start: the group's committed offset,
    else the beginning or the end (``from_beginning``)."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TopicPartition

    partitions = _wait_for_partitions(consumer, names, config, clock, errors)
    if config.group_id is not None:  # resume at the group's committed offsets
        start = OFFSET_STORED
    else:
        start = OFFSET_BEGINNING if config.from_beginning else OFFSET_END
    return [TopicPartition(t, p, start) for t, ps in partitions.items() for p in ps]


def message_error(err: Any, msg: Any, config: ConsumerConfig,
                   pending_eof: set[tuple[str, int]]) -> None:
    """A message that carries an error: the end of a partition is noted in
    ``pending_eof``; an ACL denial raises :class:`KafkaAuthorizationError`, a fatal error
    :class:`KafkaUnavailableError`; any other is logged."""
    from confluent_kafka import KafkaError

    if err.code() == KafkaError._PARTITION_EOF:
        pending_eof.discard((msg.topic(), msg.partition()))
        return
    if err.code() in AUTHZ_CODES:
        raise authorization_error(config.client_config, err.str(), f"read {msg.topic()!r}")
    if err.fatal():
        raise KafkaUnavailableError(f"fatal consumer error: {err}")
    log.warning("consumer error", error=str(err))


def consume(
    topics: Sequence[str],
    *,
    config: ConsumerConfig,
    serde: AvroSerde,
    reader: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Consumed | Undecodable]:
    """Yield every record of ``topics`` (all partitions), decoded into ``reader`` or the
    current schema of the writer's name. Undecodable values come out as
    :class:`Undecodable`. Raises :class:`KafkaUnavailableError` if no broker answers."""
    from confluent_kafka import Consumer

    names = [validate_topic(t) for t in topics]
    errors = ClientErrors()
    consumer = Consumer({**config.librdkafka(), "error_cb": errors})
    try:
        assignment = _assignment(consumer, names, config, clock, errors)
        if not assignment:
            return
        consumer.assign(assignment)
        log.debug("assigned", partitions=len(assignment), from_beginning=config.from_beginning)
        pending_eof = {(tp.topic, tp.partition) for tp in assignment}
        count = 0
        last_record = clock()
        while True:
            batch = consumer.consume(num_messages=config.batch_size, timeout=0.2)
            for msg in batch:
                err = msg.error()
                if err is not None:
                    message_error(err, msg, config, pending_eof)
                    continue
                item = decode_message(msg, serde, reader)
                pending_eof.add((item.topic, item.partition))
                yield item
                if config.group_id is not None:  # commit only what the caller has taken
                    consumer.store_offsets(message=msg)
                count += 1
                last_record = clock()
                if config.max_records is not None and count >= config.max_records:
                    return
            errors.raise_if_denied(config.bootstrap, config.client_config)
            if config.until_end and not pending_eof:
                return
            if clock() - last_record >= config.idle_timeout_s:  # errors/EOFs do not count
                return
    finally:
        consumer.close()


def decode_message(msg: Any, serde: AvroSerde, reader: str | None) -> Consumed | Undecodable:
    """A confluent-kafka message decoded (:class:`Consumed`), or why not
    (:class:`Undecodable`)."""
    value = msg.value()
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if value is None:
        return Undecodable(topic, partition, offset, b"", "empty value (tombstone)")
    try:
        schema, record = serde.decode(value, reader)
    except SerializationError as exc:
        return Undecodable(topic, partition, offset, bytes(value), str(exc))
    ts_type, ts = msg.timestamp()
    return Consumed(
        topic=topic,
        partition=partition,
        offset=offset,
        key=msg.key(),
        timestamp_ms=ts if ts_type != 0 else None,
        schema=schema,
        record=record,
    )
