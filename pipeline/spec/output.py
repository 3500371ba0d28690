"""``[output]``: where results, metrics and dead letters go, and what a result carries.

Without ``[inputs]`` the topics default to today's ``<prefix>.results``,
``<prefix>.metrics`` and ``<prefix>.deadletter``; with ``[inputs]`` ``topic`` is required
and the others default to ``<topic>.metrics`` / ``<topic>.deadletter``. ``payload`` names
the fields copied from every member into the result (``["*"]``: all of them; ``[]``: ids
only). ``delivery`` picks at-least-once (Spark's Kafka sink) or exactly-once (one Kafka
transaction per micro-batch, ``pipeline.spark.exactly_once``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.spec.names import TOPIC_PATTERN

ALL_FIELDS = "*"


class OutputSpec(BaseModel):
    """``[output]``: result topic, payload fields, result format, side topics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str | None = Field(default=None, pattern=TOPIC_PATTERN, max_length=249)
    payload: tuple[str, ...] = ()
    #: ``avro`` (single-object encoding), ``json``, or ``avro-confluent`` (the schemas
    #: registered under ``<topic>-value`` of each output topic, the Confluent header)
    format: Literal["avro", "json", "avro-confluent"] = "avro"
    metrics_topic: str | None = Field(default=None, pattern=TOPIC_PATTERN, max_length=249)
    deadletter_topic: str | None = Field(default=None, pattern=TOPIC_PATTERN, max_length=249)
    #: ``at-least-once``: Spark's Kafka sink (a micro-batch replayed after a crash is
    #: written again); ``exactly-once``: one Kafka transaction per micro-batch with its
    #: batch id, a replayed batch is skipped (ARCHITECTURE §4)
    delivery: Literal["at-least-once", "exactly-once"] = "at-least-once"
    #: exactly-once: the producer's ``transaction.timeout.ms`` (at most the broker's
    #: ``transaction.max.timeout.ms``, 15 min by default)
    transaction_timeout_ms: int = Field(default=60_000, ge=1_000, le=900_000)

    @field_validator("payload")
    @classmethod
    def _payload(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if ALL_FIELDS in value and len(value) > 1:
            raise ValueError(f'"*" stands for all fields and must be alone, got {list(value)}')
        if any(not v for v in value):
            raise ValueError("field names must be non-empty")
        dup = sorted({v for v in value if value.count(v) > 1})
        if dup:
            raise ValueError(f"duplicate fields {dup}")
        return value

    @property
    def all_fields(self) -> bool:
        """``payload = ["*"]``: every field of each input's schema."""
        return self.payload == (ALL_FIELDS,)

    def topics(self, prefix: str) -> tuple[str, str, str]:
        """``(results, metrics, deadletter)`` topic names, defaults filled in from
        ``topic`` when given, else from the topic ``prefix``."""
        base = self.topic
        results = base or f"{prefix}.results"
        metrics = self.metrics_topic or (f"{base}.metrics" if base else f"{prefix}.metrics")
        dead = self.deadletter_topic or (
            f"{base}.deadletter" if base else f"{prefix}.deadletter")
        return results, metrics, dead
