"""The user's own topics in Spark SQL: decode ``avro`` / ``avro-raw`` (spark-avro
``from_avro``, PERMISSIVE) and ``json`` (``from_json`` with a schema derived from the
``.avsc``), then build the envelope columns (``stream_idx, stream, seq, event_time,
arrival_time``, the predicate's attributes, ``partition, offset, payload, kafka_ms``).

One projection over the Kafka rows of every input topic: each stream's decoder runs only
on the rows of its topic (``CASE``), so the source is read once per micro-batch. A row
that does not decode, lacks a value the join needs or has one of the wrong type gets a
``reason`` naming the field and the spec key — the same rules as
:func:`pipeline.runtime.tuples.to_tuple` (``harvest dump``), so the dump holds exactly the
tuples the job joins.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from connectors.io.avsc import expand, strip_logical
from connectors.io.confluent import FORMAT as CONFLUENT
from connectors.io.confluent import HEADER_LEN as CONFLUENT_HEADER_LEN
from pipeline.runtime.inputs import AttrField, InputPlan, StreamPlan, TimeField
from pipeline.spark.decode import avro_kind, nonfinite_reason
from pipeline.spec.inputs import PARTITION_SHIFT

HEADER_LEN = 10
MAGIC = b"\xc3\x01"
#: the text of the error that fails a micro-batch holding a schema id the plan does not
#: know yet (the job restarts with the registry re-read: :mod:`pipeline.spark.submit`)
NEW_SCHEMA_ID = "harvest: new schema id "
_PRIMITIVE: dict[str, DataType] = {
    "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "bytes": BinaryType(), "string": StringType(),
}


def _nullable(t: Any) -> bool:
    return t == "null" or (isinstance(t, list) and "null" in t)


def _unwrap(t: Any) -> Any:
    if isinstance(t, list):
        rest = [b for b in t if b != "null"]
        return rest[0] if len(rest) == 1 else t
    if isinstance(t, dict) and isinstance(t.get("type"), dict | list):
        return _unwrap(t["type"])
    return t


def spark_type(t: Any) -> DataType:
    """The Spark type ``from_json`` reads an (expanded, logical-free) Avro type as; unions
    of several types are read as their JSON text."""
    t = _unwrap(t)
    kind = t if isinstance(t, str) else t.get("type") if isinstance(t, dict) else "union"
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    if kind == "enum":
        return StringType()
    if kind == "fixed":
        return BinaryType()
    if kind == "array":
        return ArrayType(spark_type(t["items"]))
    if kind == "map":
        return MapType(StringType(), spark_type(t["values"]))
    if kind in ("record", "error"):
        return StructType([StructField(f["name"], spark_type(f["type"]))
                           for f in t["fields"]])
    return StringType()


def _deep_ok(col: Column, t: Any) -> Column | None:
    """A JSON value holds no null where the Avro type admits none and no enum symbol or
    fixed size it does not know (Spark could not write it back as Avro); None: nothing
    to check."""
    t = _unwrap(t)
    if not isinstance(t, dict):
        return None
    kind = t.get("type")
    checks: list[Column] = []
    if kind == "enum":
        checks.append(col.isin(list(t["symbols"])))
    elif kind == "fixed":
        checks.append(sf.length(col) == int(t["size"]))
    elif kind in ("record", "error"):
        for f in t["fields"]:
            sub = col.getField(f["name"])
            inner = _deep_ok(sub, f["type"])
            if not _nullable(f["type"]):
                checks.append(sub.isNotNull() & (inner if inner is not None else sf.lit(True)))
            elif inner is not None:
                checks.append(sub.isNull() | inner)
    elif kind in ("array", "map"):
        item_t = t["items"] if kind == "array" else t["values"]
        null_ok = _nullable(item_t)

        def item_ok(x: Column) -> Column:
            inner = _deep_ok(x, item_t)
            base = sf.lit(True) if null_ok else x.isNotNull()
            if inner is None:
                return base
            return base & (x.isNull() | inner) if null_ok else base & inner

        if null_ok and _deep_ok(sf.lit(None), item_t) is None:
            return None
        items = col if kind == "array" else sf.map_values(col)
        checks.append(sf.forall(items, item_ok))
    if not checks:
        return None
    out = checks[0]
    for c in checks[1:]:
        out = out & c
    return sf.coalesce(out, sf.lit(False))


class _Stream:
    """The columns of one input's rows (all null on other topics' rows)."""

    def __init__(self, plan: StreamPlan) -> None:
        self.plan = plan
        self.rec = sf.col(f"_rec{plan.index}")
        self.fields = {f["name"]: f["type"]
                       for f in expand(json.loads(plan.decode_json))["fields"]}

    def decoded(self, mine: Column) -> Column:
        """``_rec<i>``: the record, on this input's rows only."""
        p = self.plan
        if p.format == "json":
            schema = spark_type(json.loads(p.decode_json))
            assert isinstance(schema, StructType)
            rec = sf.when(mine, sf.from_json(sf.col("_text"), schema, {"mode": "PERMISSIVE"}))
        elif p.format == CONFLUENT:
            rec = _confluent_record(p, mine)
        else:
            ok = mine
            if p.format == "avro":
                ok = ok & _header_ok() & (sf.substring(sf.col("value"), 3, 8)
                                          == _bin(p.fingerprint))
            rec = sf.when(ok, from_avro(_body(p), p.decode_json, {"mode": "PERMISSIVE"}))
        return rec.alias(f"_rec{p.index}")

    def canonical(self) -> Column:
        """``_canon<i>`` (Avro formats): the record re-encoded, to detect trailing bytes —
        null if it did not decode (PERMISSIVE leaves non-nullable fields null)."""
        p = self.plan
        if p.format == "json":
            return sf.lit(None).cast("binary").alias(f"_canon{p.index}")
        complete = self.rec.isNotNull()
        for name, t in self.fields.items():
            if not _nullable(t):
                complete = complete & self.field(name).isNotNull()
        canon = sf.when(sf.coalesce(complete, sf.lit(False)), to_avro(self.rec, p.decode_json))
        return canon.alias(f"_canon{p.index}")

    def field(self, name: str) -> Column:
        return self.rec.getField(name)

    def reasons(self) -> list[tuple[Column, Column]]:
        """(condition, reason) pairs, in the order of ``to_tuple``'s checks."""
        p, raw = self.plan, sf.col("value")
        out: list[tuple[Column, Column]] = []
        if p.format == "avro":
            out += [
                (sf.length(raw) < HEADER_LEN, sf.format_string(
                    f"short record: %d bytes < {HEADER_LEN}-byte single-object header",
                    sf.length(raw))),
                (~_header_ok(), sf.concat(sf.lit("bad single-object marker "), sf.lower(
                    sf.hex(sf.substring(raw, 1, 2))), sf.lit(" (expected c301)"))),
                (sf.substring(raw, 3, 8) != _bin(p.fingerprint), sf.concat(
                    sf.lit("unknown writer schema fingerprint "),
                    sf.lower(sf.hex(sf.substring(raw, 3, 8))),
                    sf.lit(f" (expected {p.fingerprint.hex()} = {p.schema_name})"))),
            ]
        if p.format == CONFLUENT:
            out += _confluent_reasons(p)
        if p.format == "json":
            out.append((sf.json_object_keys(sf.col("_text")).isNull(),
                        sf.lit("not a JSON object")))
        else:
            canon = sf.col(f"_canon{p.index}")
            size = sf.length(_body(p))
            out.append((canon.isNull(), _undecodable(p, size)))
            if p.format != CONFLUENT:  # its readers ignore bytes after the record
                out.append((size != sf.length(canon), sf.format_string(
                    f"%d trailing bytes after a {p.schema_name} record of %d bytes",
                    size - sf.length(canon), sf.length(canon))))
        out += self._value_checks(p.event_time.field, p.event_time.key)
        out += self._time_checks(p.event_time, event=True)
        if p.arrival_time is not None:
            out += self._value_checks(p.arrival_time.field, p.arrival_time.key)
            out += self._time_checks(p.arrival_time, event=False)
        if p.id_field is not None:
            out += self._value_checks(p.id_field, f"inputs.{p.stream}.id")
        for a in p.attributes:
            out += self._value_checks(a.field, a.key)
            kind = avro_kind(self.fields.get(a.field))
            if kind is not None:  # NaN / ±Inf in what the predicate reads
                out.append(nonfinite_reason(self.field(a.field), a.field, kind, a.key))
        nullable = p.nullable
        for name in p.payload:
            out += self._value_checks(name, "output.payload", nullable[name])
        return out

    def _value_checks(self, name: str, key: str, nullable: bool = False
                      ) -> list[tuple[Column, Column]]:
        value = self.field(name)
        out: list[tuple[Column, Column]] = []
        if self.plan.format == "json":
            raw = sf.get_json_object(sf.col("_text"), f"$.{name}")
            wrong = sf.lit(f"field '{name}' ({key}) has a value of the wrong type: ")
            out.append((value.isNull() & raw.isNotNull(), sf.concat(wrong, sf.substring(
                raw, 1, 80))))
            deep = _deep_ok(value, self.fields[name])
            if deep is not None:
                out.append((value.isNotNull() & ~deep, sf.concat(wrong, sf.substring(
                    raw, 1, 80))))
        if not nullable:
            out.append((value.isNull(), sf.lit(f"missing value for field '{name}' ({key})")))
        return out

    def _time_checks(self, tf: TimeField, *, event: bool) -> list[tuple[Column, Column]]:
        out: list[tuple[Column, Column]] = []
        if tf.unit == "iso":
            out.append((_time_ms(self.field(tf.field), tf).isNull(), sf.format_string(
                f"field '{tf.field}' ({tf.key}): '%s' is not an ISO-8601 time",
                sf.substring(self.field(tf.field), 1, 60))))
        if event:
            ms = _time_ms(self.field(tf.field), tf)
            out.append((ms < 0, sf.format_string(
                f"negative event time %d in field '{tf.field}' ({tf.key})", ms)))
        return out


def _undecodable(p: StreamPlan, size: Column) -> Column:
    if p.format == CONFLUENT:
        return sf.format_string(f"undecodable body of %d bytes for schema id %d (subject "
                                f"{p.subject!r}, read as {p.schema_name})", size, schema_id())
    return sf.format_string(f"undecodable {p.format} body of %d bytes (truncated or corrupt "
                            f"Avro, schema {p.schema_name})", size)


def _bin(data: bytes) -> Column:
    return sf.lit(bytearray(data))


def _header_ok() -> Column:
    value = sf.col("value")
    return (sf.length(value) >= HEADER_LEN) & (sf.substring(value, 1, 2) == _bin(MAGIC))


def schema_id() -> Column:
    """The Confluent header's schema id (bytes 2-5, big-endian)."""
    return sf.conv(sf.hex(sf.substring(sf.col("value"), 2, 4)), 16, 10).cast("long")


def _magic_ok() -> Column:
    value = sf.col("value")
    return (sf.length(value) >= CONFLUENT_HEADER_LEN) & (
        sf.substring(value, 1, 1) == _bin(b"\x00"))


def _confluent_record(p: StreamPlan, mine: Column) -> Column:
    """One ``from_avro`` branch per writer id of the plan, each resolving its writer into
    the reader schema (``avroSchema``: Avro 1.12 "Schema Resolution", defaults filled)."""
    ok = mine & _magic_ok()
    rec: Column | None = None
    for schema_id_, writer in p.writers:
        branch = from_avro(_body(p), writer, {"avroSchema": p.decode_json,
                                              "mode": "PERMISSIVE"})
        cond = ok & (schema_id() == schema_id_)
        rec = sf.when(cond, branch) if rec is None else rec.when(cond, branch)
    if rec is None:  # a subject without versions cannot be planned; keep the type anyway
        rec = sf.when(sf.lit(False), from_avro(_body(p), p.decode_json, {"mode": "PERMISSIVE"}))
    return rec


def _confluent_reasons(p: StreamPlan) -> list[tuple[Column, Column]]:
    """Bad magic byte, unknown schema id (one the registry did not have at the last
    re-read), and a schema id the plan does not know yet: that one fails the batch
    (``raise_error``), so the supervised job restarts with the registry re-read."""
    raw, sid = sf.col("value"), schema_id()
    known = sf.lit(False)
    if p.writers:
        known = sid.isin([i for i, _ in p.writers])
    dead = sid.isin(sorted(p.dead_ids)) if p.dead_ids else sf.lit(False)
    return [
        (sf.length(raw) < CONFLUENT_HEADER_LEN, sf.format_string(
            f"bad magic byte: short record of %d bytes < {CONFLUENT_HEADER_LEN}-byte "
            "Confluent header", sf.length(raw))),
        (~_magic_ok(), sf.concat(sf.lit("bad magic byte 0x"), sf.lower(sf.hex(
            sf.substring(raw, 1, 1))), sf.lit(" (expected 0x00, the Confluent wire format)"))),
        (dead, sf.format_string(f"unknown schema id %d (not a version of subject "
                                f"{p.subject!r} in the registry)", sid)),
        (~known, sf.raise_error(sf.format_string(
            f"{NEW_SCHEMA_ID}%d (topic {p.topic}, subject {p.subject})", sid)).cast("string")),
    ]


def _body(p: StreamPlan) -> Column:
    if p.format == CONFLUENT:
        return sf.expr(f"substring(value, {CONFLUENT_HEADER_LEN + 1}, "
                       f"length(value) - {CONFLUENT_HEADER_LEN})")
    if p.format == "avro":
        return sf.expr(f"substring(value, {HEADER_LEN + 1}, length(value) - {HEADER_LEN})")
    return sf.col("value")


def _time_ms(value: Column, tf: TimeField) -> Column:
    """A time field as epoch ms (the dump's rules: micros floor-divided, ISO parsed)."""
    if tf.unit == "iso":
        return sf.unix_millis(sf.try_to_timestamp(value))
    if tf.unit == "us":  # exact floor division (a double would round large values)
        return sf.floor(value.cast("decimal(20,0)") / sf.lit(1000)).cast("long")
    return value.cast("long")


def _case(streams: list[_Stream], build: Any, dtype: str) -> Column:
    """``CASE stream_idx WHEN i THEN build(stream i) ... END`` cast to ``dtype``."""
    out: Column | None = None
    sidx = sf.col("_sidx")
    for st in streams:
        value = build(st)
        if value is None:
            continue
        out = (sf.when(sidx == st.plan.index, value) if out is None
               else out.when(sidx == st.plan.index, value))
    return (out if out is not None else sf.lit(None)).cast(dtype)


def payload_column(struct: Column, stream: Column, schema: dict[str, Any], fmt: str
                   ) -> Column:
    """One member's payload bytes: the Avro body of its payload record (``schema``), or
    for JSON results the text ``"<stream>":{...}``."""
    if fmt == "json":
        text = sf.to_json(struct, {"ignoreNullFields": "false"})  # a null prints as null
        return sf.concat(sf.lit('"'), stream, sf.lit('":'), text).cast("binary")
    return to_avro(struct, json.dumps(strip_logical(schema)))


def payload_schemas(plan: InputPlan) -> dict[str, dict[str, Any]]:
    """Stream → the record type of its payload (from the generated result schema)."""
    return {f["name"]: f["type"] for f in plan.output_schema["fields"]
            if f["name"] in {s.stream for s in plan.streams}}


def decode_inputs(raw: DataFrame, plan: InputPlan) -> DataFrame:
    """Kafka rows of the input topics → ``topic, partition, offset, key, raw, reason``
    (null for a valid record) + the envelope columns (``stream_idx, stream, seq,
    event_time, arrival_time``, attributes, ``payload, kafka_ms``)."""
    streams = [_Stream(p) for p in plan.streams]
    topics: list[Column] = []
    for p in plan.streams:
        topics += [sf.lit(p.topic), sf.lit(p.index)]
    sidx = sf.create_map(*topics)[sf.col("topic")]
    value = sf.col("value")
    base = raw.select(
        "topic", "partition", "offset", "key", "timestamp",
        sf.coalesce(value, _bin(b"")).alias("value"),
        sidx.alias("_sidx"),
        sf.when(value.isNotNull(), value.cast("string")).alias("_text"),
    )
    decoded = base.select(
        "*", *[st.decoded(sf.col("_sidx") == st.plan.index) for st in streams])
    decoded = decoded.select("*", *[st.canonical() for st in streams])
    reason: Column = sf.when(sf.col("_sidx").isNull(), sf.format_string(
        "topic %s is not an input of the spec", sf.col("topic"))).when(
        sf.length("value") == 0, sf.lit("empty record value"))
    for st in streams:
        for cond, text in st.reasons():
            reason = reason.when((sf.col("_sidx") == st.plan.index) & cond, text)
    out = decoded.select(
        "*", reason.alias("reason"), sf.unix_millis(sf.col("timestamp")).alias("kafka_ms"))
    return out.select(
        "topic", "partition", "offset", "key", sf.col("value").alias("raw"), "reason",
        "kafka_ms",
        sf.col("_sidx").alias("stream_idx"), *_envelope(streams, plan))


def _envelope(streams: list[_Stream], plan: InputPlan) -> list[Column]:
    """The envelope columns, per row from its own stream's record."""
    kafka_ms = sf.col("kafka_ms")
    seq_of_offset = sf.shiftleft(sf.col("partition").cast("long"), PARTITION_SHIFT) + sf.col(
        "offset").cast("long")
    cols = [
        _case(streams, lambda st: sf.lit(st.plan.stream), "string").alias("stream"),
        _case(streams, lambda st: st.field(st.plan.id_field) if st.plan.id_field
              else seq_of_offset, "long").alias("seq"),
        _case(streams, lambda st: _time_ms(st.field(st.plan.event_time.field),
                                           st.plan.event_time), "long").alias("event_time"),
        _case(streams, lambda st: _time_ms(st.field(st.plan.arrival_time.field),
                                           st.plan.arrival_time)
              if st.plan.arrival_time else kafka_ms, "long").alias("arrival_time"),
    ]
    names = [a.name for a in plan.streams[0].attributes]
    for i, name in enumerate(names):
        kind = plan.streams[0].attributes[i].kind
        dtype = "map<string,double>" if kind in ("map", "set") else "double"
        cols.append(_case(streams, lambda st, i=i: _attribute(st, st.plan.attributes[i]),
                          dtype).alias(name))
    schemas = payload_schemas(plan)
    cols += [  # (partition and offset are the Kafka columns themselves)
        # only on valid rows: an incomplete record cannot be written as Avro
        sf.when(sf.col("reason").isNull(), _case(streams, lambda st: payload_column(
            sf.struct(*[st.field(f).alias(f) for f in st.plan.payload]),
            sf.lit(st.plan.stream), schemas[st.plan.stream], plan.output_format)
            if st.plan.payload else None, "binary")).alias("payload"),
    ]
    return cols


def _attribute(st: _Stream, attr: AttrField) -> Column:
    """One stream's attribute column; an ``overlap`` set (an array of items) becomes the
    weighted set of its distinct items, each of weight 1 (item text → 1.0), so every
    stream's attribute has the one envelope type ``map<string,double>``."""
    value = st.field(attr.field)
    if attr.kind != "set":
        return value
    items = sf.array_distinct(value.cast("array<string>"))
    return sf.map_from_arrays(items, sf.transform(items, lambda _: sf.lit(1.0)))


def attribute_names(plan: InputPlan) -> tuple[str, ...]:
    """The envelope's attribute columns (the ``[join]`` names)."""
    return tuple(a.name for a in plan.streams[0].attributes)


def envelope_columns(plan: InputPlan) -> tuple[str, ...]:
    """What the join stage takes from :func:`decode_inputs` (plus ``dl_key, dl_value``)."""
    return ("stream_idx", "stream", "seq", "event_time", "arrival_time",
            *attribute_names(plan), "partition", "offset", "payload", "kafka_ms")
