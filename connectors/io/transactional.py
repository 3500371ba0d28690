"""Transactional producer: a micro-batch's records and its batch id in one Kafka transaction.

The exactly-once output of the Spark job (``[output] delivery = "exactly-once"``,
ARCHITECTURE §4) runs one :class:`TransactionalSink` on the driver:

* :meth:`TransactionalSink.open` creates the compacted *commits topic* if needed, calls
  ``init_transactions`` — which fences an older producer with the same
  ``transactional.id`` (a crashed driver) and aborts the transaction it left open — and
  then reads this sink's last committed batch id back from the commits topic with
  ``isolation.level=read_committed``.
* :meth:`TransactionalSink.write` — ``begin_transaction``, produce the batch's
  ``(topic, key, value)`` records, produce the *commit record* (key = ``sink_id``, value
  = the batch id as JSON) to the commits topic, ``commit_transaction``. Either all of it
  becomes visible to read_committed consumers or none of it. An abortable error aborts
  the transaction and the batch is written again (``attempts`` in all); a fatal error
  (e.g. the producer was fenced by a newer one) raises :class:`DeliveryError`.

A batch id at or below :attr:`TransactionalSink.last_committed` is already in Kafka: the
caller skips it. The lower-level steps (:meth:`begin`, :meth:`send`, :meth:`flush`,
:meth:`commit`, :meth:`abort`) are public so a test can stop half-way through a
transaction.

Only this module talks to the transactional API of confluent_kafka; the Spark job calls
it from ``pipeline.spark.exactly_once``.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors.io.admin import ensure_topics
from connectors.io.flush import flush_in_steps
from connectors.io.security import AUTHZ_CODES, ClientErrors, authorization_error, await_metadata
from connectors.io.topics import validate_topic
from pipeline.core.errors import ConfigError, DeliveryError, KafkaUnavailableError
from pipeline.core.logging import get_logger

log = get_logger(__name__)

#: the broker's default ``transaction.max.timeout.ms`` (15 min) bounds the producer's
MAX_TRANSACTION_TIMEOUT_MS = 900_000


@dataclass(frozen=True)
class TransactionalConfig:
    """One transactional sink: where it writes, who it is, how long a transaction may stay
    open (``transaction_timeout_ms``: the broker aborts an open transaction of a producer
    that went silent after that long, so it also bounds how long a crashed, never
    restarted writer can hold back read_committed consumers)."""

    bootstrap: str
    transactional_id: str
    #: the compacted topic holding one commit record per committed batch
    commits_topic: str
    #: names this sink's commit records (their key); the query id
    sink_id: str
    client_config: Mapping[str, str] = field(default_factory=dict)
    transaction_timeout_ms: int = 60_000
    connect_timeout_s: float = 10.0
    linger_ms: int = 5
    compression: str = "lz4"
    queue_max_messages: int = 500_000
    #: how often a batch is tried after abortable errors before the write fails
    attempts: int = 3

    def __post_init__(self) -> None:
        if not self.bootstrap.strip():
            raise ConfigError("bootstrap: empty Kafka bootstrap servers")
        if not self.transactional_id or not self.sink_id:
            raise ConfigError("transactional_id/sink_id: must be non-empty")
        validate_topic(self.commits_topic)
        if not 1_000 <= self.transaction_timeout_ms <= MAX_TRANSACTION_TIMEOUT_MS:
            raise ConfigError(f"transaction_timeout_ms: must be in [1000, "
                              f"{MAX_TRANSACTION_TIMEOUT_MS}], got {self.transaction_timeout_ms}")
        if self.attempts < 1:
            raise ConfigError(f"attempts: must be >= 1, got {self.attempts}")

    def librdkafka(self) -> dict[str, Any]:
        """The confluent_kafka ``Producer`` configuration (idempotence is implied by
        ``transactional.id``; ``message.timeout.ms`` defaults to the transaction timeout)."""
        return {
            **self.client_config,
            "bootstrap.servers": self.bootstrap,
            "transactional.id": self.transactional_id,
            "transaction.timeout.ms": self.transaction_timeout_ms,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": self.linger_ms,
            "batch.size": 1_000_000,
            "compression.type": self.compression,
            "queue.buffering.max.messages": self.queue_max_messages,
            "delivery.report.only.error": True,
        }


@dataclass
class BatchWrite:
    """What one :meth:`TransactionalSink.write` did."""

    batch_id: int
    records: int
    attempts: int
    #: seconds from begin_transaction to the end of commit_transaction (last attempt)
    seconds: float
    #: seconds of commit_transaction alone (flush + EndTxn; last attempt)
    commit_seconds: float


class TransactionalSink:
    """A transactional producer that commits each batch with its batch id (see module)."""

    def __init__(self, config: TransactionalConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._producer: Any = None
        self._errors = ClientErrors()
        self._failures: list[str] = []
        self._in_transaction = False
        #: the highest batch id this sink has committed (None: none yet)
        self.last_committed: int | None = None

    # ------------------------------------------------------------------ setup

    def open(self) -> int | None:
        """Create the commits topic, fence older producers of this transactional id (and
        abort their open transaction), read back the last committed batch id."""
        from confluent_kafka import KafkaException, Producer

        cfg = self.config
        ensure_topics(cfg.bootstrap, [cfg.commits_topic], 1,
                      config={"cleanup.policy": "compact"}, client_config=cfg.client_config,
                      timeout=max(cfg.connect_timeout_s, 30.0))
        producer = Producer({**cfg.librdkafka(), "on_delivery": self._on_delivery,
                             "error_cb": self._errors})
        await_metadata(producer, cfg.bootstrap, cfg.client_config, self._errors,
                       cfg.connect_timeout_s)
        started = self._clock()
        try:
            # waits until the coordinator has aborted a previous producer's open transaction
            producer.init_transactions(cfg.transaction_timeout_ms / 1000.0 + 30.0)
        except KafkaException as exc:
            self._raise(exc, "init_transactions")
        self._producer = producer
        self.last_committed = read_last_committed(cfg)
        log.info("transactional sink open", transactional_id=cfg.transactional_id,
                 commits_topic=cfg.commits_topic, last_committed=self.last_committed,
                 init_s=round(self._clock() - started, 3))
        return self.last_committed

    def close(self) -> None:
        """Abort a transaction still open and close the producer (never raises)."""
        from confluent_kafka import KafkaException

        producer, self._producer = self._producer, None
        if producer is None:
            return
        if self._in_transaction:
            try:
                producer.abort_transaction(10.0)
            except KafkaException as exc:
                log.warning("abort on close failed", error=str(exc))
        with contextlib.suppress(KafkaException):
            flush_in_steps(producer, 5.0)

    # ------------------------------------------------------------------ steps

    def _live(self) -> Any:
        if self._producer is None:
            raise DeliveryError("transactional sink: open() it first")
        return self._producer

    def begin(self) -> None:
        """``begin_transaction``."""
        from confluent_kafka import KafkaException

        self._failures.clear()
        try:
            self._live().begin_transaction()
        except KafkaException as exc:
            self._raise(exc, "begin_transaction")
        self._in_transaction = True

    def send(self, topics: Sequence[str], keys: Sequence[bytes | None],
             values: Sequence[bytes]) -> None:
        """Produce records into the open transaction; waits while the local queue is full."""
        from confluent_kafka import KafkaException

        producer = self._live()
        produce = producer.produce
        try:
            for topic, key, value in zip(topics, keys, values, strict=True):
                while True:
                    try:
                        produce(topic, value, key)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
        except KafkaException as exc:
            self._raise(exc, "produce")

    def flush(self, timeout_s: float = 30.0) -> None:
        """Send what is queued (it stays invisible to read_committed consumers until the
        commit)."""
        from confluent_kafka import KafkaException

        try:
            flush_in_steps(self._live(), timeout_s)
        except KafkaException as exc:
            self._raise(exc, "flush")

    def commit(self, batch_id: int, records: int) -> float:
        """Produce the commit record of ``batch_id`` and commit; returns the seconds of
        ``commit_transaction``. Retriable errors are retried up to the transaction timeout."""
        from confluent_kafka import KafkaException

        cfg = self.config
        marker = json.dumps({"batch_id": batch_id, "records": records,
                             "time_ms": int(time.time() * 1000)}).encode()
        self.send([cfg.commits_topic], [cfg.sink_id.encode()], [marker])
        started = self._clock()
        deadline = started + cfg.transaction_timeout_ms / 1000.0
        while True:
            try:
                self._live().commit_transaction(max(1.0, deadline - self._clock()))
                break
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if (error is not None and error.retriable() and not error.txn_requires_abort()
                        and self._clock() < deadline):
                    log.warning("commit_transaction: retrying", error=str(error))
                    continue
                self._raise(exc, "commit_transaction")
        self._in_transaction = False
        self.last_committed = batch_id
        return self._clock() - started

    def abort(self) -> None:
        """``abort_transaction`` (the records produced so far are discarded)."""
        from confluent_kafka import KafkaException

        try:
            self._live().abort_transaction(self.config.transaction_timeout_ms / 1000.0)
        except KafkaException as exc:
            self._raise(exc, "abort_transaction")
        self._in_transaction = False

    # ------------------------------------------------------------------ one batch

    def write(self, batch_id: int, topics: Sequence[str], keys: Sequence[bytes | None],
              values: Sequence[bytes]) -> BatchWrite:
        """Write one batch and its commit record in one transaction (see the module).

        Raises :class:`DeliveryError` when the batch cannot be committed: a fatal producer
        error (fenced by a newer producer, authorization), or abortable errors in every
        one of ``attempts`` tries."""
        attempt = 0
        while True:
            attempt += 1
            started = self._clock()
            try:
                self.begin()
                self.send(topics, keys, values)
                commit_s = self.commit(batch_id, len(values))
            except _AbortableError as exc:
                self.abort()
                if attempt >= self.config.attempts:
                    raise DeliveryError(
                        f"batch {batch_id}: not committed after {attempt} attempts: "
                        f"{exc}") from exc
                log.warning("transaction aborted; writing the batch again",
                            batch_id=batch_id, attempt=attempt, error=str(exc))
                continue
            return BatchWrite(batch_id, len(values), attempt, self._clock() - started,
                              commit_s)

    # ------------------------------------------------------------------ errors

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None and len(self._failures) < 20:
            self._failures.append(f"{msg.topic()}: {err}")

    def _raise(self, exc: Exception, step: str) -> None:
        """An abortable error → :class:`_AbortableError` (the caller aborts and retries); an
        ACL denial → :class:`KafkaAuthorizationError`; anything else (fenced, fatal,
        timed out) → :class:`DeliveryError`."""
        error = exc.args[0] if exc.args else None
        code = error.code() if error is not None and hasattr(error, "code") else None
        if code in AUTHZ_CODES or self._errors.authz is not None:
            reason = error.str() if code in AUTHZ_CODES else self._errors.authz.str()  # type: ignore[union-attr]
            raise authorization_error(self.config.client_config, reason,
                                      f"write transactionally as "
                                      f"{self.config.transactional_id!r}") from exc
        if error is not None and getattr(error, "txn_requires_abort", lambda: False)():
            raise _AbortableError(f"{step}: {error}" + _suffix(self._failures)) from exc
        if code in _fenced_codes():
            raise DeliveryError(
                f"the transactional producer {self.config.transactional_id!r} was fenced in "
                f"{step}: a newer producer with the same transactional.id (a restarted run "
                f"of this job) took over, so this one stops writing: {exc}") from exc
        fatal = error is not None and getattr(error, "fatal", lambda: False)()
        raise DeliveryError(
            f"the transactional producer {self.config.transactional_id!r} failed in {step}"
            f"{' (fatal: fenced by a newer producer or misconfigured)' if fatal else ''}: "
            f"{exc}" + _suffix(self._failures)) from exc


def _fenced_codes() -> frozenset[int]:
    """Error codes of a producer fenced by a newer one with its transactional.id."""
    from confluent_kafka import KafkaError

    return frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                      KafkaError.INVALID_PRODUCER_EPOCH})


class _AbortableError(DeliveryError):
    """The current transaction must be aborted; the producer itself can go on."""


def _suffix(failures: list[str]) -> str:
    return f" (delivery errors: {'; '.join(failures[:3])})" if failures else ""


def read_last_committed(config: TransactionalConfig, timeout_s: float | None = None
                        ) -> int | None:
    """The highest batch id among ``config.sink_id``'s commit records, read with
    ``isolation.level=read_committed`` up to the commits topic's current end.

    It reads until its position passes the high watermark taken at the start, so a
    transaction some other writer still holds open on the topic is waited for (it ends
    within its transaction timeout) instead of hiding the commit records after it.
    Raises :class:`KafkaUnavailableError` if that takes longer than ``timeout_s``
    (default: the transaction timeout + 30 s)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    limit = timeout_s if timeout_s is not None else config.transaction_timeout_ms / 1000 + 30
    common = {**config.client_config, "bootstrap.servers": config.bootstrap,
              "group.id": f"harvest-commits-{uuid.uuid4().hex[:12]}",
              "enable.auto.commit": False, "enable.partition.eof": True}
    probe = Consumer({**common, "isolation.level": "read_uncommitted"})
    try:
        meta = await_metadata(probe, config.bootstrap, config.client_config, None,
                              config.connect_timeout_s, topic=config.commits_topic)
        info = meta.topics.get(config.commits_topic)
        parts = sorted(info.partitions) if info is not None and info.partitions else []
        ends = {p: probe.get_watermark_offsets(TopicPartition(config.commits_topic, p),
                                               config.connect_timeout_s)[1] for p in parts}
    finally:
        probe.close()
    pending = {p for p, end in ends.items() if end > 0}
    if not pending:
        return None
    consumer = Consumer({**common, "isolation.level": "read_committed"})
    best: int | None = None
    key = config.sink_id.encode()
    deadline = time.monotonic() + limit
    try:
        consumer.assign([TopicPartition(config.commits_topic, p, OFFSET_BEGINNING)
                         for p in sorted(pending)])
        while pending:
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"{config.commits_topic}: could not read the committed batch ids up to "
                    f"offsets {ends} within {limit:g} s (a transaction still open?)")
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                if msg.error() is not None or msg.key() != key:
                    continue
                try:
                    batch = int(json.loads(msg.value() or b"")["batch_id"])
                except (ValueError, KeyError, TypeError):
                    log.warning("unreadable commit record", topic=msg.topic(),
                                offset=msg.offset())
                    continue
                best = batch if best is None else max(best, batch)
            positions = consumer.position([TopicPartition(config.commits_topic, p)
                                           for p in pending])
            pending -= {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
    finally:
        consumer.close()
    return best


def last_stable_offsets(bootstrap: str, topic: str,
                        client_config: Mapping[str, str] | None = None,
                        timeout_s: float = 10.0) -> dict[int, tuple[int, int]]:
    """Partition → (last stable offset, high watermark) of ``topic``: they differ while
    a transaction is open on the partition (read_committed consumers stop at the first)."""
    from confluent_kafka import Consumer, TopicPartition

    out: dict[int, tuple[int, int]] = {}
    common = {**(client_config or {}), "bootstrap.servers": bootstrap,
              "group.id": f"harvest-lso-{uuid.uuid4().hex[:12]}", "enable.auto.commit": False}
    committed = Consumer({**common, "isolation.level": "read_committed"})
    uncommitted = Consumer({**common, "isolation.level": "read_uncommitted"})
    try:
        meta = await_metadata(uncommitted, bootstrap, client_config or {}, None, timeout_s,
                              topic=topic)
        info = meta.topics.get(topic)
        for p in sorted(info.partitions) if info is not None and info.partitions else []:
            tp = TopicPartition(topic, p)
            lso = committed.get_watermark_offsets(tp, timeout_s)[1]
            hw = uncommitted.get_watermark_offsets(tp, timeout_s)[1]
            out[p] = (int(lso), int(hw))
    finally:
        committed.close()
        uncommitted.close()
    return out
