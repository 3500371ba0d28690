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

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from pipeline.spec.names import TOPIC_PATTERN

#: ``arrival_time = "kafka"``: the record's Kafka timestamp; ``id = "offset"``: its offset
KAFKA_TIME = "kafka"
OFFSET_ID = "offset"
#: ``seq = partition · 2^PARTITION_SHIFT + offset`` for ``id = "offset"``
PARTITION_SHIFT = 40

#: the Confluent wire format of a Schema Registry (magic byte 0, schema id, Avro body)
CONFLUENT = "avro-confluent"
Format = Literal["avro-confluent", "avro", "avro-raw", "json"]


class InputSpec(BaseModel):
    """One stream's topic: ``[inputs.<stream>]``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    topic: str = Field(pattern=TOPIC_PATTERN, max_length=249)
    #: ``avro`` (single-object encoding), ``avro-raw`` (bare body), ``json`` or
    #: ``avro-confluent`` (writer schemas from the Schema Registry)
    format: Format
    #: the writer schema (``.avsc``); relative paths resolve against the spec file's folder.
    #: Not for ``avro-confluent``, whose writers are the registry's
    schema_path: str | None = Field(default=None, alias="schema", min_length=1)
    #: ``avro-confluent``: the registry subject (default ``<topic>-value``)
    subject: str | None = Field(default=None, min_length=1)
    #: ``avro-confluent``: the reader schema (``.avsc``) every version decodes into
    #: (default: the subject's latest version when the job starts)
    reader_schema: str | None = Field(default=None, min_length=1)
    event_time: str = Field(min_length=1)
    arrival_time: str = Field(default=KAFKA_TIME, min_length=1)
    #: per-stream override of ``[join] attribute`` (equi, band, cosine)
    attribute: str | None = Field(default=None, min_length=1)
    #: per-stream overrides of ``[join] x`` / ``y`` (distance)
    x: str | None = Field(default=None, min_length=1)
    y: str | None = Field(default=None, min_length=1)
    #: ``offset`` (Kafka coordinates) or an integer field unique within the stream
    id: str = Field(default=OFFSET_ID, min_length=1)

    @model_validator(mode="after")
    def _format_keys(self) -> InputSpec:
        if self.format == CONFLUENT:
            if self.schema_path is not None:
                raise _key_error("schema", f"not for format {CONFLUENT!r} (its writer schemas "
                                 "are the registry's; set reader_schema to pin the reader)")
            return self
        if self.schema_path is None:
            raise ValidationError.from_exception_data(
                "InputSpec", [InitErrorDetails(type="missing", loc=("schema",), input={})])
        for key in ("subject", "reader_schema"):
            if getattr(self, key) is not None:
                raise _key_error(key, f"only for format {CONFLUENT!r}, not {self.format!r}")
        return self

    @property
    def registry_subject(self) -> str:
        """The subject of the topic's values (``avro-confluent``)."""
        return self.subject or f"{self.topic}-value"


def _key_error(key: str, message: str) -> ValidationError:
    """A validation error located at ``key`` (so the spec error names ``inputs.<s>.<key>``)."""
    error = PydanticCustomError("value_error", "{message}", {"message": message})
    return ValidationError.from_exception_data(
        "InputSpec", [InitErrorDetails(type=error, loc=(key,), input=None)])
