"""What the soak's watch loop samples: each completed micro-batch from the query's
progress, the processes' memory and the machine's load, the JVM's native memory once a
minute; and after the run the instances' ``operator_metrics`` records."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from bench.kit.readback import read_topic
from bench.soak.memory import driver_jvms, jvm_native, sample_memory
from bench.soak.rows import BatchSample, Samples
from pipeline.core.settings import Settings


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


def fold_progress(progresses: Iterable[Any], seen: set[int], t0_wall_ms: float,
                  samples: Samples) -> None:
    """Each micro-batch not ``seen`` yet as a :class:`BatchSample`."""
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


def sample_processes(samples: Samples, t_s: float) -> None:
    """The driver's and its workers' memory and the load average, at ``t_s``."""
    samples.memory.append((t_s, sample_memory(os.getpid())))
    samples.load.append((t_s, os.getloadavg()[0]))


def sample_native(samples: Samples, t_s: float) -> None:
    """The driver JVM's NMT summary, at ``t_s``."""
    for pid in driver_jvms(os.getpid())[:1]:
        samples.nmt.append((t_s, jvm_native(pid)))


def minute_note(samples: Samples, t_s: float, n_minutes: int) -> str:
    """The line printed once a minute: the last minute's rates, memory and load."""
    minute = int(t_s // 60)
    recent = [b for b in samples.batches if b.t_s >= t_s - 60.0]
    mem = samples.memory[-1][1]
    return (f"[soak {minute}/{n_minutes} min] in "
            f"{sum(b.input_rows for b in recent) / 60.0:.0f}/s  out "
            f"{sum(b.results for b in recent) / 60.0:.1f}/s  batches "
            f"{len(recent)}  driver {mem.driver_mb:.0f} MB  workers "
            f"{mem.worker_mb:.0f} MB  load {os.getloadavg()[0]:.1f}")


def state_tuples(settings: Settings, topic: str, t0_wall_ms: float,
                 samples: Samples) -> None:
    """``state_size`` of every ``operator_metrics`` record, by its wall time."""
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
