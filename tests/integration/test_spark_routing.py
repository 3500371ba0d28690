"""Routing on the routing tasks (:mod:`pipeline.spark.routing`) against the Python router.

Every (row, instance) copy must be the one :meth:`Router.route_batch` makes, rejected
rows go once to the dead-letter key, and every task with input sends each instance one
tick carrying the upper edge of its valid rows' arrivals (``batch_reference``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from pipeline.diffusion.placement import spread_keys
from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.operators.validation import batch_reference
from pipeline.runtime.frames import DEADLETTER_KEY, TICK_STREAM
from pipeline.runtime.instance import InstanceConfig
from pipeline.spark.job import _kept_attributes
from pipeline.spark.routing import routed
from pipeline.spark.stages import narrowed as _narrowed
from pipeline.spec.model import parse_spec

SCHEMA = ("stream_idx int, seq long, event_time long, arrival_time long, a1 {key}, "
          "partition int, offset long, payload binary, raw binary, dl_key binary, "
          "dl_value binary")
_BYTES = ("payload", "raw", "dl_key", "dl_value")


def _frame(seed: int, n: int, key_type: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = rng.integers(1_700_000_000_000, 1_700_000_090_000, n)
    keys = rng.integers(-50, 50, n)
    rejected = rng.random(n) < 0.1
    return pd.DataFrame({
        "stream_idx": rng.integers(0, 3, n).astype(np.int32),
        "seq": np.arange(n, dtype=np.int64),
        "event_time": ts, "arrival_time": ts + rng.integers(0, 500, n),
        "a1": keys.astype(str) if key_type == "string" else keys,
        "partition": np.zeros(n, dtype=np.int32), "offset": np.arange(n, dtype=np.int64),
        "payload": [None] * n, "raw": [b"r%d" % i for i in range(n)],
        "dl_key": [None] * n,
        "dl_value": [b"dead" if r else None for r in rejected],
    })


def _router(mode: str, groups: int) -> RouterConfig:
    return RouterConfig(mode, groups, (10_000, 5_000, 20_000), segment_ms=15_000, master=1,  # type: ignore[arg-type]
                        key_attribute="a1" if mode == "hash" else None)


@pytest.mark.parametrize(("mode", "groups", "key_type"), [
    ("atr", 2, "int"), ("atr", 3, "int"), ("hash", 2, "int"), ("hash", 4, "string"),
])
def test_spark_routing_equals_the_router(spark: SparkSession, mode: str, groups: int,
                                       key_type: str) -> None:
    pdf = _frame(groups, 600, key_type)
    df = spark.createDataFrame(pdf, SCHEMA.format(key=key_type)).repartition(3, "seq")
    parts: pd.DataFrame = df.withColumn("pid", sf.spark_partition_id()).select(
        "seq", "pid").toPandas()
    cfg = _router(mode, groups)
    keys = spread_keys(groups, groups)
    out: pd.DataFrame = routed(df, cfg, keys).toPandas()

    ok = pdf["dl_value"].isna().to_numpy()
    good = pdf[ok]
    rows, route = Router(cfg).route_batch(good["stream_idx"].to_numpy(),
                                          good["event_time"].to_numpy(),
                                          good["a1"].to_numpy())
    want = Counter(zip(good["seq"].to_numpy()[rows].tolist(),
                       np.asarray(keys)[route].tolist(), strict=True))
    want.update((int(s), DEADLETTER_KEY) for s in pdf.loc[~ok, "seq"])
    data = out[out["stream_idx"] != TICK_STREAM]
    assert Counter(zip(data["seq"].astype(int), data["route_key"].astype(int),
                       strict=True)) == want
    # the copies are the rows themselves
    merged = data.merge(pdf, on="seq", suffixes=("", "_in"))
    for c in ("event_time", "arrival_time", "raw", "dl_value", "a1"):
        assert merged[c].tolist() == merged[f"{c}_in"].tolist(), c

    ticks = out[out["stream_idx"] == TICK_STREAM]
    want_ticks: Counter[tuple[int, int]] = Counter()
    for _, seqs in parts.groupby("pid")["seq"]:
        task = pdf[pdf["seq"].isin(seqs)]
        valid = task[task["dl_value"].isna()]["arrival_time"].to_numpy(np.int64)
        arrival = batch_reference(valid)
        want_ticks.update((k, arrival) for k in keys)
    assert Counter(zip(ticks["route_key"].astype(int), ticks["arrival_time"].astype(int),
                       strict=True)) == want_ticks
    assert (ticks["seq"] == 0).all() and (ticks["raw"] == b"").all()
    assert ticks["a1"].isna().all() and ticks["dl_value"].isna().all()


@pytest.mark.parametrize(("predicate", "routing", "kept"), [
    ({"predicate": "band", "attribute": "a1", "epsilon": 0.5}, "atr", ("a1",)),
    ({"predicate": "equi", "attribute": "a1"}, "hash", ("a1",)),
    ({"predicate": "distance", "x": "x", "y": "y", "epsilon": 1.0}, "atr", ("x", "y")),
])
def test_join_envelope_keeps_only_what_the_join_reads(
        spark: SparkSession, predicate: dict[str, object], routing: str,
        kept: tuple[str, ...]) -> None:
    """``stream`` and the attributes neither the predicate nor the hash router read
    leave the envelope before routing; every other column stays, in its order."""
    spec = parse_spec({"join": {"streams": ["s1", "s2"], "window_ms": 100, **predicate},
                       "job": {"routing": routing, "groups": 2}})
    attributes = ("a1", "x", "y")
    icfg = InstanceConfig.from_spec(spec, attributes)
    keep = _kept_attributes(spec, icfg)
    assert keep == set(kept)
    columns = ("stream_idx", "stream", "seq", "event_time", "arrival_time", *attributes,
               "partition", "offset", "payload", "kafka_ms", "raw", "dl_key", "dl_value")
    env = spark.createDataFrame([], ", ".join(
        f"{c} {'string' if c == 'stream' else 'binary' if c in _BYTES else 'long'}"
        for c in columns))
    got = _narrowed(env, attributes, keep).columns
    assert got == [c for c in columns if c != "stream" and c not in set(attributes) - keep]

