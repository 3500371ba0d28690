"""Follow topics without blocking (``harvest top``): poll what arrived within a time
budget, and ask the broker for partitions' end offsets.

Unlike :func:`connectors.io.consumer.consume`, which reads until it is idle,
:class:`Follower` hands back control after every :meth:`Follower.poll`, so a live view can
refresh on its own clock. Every partition of each topic is assigned directly (no group,
nothing committed), from the beginning or from the end; a topic that does not exist yet
(the job creates its output topics when it starts) is looked for again every
``recheck_s`` seconds. Each topic is decoded with its own serde.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from connectors.io.consumer import (
    Consumed,
    ConsumerConfig,
    Undecodable,
    decode_message,
    message_error,
)
from connectors.io.security import AUTHZ_CODES, ClientErrors, authorization_error, await_metadata
from connectors.io.serde import AvroSerde
from connectors.io.topics import validate_topic

Clock = Callable[[], float]


class Follower:
    """A consumer assigned to every partition of ``serdes``' topics, polled in budgets."""

    def __init__(self, serdes: Mapping[str, AvroSerde], config: ConsumerConfig, *,
                 recheck_s: float = 2.0, clock: Clock = time.monotonic) -> None:
        from confluent_kafka import Consumer

        self.serdes = {validate_topic(t): s for t, s in serdes.items()}
        self.config = config
        self.recheck_s = recheck_s
        self.clock = clock
        self.errors = ClientErrors()
        conf = {**config.librdkafka(), "error_cb": self.errors,
                "group.id": f"harvest-top-{uuid.uuid4().hex[:12]}", "enable.auto.commit": False}
        self.consumer = Consumer(conf)
        self.assigned: dict[str, list[int]] = {}
        self._next_check = 0.0

    def _assign_new(self) -> None:
        """Assign the partitions of topics that have appeared since the last look."""
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

        now = self.clock()
        if now < self._next_check or len(self.assigned) == len(self.serdes):
            return
        self._next_check = now + self.recheck_s
        meta = await_metadata(self.consumer, self.config.bootstrap, self.config.client_config,
                              self.errors, self.config.connect_timeout_s)
        start = OFFSET_BEGINNING if self.config.from_beginning else OFFSET_END
        fresh = []
        for topic in self.serdes:
            info = meta.topics.get(topic)
            if topic in self.assigned or info is None:
                continue
            if info.error is not None and info.error.code() in AUTHZ_CODES:
                raise authorization_error(self.config.client_config, info.error.str(),
                                          f"describe topic {topic!r}")
            if info.error is None and info.partitions:
                self.assigned[topic] = sorted(info.partitions)
                fresh += [TopicPartition(topic, p, start) for p in self.assigned[topic]]
        if fresh:
            self.consumer.incremental_assign(fresh)

    def poll(self, budget_s: float) -> list[Consumed | Undecodable]:
        """The records that arrive within ``budget_s`` seconds (at most ``batch_size`` per
        fetch; returns early once a fetch comes back short)."""
        self._assign_new()
        out: list[Consumed | Undecodable] = []
        deadline = self.clock() + budget_s
        pending: set[tuple[str, int]] = set()
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0 or not self.assigned:
                break
            batch = self.consumer.consume(num_messages=self.config.batch_size,
                                          timeout=min(remaining, 0.2))
            for msg in batch:
                err = msg.error()
                if err is not None:
                    message_error(err, msg, self.config, pending)
                    continue
                out.append(decode_message(msg, self.serdes[str(msg.topic())], None))
            self.errors.raise_if_denied(self.config.bootstrap, self.config.client_config)
            if len(batch) < self.config.batch_size and out:
                break
        if not self.assigned:  # nothing to read yet: wait out the budget
            time.sleep(max(0.0, deadline - self.clock()))
        return out

    def end_offsets(self, partitions: Iterable[tuple[str, int]],
                    timeout_s: float = 2.0) -> dict[tuple[str, int], int]:
        """The high watermark (next offset) of each ``(topic, partition)``; partitions the
        broker does not answer for are left out."""
        from confluent_kafka import KafkaException, TopicPartition

        out: dict[tuple[str, int], int] = {}
        for topic, partition in partitions:
            try:
                _, high = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout_s, cached=False)
            except KafkaException:
                continue
            out[(topic, partition)] = int(high)
        return out

    def close(self) -> None:
        """Leave (nothing is committed)."""
        self.consumer.close()

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
