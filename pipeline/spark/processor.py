"""``JoinProcessor``: the join instance of one route key inside transformWithStateInPandas.

State (RocksDB state store, per route key; ARCHITECTURE §3), so a restart from the
checkpoint resumes exactly where the last committed micro-batch left the engine:

* ``incremental`` (the default): a small *header* (``Engine.snapshot_header()`` — K-slack
  buffers, Synchronizer, ⋈T, disorder policy, shedder — plus counters) in a ListState,
  and one MapState entry per *piece*: a join window's basic window, keyed (``window``,
  stream, basic-window id), or a member-store segment, keyed (``members``, stream, first
  arrival counter). A micro-batch rewrites the header, writes the pieces it changed
  (:meth:`~pipeline.runtime.instance.JoinInstance.changes`) and deletes the expired ones,
  so what it writes follows the batch, not the window's content.
* ``blob`` (the baseline of ``harvest bench state``): the whole pickled
  :class:`~pipeline.runtime.instance.JoinInstance` every micro-batch.

Anything larger than ``chunk_bytes`` (the header, the blob, a piece) is cut into chunks:
ListState rows, or map entries with ``part`` = 0, 1, ….

Idle flush (processing-time timer): every micro-batch with input for the key moves its
flush deadline to ``idle_flush_ms`` after the wall-clock end of its processing. Routing
sends a liveness *tick* row to every key whenever a micro-batch has any input, so the
deadline only passes once the whole query has been without input for ``idle_flush_ms``;
then ``Engine.flush()`` runs (end of input). The deadline travels in the instance's
header (``meta["idle_deadline_ms"]``), saved with every batch anyway; a timer is
registered only when the key has none (``meta["flush_timer"]``), and a timer that fires
before the deadline is moved to it instead of flushing. So a batch makes no timer calls
(listing, deleting and registering the timer every batch would cost three round trips
to the JVM per key and batch), and a timer fires at most once per ``idle_flush_ms`` while input
flows. Spark hands a micro-batch's input rows to the processor before its expired
timers, so after a crash the replayed batch moves the deadline before a timer could
flush buffered tuples too early.

Test hook (task retries): ``HARVEST_TEST_FAIL_TASK=<batch id>`` in the driver's
environment (read by :func:`fail_task_batch` when the job is configured) makes the first
attempt of every join task of that micro-batch fail right after it saved its first key's
state — the state store then discards that attempt's writes, and Spark runs the task
again (``spark.task.maxFailures`` > 1, e.g. master ``local[2,4]``); the retried attempt
must read the committed state back, not the failed attempt's live instance.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pipeline.core.errors import ConfigError, HarvestError, OperatorStateError
from pipeline.core.logging import get_logger
from pipeline.core.profile import PhaseProfile
from pipeline.diffusion.placement import instance_of
from pipeline.runtime.frames import (
    DEADLETTER_KEY,
    MAX_OUTPUT_BYTES,
    MAX_OUTPUT_ROWS,
    bounded,
    dead_letter_frame,
)
from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.runtime.persistence import PieceKey
from pipeline.spark.route_log import BATCH_ID_PROPERTY, RouteStore, running_batch
from pipeline.spark.worker_input import install as install_columnar_input

log = get_logger(__name__)

CHUNK_SCHEMA = StructType([StructField("chunk", BinaryType(), False)])
#: the MapState ``pieces``: (kind, stream, id) of a piece, and the chunk's position in it
PIECE_KEY_SCHEMA = StructType([
    StructField("kind", StringType(), False),
    StructField("stream", IntegerType(), False),
    StructField("id", LongType(), False),
    StructField("part", IntegerType(), False),
])
StateLayout = Literal["incremental", "blob"]
FAIL_TASK_ENV = "HARVEST_TEST_FAIL_TASK"


class InjectedTaskFailureError(HarvestError):
    """The failure :data:`FAIL_TASK_ENV` asks for (tests of Spark's task retries)."""


def fail_task_batch() -> int | None:
    """The micro-batch id in ``HARVEST_TEST_FAIL_TASK`` (None when unset); ConfigError
    naming the variable when it is not a batch id."""
    raw = os.environ.get(FAIL_TASK_ENV, "").strip()
    if not raw:
        return None
    try:
        batch = int(raw)
    except ValueError:
        batch = -1
    if batch < 0:
        raise ConfigError(f"{FAIL_TASK_ENV}: expected a micro-batch id >= 0, got {raw!r}")
    return batch


@dataclass(frozen=True)
class ProcessorConfig:
    """Frozen processor settings (pickled to the Python workers with the processor; the
    instance config carries the resolved engine config, not the spec)."""

    instance: InstanceConfig
    idle_flush_ms: int = 3_000
    chunk_bytes: int = 1 << 20
    #: names this run for the worker-side instance cache (new per job start)
    run_token: str = ""
    #: ``incremental``: header + one entry per basic window / member segment, a batch
    #: writes what it changed; ``blob``: the whole instance every batch (the baseline)
    state_layout: StateLayout = "incremental"
    #: test hook: fail the first attempt of this micro-batch's join tasks (see module)
    fail_batch: int | None = None
    #: adaptive ATR: the checkpoint's routing state files (ownership follows the batch's
    #: epoch log; each key's usage after the batch goes back for the next batch's loads)
    routes: RouteStore | None = None
    #: most rows and bytes of one output frame, each read by Spark as one Arrow batch
    #: (:func:`output_limits` of the session's Arrow settings)
    max_output_rows: int = MAX_OUTPUT_ROWS
    max_output_bytes: int = MAX_OUTPUT_BYTES


#: Spark's Arrow batch settings (``maxBytesPerBatch``: unset is Int.MaxValue)
ARROW_ROWS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
ARROW_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"


#: Spark's byte-size suffixes (``JavaUtils.byteStringAsBytes``), powers of 1024
_BYTE_UNITS = {"b": 0, "k": 1, "kb": 1, "m": 2, "mb": 2, "g": 3, "gb": 3, "t": 4, "tb": 4,
               "p": 5, "pb": 5}


def spark_bytes(text: str) -> int:
    """A Spark byte-size setting in bytes (a plain number is bytes); ConfigError naming
    the value when it is none.

    >>> spark_bytes("2147483647b"), spark_bytes("64m"), spark_bytes(" 4096 ")
    (2147483647, 67108864, 4096)
    """
    raw = text.strip().lower()
    digits = raw.rstrip("bkmgtp")
    unit = raw[len(digits):] or "b"
    if not digits.isdigit() or unit not in _BYTE_UNITS:
        raise ConfigError(f"{ARROW_BYTES_KEY}: expected a byte size such as 64m, got {text!r}")
    return int(digits) * 1024 ** _BYTE_UNITS[unit]


def output_limits(max_records_per_batch: int, max_bytes_per_batch: int) -> tuple[int, int]:
    """Most rows and bytes of one output frame under Spark's Arrow batch settings: never
    more than :data:`MAX_OUTPUT_ROWS` / :data:`MAX_OUTPUT_BYTES`, nor more than Spark's
    own limits (a limit ≤ 0 is none, as in Spark).

    >>> output_limits(100_000, 2**31 - 1)
    (10000, 16777216)
    >>> output_limits(500, 1 << 20)
    (500, 1048576)
    """
    rows = min(MAX_OUTPUT_ROWS, max_records_per_batch) if max_records_per_batch > 0 \
        else MAX_OUTPUT_ROWS
    size = min(MAX_OUTPUT_BYTES, max_bytes_per_batch) if max_bytes_per_batch > 0 \
        else MAX_OUTPUT_BYTES
    return rows, size


@dataclass(frozen=True)
class SaveStats:
    """What one save wrote: bytes handed to the state store (header and pieces, or the
    blob), pieces written and deleted, its wall and CPU time (serialization included)
    and the header's share of the bytes (0 for a blob)."""

    bytes_written: int
    pieces_written: int
    pieces_removed: int
    seconds: float
    header_bytes: int = 0
    cpu_seconds: float = 0.0


#: the Python worker reads its input by columns (:mod:`pipeline.spark.worker_input`); in a
#: worker this module is imported as the processor is unpickled, before the first batch
install_columnar_input()

VERSION_SCHEMA = StructType([StructField("version", LongType(), False)])
#: the Python worker's live instances: (run token, route key) → (state version, instance).
#: A batch whose stored version equals the cached one resumes the live object instead of
#: reading the state back; after a failed or replayed batch the versions differ (the
#: state store rolled back) and the state is read again. The state is still written every
#: batch: the checkpoint, not this cache, is what a restart resumes from. (Incremental
#: layout: the live object knows which pieces the committed state holds, so the next
#: batch writes only what it changes; a state read back starts with everything stored.)
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
        self.blob: Any = None
        self.header: Any = None
        self.pieces: Any = None
        if self.config.state_layout == "blob":
            self.blob = handle.getListState("engine", CHUNK_SCHEMA)
        else:
            self.header = handle.getListState("header", CHUNK_SCHEMA)
            self.pieces = handle.getMapState("pieces", PIECE_KEY_SCHEMA, CHUNK_SCHEMA)
        self.version = handle.getValueState("version", VERSION_SCHEMA)
        #: what the latest save of this processor wrote (logs, ``harvest bench state``)
        self.last_save: SaveStats | None = None

    # ------------------------------------------------------------------ state
    def _stored(self) -> tuple[bool, int]:
        """Whether the key has state, and its version: one state call (the version is
        written with every save; state without one counts as version 0)."""
        row = self.version.get()
        if row is not None:
            return True, int(row[0])
        return self._has_state(), 0

    def _has_state(self) -> bool:
        return bool((self.blob if self.blob is not None else self.header).exists())

    def _load(self, route_key: int, stored: tuple[bool, int] | None = None
              ) -> tuple[JoinInstance, int]:
        """The key's instance and its stored state version (0: no state yet); ``stored``:
        :meth:`_stored`, if the caller read it already."""
        exists, version = stored if stored is not None else self._stored()
        if not exists:
            return JoinInstance(self.config.instance, route_key, WALL_CLOCK), 0
        # taken out while in use: a batch that fails before _save leaves no live entry
        live = _LIVE.pop((self.config.run_token, route_key), None)
        if self.config.run_token and live is not None and live[0] == version:
            return live[1], version
        cfg = self.config.instance
        if self.blob is not None:
            data = b"".join(bytes(row[0]) for row in self.blob.get())
            return JoinInstance.load(cfg, route_key, data, WALL_CLOCK), version
        header = b"".join(bytes(row[0]) for row in self.header.get())
        return JoinInstance.from_pieces(cfg, route_key, header, self._read_pieces(route_key),
                                        WALL_CLOCK), version

    def _read_pieces(self, route_key: int) -> dict[PieceKey, bytes]:
        """Every stored piece, its chunks joined."""
        parts: dict[PieceKey, dict[int, bytes]] = {}
        for key, value in self.pieces.iterator():
            piece = (str(key[0]), int(key[1]), int(key[2]))
            parts.setdefault(piece, {})[int(key[3])] = bytes(value[0])
        out: dict[PieceKey, bytes] = {}
        for piece, chunks in parts.items():
            if set(chunks) != set(range(len(chunks))):
                raise OperatorStateError(
                    f"instance {route_key}: state piece {piece} has parts {sorted(chunks)}")
            out[piece] = b"".join(chunks[i] for i in range(len(chunks)))
        return out

    def _chunks(self, data: bytes) -> list[tuple[bytes]]:
        size = self.config.chunk_bytes
        return [(data[i:i + size],) for i in range(0, len(data), size)] or [(b"",)]

    def _put_piece(self, piece: PieceKey, data: bytes) -> None:
        chunks = self._chunks(data)
        for part, row in enumerate(chunks):
            self.pieces.updateValue((*piece, part), row)
        self._remove_piece(piece, len(chunks))  # parts of a longer earlier version

    def _remove_piece(self, piece: PieceKey, first_part: int = 0) -> None:
        part = first_part
        while self.pieces.containsKey((*piece, part)):
            self.pieces.removeKey((*piece, part))
            part += 1

    def _save(self, inst: JoinInstance, loaded_version: int) -> SaveStats:
        """Store the instance under the next version (and remember it live)."""
        t0, c0 = time.perf_counter(), time.process_time()
        if self.blob is not None:
            data = inst.dump()
            self.blob.put(self._chunks(data))
            written, n_put, n_removed, header = len(data), 1, 0, 0
        else:
            changes = inst.changes()
            self.header.put(self._chunks(changes.header))
            for piece, data in changes.put.items():
                self._put_piece(piece, data)
            for piece in changes.removed:
                self._remove_piece(piece)
            written, n_put, n_removed = changes.size, len(changes.put), len(changes.removed)
            header = len(changes.header)
        version = loaded_version + 1
        self.version.update((version,))
        if self.config.run_token:
            _LIVE[(self.config.run_token, inst.route_key)] = (version, inst)
        self.last_save = SaveStats(written, n_put, n_removed, time.perf_counter() - t0,
                                   header, time.process_time() - c0)
        return self.last_save

    def _deadline(self, inst: JoinInstance) -> int | None:
        """Move the key's flush deadline to ``idle_flush_ms`` after now (wall clock: the
        batch may have been long); the timer to register if the key has none."""
        deadline = int(WALL_CLOCK() * 1000) + self.config.idle_flush_ms
        inst.meta["idle_deadline_ms"] = deadline
        if inst.meta.get("flush_timer"):
            return None
        inst.meta["flush_timer"] = True
        return deadline

    def _keep_live(self, inst: JoinInstance, version: int) -> None:
        """Put an instance :meth:`_load` took out back, unchanged, under its version."""
        if self.config.run_token:
            _LIVE[(self.config.run_token, inst.route_key)] = (version, inst)

    def _routing(self, inst: JoinInstance) -> int | None:
        """Adaptive ATR: own results by the running micro-batch's routing state; its id."""
        store = self.config.routes
        if store is None:
            return None
        batch, _ = running_batch()
        inst.batch_routing = store.state(batch)
        return batch

    def _record_usage(self, inst: JoinInstance, batch: int | None) -> None:
        """Adaptive ATR: the key's usage after ``batch``, for the next batch's loads."""
        if self.config.routes is not None and batch is not None:
            self.config.routes.put_key(batch, inst.route_key, inst.usage())

    def _instance(self, key: Any) -> int:
        """The instance number of a grouping key: the physical route key mod G
        (:mod:`pipeline.diffusion.placement`; with the instance numbers as keys, itself)."""
        return instance_of(int(key[0]), self.config.instance.router.groups)

    def _bounded(self, frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
        """``frames`` cut to the configured rows and bytes per output frame."""
        return bounded(frames, self.config.max_output_rows, self.config.max_output_bytes)

    # ------------------------------------------------------------------ callbacks
    def handleInputRows(  # noqa: N802 - Spark API name
        self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        t_in = time.perf_counter()
        frames = [f for f in rows if len(f)]  # Spark's Arrow batches → pandas
        if not frames:
            return
        if int(key[0]) == DEADLETTER_KEY:  # rejected input: no state, no timer
            for f in frames:
                yield from self._bounded(
                    [dead_letter_frame(f, len(self.config.instance.engine.streams))])
            return
        route_key = self._instance(key)
        t0 = time.perf_counter()
        inst, version = self._load(route_key)
        t1 = time.perf_counter()
        frame = pd.concat(frames, ignore_index=True)
        if self.config.instance.profile:
            if inst.profile is None:
                inst.attach_profile(PhaseProfile(time.perf_counter))
            assert inst.profile is not None
            inst.profile.add("input", (t0 - t_in) + (time.perf_counter() - t1))
        batch = self._routing(inst)
        out = inst.process(frame)
        self._record_usage(inst, batch)
        t2 = time.perf_counter()
        timer = self._deadline(inst)
        saved = self._save(inst, version)
        if timer is not None:
            self.handle.registerTimer(timer)
        if self.config.fail_batch is not None:
            _maybe_fail(self.config.fail_batch, route_key)
        log.info("micro-batch", route_key=route_key, rows=len(frame),
                 load_s=round(t1 - t0, 3), process_s=round(t2 - t1, 3),
                 save_s=round(time.perf_counter() - t2, 3),
                 written_mb=round(saved.bytes_written / 1e6, 3),
                 pieces_written=saved.pieces_written, pieces_removed=saved.pieces_removed)
        yield from self._bounded(out)

    def handleExpiredTimer(  # noqa: N802 - Spark API name
        self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        stored = self._stored()
        if not stored[0]:
            return
        inst, version = self._load(self._instance(key), stored)
        deadline = inst.meta.get("idle_deadline_ms")
        now = timerValues.getCurrentProcessingTimeInMs() if timerValues is not None else None
        if deadline is not None and now is not None and now < int(deadline):
            # input came after this timer was set: move it to the deadline, flush nothing
            self.handle.registerTimer(int(deadline))
            self._keep_live(inst, version)
            return
        batch = self._routing(inst)
        out = inst.flush()
        self._record_usage(inst, batch)
        inst.meta["flush_timer"] = False
        self._save(inst, version)
        yield from self._bounded(out)

    def close(self) -> None:
        return None


def _maybe_fail(batch: int, route_key: int) -> None:
    """Raise :class:`InjectedTaskFailureError` in the first attempt of a task of micro-batch
    ``batch`` (the test hook of the module docstring)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None or ctx.attemptNumber() != 0:
        return
    running = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    if running is None or int(running) != batch:
        return
    log.warning("failing a join task on purpose", env=FAIL_TASK_ENV, batch_id=batch,
                route_key=route_key, stage=ctx.stageId(), partition=ctx.partitionId())
    raise InjectedTaskFailureError(
        f"{FAIL_TASK_ENV}: the first attempt of a join task of micro-batch {batch} fails "
        f"on purpose (route key {route_key}, after saving its state)")
