"""Output side of the job: Avro single-object encoding in Spark SQL and the Kafka sink.

Every output row becomes ``(topic, key, value)`` where ``value`` is ``C3 01`` +
fingerprint + ``to_avro(...)`` (ARCHITECTURE §7), so one Kafka sink with a computed ``topic``
column serves the results, metrics and dead-letter topics of one query.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.streaming import StreamingQuery

KAFKA_COLUMNS = ("topic", "key", "value")


def single_object(record: Column, header: bytes, schema_json: str) -> Column:
    """``header`` (``C3 01`` + fingerprint) followed by the Avro body of ``record``."""
    return sf.concat(sf.lit(bytearray(header)), to_avro(record, schema_json))


def wall_ms() -> Column:
    """The micro-batch's wall-clock time in ms (``current_timestamp`` is fixed per batch)."""
    return sf.unix_millis(sf.current_timestamp())


def dead_letter_value(header: bytes, schema_json: str) -> Column:
    """A decoded row's ``dead_letter`` record (reason, source topic/partition/offset, the
    original bytes, dead-letter wall time) as single-object bytes; null for valid rows."""
    record = sf.struct(
        sf.col("reason").alias("reason"),
        sf.col("topic").alias("topic"),
        sf.col("partition").cast("int").alias("partition"),
        sf.col("offset").cast("long").alias("offset"),
        sf.col("raw").alias("raw"),
        wall_ms().alias("time"),
    )
    return sf.when(sf.col("reason").isNotNull(), single_object(record, header, schema_json))


def rejected_value(header: bytes, schema_json: str) -> Column:
    """The ``dead_letter`` record of a tuple the join instance rejected (input validation,
    :mod:`pipeline.operators.validation.validator`) from the processor's ``dl_*`` columns: reason,
    source topic/partition/offset and the original bytes."""
    record = sf.struct(
        sf.col("dl_reason").alias("reason"),
        sf.coalesce(sf.col("dl_topic"), sf.lit("")).alias("topic"),
        sf.coalesce(sf.col("dl_partition").cast("int"), sf.lit(-1)).alias("partition"),
        sf.coalesce(sf.col("dl_offset").cast("long"), sf.lit(-1).cast("long")).alias("offset"),
        sf.coalesce(sf.col("dl_raw"), sf.lit(bytearray())).alias("raw"),
        wall_ms().alias("time"),
    )
    return sf.when(sf.col("dl_reason").isNotNull(), single_object(record, header, schema_json))


def passthrough_rows(decoded: DataFrame, fields: tuple[str, ...], topics: tuple[str, str],
                     header: bytes, schema_json: str) -> DataFrame:
    """Valid records re-encoded unchanged to ``topics[0]`` (key ``stream:seq``); rejected
    ones as dead letters (``dl_key``, ``dl_value``) to ``topics[1]`` — one projection, so
    the input is read and decoded once per micro-batch."""
    ok = sf.col("reason").isNull()
    record = sf.struct(*[sf.col(n) for n in fields])
    key = sf.concat_ws(":", sf.col("stream"), sf.col("seq").cast("string")).cast("binary")
    return decoded.select(
        sf.when(ok, sf.lit(topics[0])).otherwise(sf.lit(topics[1])).alias("topic"),
        sf.when(ok, key).otherwise(sf.col("dl_key")).alias("key"),
        sf.when(ok, single_object(record, header, schema_json))
        .otherwise(sf.col("dl_value")).alias("value"),
    )


def start_kafka_sink(
    rows: DataFrame,
    *,
    bootstrap: str,
    checkpoint: str,
    trigger_ms: int,
    client_options: Mapping[str, str],
    query_name: str,
) -> StreamingQuery:
    """Start the streaming query writing ``(topic, key, value)`` rows to Kafka, with
    ``acks=all`` and an idempotent producer: a partition leader change (a node of a
    replicated cluster dies) neither loses a record nor writes one twice."""
    writer = (
        rows.select(*KAFKA_COLUMNS)
        .writeStream.format("kafka")
        .queryName(query_name)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(processingTime=f"{trigger_ms} milliseconds")
    )
    for key, value in client_options.items():
        writer = writer.option(f"kafka.{key}", value)
    return writer.start()
