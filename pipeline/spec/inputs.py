"""``[inputs.<stream>]``: join the user's own Kafka topics (their schemas, their field names).

A spec with an ``[inputs]`` table reads one topic per stream of ``[join] streams`` instead
of harvest's ``<prefix>.in.<workload>.<stream>`` topics. Each input names its topic, its
wire format and writer schema (``.avsc``), and which fields carry the event time, the
arrival time (default: the record's Kafka timestamp), the predicate's attributes and the
tuple id (default: the Kafka coordinates, ``seq = partition · 2^40 + offset``).

Only what the spec itself says is checked here; what needs the schema file (fields exist,
their types suit the predicate) is checked by :func:`pipeline.runtime.inputs.resolve_inputs`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from pipeline.spec.model import JoinSpec
    from pipeline.spec.output import OutputSpec

#: Kafka's topic-name characters
TOPIC_PATTERN = r"^[A-Za-z0-9._-]+$"
#: the fields of a ``join_result`` record: a stream name may not shadow one
RESULT_FIELDS = ("id", "result_time", "members", "instance", "emit_time")
#: the keys of a dump line besides the attributes: an attribute name may not shadow one
DUMP_KEYS = ("stream", "seq", "event_time", "arrival_time", "partition", "offset", "payload")
#: ``arrival_time = "kafka"``: the record's Kafka timestamp; ``id = "offset"``: its offset
KAFKA_TIME = "kafka"
OFFSET_ID = "offset"
#: ``seq = partition · 2^PARTITION_SHIFT + offset`` for ``id = "offset"``
PARTITION_SHIFT = 40
_AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

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

    def attribute_fields(self, join: JoinSpec) -> dict[str, str]:
        """The predicate's attributes: engine name (``[join]``) → this stream's field."""
        if join.predicate == "distance":
            return {join.x: self.x or join.x, join.y: self.y or join.y}
        assert join.attribute is not None
        return {join.attribute: self.attribute or join.attribute}


def is_avro_name(name: str) -> bool:
    """True iff ``name`` is a valid Avro name (``[A-Za-z_][A-Za-z0-9_]*``)."""
    return bool(_AVRO_NAME.match(name))


def _check_stream_names(streams: tuple[str, ...]) -> None:
    for name in streams:
        if not is_avro_name(name):
            raise ValueError(
                f"join.streams: {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*); "
                "stream names become result fields"
            )
        if name in RESULT_FIELDS:
            raise ValueError(
                f"join.streams: {name!r} equals a result field ({', '.join(RESULT_FIELDS)})"
            )


def _check_attribute_names(join: JoinSpec) -> None:
    names = [join.x, join.y] if join.predicate == "distance" else [join.attribute]
    for name in names:
        if name in DUMP_KEYS:
            key = "join.attribute" if join.predicate != "distance" else "join.x / join.y"
            raise ValueError(f"{key}: {name!r} is a reserved dump key ({', '.join(DUMP_KEYS)})")


def check_inputs(join: JoinSpec, inputs: Mapping[str, InputSpec] | None,
                 output: OutputSpec) -> None:
    """Cross-section rules of ``[inputs]`` and ``[output]`` (``ValueError`` naming the key)."""
    if output.payload or inputs is not None:
        _check_stream_names(join.streams)
    if inputs is None:
        return
    for name in inputs:
        if name not in join.streams:
            raise ValueError(f"inputs.{name}: not a stream of join.streams {list(join.streams)}")
    missing = [s for s in join.streams if s not in inputs]
    if missing:
        raise ValueError(f"inputs: no [inputs.<stream>] table for stream(s) {missing}")
    if output.topic is None:
        raise ValueError("output.topic: required when [inputs] is given")
    _check_attribute_names(join)
    seen: dict[str, str] = {}
    outputs = set(output.topics("unused"))
    for name in join.streams:
        spec = inputs[name]
        if spec.topic in seen:
            raise ValueError(f"inputs.{name}.topic: {spec.topic!r} is also the topic of "
                             f"inputs.{seen[spec.topic]}")
        if spec.topic in outputs:
            raise ValueError(f"inputs.{name}.topic: {spec.topic!r} is an output topic")
        seen[spec.topic] = name
        if spec.attribute is not None and join.predicate == "distance":
            raise ValueError(f"inputs.{name}.attribute: the distance predicate reads x and y")
        for key in ("x", "y"):
            if getattr(spec, key) is not None and join.predicate != "distance":
                raise ValueError(f"inputs.{name}.{key}: only for the distance predicate, "
                                 f"not {join.predicate!r}")
