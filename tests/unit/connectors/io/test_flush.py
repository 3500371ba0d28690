"""flush_in_steps and the producer's close: a fatal error during the final flush is the
KafkaException it is (an ACL denial: KafkaAuthorizationError), whatever confluent-kafka's
200 ms flush chunks do with a callback's pending exception (no broker needed)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import connectors.io.producer as producer_module
from connectors.io.flush import STEP_S, flush_in_steps
from connectors.io.producer import publish
from connectors.io.producer_config import ProducerConfig
from connectors.io.serde import AvroSerde
from pipeline.core.errors import KafkaAuthorizationError
from pipeline.core.settings import load_settings

CHUNK_S = 0.2  # confluent-kafka's wakeable flush chunk


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SlowQueue:
    """A producer whose queue never drains; each flush takes its whole timeout."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.steps: list[float] = []

    def flush(self, timeout: float) -> int:
        self.steps.append(timeout)
        self.clock.now += timeout
        return 7


def test_a_queue_that_never_drains_is_flushed_in_short_steps_until_the_deadline() -> None:
    clock = FakeClock()
    queue = SlowQueue(clock)
    assert flush_in_steps(queue, 2.0, clock=clock) == 7
    assert all(0 <= t <= STEP_S < CHUNK_S for t in queue.steps)
    assert sum(queue.steps) == pytest.approx(2.0)
    assert flush_in_steps(queue, 0.0, clock=clock) == 7  # one non-blocking try


def fatal_denial() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                                     "Failed to acquire idempotence PID from broker: "
                                     "Broker: Cluster authorization failed", fatal=True))


class DeniedProducer:
    """librdkafka's idempotent producer refused a producer id by the ACLs, as
    confluent-kafka >= 2.13 reports it: a flush of 200 ms or more runs the delivery
    reports in a later chunk with the fatal error pending (SystemError); a shorter one
    raises the fatal error itself."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.queued = 0

    def produce(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        self.queued += 1

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        if timeout >= CHUNK_S:
            raise SystemError("<method 'code' of 'confluent_kafka.cimpl.KafkaError' "
                              "objects> returned a result with an exception set")
        raise fatal_denial()

    def __len__(self) -> int:
        return self.queued


def test_a_producer_denied_its_id_fails_naming_the_authorization(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Producer", DeniedProducer)
    monkeypatch.setattr(producer_module, "await_metadata", lambda *a, **k: None)
    config = ProducerConfig(bootstrap="h:1", create_topics=False,
                            client_config={"sasl.username": "reader"})
    records = [{"stream": "s1", "seq": i, "event_time": i, "arrival_time": i, "value": 1.0}
               for i in range(5)]
    with pytest.raises(KafkaAuthorizationError,
                       match=r"not authorized: principal 'reader'.*authorization failed"):
        publish(records, config=config, serde=AvroSerde.from_dir(load_settings().schemas_dir),
                schema_name="sensor_reading", topic_of=lambda r: "t.in.sensors.s1")
