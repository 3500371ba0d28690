"""``JoinProcessor``: the join instance of one route key inside transformWithStateInPandas.

State (RocksDB state store, per route key): the :class:`~pipeline.spark.instance.JoinInstance`
blob (pickled ``Engine.snapshot()`` — K-slack buffers, Synchronizer, join windows,
disorder policy, shedder — plus counters) cut into chunks of ``chunk_bytes`` in a
ListState, so a restart from the checkpoint resumes exactly where the last committed
micro-batch left the engine.

Idle flush (processing-time timer): every micro-batch with input for the key re-arms one
timer ``idle_flush_ms`` after the wall-clock end of its processing. Routing sends a
liveness *tick* row to every key whenever a micro-batch has any input, so the timer only
fires once the whole query has been without input for ``idle_flush_ms``; it then calls
``Engine.flush()`` (end of input). Spark hands a micro-batch's input rows to the
processor before its expired timers, so after a crash the replayed batch re-arms the
timers before they could flush buffered tuples too early.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from pipeline.core.logging import get_logger
from pipeline.spark.instance import (
    DEADLETTER_KEY,
    InstanceConfig,
    JoinInstance,
    dead_letter_frame,
)

log = get_logger(__name__)

CHUNK_SCHEMA = StructType([StructField("chunk", BinaryType(), False)])


@dataclass(frozen=True)
class ProcessorConfig:
    """Frozen processor settings (pickled to the Python workers with the processor; the
    instance config carries the resolved engine config, not the spec)."""

    instance: InstanceConfig
    idle_flush_ms: int = 3_000
    chunk_bytes: int = 1 << 20
    #: names this run for the worker-side instance cache (new per job start)
    run_token: str = ""


VERSION_SCHEMA = StructType([StructField("version", LongType(), False)])
#: the Python worker's live instances: (run token, route key) → (state version, instance).
#: A batch whose stored version equals the cached one resumes the live object instead of
#: unpickling the state blob; after a failed or replayed batch the versions differ (the
#: state store rolled back) and the blob is read again. The blob is still written every
#: batch: the checkpoint, not this cache, is what a restart resumes from.
_LIVE: dict[tuple[str, int], tuple[int, JoinInstance]] = {}

#: the instances' wall clock (epoch seconds): emit times, the wall budget's timing, and its
#: lag guard, which compares against the input records' Kafka timestamps
WALL_CLOCK = time.time


class JoinProcessor(StatefulProcessor):
    """Runs one :class:`JoinInstance` per grouping key (``route_key``)."""

    def __init__(self, config: ProcessorConfig) -> None:
        self.config = config

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.blob = handle.getListState("engine", CHUNK_SCHEMA)
        self.version = handle.getValueState("version", VERSION_SCHEMA)

    # ------------------------------------------------------------------ state
    def _stored_version(self) -> int:
        row = self.version.get() if self.version.exists() else None
        return int(row[0]) if row is not None else 0

    def _load(self, route_key: int) -> tuple[JoinInstance, int]:
        """The key's instance and its stored state version (0: no state yet)."""
        if not self.blob.exists():
            return JoinInstance(self.config.instance, route_key, WALL_CLOCK), 0
        version = self._stored_version()
        # taken out while in use: a batch that fails before _save leaves no live entry
        live = _LIVE.pop((self.config.run_token, route_key), None)
        if self.config.run_token and live is not None and live[0] == version:
            return live[1], version
        data = b"".join(bytes(row[0]) for row in self.blob.get())
        return JoinInstance.load(self.config.instance, route_key, data, WALL_CLOCK), version

    def _save(self, inst: JoinInstance, loaded_version: int) -> int:
        """Store the instance under the next version (and remember it live); returns
        the state's size in bytes."""
        data = inst.dump()
        size = self.config.chunk_bytes
        self.blob.put([(data[i:i + size],) for i in range(0, len(data), size)])
        version = loaded_version + 1
        self.version.update((version,))
        if self.config.run_token:
            _LIVE[(self.config.run_token, inst.route_key)] = (version, inst)
        return len(data)

    def _arm(self) -> None:
        """One timer, ``idle_flush_ms`` after now (wall clock: the batch may have been long)."""
        for t in list(self.handle.listTimers()):
            self.handle.deleteTimer(t)
        self.handle.registerTimer(int(time.time() * 1000) + self.config.idle_flush_ms)

    # ------------------------------------------------------------------ callbacks
    def handleInputRows(  # noqa: N802 - Spark API name
        self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        route_key = int(key[0])
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        if route_key == DEADLETTER_KEY:  # rejected input: no state, no timer
            for f in frames:
                yield dead_letter_frame(f)
            return
        t0 = time.perf_counter()
        inst, version = self._load(route_key)
        t1 = time.perf_counter()
        frame = pd.concat(frames, ignore_index=True)
        out = inst.process(frame)
        t2 = time.perf_counter()
        size = self._save(inst, version)
        self._arm()
        log.info("micro-batch", route_key=route_key, rows=len(frame),
                 load_s=round(t1 - t0, 3), process_s=round(t2 - t1, 3),
                 save_s=round(time.perf_counter() - t2, 3), state_mb=round(size / 1e6, 2))
        yield from out

    def handleExpiredTimer(  # noqa: N802 - Spark API name
        self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        if not self.blob.exists():
            return
        inst, version = self._load(int(key[0]))
        out = inst.flush()
        self._save(inst, version)
        yield from out

    def close(self) -> None:
        return None
