"""The producer's plain parts: its frozen client settings (:class:`ProducerConfig`), real
time pacing (:class:`Pacing`) and what a publish did (:class:`ProduceReport`). Import them
from :mod:`connectors.io.producer`, the public API."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import ConfigError, DeliveryError
from pipeline.core.settings import Settings


@dataclass(frozen=True)
class ProducerConfig:
    """librdkafka producer settings (frozen; build once from :class:`Settings`)."""

    bootstrap: str
    client_config: Mapping[str, str] = field(default_factory=dict)
    linger_ms: int = 20
    batch_size: int = 1_000_000
    compression: str = "lz4"
    queue_max_messages: int = 500_000
    connect_timeout_s: float = 10.0
    flush_timeout_s: float = 20.0
    message_timeout_ms: int = 30_000
    create_topics: bool = True
    topic_partitions: int = 1

    def __post_init__(self) -> None:
        if not self.bootstrap.strip():
            raise ConfigError("bootstrap: empty Kafka bootstrap servers")
        if self.linger_ms < 0:
            raise ConfigError(f"linger_ms: must be >= 0, got {self.linger_ms}")
        if self.connect_timeout_s <= 0 or self.flush_timeout_s <= 0:
            raise ConfigError(
                f"connect_timeout_s/flush_timeout_s: must be > 0, got "
                f"{self.connect_timeout_s}/{self.flush_timeout_s}"
            )
        if self.topic_partitions < 1:
            raise ConfigError(f"topic_partitions: must be >= 1, got {self.topic_partitions}")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> ProducerConfig:
        """Bootstrap + security settings from :class:`Settings`; other fields overridable."""
        return cls(
            bootstrap=settings.resolved_bootstrap(),
            client_config=settings.kafka_client_config(),
            **overrides,
        )

    def librdkafka(self) -> dict[str, Any]:
        """The confluent_kafka ``Producer`` configuration dict."""
        return {
            **self.client_config,
            "bootstrap.servers": self.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": self.linger_ms,
            "batch.size": self.batch_size,
            "compression.type": self.compression,
            "queue.buffering.max.messages": self.queue_max_messages,
            "message.timeout.ms": self.message_timeout_ms,
            "delivery.report.only.error": True,
        }

    def snapshot(self) -> dict[str, Any]:
        """A plain dict of this config (the client secrets are left out)."""
        return {
            "bootstrap": self.bootstrap,
            "linger_ms": self.linger_ms,
            "batch_size": self.batch_size,
            "compression": self.compression,
            "queue_max_messages": self.queue_max_messages,
            "connect_timeout_s": self.connect_timeout_s,
            "flush_timeout_s": self.flush_timeout_s,
            "message_timeout_ms": self.message_timeout_ms,
            "create_topics": self.create_topics,
            "topic_partitions": self.topic_partitions,
        }

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> ProducerConfig:
        """Inverse of :meth:`snapshot` (client security settings must be re-supplied)."""
        return cls(**dict(snap))


@dataclass(frozen=True)
class Pacing:
    """Replay in real time: record i is sent (arrival_i - arrival_0) / speedup after start.

    ``arrival_time`` (ms) is read from each record; ``speedup=10`` replays 10x faster than
    real time. Sleeping uses the injected ``sleep``/``clock`` (seconds, monotonic).
    """

    speedup: float = 1.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    time_field: str = "arrival_time"

    def __post_init__(self) -> None:
        if not self.speedup > 0:
            raise ConfigError(f"speedup: must be > 0, got {self.speedup}")


@dataclass
class ProduceReport:
    """What :func:`publish` did: records handed to the client, acknowledged, failed."""

    sent: int = 0
    delivered: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    topics: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Delivered records per second."""
        return self.delivered / self.seconds if self.seconds > 0 else 0.0

    def raise_on_failure(self) -> None:
        """Raise :class:`DeliveryError` if any record was not delivered."""
        if self.failed or self.delivered != self.sent:
            first = "; ".join(self.errors[:3])
            raise DeliveryError(
                f"{self.sent - self.delivered} of {self.sent} records not delivered"
                + (f": {first}" if first else "")
            )
