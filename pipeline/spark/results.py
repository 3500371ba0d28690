"""Result records in Spark SQL: ``join_result`` (+ the members' payloads) as Avro single-
object encoding, or as one JSON object (``[output] format = "json"``).

The processor hands over each member's seq, event time and Kafka coordinates as numeric
columns (:func:`~pipeline.runtime.frames.member_column`) and ``payload`` as the members'
payload bytes already concatenated in stream order. An Avro record's binary encoding is
its fields' encodings one after the other, so the body of a result with payload is
``to_avro(join_result part) ‖ payload`` — under the generated schema's fingerprint. A
JSON result is ``to_json(join_result part)`` with ``,"north":{...},...`` spliced in
before its closing brace.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.avro.functions import to_avro

from connectors.io.avsc import fingerprint, strip_logical
from connectors.io.confluent import FORMAT as CONFLUENT
from connectors.io.serde import MAGIC
from pipeline.runtime.frames import member_column
from pipeline.runtime.inputs import InputPlan


def members_column(streams: Sequence[str]) -> Column:
    """The ``Member`` array of a processor result row, from its per-member columns
    (:func:`~pipeline.runtime.frames.member_column`; unknown coordinates are -1)."""
    return sf.array(*[sf.struct(
        sf.lit(name).alias("stream"),
        sf.col(member_column(k, "seq")).alias("seq"),
        sf.col(member_column(k, "time")).alias("event_time"),
        sf.col(member_column(k, "partition")).alias("partition"),
        sf.col(member_column(k, "offset")).alias("offset"),
    ) for k, name in enumerate(streams)])


def result_struct(streams: Sequence[str]) -> Column:
    """The ``join_result`` fields of a processor result row of a join of ``streams``."""
    return sf.struct(
        sf.col("id"), sf.col("result_time"), members_column(streams).alias("members"),
        sf.col("instance"), sf.col("emit_time"),
    )


def result_value(plan: InputPlan, base_schema_json: str, confluent_header: bytes = b""
                 ) -> Column:
    """A result row's Kafka value: single-object Avro under the generated result schema
    (``join_result`` itself without payload), the Confluent wire format
    (``confluent_header``: the generated schema's registry id), or UTF-8 JSON text."""
    record = result_struct([stream.stream for stream in plan.streams])
    payload = sf.col("payload")
    if plan.output_format == "json":
        text = sf.to_json(record, {"ignoreNullFields": "false"})
        spliced = sf.concat(sf.regexp_replace(text, sf.lit(r"\}$"), sf.lit(",")),
                            payload.cast("string"), sf.lit("}"))
        return sf.when(payload.isNull(), text).otherwise(spliced).cast("binary")
    header = MAGIC + fingerprint(strip_logical(plan.output_schema))
    if plan.output_format == CONFLUENT:
        header = confluent_header
    body = to_avro(record, base_schema_json)
    return sf.concat(sf.lit(bytearray(header)), body,
                     sf.coalesce(payload, sf.lit(bytearray(b""))))
