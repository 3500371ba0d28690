"""Idempotent Avro producer: publish records to Kafka as single-object encoded Avro.

Public API (used by ``harvest produce`` and the benchmarks; keep it stable):

* :class:`ProducerConfig` - frozen client settings; ``ProducerConfig.from_settings(settings)``.
* :class:`Pacing` - replay records in real time by their ``arrival_time`` x ``speedup``.
* :func:`publish` - encode + send an iterable of record dicts, wait for delivery and return a
  :class:`ProduceReport`. Raises :class:`KafkaUnavailableError` when no broker answers
  (within ``connect_timeout_s``, well under 30 s) and :class:`SerializationError` when a
  record does not match its schema (records before it are still flushed).
* :func:`publish_encoded` - the same for already-encoded ``(topic, key, value)`` messages.

Records are encoded in batches of ``_CHUNK`` with the serde's vectorized path
(:meth:`AvroSerde.encode_many`), then handed to librdkafka one by one; delivery reports
are requested for failures only (``delivery.report.only.error``), so ``delivered`` is
``sent - failed`` once the final, bounded flush returns.

Example::

    serde = AvroSerde.from_dir(settings.schemas_dir)
    report = publish(
        records,
        config=ProducerConfig.from_settings(settings),
        serde=serde,
        schema_name="sensor_reading",
        topic_of=lambda r: input_topic(settings.topic_prefix, "sensors", r["stream"]),
        key_of=lambda r: r["stream"].encode(),
        pace=Pacing(speedup=10.0),       # or None: as fast as possible
        on_progress=bar.update,          # called with the number of records sent since last call
    )
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from connectors.io.admin import ensure_topics
from connectors.io.flush import flush_in_steps
from connectors.io.producer_config import Pacing, ProducerConfig, ProduceReport
from connectors.io.security import (
    AUTHZ_CODES,
    ClientErrors,
    authorization_error,
    await_metadata,
    is_authorization_failure,
)
from connectors.io.serde import AvroSerde
from connectors.io.topics import validate_topic
from pipeline.core.errors import (
    DeliveryError,
    SerializationError,
)
from pipeline.core.logging import get_logger

__all__ = ["publish", "publish_encoded"]

log = get_logger(__name__)

Record = Mapping[str, Any]


_MAX_ERRORS_KEPT = 20


class _Session:
    """One producer client: reachability check, topic creation, produce, final flush.

    No broker within ``connect_timeout_s`` raises :class:`KafkaUnavailableError`, rejected
    credentials :class:`KafkaAuthenticationError` (as soon as the broker says so), and an
    ACL that denies writing :class:`KafkaAuthorizationError` — at once when it made the
    producer fail (no producer id for an idempotent producer), else from
    :meth:`raise_if_denied` after :meth:`close` (which never raises, so it cannot mask an
    error in flight).
    """

    def __init__(self, config: ProducerConfig, clock: Callable[[], float]) -> None:
        from confluent_kafka import KafkaError, KafkaException, Producer

        self._config = config
        self._kafka_exception = KafkaException
        self._fatal_code = KafkaError._FATAL
        self._clock = clock
        self.report = ProduceReport()
        self._known_topics: set[str] = set()
        self._errors = ClientErrors()
        self._denied: str | None = None
        self._fatal: Exception | None = None
        self._producer = Producer({**config.librdkafka(), "on_delivery": self._on_delivery,
                                   "error_cb": self._errors})
        await_metadata(self._producer, config.bootstrap, config.client_config, self._errors,
                       config.connect_timeout_s)
        self._started = clock()

    def _on_delivery(self, err: Any, msg: Any) -> None:
        """Delivery report; with ``delivery.report.only.error`` only failures arrive."""
        if err is None:
            return
        if err.code() in AUTHZ_CODES and self._denied is None:
            self._denied = err.str()
        self.report.failed += 1
        if len(self.report.errors) < _MAX_ERRORS_KEPT:
            self.report.errors.append(f"{msg.topic()}: {err}")

    def topic(self, name: str) -> str:
        """Validate (and create, once) a topic before its first record."""
        if name not in self._known_topics:
            validate_topic(name)
            if self._config.create_topics:
                ensure_topics(
                    self._config.bootstrap,
                    [name],
                    self._config.topic_partitions,
                    client_config=self._config.client_config,
                    timeout=self._config.connect_timeout_s,
                )
            self._known_topics.add(name)
            self.report.topics.setdefault(name, 0)
        return name

    def send_many(
        self, topics: Sequence[str], keys: Sequence[bytes | None], values: Sequence[bytes]
    ) -> None:
        """Hand encoded records to the client; waits while its local queue is full.

        A record the client refuses outright (e.g. larger than ``message.max.bytes``)
        counts as sent and failed, with the reason in the report.
        """
        for name in set(topics).difference(self._known_topics):
            self.topic(name)
        producer = self._producer
        produce = producer.produce
        for topic, key, value in zip(topics, keys, values, strict=True):
            while True:
                try:
                    produce(topic, value, key)
                    break
                except BufferError:
                    self._poll(0.05)
                except self._kafka_exception as exc:
                    error = exc.args[0] if exc.args else None
                    if self._fatal is not None or (error is not None and (
                            error.fatal() or error.code() == self._fatal_code)):
                        self._raise_fatal(exc)
                    self._on_refused(topic, exc)
                    break
        report = self.report
        report.sent += len(values)
        for name, count in Counter(topics).items():
            report.topics[name] += count
        self._poll(0)

    def _on_refused(self, topic: str, exc: Exception) -> None:
        self.report.failed += 1
        if len(self.report.errors) < _MAX_ERRORS_KEPT:
            self.report.errors.append(f"{topic}: {exc}")

    def poll(self) -> None:
        """Serve delivery reports without blocking."""
        self._poll(0)

    def _poll(self, timeout: float) -> None:
        try:
            self._producer.poll(timeout)
        except self._kafka_exception as exc:  # a fatal error surfaces from poll()
            self._raise_fatal(exc)

    def _raise_fatal(self, exc: Exception) -> None:
        """The producer cannot go on: the ACL denial behind it, else a DeliveryError."""
        self._fatal = self._fatal or exc
        try:  # the fatal error's own code (e.g. CLUSTER_AUTHORIZATION_FAILED) comes from poll
            self._producer.poll(0)
        except self._kafka_exception as cause:
            if is_authorization_failure(cause) is not None:
                self._fatal = cause
        self.raise_if_denied()
        raise DeliveryError(f"the Kafka producer failed: {self._fatal}") from exc

    def _denial(self) -> str | None:
        """Why the ACLs refused this producer, if they did."""
        if self._denied is not None:
            return self._denied
        denied = is_authorization_failure(self._fatal) if self._fatal is not None else None
        if denied is not None:
            return str(denied.str())
        if self._errors.authz is not None:
            return str(self._errors.authz.str())
        for error in self._errors.errors:  # a fatal error event carries the broker's reason
            if "authorization failed" in error.str().lower():
                return str(error.str())
        return None

    def raise_if_denied(self) -> None:
        """Raise :class:`KafkaAuthorizationError` if the ACLs refused this producer."""
        reason = self._denial()
        if reason is not None:
            topics = ", ".join(sorted(self._known_topics)) or "its topics"
            raise authorization_error(self._config.client_config, reason,
                                      f"write to {topics}")

    def close(self) -> ProduceReport:
        """Flush (bounded by ``flush_timeout_s``) and fill in delivered/failed/seconds.
        Never raises: a fatal producer error counts the unacknowledged records as failed."""
        try:
            remaining = flush_in_steps(self._producer, self._config.flush_timeout_s)
        except self._kafka_exception as exc:  # a fatal producer error (e.g. no PID granted)
            self._fatal = self._fatal or exc
            remaining = len(self._producer)
            self.report.errors.append(f"the Kafka producer failed: {exc}")
        with contextlib.suppress(self._kafka_exception):
            self._producer.poll(0)
        report = self.report
        if remaining:
            report.failed += remaining
            report.errors.append(
                f"{remaining} records not acknowledged within {self._config.flush_timeout_s} s"
            )
        report.delivered = report.sent - report.failed
        report.seconds = self._clock() - self._started
        return report


_CHUNK = 1000  # records encoded per vectorized batch


class _Pacer:
    """Sleeps so that each record leaves (arrival - first arrival) / speedup after start."""

    def __init__(self, pace: Pacing, serve: Callable[[], None]) -> None:
        self._pace = pace
        self._serve = serve
        self._first: float | None = None
        self._start = 0.0

    def wait(self, record: Record) -> None:
        pace = self._pace
        arrival = float(record[pace.time_field])
        if self._first is None:
            self._first, self._start = arrival, pace.clock()
        due = self._start + (arrival - self._first) / 1000.0 / pace.speedup
        wait = due - pace.clock()
        if wait > 0:
            self._serve()
            pace.sleep(wait)


def _encodable_prefix(serde: AvroSerde, name: str, chunk: list[Record]) -> list[bytes]:
    """The encodings of ``chunk``'s records up to (not including) the first bad one."""
    out: list[bytes] = []
    for record in chunk:
        try:
            out.append(serde.encode(name, record))
        except SerializationError:
            break
    return out


def _report_progress(on_progress: Callable[[int], None] | None, sent: int, last: int) -> int:
    if on_progress is not None and sent > last:
        on_progress(sent - last)
    return sent


def _encode_chunk(serde: AvroSerde, schema_name: str, chunk: list[Record], first_index: int
                  ) -> tuple[list[bytes], SerializationError | None]:
    """The encoded values of ``chunk``; up to the first record that does not match the
    schema, and its error, if one does not."""
    try:
        return serde.encode_many(schema_name, chunk, first_index=first_index), None
    except SerializationError as exc:
        return _encodable_prefix(serde, schema_name, chunk), exc


def _send_chunk(head: list[Record], values: list[bytes],
                send_many: Callable[[list[str], list[bytes | None], list[bytes]], None],
                pacer: _Pacer | None, topic_of: Callable[[Record], str],
                key_of: Callable[[Record], bytes | None] | None) -> None:
    """Send encoded records: all at once, or one by one each at its paced time."""
    if pacer is None:
        keys: list[bytes | None] = ([key_of(r) for r in head] if key_of is not None
                                    else [None] * len(head))
        send_many([topic_of(r) for r in head], keys, values)
        return
    for record, value in zip(head, values, strict=True):
        pacer.wait(record)
        key = key_of(record) if key_of is not None else None
        send_many([topic_of(record)], [key], [value])


def publish(
    records: Iterable[Record],
    *,
    config: ProducerConfig,
    serde: AvroSerde,
    schema_name: str,
    topic_of: Callable[[Record], str],
    key_of: Callable[[Record], bytes | None] | None = None,
    pace: Pacing | None = None,
    on_progress: Callable[[int], None] | None = None,
    progress_every: int = 5000,
    clock: Callable[[], float] = time.monotonic,
) -> ProduceReport:
    """Encode ``records`` with ``schema_name`` and produce each to ``topic_of(record)``.

    Idempotent producer (``enable.idempotence``, ``acks=all``) with lz4 batches. Topics are
    created on first sight when ``config.create_topics``. Returns once every record is
    acknowledged or failed, or ``config.flush_timeout_s`` passed (then the unacknowledged
    rest counts as failed). ``on_progress(n)`` gets increments of sent records.
    A record that does not match the schema raises :class:`SerializationError` naming its
    index, after the records before it were flushed.
    """
    serde.entry(schema_name)  # unknown name: fail before connecting
    session = _Session(config, clock)
    pacer = _Pacer(pace, session.poll) if pace is not None else None
    send_many = session.send_many
    iterator = iter(records)
    index = last_progress = 0
    closed: ProduceReport | None = None
    try:
        while chunk := list(islice(iterator, _CHUNK)):
            values, error = _encode_chunk(serde, schema_name, chunk, index)
            _send_chunk(chunk[: len(values)], values, send_many, pacer, topic_of, key_of)
            index += len(values)
            if error is not None:
                raise error
            if index - last_progress >= progress_every:
                last_progress = _report_progress(on_progress, index, last_progress)
    except DeliveryError as exc:  # the producer failed: what it did deliver travels along
        closed = session.close()
        exc.report = closed  # type: ignore[attr-defined]
        raise
    finally:
        report = closed if closed is not None else session.close()
        _report_progress(on_progress, report.sent, last_progress)
    session.raise_if_denied()
    log.info(
        "published",
        schema=schema_name,
        sent=report.sent,
        delivered=report.delivered,
        failed=report.failed,
        seconds=round(report.seconds, 3),
    )
    return report


def publish_encoded(
    messages: Iterable[tuple[str, bytes | None, bytes]],
    *,
    config: ProducerConfig,
    on_progress: Callable[[int], None] | None = None,
    progress_every: int = 5000,
    clock: Callable[[], float] = time.monotonic,
) -> ProduceReport:
    """Produce already-encoded ``(topic, key, value)`` messages (e.g. dead letters, or the
    benchmark's ceiling); same delivery accounting as :func:`publish`."""
    session = _Session(config, clock)
    last_progress = 0
    try:
        iterator = iter(messages)
        while chunk := list(islice(iterator, _CHUNK)):
            topics, keys, values = zip(*chunk, strict=True)
            session.send_many(topics, keys, values)
            if session.report.sent - last_progress >= progress_every:
                last_progress = _report_progress(on_progress, session.report.sent, last_progress)
    finally:
        report = session.close()
        _report_progress(on_progress, report.sent, last_progress)
    session.raise_if_denied()
    return report
