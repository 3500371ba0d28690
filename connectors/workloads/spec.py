"""The frozen description of a generated workload: :class:`WorkloadSpec`.

Same spec ⇒ same records, on any machine (NumPy ``Generator`` seeded per stream from
``seed``). Streams are named ``s1``..``sm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from connectors.workloads.disorder import DelayModel, NoDelay
from connectors.workloads.params import (
    EquiParams,
    NewsParams,
    OverlapEquiParams,
    OverlapParams,
    PositionParams,
    SensorParams,
    WorkloadParams,
)
from pipeline.core.errors import ConfigError

WorkloadName = Literal["sensors", "news", "equi", "positions", "overlap", "overlap-equi"]
WORKLOADS: tuple[WorkloadName, ...] = ("sensors", "news", "equi", "positions", "overlap",
                                       "overlap-equi")
Arrivals = Literal["even", "poisson"]

_PARAMS: dict[str, type] = {
    "sensors": SensorParams,
    "news": NewsParams,
    "equi": EquiParams,
    "positions": PositionParams,
    "overlap": OverlapParams,
    "overlap-equi": OverlapEquiParams,
}
# which workloads use per-stream lags τ_i and deviations κ_i
_USES_LAGS = {"sensors", "news", "overlap", "overlap-equi"}
#: Gedik et al. (CIKM) Figs. 3–4: 100 tuples/s for 60 s, 500/s for 15 s, 300/s for 30 s,
#: then 100/s again (the paper's "around"s; the last 45 s are ours: Fig. 3's span is
#: not in the text), as (seconds, tuples/s) segments
PAPER_PROFILE: tuple[tuple[float, float], ...] = ((60.0, 100.0), (15.0, 500.0),
                                                  (30.0, 300.0), (45.0, 100.0))
PROFILES = {"paper": PAPER_PROFILE}
_USES_KAPPAS = {"sensors"}

# sub-seed tags: one independent random stream per (stream, purpose)
TAG_TIMES, TAG_VALUES, TAG_DELAYS, TAG_SHARED, TAG_KEYWORDS = 0, 1, 2, 3, 4


def _per_stream(name: str, values: tuple[float, ...], streams: int) -> None:
    if values and len(values) not in (1, streams):
        raise ConfigError(
            f"{name}: {len(values)} values for {streams} streams {list(values)}; "
            "give one for all streams or exactly one per stream"
        )


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate.

    * ``rates``: tuples per second of event time, one for all streams or one per stream.
    * ``duration_s``: seconds of event time, starting at ``start_ms``.
    * ``arrivals``: ``even`` (tuple j at start + j/rate, as Ji et al.'s 10 ms spacing) or
      ``poisson`` (exponential gaps with mean 1/rate).
    * ``lags_s``: τ_i in seconds (sensors: the GrubJoin lag; news: the agency's reporting
      lag; overlap: the popularity shift); empty = all 0 (overlap: i·``shift_s``).
      ``kappas``: κ_i (sensors only); empty = ``params.kappa``.
    * ``profile``: the same rates over time for every stream, as (seconds, tuples/s)
      segments one after another (the last rate holds to the end of ``duration_s``);
      empty = the constant ``rates``.
    * ``disorder``: one delay model for all streams or one per stream.
    * ``params``: workload-specific knobs; None = the paper defaults for ``workload``.

    >>> WorkloadSpec("sensors", streams=2, rates=(10.0,), duration_s=1.0).stream_names
    ('s1', 's2')
    """

    workload: WorkloadName
    streams: int = 3
    rates: tuple[float, ...] = (100.0,)
    duration_s: float = 60.0
    lags_s: tuple[float, ...] = ()
    kappas: tuple[float, ...] = ()
    disorder: tuple[DelayModel, ...] = (NoDelay(),)
    arrivals: Arrivals = "even"
    seed: int = 0
    start_ms: int = 0
    params: WorkloadParams | None = None
    profile: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:
            raise ConfigError(
                f"workload: unknown workload {self.workload!r}; expected one of {list(WORKLOADS)}"
            )
        if self.streams < 1:
            raise ConfigError(f"streams: must be >= 1, got {self.streams!r}")
        if not self.rates:
            raise ConfigError("rates: give at least one rate")
        if any(not r > 0 for r in self.rates):
            raise ConfigError(f"rates: every rate must be > 0, got {list(self.rates)}")
        if not self.duration_s > 0:
            raise ConfigError(f"duration_s: must be > 0, got {self.duration_s!r}")
        if self.arrivals not in ("even", "poisson"):
            raise ConfigError(f"arrivals: expected 'even' or 'poisson', got {self.arrivals!r}")
        if self.seed < 0 or self.start_ms < 0:
            raise ConfigError(f"seed/start_ms: must be >= 0, got {self.seed!r}/{self.start_ms!r}")
        _per_stream("rates", self.rates, self.streams)
        _per_stream("lags_s", self.lags_s, self.streams)
        _per_stream("kappas", self.kappas, self.streams)
        if not self.disorder or len(self.disorder) not in (1, self.streams):
            raise ConfigError(
                f"disorder: {len(self.disorder)} models for {self.streams} streams; "
                "give one for all streams or exactly one per stream"
            )
        if self.lags_s and self.workload not in _USES_LAGS:
            raise ConfigError(
                f"lags_s: the {self.workload!r} workload has no lags (only "
                f"{sorted(_USES_LAGS)}), got {list(self.lags_s)}"
            )
        if self.kappas and self.workload not in _USES_KAPPAS:
            raise ConfigError(
                f"kappas: the {self.workload!r} workload has no deviations (only sensors), "
                f"got {list(self.kappas)}"
            )
        if any(not (d > 0 and r > 0) for d, r in self.profile):
            raise ConfigError(f"profile: every segment needs seconds > 0 and a rate > 0, got "
                              f"{[list(seg) for seg in self.profile]}")
        if any(k < 0 for k in self.kappas):
            raise ConfigError(f"kappas: every κ must be >= 0, got {list(self.kappas)}")
        if self.params is not None and not isinstance(self.params, _PARAMS[self.workload]):
            raise ConfigError(
                f"params: {type(self.params).__name__} does not fit workload {self.workload!r} "
                f"(expected {_PARAMS[self.workload].__name__})"
            )

    @property
    def stream_names(self) -> tuple[str, ...]:
        """``s1``..``sm``."""
        return tuple(f"s{i + 1}" for i in range(self.streams))

    def resolved_params(self) -> WorkloadParams:
        """``params``, or the defaults of this workload."""
        if self.params is not None:
            return self.params
        params: WorkloadParams = _PARAMS[self.workload]()
        return params

    def rate_of(self, i: int) -> float:
        """Tuples/s of stream i (0-based)."""
        return self.rates[i] if len(self.rates) > 1 else self.rates[0]

    def lag_of(self, i: int) -> float:
        """τ_i in seconds (0-based i); overlap's default is i·``shift_s``."""
        if not self.lags_s:
            params = self.resolved_params()
            return i * params.shift_s if isinstance(params, OverlapParams) else 0.0
        return self.lags_s[i] if len(self.lags_s) > 1 else self.lags_s[0]

    def kappa_of(self, i: int) -> float:
        """κ_i (0-based i); the params default when none is given."""
        if self.kappas:
            return self.kappas[i] if len(self.kappas) > 1 else self.kappas[0]
        params = self.resolved_params()
        return params.kappa if isinstance(params, SensorParams) else 0.0

    def delay_model_of(self, i: int) -> DelayModel:
        """The disorder model of stream i (0-based)."""
        return self.disorder[i] if len(self.disorder) > 1 else self.disorder[0]

    def rng(self, stream: int, tag: int) -> np.random.Generator:
        """The independent random stream for (stream, purpose): changing the disorder
        model never changes the values, and stream i never depends on stream j."""
        return np.random.default_rng(np.random.SeedSequence([self.seed, stream, tag]))

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary (for logs, dumps' sidecars and benchmark JSON)."""
        out: dict[str, Any] = {
            "workload": self.workload,
            "streams": self.streams,
            "rates": [self.rate_of(i) for i in range(self.streams)],
            "duration_s": self.duration_s,
            "lags_s": [self.lag_of(i) for i in range(self.streams)],
            "kappas": [self.kappa_of(i) for i in range(self.streams)],
            "disorder": [self.delay_model_of(i).describe() for i in range(self.streams)],
            "arrivals": self.arrivals,
            "seed": self.seed,
            "start_ms": self.start_ms,
            "params": repr(self.resolved_params()),
        }
        if self.profile:
            out["profile"] = [list(seg) for seg in self.profile]
        return out


def event_times(spec: WorkloadSpec, i: int) -> np.ndarray:
    """Event times (ms, int64, non-decreasing) of stream i over [start, start + duration)."""
    if spec.profile:
        return _profile_times(spec, i)
    rate = spec.rate_of(i)
    span_ms = spec.duration_s * 1000.0
    if spec.arrivals == "even":
        n = int(np.floor(rate * spec.duration_s + 1e-9))
        offsets = np.floor(np.arange(n, dtype=np.float64) * (1000.0 / rate))
    else:
        rng = spec.rng(i, TAG_TIMES)
        expected = rate * spec.duration_s
        draw = int(expected + 6.0 * np.sqrt(expected) + 16)
        offsets = np.cumsum(rng.exponential(1000.0 / rate, draw))
        while offsets[-1] < span_ms:  # practically never: 6 σ margin
            more = np.cumsum(rng.exponential(1000.0 / rate, draw)) + offsets[-1]
            offsets = np.concatenate([offsets, more])
        offsets = np.floor(offsets[offsets < span_ms])
    return spec.start_ms + offsets.astype(np.int64)


def profile_segments(spec: WorkloadSpec) -> list[tuple[float, float, float]]:
    """(start s, end s, tuples/s) of the profile's segments within the duration, the last
    rate held to its end."""
    out: list[tuple[float, float, float]] = []
    t = 0.0
    for seconds, rate in spec.profile:
        if t >= spec.duration_s:
            break
        out.append((t, min(t + seconds, spec.duration_s), rate))
        t += seconds
    if t < spec.duration_s:
        out.append((t, spec.duration_s, spec.profile[-1][1]))
    return out


def _profile_times(spec: WorkloadSpec, i: int) -> np.ndarray:
    """Event times under the rate profile: each segment spaced like a constant rate
    (``even``: 1/rate apart from the segment's start; ``poisson``: exponential gaps)."""
    rng = spec.rng(i, TAG_TIMES)
    parts = []
    for lo, hi, rate in profile_segments(spec):
        span = hi - lo
        if spec.arrivals == "even":
            n = int(np.floor(rate * span + 1e-9))
            offsets = np.arange(n, dtype=np.float64) * (1000.0 / rate)
        else:
            draw = int(rate * span + 6.0 * np.sqrt(rate * span) + 16)
            offsets = np.cumsum(rng.exponential(1000.0 / rate, draw))
            while offsets[-1] < span * 1000.0:
                more = np.cumsum(rng.exponential(1000.0 / rate, draw)) + offsets[-1]
                offsets = np.concatenate([offsets, more])
            offsets = offsets[offsets < span * 1000.0]
        parts.append(np.floor(lo * 1000.0 + offsets))
    return spec.start_ms + np.concatenate(parts).astype(np.int64)
