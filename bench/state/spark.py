"""`harvest bench state --only spark`: the blob vs incremental comparison in a real Spark run.

The same workload as the processor part (:mod:`bench.state.processor`: the demo's join, 1,200
tuples/s per stream, drifting values, exponential delays), at one window size, written as
one Parquet file per micro-batch (``trigger_ms`` of arrivals each) and read with
``maxFilesPerTrigger = 1`` by the real query stage: ``groupBy(route_key)
.transformWithStateInPandas(JoinProcessor)`` on the RocksDB state store with changelog
checkpointing (the job's session, ``local[2]``, one shuffle partition), into a ``noop``
sink. Each layout runs with its own checkpoint. After the run, the bytes of the
changelog file of every state version (``state/<op>/<partition>/<v>.changelog``, v =
batch id + 1, as written — LZ4-compressed) are what each micro-batch added to the
checkpoint; the RocksDB snapshots (``<v>.zip`` + SST files, uploaded in the background
every few versions) are reported as totals. The first ``window / trigger`` batches fill
the window; the median of the batches after them is reported (changelog bytes, and the
batch's whole duration in ms — reading, the join, the state store, the commit).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.progress import Progress

from bench.state.workload import DESIGNS, RATE, bench_spec, generate_streams
from pipeline.core.logging import get_logger
from pipeline.runtime.frames import output_ddl
from pipeline.runtime.instance import InstanceConfig
from pipeline.spark.processor import JoinProcessor, ProcessorConfig, StateLayout
from pipeline.spark.session import SessionConfig, build_session

log = get_logger(__name__)

WINDOW_S = 60
TRIGGER_MS = 5_000
MEASURED = 4
QUICK = {"window_s": 10, "trigger_ms": 2_000, "measured": 3}
INPUT_DDL = ("route_key int, stream_idx int, seq long, event_time long, arrival_time long, "
             "value double, partition long, offset long")
QUERY_TIMEOUT_S = 1_800


def write_batches(streams: list[dict[str, np.ndarray]], folder: Path, trigger_ms: int,
                  count: int) -> list[int]:
    """One Parquet file per micro-batch (arrivals in [k·trigger, (k+1)·trigger)), with
    increasing modification times (the file source's order); rows per file."""
    parts = []
    for j, s in enumerate(streams):
        n = len(s["ts"])
        parts.append(pd.DataFrame({
            "route_key": np.zeros(n, np.int32), "stream_idx": np.full(n, j, np.int32),
            "seq": s["seq"], "event_time": s["ts"], "arrival_time": s["arrival"],
            "value": s["value"], "partition": np.zeros(n, np.int64), "offset": s["seq"]}))
    frame = pd.concat(parts, ignore_index=True)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = []
    for k in range(count):
        arr = frame["arrival_time"]
        batch = frame[(arr >= k * trigger_ms) & (arr < (k + 1) * trigger_ms)]
        path = folder / f"batch-{k:05d}.parquet"
        batch.to_parquet(path, index=False)
        os.utime(path, (1e9 + k, 1e9 + k))
        sizes.append(len(batch))
    return sizes


def checkpoint_bytes(checkpoint: Path) -> tuple[dict[int, int], int]:
    """Changelog bytes per state version (summed over operators and partitions), and
    the total bytes of the RocksDB snapshots (``*.zip`` and SST files)."""
    changelogs: dict[int, int] = {}
    snapshots = 0
    for path in (checkpoint / "state").rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix == ".changelog" and path.stem.isdigit():
            v = int(path.stem)
            changelogs[v] = changelogs.get(v, 0) + path.stat().st_size
        elif path.suffix in (".zip", ".sst"):
            snapshots += path.stat().st_size
    return changelogs, snapshots


def _run_layout(spark: Any, cfg: InstanceConfig, layout: StateLayout, inputs: Path,
                checkpoint: Path, total: int, progress: Progress) -> list[dict[str, Any]]:
    """One query over every input file; its progress rows (batch id, input rows, ms)."""
    pconf = ProcessorConfig(cfg, run_token=uuid.uuid4().hex, state_layout=layout,
                            idle_flush_ms=24 * 3_600_000)  # no idle flush within the run
    joined = (spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1)
              .parquet(str(inputs)).groupBy("route_key")
              .transformWithStateInPandas(JoinProcessor(pconf),
                                          output_ddl(len(cfg.engine.streams)), "Append",
                                          "ProcessingTime"))
    query = (joined.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    task = progress.add_task(f"spark {layout}", total=total)
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    try:
        while not query.awaitTermination(1):
            progress.update(task, completed=len(query.recentProgress))
            if time.monotonic() > deadline:
                raise TimeoutError(f"bench state spark: {layout} run took over "
                                   f"{QUERY_TIMEOUT_S} s")
    finally:
        rows = [{"batch_id": int(p["batchId"]), "input_rows": int(p["numInputRows"]),
                 "ms": int(p.get("durationMs", {}).get("triggerExecution", 0))}
                for p in query.recentProgress]
        query.stop()
        progress.remove_task(task)
    return rows


def run_spark(quick: bool, work_dir: Path, progress: Progress) -> dict[str, Any]:
    """Both layouts in real Spark at one window size; the JSON key ``spark``."""
    window_s = QUICK["window_s"] if quick else WINDOW_S
    trigger_ms = QUICK["trigger_ms"] if quick else TRIGGER_MS
    measured = QUICK["measured"] if quick else MEASURED
    fill = -(-window_s * 1000 // trigger_ms)  # batches until the window is full
    total = fill + measured
    shutil.rmtree(work_dir, ignore_errors=True)
    streams = generate_streams(total * trigger_ms / 1000 + 3, seed=window_s)
    rows_per_batch = write_batches(streams, work_dir / "input", trigger_ms, total)
    cfg = InstanceConfig.from_spec(bench_spec(window_s), ("value",))
    spark = build_session(SessionConfig(master="local[2]", app_name="harvest-bench-state",
                                        shuffle_partitions=1))
    # only batches with input: with timers in processing time, no-data batches never end
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    out_rows, per_batch, snapshots, seconds = [], {}, {}, {}
    for layout in DESIGNS:
        log.info("bench state: spark run", layout=layout, window_s=window_s, batches=total)
        checkpoint = work_dir / f"checkpoint-{layout}"
        t0 = time.perf_counter()
        prog = _run_layout(spark, cfg, layout, work_dir / "input", checkpoint, total,
                           progress)
        seconds[layout] = round(time.perf_counter() - t0, 1)
        changelogs, snapshots[layout] = checkpoint_bytes(checkpoint)
        data = sorted((p for p in prog if p["input_rows"] > 0), key=lambda p: p["batch_id"])
        sizes = [changelogs.get(p["batch_id"] + 1, 0) for p in data]
        per_batch[layout] = sizes
        after = sizes[fill:] or sizes[-measured:]
        ms = [p["ms"] for p in data][fill:] or [p["ms"] for p in data][-measured:]
        out_rows.append({"design": layout, "window_s": window_s, "input_rate": RATE,
                         "changelog_bytes_per_batch": statistics.median(after) if after else 0,
                         "batch_ms": statistics.median(ms) if ms else 0})
    spark.stop()
    return {
        "window_s": window_s, "trigger_ms": trigger_ms, "input_rate": RATE,
        "batches": total, "fill_batches": fill, "rows_per_batch": rows_per_batch,
        "statistic": "median over the batches after the window filled",
        "rows": out_rows, "changelog_bytes_by_batch": per_batch,
        "snapshot_bytes_total": snapshots, "seconds": seconds,
    }
