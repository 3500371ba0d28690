"""Bounded staleness at the source (``[job] max_staleness_ms``, ``stages.fresh``): records
whose Kafka timestamp is older than the bound are dropped before decoding and counted in
``observedMetrics['source']``; fresh ones all pass; without a bound nothing is dropped."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from connectors.io.admin import ensure_topics
from pipeline.spark.decode import kafka_source
from pipeline.spark.stages import fresh

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

BOUND_MS = 60_000
SLICE_MS = 2_000


def _produce(bootstrap: str, topic: str, stamps_ms: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, ts in enumerate(stamps_ms):
        producer.produce(topic, value=str(i).encode(), timestamp=ts)
    assert producer.flush(30) == 0


def _drain(spark: SparkSession, bootstrap: str, topic: str, bound: int | None,
           thin_after: int | None = None) -> tuple[list[int], dict[str, int]]:
    """(values read, the last progress's ``source`` metrics) of one available-now run."""
    raw = kafka_source(spark, bootstrap, (topic,), None, {})
    name = f"fresh_{uuid.uuid4().hex[:8]}"
    query = (fresh(raw, bound, thin_after, SLICE_MS)
             .selectExpr("CAST(CAST(value AS STRING) AS INT) AS v")
             .writeStream.format("memory").queryName(name).trigger(availableNow=True)
             .start())
    query.awaitTermination(120)
    progress = [p for p in query.recentProgress if int(p.numInputRows) > 0]
    assert progress, "the query read nothing"
    source = progress[-1].observedMetrics["source"]
    got = sorted(r["v"] for r in spark.table(name).collect())
    return got, {"records": int(source["records"]), "stale": int(source["stale"]),
                 "thinned": int(source["thinned"])}


def test_stale_records_are_dropped_and_counted(spark: SparkSession,
                                               kafka_bootstrap: str) -> None:
    topic = f"stale-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    now = int(time.time() * 1000)
    # stale: older than the bound by far and by a little; fresh: recent, or inside by 40 s
    # (the batch runs within 30 s of now)
    stamps = [now - 10 * BOUND_MS, now - BOUND_MS - 5_000, now - 1_000, now,
              now - BOUND_MS + 40_000, now - 3 * BOUND_MS]
    _produce(kafka_bootstrap, topic, stamps)
    fresh_values = [i for i, ts in enumerate(stamps) if ts >= now - BOUND_MS + 30_000]
    got, source = _drain(spark, kafka_bootstrap, topic, BOUND_MS)
    assert got == fresh_values
    assert source == {"records": len(stamps), "stale": len(stamps) - len(fresh_values),
                      "thinned": 0}

    everything, counted = _drain(spark, kafka_bootstrap, topic, None)
    assert everything == list(range(len(stamps)))
    assert counted == {"records": len(stamps), "stale": 0, "thinned": 0}


def test_records_past_the_thinning_age_are_kept_in_even_slices(spark: SparkSession,
                                                              kafka_bootstrap: str) -> None:
    """``[job] thin_after_ms``: within the bound but older than 20 s, a record is kept only
    in an even 2 s slice of Kafka time; younger records all pass, older than the bound
    none; both drops count as stale, the slice drops as thinned too."""
    topic = f"thin-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, [topic], partitions=1)
    now = int(time.time() * 1000)
    base = (now - 40_000) // SLICE_MS * SLICE_MS  # a slice boundary 40 s ago
    middle = [base + k * 700 for k in range(12)]  # 40-32 s old: both parities
    stamps = [now - 2 * BOUND_MS, *middle, now - 500, now]
    _produce(kafka_bootstrap, topic, stamps)
    # the batch runs within 19 s of now: the last two stay younger than 20 s
    kept = [i for i, ts in enumerate(stamps)
            if ts >= now - 500 or (ts in middle and (ts // SLICE_MS) % 2 == 0)]
    got, source = _drain(spark, kafka_bootstrap, topic, BOUND_MS, thin_after=20_000)
    odd = [ts for ts in middle if (ts // SLICE_MS) % 2 == 1]
    assert 0 < len(odd) < len(middle)
    assert got == sorted(kept)
    assert source == {"records": len(stamps), "stale": 1 + len(odd), "thinned": len(odd)}
