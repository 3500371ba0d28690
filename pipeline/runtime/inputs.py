"""From ``[inputs]`` / ``[output]`` plus the schema files to a plain, picklable input plan.

:func:`resolve_inputs` reads each input's ``.avsc`` and checks the spec against it: every
named field exists, the event/arrival time is a long (epoch ms, ``timestamp-millis`` or
``timestamp-micros``) or — for ``json`` — an ISO-8601 string, the id is an integer, the
predicate's attributes have a type it can use, the payload fields exist. A violation is a
:class:`ConfigError` naming the spec key (``inputs.north.event_time``) and listing the
schema's fields (exit 2). :func:`output_schema` generates the result schema.

The plan is what the Spark job, ``harvest dump`` and ``harvest consume --spec`` share;
a spec without ``[inputs]`` reads harvest's own workload topics (``own_stream``).

An ``avro-confluent`` input's schemas come from the Schema Registry: the reader is its
``reader_schema`` file, else the subject's latest version when the plan is resolved, and
the plan lists every version of the subject as a writer (id → schema), each resolved
into the reader (Avro 1.12 specification, "Schema Resolution"). :func:`refresh_writers`
adds the versions registered later (the job's planned restart on a new schema id).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from connectors.io import avsc
from connectors.io.avsc import NUMERIC, AvroField
from connectors.io.registry_client import RegistryOptions, SchemaRegistry
from connectors.io.topics import input_topic, schema_for, validate_topic
from pipeline.core.errors import ConfigError, SchemaNotFoundError
from pipeline.core.settings import Settings
from pipeline.spec.inputs import CONFLUENT, KAFKA_TIME, OFFSET_ID, InputSpec
from pipeline.spec.model import JoinSpec, Spec

TimeUnit = Literal["ms", "us", "iso"]
#: the item types of an ``overlap`` set (an Avro array of them)
SET_ITEMS = frozenset({"int", "long", "string"})


@dataclass(frozen=True)
class TimeField:
    """A record field holding a time: its name, unit and whether the schema allows null."""

    field: str
    unit: TimeUnit
    nullable: bool
    key: str


@dataclass(frozen=True)
class AttrField:
    """A predicate attribute: engine name (``[join]``), source field, kind, spec key."""

    name: str
    field: str
    #: ``number`` (a scalar), ``map`` (string → number: keyword or item weights) or
    #: ``set`` (an array of int, long or string items: the overlap predicate's plain set)
    kind: Literal["number", "map", "set"]
    nullable: bool
    key: str


@dataclass(frozen=True)
class StreamPlan:
    """How to read one stream's topic and turn its records into tuples."""

    stream: str
    index: int
    topic: str
    format: str
    schema_json: str
    #: the schema without logical types (what decoders use: timestamps stay longs)
    decode_json: str
    schema_name: str
    fingerprint: bytes
    event_time: TimeField
    arrival_time: TimeField | None  # None: the record's Kafka timestamp
    id_field: str | None  # None: seq from the Kafka coordinates
    id_nullable: bool
    attributes: tuple[AttrField, ...]
    payload: tuple[str, ...]
    #: the schema's fields: name → (Avro base type, nullable)
    fields: tuple[tuple[str, str, bool], ...]
    #: harvest's own topic (its own decoder and checks), not a user input
    own: bool = False
    #: ``avro-confluent``: the registry subject, and its versions' writer schemas as
    #: ``(schema id, schema JSON without logical types)``; ``schema_json`` is the reader
    subject: str | None = None
    writers: tuple[tuple[int, str], ...] = ()
    #: ``avro-confluent``: ids the registry does not know (their records are dead letters)
    dead_ids: frozenset[int] = frozenset()

    @property
    def writer_ids(self) -> frozenset[int]:
        """The schema ids the plan decodes."""
        return frozenset(i for i, _ in self.writers)

    @property
    def schema(self) -> dict[str, Any]:
        """The writer schema as a dict."""
        out: dict[str, Any] = json.loads(self.schema_json)
        return out

    @property
    def nullable(self) -> dict[str, bool]:
        """Field name → does the schema allow null."""
        return {name: nul for name, _, nul in self.fields}


@dataclass(frozen=True)
class InputPlan:
    """Every stream's plan plus the result schema and format."""

    streams: tuple[StreamPlan, ...]
    output_schema_json: str
    output_format: str
    foreign: bool

    @property
    def topics(self) -> tuple[str, ...]:
        """The input topics, in stream order."""
        return tuple(s.topic for s in self.streams)

    @property
    def has_payload(self) -> bool:
        """Do results carry payload fields?"""
        return any(s.payload for s in self.streams)

    @property
    def output_schema(self) -> dict[str, Any]:
        """The result schema as a dict."""
        out: dict[str, Any] = json.loads(self.output_schema_json)
        return out


def _fields_list(fields: list[AvroField]) -> str:
    return ", ".join(f"{f.name}: {f.describe()}" for f in fields)


def _lookup(by_name: Mapping[str, AvroField], name: str, key: str, path: str,
            fields: list[AvroField]) -> AvroField:
    found = by_name.get(name)
    if found is None:
        raise ConfigError(f"{key}: field {name!r} is not in schema {path} "
                          f"(fields: {_fields_list(fields)})")
    return found


def _time_field(f: AvroField, fmt: str, key: str, path: str,
                fields: list[AvroField]) -> TimeField:
    if f.base == "long" and f.logical in (None, "timestamp-millis", "local-timestamp-millis"):
        return TimeField(f.name, "ms", f.nullable, key)
    if f.base == "long" and f.logical in ("timestamp-micros", "local-timestamp-micros"):
        return TimeField(f.name, "us", f.nullable, key)
    if f.base == "string" and fmt == "json":
        return TimeField(f.name, "iso", f.nullable, key)
    wanted = "a long (epoch ms, timestamp-millis or timestamp-micros)"
    if fmt == "json":
        wanted += " or an ISO-8601 string"
    raise ConfigError(f"{key}: field {f.name!r} is {f.describe()}, expected {wanted} "
                      f"(schema {path} fields: {_fields_list(fields)})")


def _attr_field(f: AvroField, name: str, predicate: str, key: str, path: str,
                fields: list[AvroField]) -> AttrField:
    if predicate == "cosine":
        if f.base == "map" and f.inner in NUMERIC:
            return AttrField(name, f.name, "map", f.nullable, key)
        wanted = "a map of numbers (keyword -> weight)"
    elif predicate == "overlap":
        if f.base == "map" and f.inner in NUMERIC:
            return AttrField(name, f.name, "map", f.nullable, key)
        if f.base == "array" and f.inner in SET_ITEMS:
            return AttrField(name, f.name, "set", f.nullable, key)
        wanted = ("an array of items (int, long or string) or a map of numbers "
                  "(item -> weight)")
    else:
        if f.base in NUMERIC and f.logical is None:
            return AttrField(name, f.name, "number", f.nullable, key)
        wanted = "a number (int, long, float or double)"
    raise ConfigError(f"{key}: field {f.name!r} is {f.describe()}; the {predicate} predicate "
                      f"needs {wanted} (schema {path} fields: {_fields_list(fields)})")


def _payload_fields(spec: Spec, stream: str, fields: list[AvroField], path: str) -> tuple[str, ...]:
    out = spec.output
    if out.all_fields:
        return tuple(f.name for f in fields)
    names = {f.name for f in fields}
    for name in out.payload:
        if name not in names:
            raise ConfigError(f"output.payload: field {name!r} is not in the schema of stream "
                              f"{stream!r} ({path}; fields: {_fields_list(fields)})")
    return tuple(out.payload)


def _attribute_fields(inp: InputSpec, join: JoinSpec) -> dict[str, str]:
    """The predicate's attributes: engine name (``[join]``) → the stream's field (its
    ``[inputs.<stream>]`` override, else the ``[join]`` name)."""
    if join.predicate == "distance":
        return {join.x: inp.x or join.x, join.y: inp.y or join.y}
    assert join.attribute is not None
    return {join.attribute: inp.attribute or join.attribute}


@dataclass(frozen=True)
class _Reader:
    """An input's reader schema, where it comes from, and (``avro-confluent``) its writers."""

    schema: dict[str, Any]
    path: str
    subject: str | None = None
    writers: tuple[tuple[int, str], ...] = ()


def _writers(registry: SchemaRegistry, subject: str, key: str
             ) -> list[tuple[int, int, dict[str, Any]]]:
    """``(version, id, schema)`` of every version of ``subject``; ConfigError naming
    ``key`` when the registry does not have it."""
    try:
        versions = registry.versions(subject)
    except SchemaNotFoundError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    return [(v.version, v.schema_id, v.schema) for v in versions]


def _confluent_reader(inp: InputSpec, key: str, registry: SchemaRegistry | None) -> _Reader:
    """The reader (``reader_schema``, else the subject's latest version) and the writers
    (every version of the subject) of an ``avro-confluent`` input."""
    if registry is None:
        raise ConfigError(f"{key}.format: {CONFLUENT!r} reads writer schemas from a Schema "
                          "Registry: set HARVEST_SCHEMA_REGISTRY_URL or start the local one "
                          "with `harvest registry up`")
    subject = inp.registry_subject
    versions = _writers(registry, subject, f"{key}.subject")
    writers = tuple((i, json.dumps(avsc.strip_logical(s))) for _, i, s in versions)
    if inp.reader_schema is not None:
        return _Reader(avsc.read_avsc(inp.reader_schema, f"{key}.reader_schema"),
                       inp.reader_schema, subject, writers)
    version, _, latest = versions[-1]
    if latest.get("type") != "record":
        raise ConfigError(f"{key}.subject: version {version} of {subject!r} is not an Avro "
                          "record schema")
    return _Reader(latest, f"subject {subject!r} version {version} (registry {registry.url})",
                   subject, writers)


def _reader(inp: InputSpec, key: str, registry: SchemaRegistry | None) -> _Reader:
    if inp.format == CONFLUENT:
        return _confluent_reader(inp, key, registry)
    assert inp.schema_path is not None
    return _Reader(avsc.read_avsc(inp.schema_path, f"{key}.schema"), inp.schema_path)


def _plan(spec: Spec, index: int, stream: str, inp: InputSpec,
          registry: SchemaRegistry | None = None) -> StreamPlan:
    key = f"inputs.{stream}"
    reader = _reader(inp, key, registry)
    path, schema = reader.path, reader.schema
    fields = avsc.record_fields(schema)
    by_name = {f.name: f for f in fields}
    ev = _time_field(_lookup(by_name, inp.event_time, f"{key}.event_time", path, fields),
                     inp.format, f"{key}.event_time", path, fields)
    arrival = None
    if inp.arrival_time != KAFKA_TIME:
        arrival = _time_field(
            _lookup(by_name, inp.arrival_time, f"{key}.arrival_time", path, fields),
            inp.format, f"{key}.arrival_time", path, fields)
    id_field, id_nullable = None, False
    if inp.id != OFFSET_ID:
        f = _lookup(by_name, inp.id, f"{key}.id", path, fields)
        if f.base not in ("int", "long") or f.logical is not None:
            raise ConfigError(f"{key}.id: field {f.name!r} is {f.describe()}, expected an "
                              f"int or long unique within the stream, or \"offset\" "
                              f"(schema {path} fields: {_fields_list(fields)})")
        id_field, id_nullable = f.name, f.nullable
    attrs = []
    for name, field_name in _attribute_fields(inp, spec.join).items():
        if spec.join.predicate == "distance":
            sub = "x" if name == spec.join.x else "y"
        else:
            sub = "attribute"
        akey = f"{key}.{sub}"
        f = _lookup(by_name, field_name, akey, path, fields)
        attrs.append(_attr_field(f, name, spec.join.predicate, akey, path, fields))
    return StreamPlan(
        stream=stream, index=index, topic=validate_topic(inp.topic), format=inp.format,
        schema_json=json.dumps(schema), decode_json=json.dumps(avsc.strip_logical(schema)),
        schema_name=avsc.full_name(schema), fingerprint=avsc.fingerprint(schema),
        event_time=ev, arrival_time=arrival, id_field=id_field, id_nullable=id_nullable,
        attributes=tuple(attrs), payload=_payload_fields(spec, stream, fields, path),
        fields=tuple((f.name, f.base, f.nullable) for f in fields),
        subject=reader.subject, writers=reader.writers,
    )


def _own_kind(f: AvroField) -> Literal["number", "map", "set"]:
    """The attribute kind of a field of harvest's own workload schemas."""
    if f.base == "map":
        return "map"
    return "set" if f.base == "array" else "number"


def own_stream(spec: Spec, index: int, stream: str, schemas_dir: Path,
               prefix: str, workload: str) -> StreamPlan:
    """The plan of harvest's own topic ``<prefix>.in.<workload>.<stream>``."""
    name = schema_for(workload)
    path = schemas_dir / f"{name}.avsc"
    schema = avsc.read_avsc(path, "job.workload")
    fields = avsc.record_fields(schema)
    if spec.join.predicate == "overlap":  # the set attribute must be one the workload has
        attr = str(spec.join.attribute)
        _attr_field(_lookup({f.name: f for f in fields}, attr, "join.attribute", str(path),
                            fields), attr, "overlap", "join.attribute", str(path), fields)
    attrs = tuple(AttrField(f.name, f.name, _own_kind(f), False, "job.workload")
                  for f in fields if f.name not in ("stream", "seq", "event_time",
                                                    "arrival_time")
                  and (f.base in NUMERIC or f.base == "map"
                       or (f.base == "array" and f.inner in SET_ITEMS)))
    return StreamPlan(
        stream=stream, index=index, topic=input_topic(prefix, workload, stream), format="avro",
        schema_json=json.dumps(schema), decode_json=json.dumps(avsc.strip_logical(schema)),
        schema_name=name, fingerprint=avsc.fingerprint(schema),
        event_time=TimeField("event_time", "ms", False, "job.workload"),
        arrival_time=TimeField("arrival_time", "ms", False, "job.workload"),
        id_field="seq", id_nullable=False, attributes=attrs,
        payload=_payload_fields(spec, stream, fields, str(path)),
        fields=tuple((f.name, f.base, f.nullable) for f in fields), own=True,
    )


def resolve_inputs(spec: Spec, schemas_dir: Path, *, prefix: str | None = None,
                   workload: str | None = None,
                   registry: SchemaRegistry | None = None) -> InputPlan:
    """The spec's input plan (schema files read and checked) and result schema.

    Without ``[inputs]``: harvest's own topics of ``workload`` (default ``[job] workload``)
    under ``prefix`` (default ``[job] topic_prefix``). ``registry``: where
    ``avro-confluent`` inputs find their schemas."""
    if spec.inputs is not None:
        streams = tuple(_plan(spec, i, s, spec.inputs[s], registry)
                        for i, s in enumerate(spec.join.streams))
    else:
        streams = tuple(
            own_stream(spec, i, s, schemas_dir, prefix or spec.job.topic_prefix,
                       workload or spec.job.workload)
            for i, s in enumerate(spec.join.streams))
    base = avsc.read_avsc(schemas_dir / "join_result.avsc", "schemas")
    payloads = [(s.stream, avsc.payload_record(s.stream, s.schema, s.payload))
                for s in streams if s.payload]
    out = avsc.result_schema(base, payloads)
    return InputPlan(streams=streams, output_schema_json=json.dumps(out),
                     output_format=spec.output.format, foreign=spec.inputs is not None)


def uses_registry(spec: Spec) -> bool:
    """Does the spec read or write the Confluent wire format (so needs a registry)?"""
    inputs = spec.inputs.values() if spec.inputs is not None else ()
    return spec.output.format == CONFLUENT or any(i.format == CONFLUENT for i in inputs)


def spec_registry(spec: Spec, settings: Settings) -> SchemaRegistry | None:
    """The settings' Schema Registry when the spec uses the Confluent format, else None."""
    if not uses_registry(spec):
        return None
    return SchemaRegistry(RegistryOptions.from_settings(settings))


def refresh_writers(plan: InputPlan, registry: SchemaRegistry,
                    new_ids: frozenset[int]) -> InputPlan:
    """``plan`` with the writers its ``avro-confluent`` subjects have now (the reader stays
    the one the job started with); each of ``new_ids`` that is no version of a stream's
    subject becomes a dead id of that stream: its records there go to the dead letters."""
    streams = []
    for s in plan.streams:
        if s.format != CONFLUENT or s.subject is None:
            streams.append(s)
            continue
        known = dict(s.writers)
        for _, i, schema in _writers(registry, s.subject, f"inputs.{s.stream}.subject"):
            known.setdefault(i, json.dumps(avsc.strip_logical(schema)))
        streams.append(replace(s, writers=tuple(sorted(known.items())),
                               dead_ids=s.dead_ids | (new_ids - known.keys())))
    return replace(plan, streams=tuple(streams))


def topic_prefix(spec: Spec, default: str) -> str:
    """``[job] topic_prefix`` if set, else ``default`` (``HARVEST_TOPIC_PREFIX``)."""
    return spec.job.topic_prefix if spec.job.topic_prefix != "harvest" else default


def default_checkpoint(spec: Spec, cache_dir: Path, prefix: str, mode: str) -> Path:
    """The job's checkpoint when neither ``--checkpoint`` nor ``[job] checkpoint`` names
    one: ``<cache_dir>/checkpoints/<name>-<mode>``, named after the results topic for a
    spec with ``[inputs]`` and ``[output] topic``, else after the topic prefix.

    >>> from pipeline.spec.model import Spec
    >>> spec = Spec.model_validate({"join": {"streams": ["a", "b"], "window_ms": 1000,
    ...     "predicate": "equi", "attribute": "k"}})
    >>> default_checkpoint(spec, Path("/c"), "run7", "join")
    PosixPath('/c/checkpoints/run7-join')
    """
    name = spec.output.topic if spec.inputs is not None and spec.output.topic else prefix
    return cache_dir / "checkpoints" / f"{name}-{mode}"


def output_schema(spec: Spec, schemas_dir: Path, registry: SchemaRegistry | None = None
                  ) -> dict[str, Any]:
    """The schema of the spec's results (``harvest schema --spec``)."""
    return resolve_inputs(spec, schemas_dir, registry=registry).output_schema
