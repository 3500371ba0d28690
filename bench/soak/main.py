"""`harvest bench soak [--minutes 20]`: a long run at overload, watched for growth.

The demo workload (nonaligned sensors, the demo spec with ``bench pipeline``'s 60 s
window and ε) at 2× the full join's measured capacity (:mod:`pipeline.app.capacity`),
GrubJoin on the wall budget, real Kafka + Spark (``local[2]``, one route key), input
paced in real time for ``minutes``. Every few seconds the bench samples the query's
progress and the processes' resident memory; per minute of the run it records

* ``input_rate`` / ``output_rate``: input rows read and results written per wall second
  (the batches that completed in that minute; speed-up 1, so wall ≈ stream time);
* ``batch_ms_p50``: the median duration of those micro-batches;
* ``state_mb``: the state per instance as last saved to the state store — header plus
  every stored piece (``operator_metrics`` extra ``state_bytes``), the last report of the
  minute, averaged over the instances; beside it ``state_tuples`` (tuples held: windows,
  K-slack, Synchronizer) and ``state_sst_mb`` (the RocksDB SST files of the operator per
  instance, Spark's ``rocksdbSstFileSize``: a sawtooth with compactions, not the state);
* ``driver_rss_mb``: the driver, the Python process plus its JVM; ``worker_rss_mb``: every
  Python process under the JVM (the PySpark daemon and its workers), the minute's median.
  The driver JVM's heap is committed and touched at start (``-Xms`` = ``-Xmx``,
  ``-XX:+AlwaysPreTouch``), so its RSS grows only with what the heap does not hold
  (metaspace, threads, direct buffers), not with the JVM's lazy commit of a fixed heap.
  The JVM runs with NMT (``-XX:NativeMemoryTracking=summary``), sampled once a minute:
  ``jvm_nmt_mb`` is what NMT tracks, ``jvm_untracked_mb`` the rest of the JVM's RSS
  (RocksDB's and other JNI mallocs, glibc arenas), and ``jvm_native_growth_mb`` the NMT
  categories that moved from minute 5 to the end (code cache, metaspace, threads, …);
* ``z_p50`` / ``dropped_rate``: GrubJoin's throttle fraction (median of the minute's
  adaptation steps) and the arrivals its input queue dropped per second.

``state_growth`` and ``rss_growth`` are the relative change from minute 5 to the last
minute, ``output_drift`` the mean output rate of the last 5 minutes against minutes 5–10
(minus 1). Targets (``targets_met``): growth under 5% for state and RSS, drift within
±10%. The machine's load average is recorded beside them (the run shares the machine).
Writes ``bench/results/soak.json`` and ``soak.png``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.kit.output import save_figure, write_json
from bench.soak.memory import (
    driver_jvms,
    jvm_native,
    sample_memory,
)
from bench.soak.rows import (
    STEADY_FROM_MINUTE,
    BatchSample,
    Samples,
    minute_rows,
    native_growth,
    summarize,
)
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.logging import get_logger
from pipeline.core.procs import Child
from pipeline.core.settings import Settings

log = get_logger(__name__)

DEFAULT_MINUTES = 20.0
QUICK_MINUTES = 2.0
LOAD = 2.0
SAMPLE_EVERY_S = 5.0
SEED = 11
DRIVER_MEMORY = "1g"
#: NMT (summary) lets the bench attribute the JVM's native growth (``jvm_native``)
JVM_OPTIONS = f"-Xms{DRIVER_MEMORY} -XX:+AlwaysPreTouch -XX:NativeMemoryTracking=summary"


# ---------------------------------------------------------------------- the run
def _state_bytes(progress: Any) -> float | None:
    """SST bytes of the stateful operator after a batch (None if Spark reports none)."""
    ops = getattr(progress, "stateOperators", None) or []
    total = 0.0
    seen = False
    for op in ops:
        custom = getattr(op, "customMetrics", None) or {}
        if "rocksdbSstFileSize" in custom:
            total += float(custom["rocksdbSstFileSize"])
            seen = True
    return total if seen else None


def _fold_progress(progresses: Iterable[Any], seen: set[int], t0_wall_ms: float,
                   samples: Samples) -> None:
    from pipeline.spark.submit import _ts_ms

    for p in progresses:
        if p.batchId in seen:
            continue
        seen.add(p.batchId)
        end_ms = _ts_ms(p.timestamp) + float(p.batchDuration)
        out: Mapping[str, Any] = p.observedMetrics.get("out") or {}
        samples.batches.append(BatchSample(
            t_s=(end_ms - t0_wall_ms) / 1000.0, input_rows=int(p.numInputRows),
            results=int(out["results"]) if out else 0, batch_ms=float(p.batchDuration),
            state_bytes=_state_bytes(p)))


def _state_tuples(settings: Settings, topic: str, t0_wall_ms: float,
                  samples: Samples) -> None:
    """``state_size`` of every ``operator_metrics`` record, by its wall time."""
    from bench.kit.readback import read_topic

    for c in read_topic(settings, topic):
        rec = c.record
        extra = rec.get("extra") or {}
        size = extra.get("state_bytes")
        t_s = (float(rec["wall_time"]) - t0_wall_ms) / 1000.0
        samples.state_tuples.append((t_s, str(rec["instance"]), int(rec["state_size"]),
                                     float(size) if size is not None else None))
        if "beta" in extra:  # a shedder's row (the disorder policy's carry no β)
            samples.shed.append((t_s, float(rec["z"]), int(rec.get("queue_drops") or 0)))
    samples.state_tuples.sort()
    samples.shed.sort()


def run(quick: bool, results_dir: Path, settings: Settings,
        minutes: float | None = None, *, method: str = "grubjoin",
        capacity: Any = None, name: str = "soak") -> int:
    """Benchmark entry point (see the module docstring). For experiments (not the CLI):
    ``method`` — another shedder in the same conditions, ``capacity`` — a
    :class:`~pipeline.app.capacity.Capacity` measured before (not calibrated again),
    ``name`` — the results' file name."""
    from bench.pipeline.main import SENSOR_DISORDER, sensor_spec
    from connectors.io.serde import AvroSerde
    from connectors.launch.broker import LocalKafka
    from connectors.launch.broker_config import BrokerConfig
    from pipeline.app.demo import DemoConfig, calibrate
    from pipeline.spark.job import start_job
    from pipeline.spark.session import (
        SessionConfig,
        build_session,
        connector_jars,
        native_allocator,
    )
    from pipeline.spark.submit import job_config, prepare_topics
    from pipeline.spec.toml import with_overrides

    length = minutes if minutes is not None else (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    if not length >= 1:
        raise ConfigError(f"--minutes: at least 1, got {length!r}")
    n_minutes = int(length)
    load_start = os.getloadavg()
    status = LocalKafka(BrokerConfig.from_settings(settings)).up()
    settings = settings.model_copy(update={"bootstrap_servers": status.bootstrap})
    cap = capacity if capacity is not None else calibrate(
        DemoConfig(speedup=1.0, disorder=SENSOR_DISORDER, seed=SEED),
        sensor_spec("off", settings))
    rate = LOAD * cap.capacity_rate
    print(f"capacity: {cap.describe()}; soak at {rate:.0f}/s per stream for "
          f"{n_minutes} min", flush=True)
    prefix = f"soak{uuid.uuid4().hex[:8]}"
    workdir = settings.cache_dir / "bench-soak" / prefix
    workdir.mkdir(parents=True, exist_ok=True)
    spec = with_overrides(sensor_spec(method, settings),
                          job={"topic_prefix": prefix, "speedup": 1.0})
    # a micro-batch holds at most ~2 triggers' worth of input, as in the demo
    per_trigger = 3 * rate * spec.job.trigger_ms / 1000.0
    spec = with_overrides(spec, job={"max_offsets_per_trigger": max(100, int(2 * per_trigger))})
    run_settings = settings.model_copy(update={"topic_prefix": prefix})
    cfg = job_config(spec, run_settings, checkpoint=str(workdir / "checkpoint"))
    prepare_topics(cfg, run_settings)
    # the driver JVM's heap committed and touched up front (see the module docstring);
    # the native memory bounds are the job's own (``harvest submit``'s session)
    session = SessionConfig(master="local[2]", app_name="harvest-bench-soak",
                            jars=connector_jars(settings), shuffle_partitions=1,
                            driver_memory=DRIVER_MEMORY, java_options=JVM_OPTIONS,
                            state_memory_mb=settings.state_memory_mb,
                            preload=native_allocator(settings))
    spark = build_session(session)
    samples = Samples()
    seen: set[int] = set()
    producer: Child | None = None
    try:
        query = start_job(spark, cfg, AvroSerde.from_dir(settings.schemas_dir))
        deadline = time.monotonic() + 300.0
        while not query.recentProgress and query.isActive and time.monotonic() < deadline:
            time.sleep(0.5)
        seen.update(p.batchId for p in query.recentProgress)
        producer = Child("produce", [
            "produce", "sensors", "--streams", "3", "--lags", "0,5,15", "--kappas", "2,2,50",
            "--disorder", SENSOR_DISORDER, "--seed", str(SEED), "--rate", f"{rate:.3f}",
            "--duration", f"{60.0 * n_minutes + 60.0:g}", "--speedup", "1",
            "--topic-prefix", prefix,
        ], workdir, {"HARVEST_BOOTSTRAP_SERVERS": cfg.bootstrap})
        t0 = time.monotonic()
        t0_wall_ms = time.time() * 1000.0
        end = t0 + 60.0 * n_minutes
        next_note = t0 + 60.0
        while time.monotonic() < end:
            if not query.isActive:
                raise InfraError(f"the soak query stopped: {query.exception()}")
            if not producer.running():
                raise InfraError(f"harvest produce exited early:\n{producer.tail()}")
            now = time.monotonic()
            samples.memory.append((now - t0, sample_memory(os.getpid())))
            samples.load.append((now - t0, os.getloadavg()[0]))
            _fold_progress(query.recentProgress, seen, t0_wall_ms, samples)
            if now >= next_note:
                for pid in driver_jvms(os.getpid())[:1]:
                    samples.nmt.append((now - t0, jvm_native(pid)))
                minute = int((now - t0) // 60)
                recent = [b for b in samples.batches if b.t_s >= (now - t0) - 60.0]
                mem = samples.memory[-1][1]
                print(f"[soak {minute}/{n_minutes} min] in "
                      f"{sum(b.input_rows for b in recent) / 60.0:.0f}/s  out "
                      f"{sum(b.results for b in recent) / 60.0:.1f}/s  batches "
                      f"{len(recent)}  driver {mem.driver_mb:.0f} MB  workers "
                      f"{mem.worker_mb:.0f} MB  load {os.getloadavg()[0]:.1f}", flush=True)
                next_note += 60.0
            time.sleep(SAMPLE_EVERY_S)
        _fold_progress(query.recentProgress, seen, t0_wall_ms, samples)
        query.stop()
    finally:
        if producer is not None:
            producer.stop()
        spark.stop()
    _state_tuples(run_settings, cfg.output_topics[1], t0_wall_ms, samples)
    rows = minute_rows(samples, n_minutes, cfg.spec.job.groups)
    summary = summarize(rows)
    payload = {
        "quick": quick, "minutes": n_minutes, "load": LOAD,
        "input_rate_per_stream": rate, "capacity": cap.snapshot(),
        "spec": {"window_ms": max(spec.join.windows), "epsilon": spec.join.epsilon,
                 "shedding": spec.shedding.mode, "budget": spec.shedding.budget,
                 "trigger_ms": spec.job.trigger_ms, "groups": spec.job.groups,
                 "max_offsets_per_trigger": spec.job.max_offsets_per_trigger},
        "topic_prefix": prefix,
        "driver_memory": DRIVER_MEMORY, "driver_java_options": session.jvm_options,
        "malloc": "jemalloc" if session.preload else "glibc",
        "state_memory_mb": session.state_memory_mb,
        "load_average": {"start": list(load_start), "end": list(os.getloadavg()),
                         "cpus": os.cpu_count()},
        "measures": {
            "state_mb": "state bytes per instance as last saved (header + stored pieces; "
                        "operator_metrics extra state_bytes), last report of the minute",
            "state_sst_mb": "RocksDB SST bytes of the stateful operator per route key, "
                            "end of the minute (Spark's rocksdbSstFileSize)",
            "state_tuples": "tuples held per instance (operator_metrics state_size)",
            "driver_rss_mb": "the Python driver + its JVM, the minute's median",
            "worker_rss_mb": "every Python process under the JVM, the minute's median",
            "jvm_nmt_mb": "the driver JVM's native memory tracked by NMT (committed), "
                          "sampled once a minute",
            "jvm_untracked_mb": "the JVM's RSS minus what NMT tracks: native allocations "
                                "of JNI code (RocksDB) and malloc arenas",
            "z_p50": "GrubJoin's throttle fraction z, median of the minute's steps",
            "dropped_rate": "arrivals dropped by the input queue per second",
        },
        "rows": rows, **summary,
        "jvm_native_growth_mb": native_growth(samples),
    }
    write_json(name, payload, results_dir)
    plot(rows, results_dir, name)
    print(json.dumps({k: payload[k] for k in ("state_growth", "rss_growth", "output_drift",
                                              "targets_met")}, default=str))
    return 0


def plot(rows: Sequence[Mapping[str, Any]], results_dir: Path, name: str = "soak") -> Path:
    """``soak.png``: rates, micro-batch duration, state and RSS per minute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minute = [r["minute"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    ax = axes[0][0]
    ax.plot(minute, [r["input_rate"] for r in rows], "o-", label="input rows/s")
    ax2 = ax.twinx()
    ax2.plot(minute, [r["output_rate"] for r in rows], "s-", color="tab:green",
             label="results/s")
    ax.set_title("rates (input left, results right)")
    ax.set_xlabel("minute")
    ax = axes[0][1]
    ax.plot(minute, [r["batch_ms_p50"] for r in rows], "o-", color="tab:purple")
    ax.set_title("micro-batch duration p50 (ms)")
    ax.set_xlabel("minute")
    ax = axes[1][0]
    ax.plot(minute, [r["state_mb"] for r in rows], "o-", color="tab:orange",
            label="saved state MB")
    ax.set_title("state per instance")
    ax.set_xlabel("minute")
    ax.set_ylabel("MB")
    ax3 = ax.twinx()
    ax3.plot(minute, [r.get("state_tuples") for r in rows], "x--", color="tab:gray",
             label="tuples")
    ax3.set_ylabel("tuples")
    ax = axes[1][1]
    ax.plot(minute, [r["driver_rss_mb"] for r in rows], "o-", label="driver (Python + JVM)")
    ax.plot(minute, [r["worker_rss_mb"] for r in rows], "s-", label="Python workers")
    ax.set_title("resident memory (MB)")
    ax.set_xlabel("minute")
    ax.legend(fontsize=8)
    for a in axes.flat:
        a.axvline(STEADY_FROM_MINUTE, color="k", lw=0.5, ls=":")
    return save_figure(fig, name, results_dir)
