"""Route-key placement against Spark itself (ARCHITECTURE §6): our Murmur3 equals Spark's
``hash()``, and every instance of G = 1..16 lands in a shuffle partition of its own —
through ``repartition`` (Spark's ``HashPartitioning``) and through ``groupBy`` with a
pandas function, the partitioning ``transformWithStateInPandas`` gets. The keys are kept
with the checkpoint (new, legacy and re-read)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from pipeline.diffusion.placement import instance_of, spark_hash_int, spread_keys
from pipeline.spark.placement import PLACEMENT_FILE, checkpoint_placement

pytestmark = pytest.mark.spark


def test_murmur3_equals_sparks_hash(spark: SparkSession) -> None:
    values = [*range(-300, 300), 2**31 - 1, -(2**31), 123_456_789, -987_654_321]
    df = spark.createDataFrame([(v,) for v in values], "k int")
    got = {int(r["k"]): int(r["h"]) for r in df.select("k", sf.hash("k").alias("h")).collect()}
    assert got == {v: spark_hash_int(v) for v in values}


def _partitions_by_repartition(spark: SparkSession, keys: tuple[int, ...], p: int
                               ) -> dict[int, int]:
    df = spark.createDataFrame([(k,) for k in keys for _ in range(3)], "route_key int")
    rows = df.repartition(p, "route_key").select(
        "route_key", sf.spark_partition_id().alias("pid")).distinct().collect()
    seen: dict[int, set[int]] = {}
    for r in rows:
        seen.setdefault(int(r["route_key"]), set()).add(int(r["pid"]))
    assert all(len(v) == 1 for v in seen.values())
    return {k: next(iter(v)) for k, v in seen.items()}


@pytest.mark.parametrize("groups", range(1, 17))
def test_every_instance_gets_a_partition_of_its_own(spark: SparkSession, groups: int) -> None:
    for p in sorted({groups, 2 * groups + 1}):
        keys = spread_keys(groups, p)
        got = _partitions_by_repartition(spark, keys, p)
        assert len(set(got.values())) == groups, (groups, p, got)
        assert [instance_of(k, groups) for k in keys] == list(range(groups))
    if groups > 1:  # fewer partitions than instances: shared evenly
        p = max(1, groups // 2)
        got = _partitions_by_repartition(spark, spread_keys(groups, p), p)
        counts = Counter(got.values())
        assert len(counts) == p and max(counts.values()) - min(counts.values()) <= 1


def test_group_by_places_the_keys_like_repartition(spark: SparkSession) -> None:
    """The keyed operator's own partitioning (a grouped pandas function runs in the
    partition Spark gives the group): one instance per partition, as planned."""
    groups = 4
    spark.conf.set("spark.sql.shuffle.partitions", str(groups))
    keys = spread_keys(groups, groups)
    df = spark.createDataFrame([(k, i) for k in keys for i in range(5)], "route_key int, v int")

    def where(pdf: pd.DataFrame) -> pd.DataFrame:
        ctx = TaskContext.get()
        assert ctx is not None
        return pd.DataFrame({"route_key": [int(pdf["route_key"].iloc[0])],
                             "pid": [ctx.partitionId()]})

    rows = df.groupBy("route_key").applyInPandas(where, "route_key int, pid int").collect()
    got = {int(r["route_key"]): int(r["pid"]) for r in rows}
    assert sorted(got.values()) == list(range(groups))
    assert got == _partitions_by_repartition(spark, keys, groups)
    # the instance numbers as keys collide (what this placement fixes)
    assert len(set(_partitions_by_repartition(spark, (0, 1, 2, 3), 4).values())) < groups


def test_the_keys_stay_with_the_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    new = tmp_path / "new"
    first = checkpoint_placement(spark, str(new), 4)
    assert first.keys == spread_keys(4, 4) and first.scheme == "spread"
    assert json.loads((new / PLACEMENT_FILE).read_text())["keys"] == list(first.keys)
    spark.conf.set("spark.sql.shuffle.partitions", "7")  # Spark keeps the checkpoint's 4
    assert checkpoint_placement(spark, str(new), 4) == first
    # a checkpoint with micro-batches but no recorded keys: the instance numbers
    legacy = tmp_path / "legacy"
    (legacy / "offsets").mkdir(parents=True)
    (legacy / "offsets" / "0").write_text("v1\n{}\n")
    old = checkpoint_placement(spark, str(legacy), 3)
    assert old.keys == (0, 1, 2) and old.scheme == "identity"
    assert checkpoint_placement(spark, str(legacy), 3) == old
    assert checkpoint_placement(spark, str(tmp_path / "one"), 1).keys == (0,)
