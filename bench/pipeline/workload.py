"""The workloads of `harvest bench pipeline` (nonaligned sensors' band join, news' cosine
join, positions' distance join: each its spec, generator and capacity probe), the sweep
of methods per multiple of each workload's measured capacity, and the cases it makes.
The sensors spec with the 60 s window (:func:`sensor_spec`) is also the soak's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings
from pipeline.spec.model import Spec, load_spec
from pipeline.spec.toml import with_overrides

if TYPE_CHECKING:
    from connectors.workloads import WorkloadSpec
    from pipeline.app.capacity import Capacity

SENSOR_DISORDER = "zipf:max=3000,skew=2"
SPEEDUP = 1.0
#: the input generator's seed (the oracle of one rate is computed once)
SEED = 11
#: the demo's trigger: Spark spends ~2 s per micro-batch whatever its size
TRIGGER_MS = 8000
#: ``[job] max_staleness_ms`` of every shedding method (1.5 triggers: a record waits at
#: most one trigger plus a batch while the job keeps up, so nothing is dropped then)
STALENESS_MS = 12_000
#: the soak's (and the previous sweep's) sensor window and band width: a 60 s window makes
#: scanning — what GrubJoin sheds — the larger part at the capacity rate; ε is small
#: because results grow as r³·w²·ε²
WINDOW_MS = 60_000
EPSILON = 0.005
#: positions' GrubJoin: µs charged per result found (``[shedding] result_us``) for Spark's
#: encoding and Kafka write of a result row, off the operator's clock. The JVM spent ~12 µs
#: more per extra result in GrubJoin's run than in tail drop's (session 27's rows); priced
#: at 12 GrubJoin made 12,486–14,856 results/s, at 6 21,275–24,837 (unpriced 16,178–21,848
#: with a window without output in two runs of four): a burst of results then sheds the
#: arrivals behind it instead of stretching the micro-batch past the staleness bound
#: (docs/NOTES.md, session 28)
RESULT_US = 6.0
#: the wall budget's share of real time for the join (the rest: Spark, decode, output)
UTILIZATION = 0.6
#: the steady span skips the window fill and the final idle flush: it starts after the
#: ``WARMUP`` share of the input span and ``SETTLE_WINDOWS`` window lengths — one to fill
#: the windows, the rest for the shedders' controllers to converge — and ends before the
#: last ``TAIL`` share
WARMUP, TAIL = 0.35, 0.1
SETTLE_WINDOWS = 1.5
#: stream seconds published per run. 30 runs share ~60 min of a 2-core machine with the
#: broker and the producer: each run costs 40–90 s besides its input (query start on the
#: shared session, the drain of an overloaded run — at most ``GRACE_S`` — the idle wait,
#: reading back and the oracle; the quick smoke's 50 s runs took 104 and 141 s of wall
#: time plus ~20 s of measuring), so 70 s of input per run with 20 s windows (the paper's
#: w) leaves a 33 s steady span (30–63 s, four 8 s micro-batches) after 1.5 windows of
#: fill and convergence: 30 runs ≈ 55–75 min, ~60 min once the runs keep up. The sensors
#: and positions workloads run 150 s each (their ``duration_s``): 330–360 s of wall time per
#: run, ~2.5 h for the whole sweep (session 20)
DURATION_S = 70.0
#: ``--quick``: one workload, one load, a short run (a smoke test, not a measurement)
QUICK_DURATION_S = 50.0
#: every method the bench knows (``off`` is not a baseline: it does not shed)
METHODS = ("off", "grubjoin", "randomdrop", "randomdrop-static", "taildrop")
#: the sweep (issue 28): methods per multiple of each workload's capacity; the unshed job
#: at 2× only (it shows the backlog a job without shedding builds)
SWEEP: dict[float, tuple[str, ...]] = {
    1.5: ("grubjoin", "randomdrop-static", "taildrop"),
    2.0: ("grubjoin", "randomdrop-static", "taildrop", "off"),
    3.0: ("grubjoin", "randomdrop-static", "taildrop"),
}
QUICK_SWEEP: dict[float, tuple[str, ...]] = {2.0: ("grubjoin", "taildrop")}
QUICK_WORKLOAD = "sensors-nonaligned"
#: randomdrop-static measures rates, selectivities and the seconds per comparison and
#: per tuple over the first 20 s of stream time (2–3 micro-batches, the windows filling)
STATIC_WARMUP_MS = 20_000
#: a baseline counts for ``ratio_vs_best_baseline`` only if its p99 latency is within
#: this many trigger intervals (the targets' latency bound)
LATENCY_BOUND_TRIGGERS = 3
#: the capacity probe: timed stream seconds per sample (windows pre-filled before)
SAMPLE_SECONDS = 15.0


@dataclass(frozen=True)
class SweepWorkload:
    """One workload of the sweep: its example spec with the bench's settings, the
    generator's arguments, and the lowest sample rate of its capacity probe."""

    name: str
    generator: str  # `harvest produce <generator>`
    spec_file: str  # examples/specs/<spec_file>
    window_ms: int
    epsilon: float
    streams: int
    lags_s: tuple[float, ...] = ()
    kappas: tuple[float, ...] = ()
    disorder: str = "none"
    sample_rate: float = 150.0  # the probe's first round: 1×, 3× and 5× this
    #: the generator's knobs (``harvest produce --param``) other than its defaults
    params: tuple[tuple[str, str], ...] = ()
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``[shedding]`` keys of one method only: each method runs at its own best setting
    #: (GrubJoin's ``result_us`` on positions; the baselines measured worse with it)
    method_shedding: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: stream seconds published per run (None: :data:`DURATION_S`); a 60 s window needs
    #: 1.5 windows of fill before the steady span
    duration_s: float | None = None

    def run_seconds(self, quick: bool) -> float:
        """Stream seconds published per run of this workload."""
        return QUICK_DURATION_S if quick else (self.duration_s or DURATION_S)

    def spec(self, method: str, settings: Settings) -> Spec:
        """The example spec with this bench's window, budget and trigger, and ``method``."""
        shedding: dict[str, Any] = {"mode": method, "budget": "wall",
                                    "utilization": UTILIZATION,
                                    **self.overrides.get("shedding", {}),
                                    **self.method_shedding.get(method, {})}
        if method == "randomdrop-static":
            shedding["warmup_ms"] = STATIC_WARMUP_MS
        job: dict[str, Any] = {"groups": 1, "trigger_ms": TRIGGER_MS, "speedup": SPEEDUP,
                               "shuffle_partitions": 1, "budget": "wall"}
        # every shedding method gets the same source bound; off stays exact
        job["max_staleness_ms"] = None if method == "off" else STALENESS_MS
        return with_overrides(
            load_spec(Path(settings.examples_dir) / "specs" / self.spec_file),
            join={"window_ms": self.window_ms, "epsilon": self.epsilon},
            shedding=shedding,
            disorder=self.overrides.get("disorder", {}),
            job=job,
        )

    def produce_args(self, duration_s: float) -> tuple[str, ...]:
        """`harvest produce` arguments but the rate (and the run's prefix and dump)."""
        return (*self.generator_args(), "--duration", f"{duration_s:g}")

    def definition(self) -> list[str]:
        """What a capacity depends on: :meth:`generator_args`, the window and ε."""
        return [*self.generator_args(), f"window_ms={self.window_ms}",
                f"epsilon={self.epsilon:g}"]

    def generator_args(self) -> tuple[str, ...]:
        """What defines the generated tuples (`harvest produce` arguments but the rate and
        the duration)."""
        args = [self.generator, "--streams", str(self.streams)]
        if self.lags_s:
            args += ["--lags", ",".join(f"{v:g}" for v in self.lags_s)]
        if self.kappas:
            args += ["--kappas", ",".join(f"{v:g}" for v in self.kappas)]
        if self.disorder != "none":
            args += ["--disorder", self.disorder]
        for key, value in self.params:
            args += ["--param", f"{key}={value}"]
        return (*args, "--seed", str(SEED))

    def generated(self, rate: float, duration_s: float) -> WorkloadSpec:
        """The generator's spec for ``rate`` tuples/s per stream (the capacity samples)."""
        from connectors.workloads import WorkloadSpec, parse_model
        from connectors.workloads.params import params_from

        models = () if self.disorder == "none" else (parse_model(self.disorder),)
        return WorkloadSpec(self.generator, streams=self.streams, rates=(rate,),  # type: ignore[arg-type]
                            duration_s=duration_s, lags_s=self.lags_s, kappas=self.kappas,
                            disorder=models, seed=SEED,
                            params=params_from(self.generator, dict(self.params))
                            if self.params else None)


#: the three workloads of issue 28, sized on this 2-core machine with the instance probe
#: (docs/NOTES.md). Sensors: the demo's nonaligned band join (τ = 0, 5, 15 s, κ = 2, 2, 50,
#: Zipf disorder, quality-driven K, no index) with the issue's 60 s window and ε = 0.005
#: (probing, what harvesting sheds, then outweighs the per-tuple work it cannot shed; a
#: 20 s window left the job bound by Spark's per-row work, where no shedder can help),
#: 150 s of input per run. News:
#: 3 agencies (lags 0, 5, 10 s), cosine ≥ 0.8, 20 s windows; the generator's defaults put
#: most items on a few recent stories, so results grew as r³ into the tens of thousands
#: per second at 50 tuples/s. A story every 0.05 s, picked Zipf 1.2 among the 100 most
#: recent, keeps the pairs near 270/s at 100 tuples/s per stream and makes them as
#: time-correlated as the paper's agencies: 96 % of the s1–s2 pairs fall in 8 of the 40
#: lag-seconds around τ = 5 s (the first sweep's story every 0.25 s among 1,000, Zipf 0.5,
#: spread them evenly over the window: 29 % in the best 8 s, nothing for harvesting to
#: learn; docs/NOTES.md). Positions: 2 teams, players within 0.3 m, 10 s
#: windows (the example's 2 s windows and 3 m left the probe cheap and the results many),
#: 150 s of input per run: at 70 s the steady span was three micro-batches, and three
#: runs of one method at 2× spread over 2–3× (tail drop 5,033–15,170 results/s,
#: docs/NOTES.md). Two of team 2's players mark team 1's (lags 0.5–3 s, a gap swinging
#: between 0 and 24 m), players within 0.1 m: 60–84 % of the pairs then sit on two
#: lag-seconds in every 30 s of the run, as duels do in match data, where players moving
#: on their own put their crossings at a new lag every 30 s (session 20: nothing for
#: harvesting to learn); 33 pairs/s at 200 tuples/s per stream against the old
#: workload's 54 (0.3 m, no marking): with 0.3 m marking tripled the results and made the
#: job output-bound (batches of 15 s on the 8 s trigger at 1.5×, session 24)
WORKLOADS: tuple[SweepWorkload, ...] = (
    SweepWorkload("sensors-nonaligned", "sensors", "demo.toml", WINDOW_MS, EPSILON, 3,
                  lags_s=(0.0, 5.0, 15.0), kappas=(2.0, 2.0, 50.0),
                  disorder=SENSOR_DISORDER, sample_rate=300.0, duration_s=150.0),
    SweepWorkload("news-cosine", "news", "news.toml", 20_000, 0.8, 3,
                  lags_s=(0.0, 5.0, 10.0), disorder="exp:mean=200", sample_rate=20.0,
                  params=(("story_interval_s", "0.05"), ("recent_stories", "100"),
                          ("story_skew", "1.2")),
                  overrides={"disorder": {"mode": "quality", "recall": 0.95,
                                          "period_ms": 20_000, "interval_ms": 1000},
                             "shedding": {"basic_window_ms": 2000}}),
    SweepWorkload("positions-distance", "positions", "positions.toml", 10_000, 0.1, 2,
                  disorder="exp:mean=200", sample_rate=150.0,
                  params=(("markers", "2"), ("mark_gap", "24")),
                  overrides={"shedding": {"basic_window_ms": 1000}}, duration_s=150.0,
                  method_shedding={"grubjoin": {"result_us": RESULT_US}}),
)


def workload_named(name: str) -> SweepWorkload:
    """The sweep workload called ``name``; ConfigError naming the known ones."""
    for w in WORKLOADS:
        if w.name == name:
            return w
    raise ConfigError(f"--only: no workload {name!r}; known: "
                      + ", ".join(w.name for w in WORKLOADS))


@dataclass(frozen=True)
class Case:
    """One run: workload, method, rate (tuples/s per stream), spec, the multiple of the
    workload's capacity it is (``load``)."""

    workload: str
    method: str
    rate: float
    spec: Spec
    produce_args: tuple[str, ...]
    duration_s: float  # stream seconds published
    load: float = 0.0


def cases(wl: SweepWorkload, sweep: dict[float, tuple[str, ...]], cap: float,
          duration_s: float, settings: Settings) -> list[Case]:
    """The runs of ``wl``: each method of ``sweep`` at each multiple of ``cap``."""
    return [Case(wl.name, method, load * cap, wl.spec(method, settings),
                 wl.produce_args(duration_s), duration_s, load)
            for load, methods in sweep.items() for method in methods]


def sensor_spec(method: str, settings: Settings) -> Spec:
    """The demo spec with the 60 s window and ε of :data:`WINDOW_MS` / :data:`EPSILON`
    (the soak's workload; the sweep's sensors use :data:`WORKLOADS`)."""
    shedding: dict[str, Any] = {"mode": method, "utilization": UTILIZATION}
    if method == "randomdrop-static":
        shedding["warmup_ms"] = STATIC_WARMUP_MS
    return with_overrides(
        load_spec(settings.demo_spec),
        join={"window_ms": WINDOW_MS, "epsilon": EPSILON},
        shedding=shedding,
        job={"groups": 1, "trigger_ms": TRIGGER_MS, "speedup": SPEEDUP,
             "max_staleness_ms": None if method == "off" else STALENESS_MS},
    )


def sensor_produce(duration_s: float) -> tuple[str, ...]:
    """`harvest produce` arguments of :func:`sensor_spec`'s input (the soak's)."""
    return ("sensors", "--streams", "3", "--lags", "0,5,15", "--kappas", "2,2,50",
            "--disorder", SENSOR_DISORDER, "--duration", f"{duration_s:g}", "--seed", str(SEED))


def measure_capacity(settings: Settings, speedup: float = SPEEDUP, seed: int = SEED
                     ) -> Capacity:
    """The full join's capacity on :func:`sensor_spec` (the soak's): the demo's
    calibration (samples at 150, 450 and 750 tuples/s, windows pre-filled)."""
    from pipeline.app.demo import DemoConfig, calibrate

    return calibrate(DemoConfig(speedup=speedup, disorder=SENSOR_DISORDER, seed=seed),
                     sensor_spec("off", settings))


def workload_capacity(wl: SweepWorkload, settings: Settings) -> Capacity:
    """``wl``'s full-join capacity through the job's instance (:mod:`pipeline.app.capacity`):
    samples at 1×, 3× and 5× its ``sample_rate``, then a second fit around that
    estimate (:func:`~pipeline.app.capacity.refine_rates`), windows pre-filled."""
    from connectors.workloads import generate
    from pipeline.app.capacity import measure_capacity as timed
    from pipeline.app.capacity import refine_rates

    spec = wl.spec("off", settings)
    warm_s = wl.window_ms / 1000.0
    span = warm_s + SAMPLE_SECONDS

    def samples(rates: tuple[float, ...]) -> dict[float, list[dict[str, Any]]]:
        return {r: generate(wl.generated(r, span)) for r in rates}

    base = wl.sample_rate
    first = timed(spec, samples((base, 3 * base, 5 * base)), SAMPLE_SECONDS,
                  speedup=SPEEDUP, warm_seconds=warm_s, through="instance")
    return timed(spec, samples(refine_rates(first)), SAMPLE_SECONDS, speedup=SPEEDUP,
                 warm_seconds=warm_s, through="instance")
