"""`harvest demo`: the whole pipeline on one machine, overloaded on purpose.

Steps (each prints a progress line):

1. start the local Kafka broker (`harvest kafka up`, reused when running);
2. measure the full join's capacity here (:mod:`pipeline.app.capacity`) and set the input rate
   to ``load × capacity`` tuples/s per stream;
3. start the Spark job (`harvest submit`, ``examples/specs/demo.toml``: quality-driven K,
   GrubJoin with the wall budget, ATR routing) on a fresh topic prefix;
4. publish the nonaligned sensor workload (τ = 0, 5, 15 s, κ = 2, 2, 50, Zipf disorder),
   paced at ``speedup`` × real time (`harvest produce --speedup`, with ``--dump``);
5. wait until the job has been idle (all input processed, buffers flushed);
6. consume results and operator metrics; join the dump exactly (DuckDB oracle);
7. print the summary and write the figure (:mod:`pipeline.app.demo_report`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from connectors.io.consumer import Consumed, ConsumerConfig, consume
from connectors.io.serde import AvroSerde
from connectors.launch.jars import kafka_jars, spark_jars
from connectors.workloads import WorkloadSpec, generate, parse_model
from pipeline.app.capacity import Capacity, measure_capacity, refine_rates
from pipeline.core.errors import ConfigError, InfraError
from pipeline.core.jsonl import read_jsonl
from pipeline.core.logging import get_logger
from pipeline.core.procs import Child
from pipeline.core.settings import Settings
from pipeline.spec.model import Spec, load_spec
from pipeline.spec.toml import spec_to_toml, with_overrides

log = get_logger(__name__)



@dataclass(frozen=True)
class DemoConfig:
    """What the demo runs (frozen; the CLI builds it)."""

    #: the job spec; None = ``Settings.demo_spec``
    spec_path: Path | None = None
    duration_s: float = 150.0
    speedup: float = 1.0
    load: float = 2.0
    rate: float | None = None  # tuples/s per stream; None = load × measured capacity
    lags_s: tuple[float, ...] = (0.0, 5.0, 15.0)
    kappas: tuple[float, ...] = (2.0, 2.0, 50.0)
    disorder: str = "zipf:max=3000,skew=2"
    seed: int = 7
    master: str = "local[2]"
    sample_rate: float = 150.0
    sample_seconds: float = 15.0
    max_rate: float = 2000.0
    out_dir: Path | None = None
    job_timeout_s: float = 420.0
    #: --until-idle of the job: it also covers the wait for its first micro-batch, before
    #: any input is published (see _wait_for_query)
    idle_s: float = 40.0
    extra_env: dict[str, str] = field(default_factory=dict)
    #: the job's Spark UI (127.0.0.1, port 4040 or the next free one; its URL printed)
    ui: bool = True

    def __post_init__(self) -> None:
        for name in ("duration_s", "speedup", "load", "sample_rate", "sample_seconds",
                     "max_rate"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name}: must be > 0, got {getattr(self, name)!r}")
        if self.rate is not None and not self.rate > 0:
            raise ConfigError(f"--rate: must be > 0, got {self.rate!r}")


@dataclass
class DemoRun:
    """Everything the report needs."""

    prefix: str
    workdir: Path
    spec: Spec
    capacity: Capacity | None
    rate: float
    produced: int = 0
    spark_input: int = 0
    spark_results: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    dump: list[dict[str, Any]] = field(default_factory=list)
    truth: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


class Steps:
    """Numbered progress lines on stdout."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.n = 0
        self.clock = clock
        self.start = clock()

    def __call__(self, text: str) -> None:
        self.n += 1
        print(f"[demo {self.n}/{self.total} +{self.clock() - self.start:5.0f}s] {text}",
              flush=True)

    def note(self, text: str) -> None:
        print(f"           +{self.clock() - self.start:5.0f}s  {text}", flush=True)


def demo_workload(cfg: DemoConfig, rate: float, duration_s: float) -> WorkloadSpec:
    """The demo's sensor workload at ``rate`` tuples/s per stream for ``duration_s``."""
    return WorkloadSpec("sensors", streams=3, rates=(rate,), duration_s=duration_s,
                        lags_s=cfg.lags_s, kappas=cfg.kappas,
                        disorder=(parse_model(cfg.disorder),), seed=cfg.seed)


def calibrate(cfg: DemoConfig, spec: Spec) -> Capacity:
    """Time the full join on samples of the demo workload at ``sample_rate``, 3× and 5×
    it, windows pre-filled (see :mod:`pipeline.app.capacity`). The 5× sample lies beyond the
    capacity on this machine, so the least-squares fit interpolates r_cap instead of
    extrapolating a two-point quadratic: with only 1× and 3×, the quadratic term hangs on
    c(3r) − 3·c(r), and run-to-run noise in c(r) moved r_cap over 590–815/s."""
    warm_s = max(spec.join.windows) / 1000.0
    samples = {r: generate(demo_workload(cfg, r, warm_s + cfg.sample_seconds))
               for r in (cfg.sample_rate, 3.0 * cfg.sample_rate, 5.0 * cfg.sample_rate)}
    first = measure_capacity(spec, samples, cfg.sample_seconds, speedup=cfg.speedup,
                             warm_seconds=warm_s, repeats=2, through="instance")
    del samples  # a second fit near the first estimate (capacity.refine_rates)
    near = {r: generate(demo_workload(cfg, r, warm_s + cfg.sample_seconds))
            for r in refine_rates(first)}
    return measure_capacity(spec, near, cfg.sample_seconds, speedup=cfg.speedup,
                            warm_seconds=warm_s, repeats=2, through="instance")


def _read_topic(settings: Settings, topic: str) -> list[Consumed]:
    serde = AvroSerde.from_dir(settings.schemas_dir)
    config = ConsumerConfig.from_settings(settings, from_beginning=True, until_end=True,
                                          idle_timeout_s=5.0)
    return [item for item in consume([topic], config=config, serde=serde)
            if isinstance(item, Consumed)]


def _watch(step: Steps, producer: Child, job: Child, every_s: float = 10.0) -> None:
    """Progress lines while the producer publishes."""
    next_note = time.monotonic() + every_s
    while producer.running():
        if not job.running():
            producer.stop()
            raise InfraError(f"the Spark job exited early; log tail:\n{job.tail()}")
        if time.monotonic() >= next_note:
            progress = job.events("job progress")
            last = progress[-1] if progress else {}
            step.note(f"producing…  spark: batches={last.get('batches', 0)} "
                      f"input={last.get('input_rows', 0)} results={last.get('results', 0)}")
            next_note += every_s
        time.sleep(0.5)


def _wait_for_query(job: Child, checkpoint: Path, timeout_s: float) -> None:
    """Block until the streaming query has initialized its Kafka source (it writes the
    source's start offsets to ``<checkpoint>/sources/0/0``) and finished its first
    micro-batch (query planning, Python workers: tens of seconds), so input published
    from now on is read as it arrives instead of as one backlog batch."""
    deadline = time.monotonic() + timeout_s
    marker = checkpoint / "sources" / "0" / "0"
    while not marker.exists() or not any(
            int(e.get("batches", 0)) >= 1 for e in job.events("job progress")):
        if not job.running():
            raise InfraError(f"the Spark job exited during start-up; log tail:\n{job.tail()}")
        if time.monotonic() > deadline:
            raise InfraError(f"the Spark query did not start within {timeout_s:.0f} s")
        time.sleep(0.5)


def security_settings(env: dict[str, str]) -> dict[str, Any]:
    """Settings fields (typed, for ``model_copy``) of ``HARVEST_*`` security variables."""
    if not env:
        return {}
    ca = env.get("HARVEST_SSL_CA_LOCATION")
    return {"security_protocol": env["HARVEST_SECURITY_PROTOCOL"],
            "sasl_mechanism": env["HARVEST_SASL_MECHANISM"],
            "sasl_username": env["HARVEST_SASL_USERNAME"],
            "sasl_password": SecretStr(env["HARVEST_SASL_PASSWORD"]),
            "ssl_ca_location": Path(ca) if ca else None}


def _start_broker(step: Steps, cfg: DemoConfig, settings: Settings, prefix: str,
                  workdir: Path) -> tuple[dict[str, str], Settings]:
    """The local broker up; the child processes' environment and the settings of
    this run (its bootstrap, topic prefix and, on a secure broker, the admin's login)."""
    from connectors.launch.broker import local_broker
    from connectors.launch.broker_config import BrokerConfig

    step("starting the local Kafka broker")
    broker = local_broker(BrokerConfig.from_settings(settings))
    status = broker.up()
    bootstrap = status.bootstrap or settings.resolved_bootstrap()
    # a secure broker (`harvest kafka up --secure`): every step runs as the super user admin
    security = broker.client_env("admin") if status.secure else {}
    security.pop("HARVEST_BOOTSTRAP_SERVERS", None)
    env = {"HARVEST_BOOTSTRAP_SERVERS": bootstrap, "HARVEST_TOPIC_PREFIX": prefix,
           "HARVEST_CACHE_DIR": str(settings.cache_dir), **security, **cfg.extra_env}
    run_settings = settings.model_copy(update={"bootstrap_servers": bootstrap,
                                               "topic_prefix": prefix,
                                               **security_settings(security)})
    step.note(f"broker at {bootstrap} ({'secure, as admin' if status.secure else 'plaintext'}); "
              f"topic prefix {prefix}; files in {workdir}")
    return env, run_settings


def _plan_run(step: Steps, cfg: DemoConfig, base: Spec, prefix: str, workdir: Path
              ) -> DemoRun:
    """The input rate (calibrated on a sample unless given) and the run's spec."""
    spec = with_overrides(base, job={"topic_prefix": prefix, "speedup": cfg.speedup,
                                     "checkpoint": str(workdir / "checkpoint")})
    capacity: Capacity | None = None
    if cfg.rate is None:
        step("measuring the full join's capacity on a sample")
        capacity = calibrate(cfg, spec)
        rate = min(cfg.load * capacity.capacity_rate, cfg.max_rate)
        step.note(capacity.describe())
        step.note(f"input rate = {cfg.load:g} × capacity = {rate:.0f}/s per stream"
                  + (f" (capped at {cfg.max_rate:g})" if rate == cfg.max_rate else ""))
    else:
        step("input rate given on the command line; skipping calibration")
        rate = cfg.rate
    # bound a micro-batch to ~2 triggers' worth of input, so a backlog is worked off in
    # steps (and GrubJoin's wall budget sees batches of the size it plans for)
    per_trigger = 3 * rate * cfg.speedup * spec.job.trigger_ms / 1000.0
    spec = with_overrides(spec, job={"max_offsets_per_trigger": max(100, int(2 * per_trigger))})
    return DemoRun(prefix=prefix, workdir=workdir, spec=spec, capacity=capacity, rate=rate)


def _produce(step: Steps, cfg: DemoConfig, run: DemoRun, job: Child,
             env: dict[str, str]) -> Path:
    """Publish the sensor workload while the job runs; the dump of what was
    published."""
    step(f"publishing {cfg.duration_s:g} s of sensor data at {run.rate:.0f}/s per stream, "
         f"{cfg.speedup:g}× real time")
    dump = run.workdir / "input.jsonl"
    t1 = time.monotonic()
    producer = Child("produce", [
        "produce", "sensors", "--streams", "3", "--rate", f"{run.rate:.3f}",
        "--duration", f"{cfg.duration_s:g}",
        "--lags", ",".join(f"{v:g}" for v in cfg.lags_s),
        "--kappas", ",".join(f"{v:g}" for v in cfg.kappas),
        "--disorder", cfg.disorder, "--seed", str(cfg.seed),
        "--speedup", f"{cfg.speedup:g}", "--dump", str(dump), "--topic-prefix", run.prefix,
    ], run.workdir, env)
    _watch(step, producer, job)
    if producer.wait(60.0) != 0:
        raise InfraError(f"harvest produce failed; log tail:\n{producer.tail()}")
    run.timings["produce_s"] = time.monotonic() - t1
    return dump


def _run_job(step: Steps, cfg: DemoConfig, run: DemoRun, env: dict[str, str]) -> Path:
    """The Spark job started, the input published, the job drained and idle;
    its report's counts go to ``run``. Returns the input dump."""
    name = (cfg.spec_path or Path("demo")).stem  # names the query and `harvest top`'s view
    spec_path = run.workdir / f"{name}.toml"
    spec_path.write_text(spec_to_toml(run.spec))
    step(f"starting the Spark job (master {cfg.master})")
    t0 = time.monotonic()
    job = Child("submit", ["submit", "--spec", str(spec_path), "--master", cfg.master,
                           "--until-idle", f"{cfg.idle_s:g}", "--name", name,
                           "--ui" if cfg.ui else "--no-ui"], run.workdir, env)
    try:
        job.wait_for_event("job starting", timeout_s=240.0)
        for event in job.events("spark ui")[-1:]:
            step.note(f"Spark UI: {event.get('url')}  (query {event.get('query')}); "
                      f"`harvest top --spec {spec_path}` follows the job live")
        _wait_for_query(job, run.workdir / "checkpoint", timeout_s=240.0)
        run.timings["spark_start_s"] = time.monotonic() - t0
        dump = _produce(step, cfg, run, job, env)
        step("input published; waiting for the job to drain and go idle")
        code = job.wait(cfg.job_timeout_s)
        if code != 0:
            raise InfraError(f"harvest submit exited with {code}; log tail:\n{job.tail()}")
    finally:
        job.stop()
    run.timings["job_s"] = time.monotonic() - t0
    report = _json_tail(job.stdout_lines())
    run.spark_input = int(report.get("input_rows", 0))
    run.spark_results = int(report.get("results", 0))
    return dump


def _collect(step: Steps, run: DemoRun, run_settings: Settings, dump: Path) -> None:
    """The results and metrics read back, the exact join computed on the dump."""
    from pipeline.quality.oracle import oracle

    step("consuming results + metrics; computing the exact join (oracle) on the dump")
    run.dump = read_jsonl(dump)
    run.produced = len(run.dump)
    run.results = [c.record for c in _read_topic(run_settings, f"{run.prefix}.results")]
    run.metrics = [c.record for c in _read_topic(run_settings, f"{run.prefix}.metrics")]
    t2 = time.monotonic()
    truth = oracle(run.spec.join, run.dump)
    run.timings["oracle_s"] = time.monotonic() - t2
    run.truth = [{"id": r.id, "result_time": r.result_time} for r in truth]


def run_demo(cfg: DemoConfig, settings: Settings) -> DemoRun:
    """Run the demo end to end; returns the collected data (see :func:`demo_report`)."""
    base = load_spec(cfg.spec_path or settings.demo_spec)  # bad spec: fail before starting anything
    kafka_jars(settings.jars_dir)  # missing jars: exit 2 (run `harvest setup`) before anything
    spark_jars(settings.jars_dir)
    step = Steps(7)
    prefix = f"demo{time.strftime('%H%M%S')}{uuid.uuid4().hex[:4]}"
    workdir = cfg.out_dir or settings.cache_dir / "demo" / prefix
    workdir.mkdir(parents=True, exist_ok=True)
    env, run_settings = _start_broker(step, cfg, settings, prefix, workdir)
    run = _plan_run(step, cfg, base, prefix, workdir)
    dump = _run_job(step, cfg, run, env)
    _collect(step, run, run_settings, dump)
    return run


def _json_tail(lines: list[str]) -> dict[str, Any]:
    import json

    for line in reversed(lines):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return {}


