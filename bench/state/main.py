"""`harvest bench state`: what one micro-batch's state save costs, whole blob vs incremental.

Workload: the demo's join (``examples/specs/demo.toml``: 3-way band join, quality-driven
K with Γ = 0.95, 2 s basic windows) at 1,200 tuples/s per stream, one route key, 1 s
micro-batches, exponential delays, with windows of 10, 60 and 300 s. So that the join's
own cost stays affordable at 300 s and the run is deterministic, shedding is off, the
values drift (seconds + noise) and ε is tiny (10⁻⁶) with ``[join] index = true``: a probe
touches one or two basic windows. None of this changes what the state holds (every
tuple of the window with its feature, its Kafka coordinates in the member store, the
K-slack buffers, the Synchronizer, the policy's delay statistics).

Per window size: the join windows and the member store are pre-filled with W seconds of
tuples (unprobed), a few micro-batches settle K-slack and the policy, then micro-batches
are measured. Each batch goes through the real :class:`~pipeline.spark.processor.JoinProcessor`
(incremental layout, live-instance cache on, as in a job), and the same instance is then
also saved by a blob-layout processor, so both designs save the same state. The state
handle is an in-memory stand-in that counts the bytes it is handed (keys and values —
what RocksDB's changelog receives); the serialization is the real one.

Reported per (design, window): bytes written and CPU milliseconds spent in the save
(serialization + state calls; ``time.process_time``, as the wall clock of a shared 2-core
machine mostly measures the other processes — it is kept per batch as ``save_wall_ms``)
per micro-batch, the median over the measured batches.
Target (#21): with the incremental layout, bytes and save time per micro-batch at 300 s
stay within 2× of those at 10 s (the blob grows with the window).

Parts (``--only processor,spark``; a partial run merges into the existing JSON):
``processor`` is the above; ``spark`` confirms it in a real Spark run at one window size
(``bench/state_spark.py``: bytes of the RocksDB changelog files per micro-batch).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.kit.output import save_figure, write_json
from bench.state.handle import CountingHandle
from pipeline.core.errors import ConfigError
from pipeline.core.figures import new_figure
from pipeline.core.logging import get_logger
from pipeline.core.settings import PROJECT_ROOT, Settings
from pipeline.spark import processor as proc
from pipeline.spark.instance import InstanceConfig, JoinInstance
from pipeline.spark.processor import JoinProcessor, ProcessorConfig, SaveStats
from pipeline.spec.model import Spec, load_spec
from pipeline.spec.toml import with_overrides

log = get_logger(__name__)

WINDOWS_S = (10, 60, 300)
RATE = 1200  # tuples/s per stream (the demo's)
STREAMS = 3
TRIGGER_MS = 1000
EPSILON = 1e-6
MEAN_DELAY_MS = 100.0
MAX_DELAY_MS = 2000
#: micro-batches before measuring: K-slack and the quality policy's delay statistics
#: (ADWIN windows of up to 20,000 delays per stream, ~17 s at this rate) fill up
SETTLE = 20
SETTLE_QUICK = 3
MEASURED = 12
MEASURED_QUICK = 3
TARGET_GROWTH = 2.0
DESIGNS: tuple[proc.StateLayout, ...] = ("blob", "incremental")


# ---------------------------------------------------------------------- workload
def bench_spec(window_s: int) -> Spec:
    """The demo spec with a ``window_s`` window, ε = 10⁻⁶, shedding off, 1 s trigger."""
    spec = load_spec(PROJECT_ROOT / "examples" / "specs" / "demo.toml")
    return with_overrides(
        spec,
        join={"window_ms": window_s * 1000, "epsilon": EPSILON, "index": True},
        shedding={"mode": "off", "budget": "virtual"},
        job={"budget": "virtual", "trigger_ms": TRIGGER_MS},
    )


def _streams(seconds: float, seed: int) -> list[dict[str, np.ndarray]]:
    """Per stream: ts (sorted, ``RATE``/s), seq, value (ts in seconds + noise), arrival
    (ts + capped exponential delay)."""
    rng = np.random.default_rng(seed)
    n = int(RATE * seconds)
    out = []
    for _ in range(STREAMS):
        ts = np.sort(rng.integers(0, int(seconds * 1000), size=n))
        value = ts / 1000.0 + rng.normal(0.0, 0.05, n)
        delay = np.minimum(rng.exponential(MEAN_DELAY_MS, n), MAX_DELAY_MS).astype(np.int64)
        out.append({"ts": ts, "seq": np.arange(n, dtype=np.int64), "value": value,
                    "arrival": ts + delay})
    return out


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


def _batches(streams: list[dict[str, np.ndarray]], t0: int, count: int
             ) -> list[pd.DataFrame]:
    """Micro-batches of the tuples with ts ≥ t0, by arrival, ``TRIGGER_MS`` each."""
    parts = []
    for j, s in enumerate(streams):
        keep = s["ts"] >= t0
        n = int(keep.sum())
        parts.append(pd.DataFrame({
            "stream_idx": np.full(n, j), "stream": f"s{j + 1}", "seq": s["seq"][keep],
            "event_time": s["ts"][keep], "arrival_time": s["arrival"][keep],
            "value": s["value"][keep], "partition": np.zeros(n, np.int64),
            "offset": s["seq"][keep]}))
    frame = pd.concat(parts, ignore_index=True)
    out = []
    for k in range(count):
        lo, hi = t0 + k * TRIGGER_MS, t0 + (k + 1) * TRIGGER_MS
        batch = frame[(frame["arrival_time"] >= lo) & (frame["arrival_time"] < hi)]
        out.append(batch.reset_index(drop=True))
    return out


# ---------------------------------------------------------------------- measurement
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
    streams = _streams(window_s + total + 3, seed=window_s)
    task = progress.add_task(f"window {window_s} s: pre-fill", total=total + 1)
    inst = JoinInstance(cfg, 0, time.time)
    _prefill(inst, streams, t0)
    batches = _batches(streams, t0, total)
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


def summarize(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The result rows: per (design, window), the median bytes and save CPU ms per batch."""
    rows = []
    for design in DESIGNS:
        for w in sorted({b["window_s"] for b in batches}):
            mine = [b for b in batches if b["design"] == design and b["window_s"] == w]
            if not mine:
                continue
            rows.append({
                "design": design, "window_s": w, "input_rate": RATE,
                "bytes_written_per_batch": statistics.median(b["bytes_written"] for b in mine),
                "save_ms_per_batch": statistics.median(b["save_ms"] for b in mine),
            })
    return rows


def growth(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per design: largest window's bytes and save ms over the smallest window's."""
    out: dict[str, dict[str, float | None]] = {}
    for design in DESIGNS:
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["window_s"])
        if len(mine) < 2:
            out[design] = {"bytes": None, "save_ms": None}
            continue
        lo, hi = mine[0], mine[-1]
        out[design] = {
            "bytes": _ratio(hi["bytes_written_per_batch"], lo["bytes_written_per_batch"]),
            "save_ms": _ratio(hi["save_ms_per_batch"], lo["save_ms_per_batch"]),
        }
    return out


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def targets(ratios: dict[str, dict[str, float | None]]) -> dict[str, bool]:
    inc = ratios.get("incremental", {})
    return {
        f"incremental_bytes_written_within_{TARGET_GROWTH:g}x":
            inc.get("bytes") is not None and inc["bytes"] <= TARGET_GROWTH,  # type: ignore[operator]
        f"incremental_save_ms_within_{TARGET_GROWTH:g}x":
            inc.get("save_ms") is not None and inc["save_ms"] <= TARGET_GROWTH,  # type: ignore[operator]
    }


# ---------------------------------------------------------------------- run
PARTS = ("processor", "spark")


def _parts(only: str | None) -> list[str]:
    """The parts ``--only`` names (all when empty); ConfigError naming an unknown one."""
    parts = list(PARTS) if not only else [x.strip() for x in only.split(",") if x.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ConfigError(f"--only: unknown part(s) {unknown}; expected {list(PARTS)}")
    return parts


def _previous(path: Path, parts: list[str]) -> dict[str, Any]:
    """The existing JSON a partial run merges into (without its run metadata)."""
    if set(parts) == set(PARTS) or not path.exists():
        return {}
    payload: dict[str, Any] = json.loads(path.read_text())
    payload.pop("benchmark", None)
    payload.pop("machine", None)
    return payload


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


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Run every part (or ``only`` = comma-separated subset of PARTS), print a table,
    write state.json + state.png; a partial run merges its keys into the existing JSON."""
    from bench.state.spark import run_spark

    console = Console()
    parts = _parts(only)
    path = results_dir / "state.json"
    payload = _previous(path, parts)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn(
            "{task.completed}/{task.total}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        if "processor" in parts:
            payload.update(run_processor(quick, progress))
        if "spark" in parts:
            payload["spark"] = run_spark(quick, settings.cache_dir / "bench-state", progress)
    payload["parts_last_run"] = parts
    path = write_json("state", payload, results_dir)
    png = _plot(payload, results_dir)
    table = Table(title="state written per micro-batch")
    for col in ("design", "window s", "KB written", "save ms", "Spark changelog KB"):
        table.add_column(col, justify="right")
    spark = payload.get("spark", {})
    changelog = {(r["design"], r["window_s"]): r["changelog_bytes_per_batch"]
                 for r in spark.get("rows", [])}
    for r in payload.get("rows", []):
        cl = changelog.get((r["design"], r["window_s"]))
        table.add_row(r["design"], str(r["window_s"]),
                      f"{r['bytes_written_per_batch'] / 1e3:,.1f}",
                      f"{r['save_ms_per_batch']:.2f}",
                      "" if cl is None else f"{cl / 1e3:,.1f}")
    console.print(table)
    console.print(f"growth, largest vs smallest window: "
                  f"{payload.get('growth_largest_vs_smallest_window')}; "
                  f"targets met: {payload.get('targets_met')}")
    console.print(f"wrote {path} and {png}")
    return 0


def header_bytes(batches: list[dict[str, Any]]) -> dict[str, float]:
    """Per window (s, as text): the incremental saves' median header bytes."""
    out = {}
    for w in sorted({b["window_s"] for b in batches}):
        mine = [b["header_bytes"] for b in batches
                if b["design"] == "incremental" and b["window_s"] == w]
        if mine:
            out[str(w)] = float(statistics.median(mine))
    return out


def _plot(payload: dict[str, Any], results_dir: Path) -> Path:
    fig, (ax_b, ax_t, ax_s) = new_figure(ncols=3, size=(14.0, 4.2))
    colors = {"blob": "tab:orange", "incremental": "tab:green"}
    rows = payload.get("rows", [])
    for design in DESIGNS:
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["window_s"])
        xs = [r["window_s"] for r in mine]
        ax_b.plot(xs, [r["bytes_written_per_batch"] / 1e6 for r in mine], "o-",
                  color=colors[design], label=design)
        ax_t.plot(xs, [r["save_ms_per_batch"] for r in mine], "o-", color=colors[design],
                  label=design)
    header = payload.get("incremental_header_bytes_per_batch", {})
    ax_b.plot([int(w) for w in header], [v / 1e6 for v in header.values()], "x--",
              color=colors["incremental"], label="incremental: its header")
    for ax, label in ((ax_b, "MB written per micro-batch"),
                      (ax_t, "save CPU ms per micro-batch")):
        if rows:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("window (s)")
        ax.set_ylabel(label)
        if rows:
            ax.legend()
    ax_b.set_title(f"processor, 1 s batches, {RATE:,} tuples/s per stream")
    ax_t.set_title("save CPU time: serialization + state calls")
    spark = payload.get("spark")
    if spark:
        srows = spark["rows"]
        ax_s.bar([r["design"] for r in srows],
                 [r["changelog_bytes_per_batch"] / 1e6 for r in srows],
                 color=[colors[r["design"]] for r in srows])
        ax_s.set_ylabel("MB of RocksDB changelog per micro-batch")
        ax_s.set_title(f"real Spark: {spark['window_s']} s window, "
                       f"{spark['trigger_ms'] / 1000:g} s batches")
    else:
        ax_s.set_axis_off()
        ax_s.text(0.5, 0.5, "real Spark part not run", ha="center", va="center")
    return save_figure(fig, "state", results_dir)
