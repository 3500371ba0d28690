"""The Structured Streaming job: Kafka → decode → (pass-through | route → join) → Kafka.

Dataflow (DESIGN §1)::

    readStream kafka (P.in.<workload>.<stream>, earliest)
      → decode (header check + from_avro PERMISSIVE)  ─ rejected ─→ dead_letter → P.deadletter
      → valid envelope rows
          passthrough: re-encode → P.results
          join: route (hash | ATR, Gu et al. §2; explode replicas) + liveness ticks
                → groupBy(route_key).transformWithStateInPandas(JoinProcessor)
                → kind=result → join_result → P.results ; kind=metric → operator_metrics → P.metrics

One query, one checkpoint, one Kafka sink with a computed ``topic`` column: a micro-batch's
outputs of every kind commit together. The Kafka sink is at-least-once; after a restart
the last micro-batch may be written again, and result ids (DESIGN §4) make those
duplicates removable (the consumer/evaluator dedups by id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import IntegerType, StructField, StructType

from connectors.serde import AvroSerde
from connectors.topics import deadletter_topic, input_topic, metrics_topic, results_topic
from connectors.workloads.registry import schema_for
from pipeline.routing import Router, RouterConfig
from pipeline.spark.decode import (
    DecodeConfig,
    decode,
    kafka_source,
    rejected_records,
    valid_records,
)
from pipeline.spark.instance import OUTPUT_DDL, TICK_STREAM, InstanceConfig
from pipeline.spark.processor import JoinProcessor, ProcessorConfig
from pipeline.spark.sinks import (
    dead_letter_rows,
    passthrough_rows,
    single_object,
    start_kafka_sink,
)
from pipeline.spec import Spec

Mode = Literal["passthrough", "join"]
MEMBERS_TYPE = "array<struct<stream:string,seq:bigint,event_time:bigint>>"


@dataclass(frozen=True)
class JobConfig:
    """Everything one run of the job needs, resolved from spec + settings + CLI overrides."""

    spec: Spec
    mode: Mode
    bootstrap: str
    topic_prefix: str
    workload: str
    checkpoint: str
    client_options: Mapping[str, str]
    idle_flush_ms: int

    @property
    def input_topics(self) -> tuple[str, ...]:
        """``P.in.<workload>.<stream>`` for every stream of ``[join] streams``."""
        return tuple(input_topic(self.topic_prefix, self.workload, s)
                     for s in self.spec.join.streams)

    @property
    def output_topics(self) -> tuple[str, str, str]:
        """``(P.results, P.metrics, P.deadletter)``."""
        p = self.topic_prefix
        return results_topic(p), metrics_topic(p), deadletter_topic(p)

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (logged at start)."""
        return {"mode": self.mode, "bootstrap": self.bootstrap,
                "topic_prefix": self.topic_prefix, "workload": self.workload,
                "checkpoint": self.checkpoint, "idle_flush_ms": self.idle_flush_ms,
                "inputs": list(self.input_topics), "spec": self.spec.model_dump(mode="json")}


def decode_config(cfg: JobConfig, serde: AvroSerde) -> DecodeConfig:
    """The input schema (by workload) and stream topics of ``cfg``."""
    name = schema_for(cfg.workload)
    return DecodeConfig(name, serde.schema_json(name), serde.fingerprint(name),
                        cfg.spec.join.streams, cfg.input_topics)


def route_function(router: Mapping[str, Any], columns: tuple[str, ...],
                   key_attribute: str | None
                   ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The ``mapInPandas`` body: each row → one copy per route key (``Router.route_batch``,
    Gu et al. §2 ATR replication or hash), plus one tick row per key if the task had input."""

    def route(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        r = Router(RouterConfig.from_snapshot(router))
        seen = False
        for pdf in batches:
            if pdf.empty:
                continue
            keys = pdf[key_attribute].to_numpy() if key_attribute else None
            rows, route_keys = r.route_batch(pdf["stream_idx"].to_numpy(),
                                             pdf["event_time"].to_numpy(), keys)
            out = pdf.iloc[rows].reset_index(drop=True)
            out["route_key"] = route_keys.astype(np.int32)
            seen = True
            yield out
        if seen:
            g = r.config.groups
            tick = pd.DataFrame({c: [None] * g for c in columns})
            tick["stream_idx"] = TICK_STREAM
            for c in ("seq", "event_time", "arrival_time"):
                tick[c] = 0
            tick["route_key"] = np.arange(g, dtype=np.int32)
            yield tick

    return route


def _routed(valid: DataFrame, spec: Spec) -> DataFrame:
    router = RouterConfig.from_spec(spec)
    schema = StructType([*valid.schema.fields,
                         StructField("route_key", IntegerType(), False)])
    fn = route_function(router.snapshot(), tuple(valid.columns), router.key_attribute)
    return valid.mapInPandas(fn, schema)  # type: ignore[arg-type]


def _encode_outputs(out: DataFrame, cfg: JobConfig, serde: AvroSerde) -> DataFrame:
    """Processor rows → Kafka rows: results as join_result, metrics as operator_metrics."""
    results, metrics, _ = cfg.output_topics
    is_result = F.col("kind") == "result"
    result_rec = F.struct(
        F.col("id"), F.col("result_time"),
        F.from_json(F.col("members"), MEMBERS_TYPE).alias("members"),
        F.col("instance"), F.col("emit_time"),
    )
    metric_rec = F.struct(
        F.col("time"), F.col("wall_time"), F.col("instance"), F.col("z"),
        F.from_json(F.col("harvest_fractions"), "array<double>").alias("harvest_fractions"),
        F.col("k_ms"), F.col("recall_target"), F.col("instant_recall_target"),
        F.col("estimated_recall"), F.col("measured_recall"), F.col("rate_in"),
        F.col("rate_out"), F.col("queue_drops"), F.col("state_size"),
        F.from_json(F.col("extra"), "map<string,double>").alias("extra"),
    )
    value: Column = F.when(
        is_result,
        single_object(result_rec, serde.header("join_result"), serde.schema_json("join_result")),
    ).otherwise(
        single_object(metric_rec, serde.header("operator_metrics"),
                      serde.schema_json("operator_metrics"))
    )
    return out.select(
        F.when(is_result, F.lit(results)).otherwise(F.lit(metrics)).alias("topic"),
        F.when(is_result, F.col("id")).otherwise(F.col("instance")).cast("binary").alias("key"),
        value.alias("value"),
    )


def build_output(spark: SparkSession, cfg: JobConfig, serde: AvroSerde,
                 max_offsets_per_trigger: int | None) -> DataFrame:
    """The job's output rows ``(topic, key, value)`` — the whole dataflow above."""
    dcfg = decode_config(cfg, serde)
    raw = kafka_source(spark, cfg.bootstrap, cfg.input_topics, max_offsets_per_trigger,
                       cfg.client_options)
    decoded = decode(raw, dcfg)
    results, _, deadletters = cfg.output_topics
    dead = dead_letter_rows(rejected_records(decoded), deadletters,
                            serde.header("dead_letter"), serde.schema_json("dead_letter"))
    valid = valid_records(decoded, dcfg)
    if cfg.mode == "passthrough":
        main = passthrough_rows(valid, dcfg.field_names, results,
                                serde.header(dcfg.schema_name), dcfg.schema_json)
    else:
        pconf = ProcessorConfig(InstanceConfig.from_spec(cfg.spec, dcfg.attribute_names),
                                idle_flush_ms=cfg.idle_flush_ms)
        joined = _routed(valid, cfg.spec).groupBy("route_key").transformWithStateInPandas(
            JoinProcessor(pconf), OUTPUT_DDL, "Append", "ProcessingTime")
        main = _encode_outputs(joined, cfg, serde)
    return main.unionByName(dead)


def observed(rows: DataFrame, cfg: JobConfig) -> DataFrame:
    """Count output rows per topic in the query progress (``observedMetrics['out']``)."""
    results, metrics, deadletters = cfg.output_topics
    return rows.observe(
        "out",
        F.count(F.when(F.col("topic") == results, 1)).alias("results"),
        F.count(F.when(F.col("topic") == metrics, 1)).alias("metrics"),
        F.count(F.when(F.col("topic") == deadletters, 1)).alias("deadletters"),
    )


def start_job(spark: SparkSession, cfg: JobConfig, serde: AvroSerde) -> StreamingQuery:
    """Build the dataflow and start the query writing to Kafka."""
    rows = observed(build_output(spark, cfg, serde, cfg.spec.job.max_offsets_per_trigger), cfg)
    return start_kafka_sink(
        rows, bootstrap=cfg.bootstrap, checkpoint=cfg.checkpoint,
        trigger_ms=cfg.spec.job.trigger_ms, client_options=cfg.client_options,
        query_name=f"harvest-{cfg.mode}-{cfg.topic_prefix}",
    )
