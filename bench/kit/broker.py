"""The Kafka broker a benchmark publishes to: the local one (`harvest kafka up`), started
unless it already runs."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.core.errors import KafkaUnavailableError
from pipeline.core.settings import Settings


def kafka_up(settings: Settings) -> Settings:
    """Start the local broker unless it runs; ``settings`` pointing at it
    (``bootstrap_servers``). Raises :class:`KafkaUnavailableError` if it reports no
    bootstrap address."""
    from connectors.launch.broker import LocalKafka
    from connectors.launch.broker_config import BrokerConfig

    status = LocalKafka(BrokerConfig.from_settings(settings)).up()
    if status.bootstrap is None:
        raise KafkaUnavailableError("the local broker did not report a bootstrap address")
    return settings.model_copy(update={"bootstrap_servers": status.bootstrap})


def answering_broker(settings: Settings, announce: Callable[[str], None] | None = None,
                     timeout_s: float = 5.0) -> str:
    """The configured broker's bootstrap address if it answers within ``timeout_s``, else
    the local one's, started (:func:`kafka_up`, told to ``announce`` first) — only when
    no broker is configured: a configured one that does not answer raises
    :class:`KafkaUnavailableError`."""
    from connectors.io.admin import wait_for_broker

    bootstrap = settings.resolved_bootstrap()
    try:
        wait_for_broker(bootstrap, timeout=timeout_s,
                        client_config=settings.kafka_client_config())
        return bootstrap
    except KafkaUnavailableError:
        if settings.bootstrap_servers:
            raise
    if announce is not None:
        announce("no broker answered; starting the local one (harvest kafka up)")
    return str(kafka_up(settings).bootstrap_servers)
