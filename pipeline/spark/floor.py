"""The read-and-decode floor of `harvest bench peer`: a query that does only the work every
join over harvest's topics shares, then discards the rows; and beneath it the raw read,
Spark's Kafka source alone.

It reads the job's input topics from the earliest offset (one Kafka source over all of
them, as harvest's job does), decodes and validates each record exactly like the job and
the built-in baseline (:func:`pipeline.spark.decode.decode`), keeps the valid rows and
writes them to Spark's ``noop`` sink, which runs the whole plan and drops its output. Its
drain throughput bounds what any join that reads through Spark's Kafka source can reach:
a join can only add work to it. ``observedMetrics['out']['results']`` is 0 on every
batch, so the benchmarks' progress reader treats it like the two joins.

The raw read (:func:`start_raw_read`) reads the same topics through the same source
options and writes ``length(value)`` to the ``noop`` sink: what Spark's Kafka source
costs per record before any decoding, the floor under the floor.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming import StreamingQuery

from connectors.io.serde import AvroSerde
from pipeline.spark.decode import decode, kafka_source
from pipeline.spark.job import JobConfig, decode_config


def start_read_floor(spark: SparkSession, cfg: JobConfig, serde: AvroSerde) -> StreamingQuery:
    """Start the floor query on ``cfg``'s input topics (``[job] trigger_ms`` and
    ``max_offsets_per_trigger`` as the job's)."""
    raw = kafka_source(spark, cfg.bootstrap, cfg.input_topics,
                       cfg.spec.job.max_offsets_per_trigger, cfg.client_options,
                       cfg.spec.job.fetch_max_wait_ms)
    valid = decode(raw, decode_config(cfg, serde), valid_only=True)
    rows = valid.observe("out", (sf.count(sf.lit(1)) * sf.lit(0)).alias("results"),
                         sf.count(sf.lit(1)).alias("valid"))
    return (
        rows.writeStream.format("noop")
        .queryName(f"read-floor-{Path(cfg.checkpoint).name}")
        .option("checkpointLocation", cfg.checkpoint)
        .outputMode("append")
        .trigger(processingTime=f"{cfg.spec.job.trigger_ms} milliseconds")
        .start()
    )


def start_raw_read(spark: SparkSession, cfg: JobConfig) -> StreamingQuery:
    """Start the raw read on ``cfg``'s input topics: Spark's Kafka source with the job's
    options, each record's ``length(value)`` to the ``noop`` sink (nothing decoded)."""
    raw = kafka_source(spark, cfg.bootstrap, cfg.input_topics,
                       cfg.spec.job.max_offsets_per_trigger, cfg.client_options,
                       cfg.spec.job.fetch_max_wait_ms)
    rows = raw.select(sf.length("value").alias("bytes")).observe(
        "out", (sf.count(sf.lit(1)) * sf.lit(0)).alias("results"),
        sf.count(sf.lit(1)).alias("valid"))
    return (
        rows.writeStream.format("noop")
        .queryName(f"raw-read-{Path(cfg.checkpoint).name}")
        .option("checkpointLocation", cfg.checkpoint)
        .outputMode("append")
        .trigger(processingTime=f"{cfg.spec.job.trigger_ms} milliseconds")
        .start()
    )
