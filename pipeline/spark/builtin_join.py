"""Peer baseline for `harvest bench pipeline`: the same m-way equi window join written with
Spark's built-in stream-stream joins (chained inner joins, watermarks, time-range conditions).

Semantics match ARCHITECTURE §4 for an equi-join: for every pair (i, j) of members,
``e_i.ts − W_j ≤ e_j.ts ≤ e_i.ts + W_i`` and equal keys. Each stream gets a watermark of
``delay_ms`` (the disorder bound, like K ≥ max delay), so Spark can drop join state. The
results are written to ``<prefix>.results`` as ``join_result`` records (single-object
Avro) with ``instance = "spark-builtin"``; the id is MD5 of ``"s1:12|s2:7|s3:9"`` — the
benchmark recomputes our id from the members.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming import StreamingQuery

from connectors.io.serde import AvroSerde
from pipeline.core.errors import ConfigError
from pipeline.spark.decode import decode, kafka_source
from pipeline.spark.job import JobConfig, decode_config
from pipeline.spark.sinks import single_object, start_kafka_sink, wall_ms


def _stream(valid: DataFrame, i: int, name: str, key: str, delay_ms: int) -> DataFrame:
    return (
        valid.where(sf.col("stream_idx") == i)
        .select(
            sf.col("seq").cast("long").alias(f"seq{i}"),
            sf.col("event_time").cast("long").alias(f"et{i}"),
            sf.timestamp_millis(sf.col("event_time").cast("long")).alias(f"ts{i}"),
            sf.col(key).alias(f"k{i}"),
            sf.lit(name).alias(f"name{i}"),
            sf.col("partition").cast("int").alias(f"part{i}"),
            sf.col("offset").cast("long").alias(f"off{i}"),
        )
        .withWatermark(f"ts{i}", f"{delay_ms} milliseconds")
    )


def _window_condition(i: int, j: int, windows: tuple[int, ...]) -> Column:
    """``e_i.ts − W_j ≤ e_j.ts ≤ e_i.ts + W_i``. Against stream 0 on the watermarked
    timestamps (Spark derives the state clean-up from it); between two later streams on
    the plain millisecond columns (only one event-time column may survive a join)."""
    if i == 0:
        ti, tj = sf.col(f"ts{i}"), sf.col(f"ts{j}")
        return (tj >= ti - sf.expr(f"INTERVAL {windows[j]} MILLISECONDS")) & (
            tj <= ti + sf.expr(f"INTERVAL {windows[i]} MILLISECONDS")
        )
    ei, ej = sf.col(f"et{i}"), sf.col(f"et{j}")
    return (ej >= ei - windows[j]) & (ej <= ei + windows[i])


def builtin_join_rows(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                      delay_ms: int) -> DataFrame:
    """Kafka → decode → chained stream-stream inner joins → ``(topic, key, value)`` rows."""
    join = cfg.spec.join
    if join.predicate != "equi" or join.attribute is None:
        raise ConfigError(f"join.predicate: the built-in baseline needs an equi-join, got "
                          f"{join.predicate!r}")
    raw = kafka_source(spark, cfg.bootstrap, cfg.input_topics, None, cfg.client_options)
    valid = decode(raw, decode_config(cfg, serde)).where(sf.col("reason").isNull())
    windows = join.windows
    streams = [_stream(valid, i, s, join.attribute, delay_ms)
               for i, s in enumerate(join.streams)]
    joined = streams[0]
    for j in range(1, len(streams)):
        cond = sf.col("k0") == sf.col(f"k{j}")
        for i in range(j):
            cond = cond & _window_condition(i, j, windows)
        joined = joined.join(streams[j], cond, "inner")
        # Spark allows one event-time column per stream: keep the watermark on ts0 only
        joined = joined.drop(f"ts{j}")
    m = len(streams)
    members = sf.array(*[
        sf.struct(sf.col(f"name{i}").alias("stream"), sf.col(f"seq{i}").alias("seq"),
                  sf.col(f"et{i}").alias("event_time"), sf.col(f"part{i}").alias("partition"),
                  sf.col(f"off{i}").alias("offset"))
        for i in range(m)
    ])
    preimage = sf.concat_ws("|", *[sf.concat_ws(":", sf.col(f"name{i}"),
                                                sf.col(f"seq{i}").cast("string"))
                                   for i in range(m)])
    record = sf.struct(
        sf.md5(preimage).alias("id"),
        sf.greatest(*[sf.col(f"et{i}") for i in range(m)]).alias("result_time"),
        members.alias("members"),
        sf.lit("spark-builtin").alias("instance"),
        wall_ms().alias("emit_time"),
    )
    results_topic = cfg.output_topics[0]
    return joined.select(
        sf.lit(results_topic).alias("topic"),
        sf.md5(preimage).cast("binary").alias("key"),
        single_object(record, serde.header("join_result"),
                      serde.schema_json("join_result")).alias("value"),
    )


def start_builtin_join(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                       delay_ms: int) -> StreamingQuery:
    """Start the baseline query (Kafka sink, ``[job] trigger_ms``)."""
    rows = builtin_join_rows(spark, cfg, serde, delay_ms)
    return start_kafka_sink(
        rows, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.spec.job.trigger_ms, client_options=cfg.client_options,
        query_name=f"spark-builtin-{cfg.topic_prefix}",
    )

