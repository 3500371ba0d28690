"""One routing task's Arrow batches (:func:`pipeline.spark.routing.route_arrow`) without
Spark, against :meth:`Router.route_batch` on the same rows as pandas hands them over."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.diffusion.routing import Router, RouterConfig
from pipeline.operators.validation import batch_reference
from pipeline.runtime.frames import DEADLETTER_KEY, TICK_STREAM
from pipeline.spark.routing import route_arrow

KEYS = (5, 9, 2)


def _rows(seed: int, n: int, key_type: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ts = rng.integers(1_700_000_000_000, 1_700_000_090_000, n)
    keys = rng.integers(-40, 40, n).astype(object)
    keys[rng.random(n) < 0.1] = None  # a null join key
    if key_type == "string":
        keys = np.array([None if k is None else f"k{k}" for k in keys], object)
    rejected = rng.random(n) < 0.15
    return pd.DataFrame({
        "stream_idx": rng.integers(0, 3, n), "seq": np.arange(n),
        "event_time": ts, "arrival_time": ts + rng.integers(0, 500, n), "a1": keys,
        "partition": np.zeros(n, np.int64), "offset": np.arange(n),
        "raw": [b"r%d" % i for i in range(n)],
        "dl_value": [b"dead" if r else None for r in rejected]})


def _batches(frame: pd.DataFrame, sizes: list[int], key_type: str) -> list[pa.RecordBatch]:
    schema = pa.schema([("stream_idx", pa.int32()), ("seq", pa.int64()),
                        ("event_time", pa.int64()), ("arrival_time", pa.int64()),
                        ("a1", pa.string() if key_type == "string" else pa.int64()),
                        ("partition", pa.int32()), ("offset", pa.int64()),
                        ("raw", pa.binary()), ("dl_value", pa.binary())])
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    out, start = [], 0
    for size in [*sizes, len(frame)]:
        if start >= len(frame):
            break
        out += table.slice(start, size).to_batches()
        start += size
    return out


@settings(max_examples=40, deadline=None)
@given(mode=st.sampled_from(["atr", "hash"]), groups=st.integers(2, 3),
       key_type=st.sampled_from(["int", "string"]), n=st.integers(0, 80),
       sizes=st.lists(st.integers(1, 30), max_size=4), seed=st.integers(0, 5_000))
def test_copies_dead_letters_and_ticks_equal_the_router(mode: str, groups: int, key_type: str,
                                                         n: int, sizes: list[int],
                                                         seed: int) -> None:
    cfg = RouterConfig(mode, groups, (10_000, 5_000, 20_000), segment_ms=15_000,  # type: ignore[arg-type]
                       master=1, key_attribute="a1" if mode == "hash" else None)
    keys = KEYS[:groups]
    frame = _rows(seed, n, key_type)
    out = [b.to_pandas() for b in route_arrow(iter(_batches(frame, sizes, key_type)),
                                              Router(cfg), keys)]
    got = pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=[*frame.columns, "route_key"])

    ok = frame["dl_value"].isna().to_numpy()
    good = frame[ok]
    column = good["a1"].astype(float) if key_type == "int" else good["a1"]  # pandas: NaN
    rows, route = Router(cfg).route_batch(good["stream_idx"].to_numpy(),
                                          good["event_time"].to_numpy(), column.to_numpy())
    want = Counter(zip(good["seq"].to_numpy()[rows].tolist(),
                       np.asarray(keys)[route].tolist(), strict=True))
    want.update((int(s), DEADLETTER_KEY) for s in frame.loc[~ok, "seq"])
    data = got[got["stream_idx"] != TICK_STREAM]
    assert Counter(zip(data["seq"].astype(int), data["route_key"].astype(int),
                       strict=True)) == want
    merged = data.merge(frame, on="seq", suffixes=("", "_in"))
    for c in ("event_time", "arrival_time", "raw", "dl_value"):
        assert merged[c].tolist() == merged[f"{c}_in"].tolist(), c

    ticks = got[got["stream_idx"] == TICK_STREAM]
    if n == 0:
        assert ticks.empty
        return
    valid = good["arrival_time"].to_numpy(np.int64)
    reference = batch_reference(valid) if len(valid) else 0
    assert sorted(ticks["route_key"].astype(int)) == sorted(keys)
    assert (ticks["arrival_time"] == reference).all()
    assert (ticks["seq"] == 0).all() and (ticks["raw"] == b"").all()
    assert ticks["a1"].isna().all() and ticks["dl_value"].isna().all()
    assert list(got.columns) == [*frame.columns, "route_key"]
