"""The processor part of `harvest bench state`: per window size, a pre-filled instance
driven through the real :class:`~pipeline.spark.processor.JoinProcessor` batch by batch,
each state saved by both layouts into a counting handle."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from rich.progress import Progress

from bench.state.handle import CountingHandle
from bench.state.report import growth, header_bytes, summarize, targets
from bench.state.workload import (
    DESIGNS,
    EPSILON,
    MAX_DELAY_MS,
    MEAN_DELAY_MS,
    MEASURED,
    MEASURED_QUICK,
    RATE,
    SETTLE,
    SETTLE_QUICK,
    STREAMS,
    TARGET_GROWTH,
    TRIGGER_MS,
    WINDOWS_S,
    bench_spec,
    generate_streams,
    micro_batches,
)
from pipeline.core.logging import get_logger
from pipeline.runtime.instance import InstanceConfig, JoinInstance
from pipeline.spark import processor as proc
from pipeline.spark.processor import JoinProcessor, ProcessorConfig, SaveStats

log = get_logger(__name__)


def _prefill(inst: JoinInstance, streams: list[dict[str, np.ndarray]], t0: int) -> None:
    """Tuples with ts < t0 straight into the join windows and the member store."""
    pred = inst.config.engine.predicate
    join = inst.engine.join
    for j, s in enumerate(streams):
        keep = s["ts"] < t0
        for ts, seq, v in zip(s["ts"][keep].tolist(), s["seq"][keep].tolist(),
                              s["value"][keep].tolist(), strict=True):
            join.insert(j, ts, seq, pred.encode({"value": v}))
            inst.members.add(j, seq, ts, 0, seq, None)
    join.join_time = t0 - 1


def _processor(cfg: InstanceConfig, layout: proc.StateLayout, token: str
               ) -> tuple[JoinProcessor, CountingHandle]:
    p = JoinProcessor(ProcessorConfig(cfg, run_token=token, state_layout=layout))
    handle = CountingHandle()
    p.init(handle)  # type: ignore[arg-type]
    return p, handle


def measure_window(window_s: int, settle: int, measured: int, progress: Progress
                   ) -> list[dict[str, Any]]:
    """Per-batch saves of both designs at one window size."""
    spec = bench_spec(window_s)
    cfg = InstanceConfig.from_spec(spec, ("value",))
    t0 = window_s * 1000
    total = settle + measured
    streams = generate_streams(window_s + total + 3, seed=window_s)
    task = progress.add_task(f"window {window_s} s: pre-fill", total=total + 1)
    inst = JoinInstance(cfg, 0, time.time)
    _prefill(inst, streams, t0)
    batches = micro_batches(streams, t0, total)
    token = f"bench-state-{window_s}-{time.time_ns()}"
    procs = {layout: _processor(cfg, layout, token if layout == "incremental" else "")
             for layout in DESIGNS}
    procs["incremental"][0]._save(inst, 0)  # the pre-filled state, stored once
    progress.update(task, advance=1, description=f"window {window_s} s: micro-batches")
    rows: list[dict[str, Any]] = []
    for k, batch in enumerate(batches):
        p_inc, h_inc = procs["incremental"]
        before = h_inc.counter.bytes
        list(p_inc.handleInputRows((0,), iter([batch]), None))  # type: ignore[arg-type]
        inc = p_inc.last_save
        inc_bytes = h_inc.counter.bytes - before
        assert inc is not None
        if k >= settle:  # the same state, saved as a blob
            version, live = proc._LIVE[(token, 0)]
            p_blob, h_blob = procs["blob"]
            before = h_blob.counter.bytes
            blob = p_blob._save(live, version - 1)
            blob_bytes = h_blob.counter.bytes - before
            for design, stats, written in (("blob", blob, blob_bytes),
                                           ("incremental", inc, inc_bytes)):
                rows.append(_batch_row(design, window_s, len(batch), written, stats,
                                       live.state_size()))
        progress.update(task, advance=1)
    proc._LIVE.pop((token, 0), None)
    progress.remove_task(task)
    return rows


def _batch_row(design: str, window_s: int, tuples: int, written: int, stats: SaveStats,
               state_tuples: int) -> dict[str, Any]:
    return {"design": design, "window_s": window_s, "batch_tuples": tuples,
            "bytes_written": written, "save_ms": stats.cpu_seconds * 1000.0,
            "save_wall_ms": stats.seconds * 1000.0,
            "header_bytes": stats.header_bytes, "pieces_written": stats.pieces_written,
            "pieces_removed": stats.pieces_removed, "state_tuples": state_tuples}


def run_processor(quick: bool, progress: Progress) -> dict[str, Any]:
    """The processor-level measurement at every window size: the JSON keys of the part."""
    measured = MEASURED_QUICK if quick else MEASURED
    settle = SETTLE_QUICK if quick else SETTLE
    windows = WINDOWS_S[:2] if quick else WINDOWS_S
    batches: list[dict[str, Any]] = []
    for w in windows:
        log.info("bench state: window", window_s=w)
        batches += measure_window(w, settle, measured, progress)
    rows = summarize(batches)
    ratios = growth(rows)
    return {
        "workload": {
            "spec": "examples/specs/demo.toml (window_ms, epsilon, index, shedding "
                    "overridden)",
            "streams": STREAMS, "input_rate": RATE, "trigger_ms": TRIGGER_MS,
            "epsilon": EPSILON,
            "basic_window_ms": bench_spec(WINDOWS_S[0]).shedding.basic_window_ms,
            "delay": f"exponential, mean {MEAN_DELAY_MS:g} ms, capped at {MAX_DELAY_MS} ms",
            "windows_s": list(windows), "settle_batches": settle, "measured_batches": measured,
            "state_handle": "in-memory, counts the bytes of every key and value written",
            "statistic": "median over the measured micro-batches", "quick": quick,
            "save_ms": "CPU time of the save (process_time); wall time per batch in "
                       "batches[].save_wall_ms",
        },
        "rows": rows,
        "incremental_header_bytes_per_batch": header_bytes(batches),
        "growth_largest_vs_smallest_window": ratios,
        "target_growth": TARGET_GROWTH,
        "targets_met": targets(ratios),
        "batches": batches,
    }
