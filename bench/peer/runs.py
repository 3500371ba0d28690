"""One query of `harvest bench peer`: start harvest's job or Spark's built-in join on
topics that already hold (or are about to receive) the input, drive it until it has
drained, and measure it from its progress events and its results topic.

* **busy time** — the summed ``batchDuration`` of the micro-batches that read input or
  wrote results (harvest's idle flush included), from ``StreamingQueryProgress``;
* **results** — the distinct result ids read back from the run's own results topic, each
  recomputed from its members (:func:`bench.kit.readback.our_id`), so the two
  methods' sets compare;
* **latency** — per result, its Kafka append time − the latest append time of its
  members' input records (:func:`bench.kit.readback.completions`);
* **task overlap** — from Spark's REST API (the session runs with its UI): the launch and
  finish times of the tasks of each keyed stage, and how long two or more of them ran at
  the same time.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from bench.kit.readback import completions, our_id, read_topic
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

HARVEST, BUILTIN = "harvest", "spark-builtin"
METHODS = (HARVEST, BUILTIN)
#: the built-in join on RocksDB (what a user with large state would run)
BUILTIN_ROCKSDB = "spark-builtin-rocksdb"
STATE_STORE_KEY = "spark.sql.streaming.stateStore.providerClass"
_STATE = "org.apache.spark.sql.execution.streaming.state."
#: the built-in join's state store: Spark's default (harvest's job needs RocksDB)
BUILTIN_STATE_STORE = _STATE + "HDFSBackedStateStoreProvider"
ROCKSDB_STATE_STORE = _STATE + "RocksDBStateStoreProvider"
#: the read-and-decode floor (:mod:`pipeline.spark.floor`): no join, no results
FLOOR = "read-floor"
#: Spark's Kafka source alone (``length(value)`` to the noop sink): the floor's floor
RAW = "raw-read"
#: the queries that write no results
NO_RESULTS = (FLOOR, RAW)
#: each method's state store (``state_store`` of a row); None: the method keeps no state
STATE_STORES: dict[str, str | None] = {
    HARVEST: "RocksDBStateStoreProvider", BUILTIN: "HDFSBackedStateStoreProvider",
    BUILTIN_ROCKSDB: "RocksDBStateStoreProvider", FLOOR: None, RAW: None}
#: micro-batches with input left out at the start of a drain's steady state
STEADY_SKIP = 2


@dataclass(frozen=True)
class Batch:
    """One micro-batch's progress event."""

    batch_id: int
    input_rows: int
    results: int
    ms: float
    phases: dict[str, float]
    start_ms: float
    #: the state operators' time, summed over operators (``stateOperators``:
    #: ``commitTimeMs``, ``allUpdatesTimeMs``, ``allRemovalsTimeMs``), ms
    state: dict[str, float] = field(default_factory=dict)


@dataclass
class QueryRun:
    """What one query did."""

    method: str
    batches: list[Batch] = field(default_factory=list)
    stopped: str = ""
    wall_s: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-min load average at start and end
    ids: set[str] = field(default_factory=set)
    records: int = 0  # result records read back (duplicates included)
    latencies: list[tuple[float, float]] = field(default_factory=list)
    #: harvest's instances' phase profile (:func:`bench.kit.profile.python_profile`)
    python_profile: dict[str, Any] | None = None

    @property
    def input_rows(self) -> int:
        return sum(b.input_rows for b in self.batches)

    @property
    def busy(self) -> list[Batch]:
        """The micro-batches that read input or wrote results."""
        return [b for b in self.batches if b.input_rows > 0 or b.results > 0]

    @property
    def busy_s(self) -> float:
        return sum(b.ms for b in self.busy) / 1000.0

    @property
    def steady(self) -> list[Batch]:
        """The busy micro-batches after the first :data:`STEADY_SKIP` that read input
        (the query's start-up: planning caches, the first state store loads)."""
        fed = [b.batch_id for b in self.busy if b.input_rows > 0]
        if len(fed) <= STEADY_SKIP:
            return []
        first = fed[STEADY_SKIP]
        return [b for b in self.busy if b.batch_id >= first]

    @property
    def steady_rows_per_s(self) -> float | None:
        """Input rows over busy time of :attr:`steady` (None when too few batches)."""
        steady = self.steady
        ms = sum(b.ms for b in steady)
        return round(sum(b.input_rows for b in steady) * 1000.0 / ms, 1) if ms > 0 else None


def load_avg() -> float:
    """The 1-minute load average of the machine."""
    return round(os.getloadavg()[0], 2)


def start_query(spark: Any, method: str, cfg: Any, serde: Any, delay_ms: int) -> Any:
    """Start harvest's job or the built-in join on ``cfg``'s topics (Kafka sink; both
    count their result rows per batch in ``observedMetrics['out']``)."""
    from pipeline.spark.builtin_join import start_builtin_join
    from pipeline.spark.floor import start_raw_read, start_read_floor
    from pipeline.spark.job import start_job

    if method == HARVEST:
        return start_job(spark, cfg, serde)
    if method == FLOOR:
        return start_read_floor(spark, cfg, serde)
    if method == RAW:
        return start_raw_read(spark, cfg)
    # the built-in join on Spark's default state store (in memory, HDFS-backed), its
    # strongest here: on RocksDB it drained 6-40% slower (docs/NOTES.md "peer"), and on
    # RocksDB as ``spark-builtin-rocksdb``; the provider is read when a query starts, so
    # harvest's later queries keep RocksDB
    previous = spark.conf.get(STATE_STORE_KEY)
    spark.conf.set(STATE_STORE_KEY, ROCKSDB_STATE_STORE if method == BUILTIN_ROCKSDB
                   else BUILTIN_STATE_STORE)
    try:
        return start_builtin_join(spark, cfg, serde, delay_ms)
    finally:
        spark.conf.set(STATE_STORE_KEY, previous)


def _start_ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000.0


def _batch(p: Any) -> Batch:
    out = p.observedMetrics.get("out") if p.observedMetrics else None
    results = int(out["results"]) if out is not None else 0
    phases = {str(k): float(v) for k, v in (p.durationMs or {}).items()}
    return Batch(int(p.batchId), int(p.numInputRows), results, float(p.batchDuration), phases,
                 _start_ms(p.timestamp), _state_ms(p))


#: the state operators' timings of a progress event, as :attr:`Batch.state` names them
STATE_TIMES = {"commitTimeMs": "commit", "allUpdatesTimeMs": "updates",
               "allRemovalsTimeMs": "removals"}


def _state_ms(p: Any) -> dict[str, float]:
    """Commit, update and removal time of the batch's state operators, summed (ms)."""
    out = dict.fromkeys(STATE_TIMES.values(), 0.0)
    for op in p.stateOperators or []:
        for attr, name in STATE_TIMES.items():
            out[name] += float(getattr(op, attr, 0) or 0)
    return out


def drive(query: Any, run: QueryRun, *, expect_rows: int, flush_ms: int | None,
          max_s: float, quiet_s: float = 1.5) -> None:
    """Collect progress until ``expect_rows`` input rows were read and the query is quiet
    (no data waiting, ``quiet_s`` without a batch that read input or wrote results — a
    query with processing-time timers runs a no-data micro-batch every trigger; with
    ``flush_ms``, a batch has run that long after the last batch with input ended, so
    the idle flush is done), or ``max_s`` passed; then stop the query."""
    seen: dict[int, Batch] = {}
    start = time.monotonic()
    last_busy = start
    try:
        while query.isActive:
            for p in query.recentProgress:
                if p.batchId not in seen:
                    seen[p.batchId] = b = _batch(p)
                    if b.input_rows > 0 or b.results > 0:
                        last_busy = time.monotonic()
            batches = sorted(seen.values(), key=lambda b: b.batch_id)
            read = sum(b.input_rows for b in batches)
            now = time.monotonic()
            if now - start > max_s:
                run.stopped = f"deadline of {max_s:g} s"
                break
            status = query.status
            waiting = bool(status.get("isDataAvailable")) and bool(status.get("isTriggerActive"))
            if read >= expect_rows and not waiting and now - last_busy >= quiet_s:
                fed = [b for b in batches if b.input_rows > 0]
                end = fed[-1].start_ms + fed[-1].ms if fed else 0.0
                if flush_ms is None or any(b.start_ms >= end + flush_ms for b in batches):
                    run.stopped = "drained"
                    break
            time.sleep(0.25)
        else:
            run.stopped = "query terminated"
    finally:
        exc = query.exception()
        query.stop()
        for p in query.recentProgress:
            if p.batchId not in seen:
                seen[p.batchId] = _batch(p)
    if exc is not None:
        raise RuntimeError(f"{run.method}: the query failed: {exc}")
    run.batches = sorted(seen.values(), key=lambda b: b.batch_id)


def read_results(run: QueryRun, settings: Settings, results_topic: str,
                 input_topics: tuple[str, ...] | None = None) -> None:
    """The run's distinct result ids (recomputed from the members) and, with
    ``input_topics``, each result's (completion, latency)."""
    results = read_topic(settings, results_topic)
    run.records = len(results)
    run.ids = {our_id(c.record) for c in results}
    if input_topics is not None:
        inputs = [c for t in input_topics for c in read_topic(settings, t)]
        run.latencies = completions(inputs, results)


def steady_latency(points: list[tuple[float, float]], lo: float = 0.2, hi: float = 0.9
                   ) -> tuple[float | None, float | None, int]:
    """p50 and p99 latency (ms) of the results completed between the ``lo`` and ``hi``
    shares of the completion span (window fill and the final flush left out)."""
    if not points:
        return None, None, 0
    done = np.array([p[0] for p in points])
    a, b = done.min(), done.max()
    keep = [lat for t, lat in points if a + lo * (b - a) <= t <= a + hi * (b - a)]
    if not keep:
        return None, None, 0
    return (round(float(np.percentile(keep, 50)), 1), round(float(np.percentile(keep, 99)), 1),
            len(keep))


# ---------------------------------------------------------------- task overlap (REST API)
def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read().decode())


def _gmt_ms(text: str) -> float:
    return datetime.strptime(text.replace("GMT", "+0000"),
                             "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000.0


def keyed_stage_tasks(spark: Any, since_ms: float, partitions: int
                      ) -> list[list[tuple[int, float, float]]]:
    """Per keyed stage (reads a shuffle, ``partitions`` tasks) submitted after
    ``since_ms``: ``(partition, launch ms, finish ms)`` of each successful task."""
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        return []
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    out = []
    for st in _get(f"{base}/stages?status=complete"):
        if (st.get("numTasks") != partitions or not st.get("shuffleReadBytes")
                or not st.get("submissionTime") or _gmt_ms(st["submissionTime"]) < since_ms):
            continue
        tasks = _get(f"{base}/stages/{st['stageId']}/{st['attemptId']}/taskList?length=10000")
        spans = [(int(t["index"]), _gmt_ms(t["launchTime"]),
                  _gmt_ms(t["launchTime"]) + float(t.get("duration", 0)))
                 for t in tasks if t.get("status") == "SUCCESS"]
        out.append(sorted(spans))
    return out


def overlap(stages: list[list[tuple[int, float, float]]]) -> dict[str, Any]:
    """How much the tasks of each keyed stage ran at once: ``overlap_s`` (time with two
    or more running), ``span_s`` (first launch to last finish), their ratio
    ``overlap_share``, ``stage_max_task_s`` (the longest task of each stage, summed: the
    keyed stage's own time when its tasks run at once), ``task_s`` (all tasks' time) and
    per stage the tasks' offsets from its first launch."""
    both = span = longest = total = 0.0
    detail = []
    for tasks in stages:
        if not tasks:
            continue
        events = sorted([(a, 1) for _, a, _ in tasks] + [(b, -1) for _, _, b in tasks])
        running, prev, two = 0, events[0][0], 0.0
        for t, d in events:
            if running >= 2:
                two += t - prev
            running += d
            prev = t
        first = min(a for _, a, _ in tasks)
        longest += max(b - a for _, a, b in tasks)
        total += sum(b - a for _, a, b in tasks)
        both += two
        span += max(b for _, _, b in tasks) - first
        detail.append([[p, round(a - first), round(b - first)] for p, a, b in tasks])
    return {"stages": len(detail), "overlap_s": round(both / 1000.0, 3),
            "span_s": round(span / 1000.0, 3),
            "overlap_share": round(both / span, 3) if span > 0 else None,
            "stage_max_task_s": round(longest / 1000.0, 3), "task_s": round(total / 1000.0, 3),
            "tasks_ms": detail[-8:]}
