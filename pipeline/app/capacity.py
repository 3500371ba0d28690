"""How fast can the full (unshed) join go here? — a measured estimate for the demo and bench.

The wall budget of GrubJoin inside Spark (ARCHITECTURE §5) gives each operator instance
``utilization / speedup`` seconds of work per second of stream time. We time what the
Spark job's Python worker does with a micro-batch — the
:class:`~pipeline.runtime.instance.JoinInstance` (input validation, the member store,
K-slack, the Synchronizer, the join, result rows) and its state changes — with shedding
off (the spec's quality-driven K policy or else K = the sample's maximum delay), fed one
trigger interval of input per call, on samples of the workload at rates r₁ < r₂ < …
tuples/s per stream, and get c(r) = wall seconds of work per stream second. (Timing the
bare :class:`~pipeline.operators.engine.engine.Engine` instead, as before, left out the per-tuple
work around the join, which the batched engine made the larger part: the job could not
even read 2× that "capacity".) Each sample's windows are first filled with
``warm_seconds`` of its own input (inserted unprobed, not timed), so the timed span sees
full windows, as the steady state does.

Per stream second the engine handles 3r tuples at a fixed cost each (K-slack,
synchronizer, delay statistics, encoding, result building) and scans windows of r·W
tuples for each of them — the GrubJoin cost model's first-position term (Gedik et al.
Eq. 1, with σ·r·W ≪ 1 partial results). So

    c(r) = a·r + b·r²,

a and b fitted exactly through the two samples (clipped at ≥ 0). With G route keys
sharing the work, the full-join capacity r_cap solves c(r_cap) / G = utilization /
speedup:  r_cap = (−a + sqrt(a² + 4·b·B)) / (2·b),  B = utilization·G / speedup.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline.core.errors import ConfigError
from pipeline.operators.config import EngineConfig
from pipeline.operators.events import event_from_dump
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import Spec

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True)
class Capacity:
    """The calibration: samples, measured costs, the fitted model, the capacity."""

    sample_rates: tuple[float, ...]  # tuples/s per stream of each sample
    sample_seconds: float  # timed stream seconds per sample
    warm_seconds: float  # untimed window fill before the timed span
    wall_seconds: tuple[float, ...]  # wall time of each sample's timed span
    results: int  # results of the timed spans (all samples)
    costs: tuple[float, ...]  # c(r) = wall_seconds / sample_seconds per sample
    linear: float  # a, seconds per (tuple/s) per stream second
    quadratic: float  # b
    groups: int
    speedup: float
    utilization: float
    capacity_rate: float  # r_cap, tuples/s per stream

    def describe(self) -> str:
        """One-line derivation, for logs and the demo summary."""
        samples = ", ".join(f"c({r:g}/s) = {c:.3f} s" for r, c in
                            zip(self.sample_rates, self.costs, strict=True))
        return (
            f"full join per stream-second (windows pre-filled): {samples}; fit c(r) = "
            f"{self.linear:.2e}·r + {self.quadratic:.2e}·r²; c(r_cap)/G = u/speedup = "
            f"{self.utilization:g}/{self.speedup:g} with G = {self.groups} gives r_cap = "
            f"{self.capacity_rate:.0f}/s per stream"
        )

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (JSON)."""
        return {
            "sample_rates": list(self.sample_rates), "sample_seconds": self.sample_seconds,
            "warm_seconds": self.warm_seconds, "wall_seconds": list(self.wall_seconds),
            "results": self.results, "costs": list(self.costs), "linear": self.linear,
            "quadratic": self.quadratic, "groups": self.groups, "speedup": self.speedup,
            "utilization": self.utilization, "capacity_rate": self.capacity_rate,
        }


#: the second round's sample rates, as shares of the first round's estimate
#: (:func:`refine_rates`)
REFINE_SPREAD = (0.7, 1.0, 1.3)


def refine_rates(first: Capacity, spread: Sequence[float] = REFINE_SPREAD
                 ) -> tuple[float, ...]:
    """Sample rates around a first estimate, for a second fit near the capacity. The
    model a·r + b·r² leaves out the result rows, whose number grows as r³ (3-way): fitted
    at low rates it overestimates the capacity (the demo's 150/450/750 samples said
    2,342/s; timed at 1,500 and 2,500/s the instance reaches c = 0.6 near 1,750/s)."""
    return tuple(float(round(first.capacity_rate * f)) for f in spread)


def fit_cost(rates: Sequence[float], costs: Sequence[float]) -> tuple[float, float]:
    """(a, b) ≥ 0 of c(r) = a·r + b·r² through two samples (least squares for more).

    >>> a, b = fit_cost([100.0, 200.0], [0.3, 1.0])   # a = 1e-3, b = 2e-5
    >>> round(a, 6), round(b, 8)
    (0.001, 2e-05)
    """
    if len(rates) != len(costs) or len(rates) < 2:
        raise ConfigError(f"capacity: need >= 2 samples, got rates {rates} costs {costs}")
    if any(not r > 0 for r in rates) or any(not c > 0 for c in costs):
        raise ConfigError(f"capacity: sample rates and costs must be > 0: {rates} / {costs}")
    # normal equations of min Σ (a r + b r² − c)²
    s2 = sum(r * r for r in rates)
    s3 = sum(r ** 3 for r in rates)
    s4 = sum(r ** 4 for r in rates)
    t1 = sum(r * c for r, c in zip(rates, costs, strict=True))
    t2 = sum(r * r * c for r, c in zip(rates, costs, strict=True))
    det = s2 * s4 - s3 * s3
    if det <= 0:
        raise ConfigError(f"capacity: sample rates must differ, got {rates}")
    a = (t1 * s4 - s3 * t2) / det
    b = (s2 * t2 - s3 * t1) / det
    if a < 0:  # all quadratic
        a, b = 0.0, t2 / s4
    elif b < 0:  # all linear
        a, b = t1 / s2, 0.0
    return a, b


def capacity_from_fit(linear: float, quadratic: float, groups: int, speedup: float,
                      utilization: float) -> float:
    """r_cap with a·r + b·r² = utilization·G / speedup (see the module docstring)."""
    if linear < 0 or quadratic < 0 or linear + quadratic <= 0 or groups < 1 or speedup <= 0:
        raise ConfigError(
            f"capacity: need a, b >= 0 (not both 0), groups >= 1, speedup > 0, got "
            f"{linear}, {quadratic}, {groups}, {speedup}"
        )
    budget = utilization * groups / speedup
    if quadratic == 0:
        return budget / linear
    return (-linear + math.sqrt(linear * linear + 4 * quadratic * budget)) / (2 * quadratic)


def timing_spec(spec: Spec, sample: Sequence[Mapping[str, Any]]) -> Spec:
    """The spec the capacity is timed with: shedding off; the spec's quality-driven K
    policy kept (its per-tuple statistics and the exact n^× of every probe are part of
    what the job pays per tuple), any other policy replaced by a fixed K = the sample's
    maximum delay, which makes the join exact."""
    disorder = spec.disorder
    if disorder.mode != "quality":
        max_delay = max((int(r["arrival_time"]) - int(r["event_time"]) for r in sample),
                        default=0)
        disorder = disorder.model_copy(update={"mode": "fixed", "slack_ms": max(0, max_delay)})
    return spec.model_copy(update={
        "shedding": spec.shedding.model_copy(update={"mode": "off"}),
        "disorder": disorder,
    })


def timing_config(spec: Spec, sample: Sequence[Mapping[str, Any]]) -> EngineConfig:
    """The engine config of :func:`timing_spec`."""
    return resolve_engine(timing_spec(spec, sample))


HEADER = ("stream", "seq", "event_time", "arrival_time")


def envelope_frames(spec: Spec, records: Sequence[Mapping[str, Any]], attrs: Sequence[str]
            ) -> list[pd.DataFrame]:
    """The records as the job's micro-batches: one frame per trigger interval of arrival
    time, with the envelope columns the processor hands the instance."""
    import pandas as pd

    index = {s: i for i, s in enumerate(spec.join.streams)}
    step = max(1, spec.job.trigger_ms)
    cuts: dict[int, list[Mapping[str, Any]]] = {}
    for r in records:
        cuts.setdefault(int(r["arrival_time"]) // step, []).append(r)
    frames = []
    for k in sorted(cuts):
        f = pd.DataFrame(list(cuts[k]), columns=[*HEADER, *attrs])
        f.insert(0, "stream_idx", [index[s] for s in f["stream"]])
        frames.append(f)
    return frames


def time_full_join(
    spec: Spec, sample: Sequence[Mapping[str, Any]], warm_seconds: float,
    clock: Callable[[], float] = time.perf_counter, repeats: int = 1,
    ids: set[str] | None = None,
) -> tuple[float, int]:
    """(wall seconds, results) of the full join (:func:`timing_config`) in the bare
    :class:`~pipeline.operators.engine.engine.Engine` on the records of ``sample`` with event
    time ≥ ``warm_seconds``; the earlier ones fill the windows first, unprobed and
    untimed. With ``repeats`` > 1 the fastest run counts; ``ids`` receives the result ids
    (of the last run), outside the timed span. (The engine alone: ``harvest bench join``.)"""
    from pipeline.operators.engine.engine import Engine

    exact = timing_config(spec, sample)
    index = {s: i for i, s in enumerate(spec.join.streams)}
    events = [event_from_dump(r, index) for r in sample]
    warm_ms = int(warm_seconds * 1000)
    warm = sorted((e for e in events if e.ts < warm_ms), key=lambda e: e.ts)
    timed = [e for e in events if e.ts >= warm_ms]
    best, results = float("inf"), 0
    for _ in range(repeats):
        engine = Engine(exact)
        engine.preload(warm)
        start = clock()
        out = engine.process_many(timed) + engine.flush()
        best = min(best, max(clock() - start, 1e-6))
        results = len(out)
        if ids is not None:
            ids.update(r.id for r in out)
        del out
    return best, results


def time_instance_join(
    spec: Spec, sample: Sequence[Mapping[str, Any]], warm_seconds: float,
    clock: Callable[[], float] = time.perf_counter, repeats: int = 1,
    ids: set[str] | None = None,
) -> tuple[float, int]:
    """(wall seconds, results) of the full join (:func:`timing_spec`) through the job's
    join instance on the records of ``sample`` with event time ≥ ``warm_seconds``, one
    micro-batch per trigger interval, each followed by its state changes (what the
    processor saves); the earlier records fill the windows first, unprobed and untimed.
    With ``repeats`` > 1 the fastest run counts (noise from other work only ever adds
    time); the sample is converted once for all runs. ``ids`` receives the result ids
    (of the last run), outside the timed span."""
    from pipeline.runtime.instance import InstanceConfig, JoinInstance

    exact = timing_spec(spec, sample)
    index = {s: i for i, s in enumerate(spec.join.streams)}
    attrs = sorted({k for r in sample for k in r} - set(HEADER))
    warm_ms = int(warm_seconds * 1000)
    warm = sorted((event_from_dump(r, index) for r in sample if int(r["event_time"]) < warm_ms),
                  key=lambda e: e.ts)
    frames = envelope_frames(exact, [r for r in sample if int(r["event_time"]) >= warm_ms],
                             attrs)
    config = InstanceConfig.from_spec(exact, attrs)
    best, results = float("inf"), 0
    for _ in range(repeats):
        inst = JoinInstance(config, 0, clock)
        inst.engine.preload(warm)
        start = clock()
        out = []
        for f in frames:
            out += inst.process(f)
            inst.changes()
        out += inst.flush()
        best = min(best, max(clock() - start, 1e-6))
        got = [i for f in out if "kind" in f.columns
               for i in f.loc[f["kind"] == "result", "id"].tolist()]
        results = len(got)
        if ids is not None:
            ids.update(got)
        del out
    return best, results


def measure_capacity(
    spec: Spec,
    samples: Mapping[float, Sequence[Mapping[str, Any]]],
    sample_seconds: float,
    *,
    speedup: float,
    warm_seconds: float = 0.0,
    repeats: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    ids: Mapping[float, set[str]] | None = None,
    through: str = "engine",
) -> Capacity:
    """Time the full join on each sample (``{rate: dump records}``, each covering
    ``warm_seconds + sample_seconds`` of stream time; the fastest of ``repeats`` runs)
    and derive the capacity. Sample rates near the expected capacity fit the quadratic
    term best (at low rates the fixed per-tuple cost dominates). ``ids[rate]``, where
    given, receives that sample's result ids. ``through``: ``engine`` times the bare
    engine (:func:`time_full_join`), ``instance`` the job's join instance with its
    micro-batches (:func:`time_instance_join`; the Spark job's capacity)."""
    if through not in ("engine", "instance"):
        raise ConfigError(f"capacity: through must be engine|instance, got {through!r}")
    timer = time_instance_join if through == "instance" else time_full_join
    rates = sorted(samples)
    walls: list[float] = []
    results = 0
    for r in rates:
        wall, n = timer(spec, samples[r], warm_seconds, clock, repeats,
                        None if ids is None else ids.get(r))
        walls.append(wall)
        results += n
    costs = [w / sample_seconds for w in walls]
    a, b = fit_cost(rates, costs)
    groups = spec.job.groups
    utilization = spec.shedding.utilization
    return Capacity(
        sample_rates=tuple(rates), sample_seconds=sample_seconds, warm_seconds=warm_seconds,
        wall_seconds=tuple(walls), results=results, costs=tuple(costs), linear=a,
        quadratic=b, groups=groups, speedup=speedup, utilization=utilization,
        capacity_rate=capacity_from_fit(a, b, groups, speedup, utilization),
    )
