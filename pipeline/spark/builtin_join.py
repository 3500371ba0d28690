"""Peer baseline for `harvest bench pipeline` and `harvest bench peer`: the same m-way
window join written with Spark's built-in stream-stream joins (chained inner joins,
watermarks, time-range conditions).

Semantics match ARCHITECTURE §4: for every pair (i, j) of members,
``e_i.ts − W_j ≤ e_j.ts ≤ e_i.ts + W_i`` and the predicate. Spark's stream-stream join
needs an equality to hash on, so:

* ``equi``: the join attribute, equal across the members;
* ``band`` (``|a_i − a_j| ≤ ε`` for every pair): the standard workaround — every stream
  after the first is exploded to the buckets ``⌊a/ε⌋ − 1, ⌊a/ε⌋, ⌊a/ε⌋ + 1`` and
  equi-joined on the first stream's bucket ``⌊a_1/ε⌋``, then the exact band condition
  filters. Two values within ε lie in the same or neighbouring buckets, so exactly one
  copy of each member matches: every result once.

Each stream gets a watermark of ``delay_ms`` (the disorder bound, like K ≥ max delay;
:data:`TS_SHIFT_MS` makes it drop no tuple within it), so Spark can drop join state. The
results are written to ``<prefix>.results`` as ``join_result`` records (single-object
Avro) with ``instance = "spark-builtin"``; the id is MD5 of ``"s1:12|s2:7|s3:9"`` — the
benchmarks recompute our id from the members.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming import StreamingQuery

from connectors.io.serde import AvroSerde
from pipeline.core.errors import ConfigError
from pipeline.spark.decode import decode, kafka_source
from pipeline.spark.job import JobConfig, decode_config
from pipeline.spark.sinks import single_object, start_kafka_sink, wall_ms

#: Spark drops an input row as late when its event time is ≤ the watermark, which starts
#: at the epoch: a tuple at event time 0 (where generated workloads start) would be lost
#: in the first micro-batch, and one exactly ``delay_ms`` behind the largest event time
#: later on. The watermarked ``ts`` columns are shifted by this (the window conditions
#: compare them with each other, so they do not change) and the delay grows by it: with
#: ``delay_ms`` ≥ the largest delay, no tuple is late (K-slack with K ≥ the largest delay
#: is exact in the same way).
TS_SHIFT_MS = 1


def _stream(valid: DataFrame, i: int, name: str, key: str, delay_ms: int,
            epsilon: float | None = None) -> DataFrame:
    """Stream ``i``'s columns (suffixed ``i``) with its watermark. ``k{i}`` is what the
    chain hashes on: the attribute (equi), or with ``epsilon`` (band) the bucket
    ``⌊a/ε⌋`` — for every stream after the first exploded to the neighbouring buckets
    too — with the attribute itself in ``v{i}``."""
    rows = valid.where(sf.col("stream_idx") == i)
    if epsilon is None:
        hashed = [sf.col(key).alias(f"k{i}")]
    else:
        bucket = sf.floor(sf.col(key).cast("double") / sf.lit(epsilon))
        if i > 0:
            bucket = sf.explode(sf.array(bucket - 1, bucket, bucket + 1))
        hashed = [bucket.alias(f"k{i}"), sf.col(key).cast("double").alias(f"v{i}")]
    return (
        rows.select(
            sf.col("seq").cast("long").alias(f"seq{i}"),
            sf.col("event_time").cast("long").alias(f"et{i}"),
            sf.timestamp_millis(sf.col("event_time").cast("long") + TS_SHIFT_MS).alias(f"ts{i}"),
            *hashed,
            sf.lit(name).alias(f"name{i}"),
            sf.col("partition").cast("int").alias(f"part{i}"),
            sf.col("offset").cast("long").alias(f"off{i}"),
        )
        .withWatermark(f"ts{i}", f"{delay_ms + TS_SHIFT_MS} milliseconds")
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
    """Kafka (one source per stream topic; ``[job] max_offsets_per_trigger`` split evenly
    over them) → decode → chained stream-stream inner joins → ``(topic, key, value)``
    rows."""
    join = cfg.spec.join
    if join.predicate not in ("equi", "band") or join.attribute is None:
        raise ConfigError(f"join.predicate: the built-in baseline needs an equi or band "
                          f"join, got {join.predicate!r}")
    band = join.predicate == "band"
    if band and join.epsilon <= 0.0:
        raise ConfigError(f"join.epsilon: the built-in band join buckets by ε, which must "
                          f"be > 0, got {join.epsilon}")
    # one Kafka source per stream: each topic is read and decoded once (one source over
    # all topics, filtered per stream, would scan the whole input once per stream)
    dcfg = decode_config(cfg, serde)
    limit = cfg.spec.job.max_offsets_per_trigger
    per_source = -(-limit // len(join.streams)) if limit is not None else None
    streams = []
    for i, (name, topic) in enumerate(zip(join.streams, cfg.input_topics, strict=True)):
        raw = kafka_source(spark, cfg.bootstrap, (topic,), per_source, cfg.client_options,
                           cfg.spec.job.fetch_max_wait_ms)
        valid = decode(raw, dcfg, valid_only=True)
        streams.append(_stream(valid, i, name, join.attribute, delay_ms,
                               join.epsilon if band else None))
    windows = join.windows
    joined = streams[0]
    for j in range(1, len(streams)):
        cond = sf.col("k0") == sf.col(f"k{j}")
        for i in range(j):
            cond = cond & _window_condition(i, j, windows)
            if band:
                cond = cond & (sf.abs(sf.col(f"v{i}") - sf.col(f"v{j}")) <= sf.lit(join.epsilon))
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


#: logs a stack trace every micro-batch for the conjuncts it cannot read as a time bound
#: (the millisecond columns between two later streams, ``|v_i − v_j| ≤ ε``) and skips
#: them; the bounds against stream 0's watermarked timestamps still clean up the state
_STATE_CONSTRAINT_LOGGER = "org.apache.spark.sql.execution.streaming.StreamingJoinHelper"


def _quiet_state_constraint_warning(spark: SparkSession) -> None:
    """Silence :data:`_STATE_CONSTRAINT_LOGGER`'s warning (errors still log)."""
    jvm: Any = spark.sparkContext._jvm
    with contextlib.suppress(Exception):  # logging only: without log4j, nothing changes
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            _STATE_CONSTRAINT_LOGGER, jvm.org.apache.logging.log4j.Level.ERROR)


def start_builtin_join(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                       delay_ms: int) -> StreamingQuery:
    """Start the baseline query (Kafka sink, ``[job] trigger_ms``); like harvest's job it
    counts its result rows per micro-batch in ``observedMetrics['out']['results']``."""
    _quiet_state_constraint_warning(spark)
    rows = builtin_join_rows(spark, cfg, serde, delay_ms).observe(
        "out", sf.count(sf.lit(1)).alias("results"))
    return start_kafka_sink(
        rows, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.spec.job.trigger_ms, client_options=cfg.client_options,
        query_name=f"spark-builtin-{Path(cfg.checkpoint).name}",
    )

