"""``[inputs.<stream>]``: join the user's own Kafka topics (their schemas, their field names).

A spec with an ``[inputs]`` table reads one topic per stream of ``[join] streams`` instead
of harvest's ``<prefix>.in.<workload>.<stream>`` topics. Each input names its topic, its
wire format and writer schema (``.avsc``), and which fields carry the event time, the
arrival time (default: the record's Kafka timestamp), the predicate's attributes and the
tuple id (default: the Kafka coordinates, ``seq = partition · 2^40 + offset``).

Only the table itself is checked here; the rules across ``[join]``, ``[inputs]`` and
``[output]`` are the spec's (:class:`pipeline.spec.model.Spec`), and what needs the schema
file (fields exist, their types suit the predicate) is checked by
:func:`pipeline.runtime.inputs.resolve_inputs`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.spec.names import TOPIC_PATTERN

#: ``arrival_time = "kafka"``: the record's Kafka timestamp; ``id = "offset"``: its offset
KAFKA_TIME = "kafka"
OFFSET_ID = "offset"
#: ``seq = partition · 2^PARTITION_SHIFT + offset`` for ``id = "offset"``
PARTITION_SHIFT = 40

Format = Literal["avro", "avro-raw", "json"]


class InputSpec(BaseModel):
    """One stream's topic: ``[inputs.<stream>]``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    topic: str = Field(pattern=TOPIC_PATTERN, max_length=249)
    #: ``avro`` (single-object encoding), ``avro-raw`` (bare body) or ``json``
    format: Format
    #: the writer schema (``.avsc``); relative paths resolve against the spec file's folder
    schema_path: str = Field(alias="schema", min_length=1)
    event_time: str = Field(min_length=1)
    arrival_time: str = Field(default=KAFKA_TIME, min_length=1)
    #: per-stream override of ``[join] attribute`` (equi, band, cosine)
    attribute: str | None = Field(default=None, min_length=1)
    #: per-stream overrides of ``[join] x`` / ``y`` (distance)
    x: str | None = Field(default=None, min_length=1)
    y: str | None = Field(default=None, min_length=1)
    #: ``offset`` (Kafka coordinates) or an integer field unique within the stream
    id: str = Field(default=OFFSET_ID, min_length=1)
