"""What one soak runs: the demo workload at ``LOAD`` × the measured capacity for a number
of minutes, on its own topics, with the job's session and NMT on the driver JVM."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kit.spark import session_config
from bench.pipeline.workload import measure_capacity, sensor_produce, sensor_spec
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings
from pipeline.spec.model import Spec
from pipeline.spec.toml import with_overrides

DEFAULT_MINUTES = 20.0
QUICK_MINUTES = 2.0
LOAD = 2.0
SEED = 11
DRIVER_MEMORY = "1g"
#: NMT (summary) lets the bench attribute the JVM's native growth (``jvm_native``)
JVM_OPTIONS = f"-Xms{DRIVER_MEMORY} -XX:+AlwaysPreTouch -XX:NativeMemoryTracking=summary"


@dataclass(frozen=True)
class Soak:
    """One soak: its length, rate, topics, spec and job config."""

    quick: bool
    minutes: int
    load: float
    rate: float  # tuples/s per stream
    capacity: Any  # :class:`~pipeline.app.capacity.Capacity`
    prefix: str
    workdir: Path
    spec: Spec
    cfg: Any  # :class:`~pipeline.spark.job.JobConfig`
    settings: Settings  # naming the run's topics

    def producer_args(self) -> list[str]:
        """`harvest produce` for the whole soak plus a minute, paced in real time."""
        return [*sensor_produce(60.0 * self.minutes + 60.0), "--rate", f"{self.rate:.3f}",
                "--speedup", "1", "--topic-prefix", self.prefix]


def minutes_of(quick: bool, minutes: float | None) -> int:
    """Whole minutes to run (``--minutes``, else the default); ConfigError under 1."""
    length = minutes if minutes is not None else (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    if not length >= 1:
        raise ConfigError(f"--minutes: at least 1, got {length!r}")
    return int(length)


def plan(quick: bool, minutes: int, method: str, capacity: Any, settings: Settings) -> Soak:
    """The soak of ``method`` at ``LOAD`` × ``capacity`` (measured now if None), its topics
    created."""
    from pipeline.spark.submit import job_config, prepare_topics

    cap = capacity if capacity is not None else measure_capacity(settings, 1.0, SEED)
    rate = LOAD * cap.capacity_rate
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
    return Soak(quick, minutes, LOAD, rate, cap, prefix, workdir, spec, cfg, run_settings)


def soak_session(settings: Settings) -> Any:
    """The session's config: the driver JVM's heap committed and touched up front (see the
    package docstring); the native memory bounds are the job's own (``harvest submit``'s
    session)."""
    from pipeline.spark.session import native_allocator

    return session_config(settings, "harvest-bench-soak", shuffle_partitions=1,
                          driver_memory=DRIVER_MEMORY, java_options=JVM_OPTIONS,
                          state_memory_mb=settings.state_memory_mb,
                          preload=native_allocator(settings))
