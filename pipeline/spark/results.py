"""Result records in Spark SQL: ``join_result`` (+ the members' payloads) as Avro single-
object encoding, or as one JSON object (``[output] format = "json"``).

The processor hands over ``members`` as JSON text (with each member's Kafka partition and
offset) and ``payload`` as the members' payload bytes already concatenated in stream
order. An Avro record's binary encoding is its fields' encodings one after the other, so
the body of a result with payload is ``to_avro(join_result part) ‖ payload`` — under the
generated schema's fingerprint. A JSON result is ``to_json(join_result part)`` with
``,"north":{...},...`` spliced in before its closing brace.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.avro.functions import to_avro

from connectors.io.avsc import fingerprint, strip_logical
from connectors.io.confluent import FORMAT as CONFLUENT
from connectors.io.serde import MAGIC
from pipeline.runtime.inputs import InputPlan

MEMBERS_TYPE = ("array<struct<stream:string,seq:bigint,event_time:bigint,partition:int,"
                "offset:bigint>>")


def members_column() -> Column:
    """The processor's ``members`` JSON as the ``Member`` array (unknown coordinates -1)."""
    parsed = sf.from_json(sf.col("members"), MEMBERS_TYPE)
    return sf.transform(parsed, lambda m: sf.struct(
        m["stream"].alias("stream"), m["seq"].alias("seq"),
        m["event_time"].alias("event_time"),
        sf.coalesce(m["partition"], sf.lit(-1)).cast("int").alias("partition"),
        sf.coalesce(m["offset"], sf.lit(-1)).cast("long").alias("offset"),
    ))


def result_struct() -> Column:
    """The ``join_result`` fields of a processor result row."""
    return sf.struct(
        sf.col("id"), sf.col("result_time"), members_column().alias("members"),
        sf.col("instance"), sf.col("emit_time"),
    )


def result_value(plan: InputPlan, base_schema_json: str, confluent_header: bytes = b""
                 ) -> Column:
    """A result row's Kafka value: single-object Avro under the generated result schema
    (``join_result`` itself without payload), the Confluent wire format
    (``confluent_header``: the generated schema's registry id), or UTF-8 JSON text."""
    record = result_struct()
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
