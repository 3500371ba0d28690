"""Output side of the job: Avro single-object encoding in Spark SQL and the Kafka sink.

Every output row becomes ``(topic, key, value)`` where ``value`` is ``C3 01`` +
fingerprint + ``to_avro(...)`` (DESIGN §7), so one Kafka sink with a computed ``topic``
column serves the results, metrics and dead-letter topics of one query.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.streaming import StreamingQuery

KAFKA_COLUMNS = ("topic", "key", "value")


def single_object(record: Column, header: bytes, schema_json: str) -> Column:
    """``header`` (``C3 01`` + fingerprint) followed by the Avro body of ``record``."""
    return F.concat(F.lit(bytearray(header)), to_avro(record, schema_json))


def wall_ms() -> Column:
    """The micro-batch's wall-clock time in ms (``current_timestamp`` is fixed per batch)."""
    return F.unix_millis(F.current_timestamp())


def dead_letter_rows(
    rejected: DataFrame, topic: str, header: bytes, schema_json: str
) -> DataFrame:
    """Rejected input rows → ``dead_letter`` records (reason, source topic/partition/offset,
    the original bytes, dead-letter time), keyed by the original key."""
    record = F.struct(
        F.col("reason").alias("reason"),
        F.col("topic").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("raw").alias("raw"),
        wall_ms().alias("time"),
    )
    return rejected.select(
        F.lit(topic).alias("topic"),
        F.col("key"),
        single_object(record, header, schema_json).alias("value"),
    )


def passthrough_rows(
    valid: DataFrame, fields: tuple[str, ...], topic: str, header: bytes, schema_json: str
) -> DataFrame:
    """Valid input records re-encoded unchanged (same schema) for ``topic``."""
    record = F.struct(*[F.col(n) for n in fields])
    return valid.select(
        F.lit(topic).alias("topic"),
        F.concat_ws(":", F.col("stream"), F.col("seq").cast("string")).cast("binary").alias("key"),
        single_object(record, header, schema_json).alias("value"),
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
    """Start the streaming query writing ``(topic, key, value)`` rows to Kafka."""
    writer = (
        rows.select(*KAFKA_COLUMNS)
        .writeStream.format("kafka")
        .queryName(query_name)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(processingTime=f"{trigger_ms} milliseconds")
    )
    for key, value in client_options.items():
        writer = writer.option(f"kafka.{key}", value)
    return writer.start()
