"""The job spec (TOML) shared by `harvest join`, `harvest oracle` and `harvest submit`.

Sections: ``[join]`` (Ji et al. §II window join), ``[disorder]`` (Ji et al. K-slack
sizing), ``[shedding]`` (GrubJoin, Gedik et al.), ``[memory]`` (Das et al.: the join
memory and its eviction policy) and ``[job]`` (the Spark job), with the tables of
:mod:`pipeline.spec.inputs` and :mod:`pipeline.spec.output`; :class:`Spec` checks the
rules across sections. Unknown keys and bad values raise :class:`ConfigError` naming the
key, e.g. ``join.epsilon``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pipeline.core.errors import ConfigError
from pipeline.spec.inputs import InputSpec
from pipeline.spec.names import DUMP_KEYS, RESULT_FIELDS, is_avro_name
from pipeline.spec.output import OutputSpec

_FROZEN = ConfigDict(extra="forbid", frozen=True)
#: the largest K Max-K-slack and quality-driven K may choose, for the default
#: ``[disorder] max_late_ms`` (the same as ``pipeline.operators.validation.validator``'s)
ADAPTIVE_K_BOUND_MS = 60_000
#: the largest m for which ``[shedding] solver = "exact"`` is allowed (the Pareto DP's
#: per-direction grids grow as n^(m−1))
EXACT_SOLVER_MAX_M = 3


class JoinSpec(BaseModel):
    """``[join]``: streams, windows and the predicate every pair of members must satisfy."""

    model_config = _FROZEN

    streams: tuple[str, ...] = Field(min_length=2)
    window_ms: int | None = Field(default=None, gt=0)
    windows_ms: tuple[int, ...] | None = None
    predicate: Literal["equi", "band", "distance", "cosine", "overlap"]
    attribute: str | None = None
    x: str = "x"
    y: str = "y"
    epsilon: float = Field(default=0.0, ge=0.0)
    #: per-basic-window indexes: sorted for band and equi joins (beyond the paper),
    #: inverted for overlap joins (Gedik et al., CIKM §4)
    index: bool = False

    @model_validator(mode="after")
    def _check(self) -> JoinSpec:
        if self.index and self.predicate not in ("equi", "band", "overlap"):
            raise ValueError(f"index: only for equi, band and overlap joins, not "
                             f"{self.predicate!r}")
        if len(set(self.streams)) != len(self.streams):
            raise ValueError(f"streams: duplicate stream names in {list(self.streams)}")
        if (self.window_ms is None) == (self.windows_ms is None):
            raise ValueError("window_ms: give exactly one of window_ms or windows_ms")
        if self.windows_ms is not None:
            if len(self.windows_ms) != len(self.streams):
                raise ValueError(
                    f"windows_ms: {len(self.windows_ms)} windows for "
                    f"{len(self.streams)} streams"
                )
            if any(w <= 0 for w in self.windows_ms):
                raise ValueError(f"windows_ms: every window must be > 0, got {self.windows_ms}")
        if self.predicate in ("equi", "band", "overlap") and not self.attribute:
            raise ValueError(f"attribute: required for predicate {self.predicate!r}")
        if self.predicate == "cosine" and not 0.0 < self.epsilon <= 1.0:
            raise ValueError(f"epsilon: cosine threshold must be in (0, 1], got {self.epsilon}")
        if self.predicate == "distance" and self.epsilon <= 0.0:
            raise ValueError(f"epsilon: distance radius must be > 0, got {self.epsilon}")
        if self.predicate == "overlap" and not 0.0 < self.epsilon < float("inf"):
            raise ValueError(f"epsilon: overlap threshold must be a finite number > 0 (items "
                             f"in common, or the weighted sum), got {self.epsilon}")
        return self

    @property
    def windows(self) -> tuple[int, ...]:
        """Window size W_i per stream, in ms."""
        if self.windows_ms is not None:
            return self.windows_ms
        assert self.window_ms is not None
        return tuple(self.window_ms for _ in self.streams)


class DisorderSpec(BaseModel):
    """``[disorder]``: K-slack sizing (Ji et al.): none | max | fixed | quality."""

    model_config = _FROZEN

    mode: Literal["none", "max", "fixed", "quality"] = "quality"
    slack_ms: int = Field(default=0, ge=0)
    recall: float = Field(default=0.99, gt=0.0, le=1.0)
    period_ms: int = Field(default=60_000, gt=0)
    interval_ms: int = Field(default=1_000, gt=0)
    granularity_ms: int = Field(default=10, gt=0)
    #: quality mode: a late tuple's productivity = mean of in-order ones (default) or max (Ji)
    late_estimate: Literal["max", "mean"] = "mean"
    #: quality mode: Ji et al.'s EqSel (sel(K) = sel, no DPcorr term) instead of NonEqSel
    eq_sel: bool = False
    #: quality mode: ``harvest`` = our defaults (docs/NOTES.md's deviations 1–3), ``paper``
    #: = Ji et al.'s as published: Γ' in [0, 1], b = g, DPcorr maps of the last interval
    model: Literal["harvest", "paper"] = "harvest"
    #: quality mode, ``model = "harvest"``: Γ' (Eq. 7) is clipped to
    #: [Γ + target_margin·(1 − Γ), Γ + target_headroom·(1 − Γ)] (the floor at least 0);
    #: a negative margin lets Γ' fall below Γ to spend a surplus, as Eq. 7 does; −100
    #: gives Ji et al.'s floor of 0 for any Γ ≥ 0.01 (docs/NOTES.md)
    target_margin: float = Field(default=0.25, ge=-100.0, le=1.0)
    target_headroom: float = Field(default=0.5, ge=0.0, le=1.0)
    #: quality mode: at most this many delays per second of each stream feed the delay
    #: statistics (every k-th arrival, k from the last interval's rate); 0 = every one
    stat_rate: float = Field(default=1_000.0, ge=0.0)
    #: input validation (ours): a tuple whose event or arrival time is this far ahead of
    #: its stream's clock (stream time, not the wall clock) goes to the dead letters
    max_future_ms: int = Field(default=60_000, gt=0)
    #: a tuple whose event time is this far behind its stream's clock can join nothing
    #: and goes to the dead letters; None = the largest window + the largest K the mode
    #: may choose (:meth:`late_bound_ms`)
    max_late_ms: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> DisorderSpec:
        if self.interval_ms > self.period_ms:
            raise ValueError(
                f"interval_ms: L must be <= P, got L={self.interval_ms} P={self.period_ms}"
            )
        if self.target_margin > self.target_headroom:
            raise ValueError(
                f"target_margin: must be <= target_headroom, got {self.target_margin} > "
                f"{self.target_headroom}"
            )
        return self

    def late_bound_ms(self, windows: tuple[int, ...]) -> int:
        """``max_late_ms``, by default the largest window plus the largest K: 0 for
        ``none``, ``slack_ms`` for ``fixed``, 60 s for ``max`` and ``quality`` (they
        follow the observed delays, which nothing bounds; a longer delay is a fault)."""
        if self.max_late_ms is not None:
            return self.max_late_ms
        k = {"none": 0, "fixed": self.slack_ms}.get(self.mode, ADAPTIVE_K_BOUND_MS)
        return max(windows) + k


class SheddingSpec(BaseModel):
    """``[shedding]``: GrubJoin window harvesting (Gedik et al.) or a baseline: random
    drop (``randomdrop``: adaptive, sized every Δ by the throttle; ``randomdrop-static``:
    the paper's, fixed after a warm-up) or tail drop (``taildrop``: a bounded input
    queue, nothing else)."""

    model_config = _FROZEN

    mode: Literal["off", "grubjoin", "randomdrop", "randomdrop-static", "taildrop"] = "off"
    basic_window_ms: int = Field(default=2_000, gt=0)
    adapt_interval_ms: int = Field(default=5_000, gt=0)
    boost: float = Field(default=1.2, gt=1.0)
    shred_rate: float = Field(default=0.1, ge=0.0, le=1.0)
    budget: Literal["virtual", "wall"] = "virtual"
    capacity: float | None = Field(default=None, gt=0.0)
    queue: int = Field(default=10, ge=1)
    heuristic: Literal["bdopdc", "bo", "bopc"] = "bdopdc"
    learn: bool = True
    #: false = one harvest fraction for every direction (Gedik et al., CIKM: selective
    #: processing without join direction adaptation)
    join_direction: bool = True
    #: true = continuous per-direction fractions r_i, the next basic window scanned on a
    #: share of the tuples (Gedik et al., CIKM Algs. 1, 3, 4; two-way joins only)
    partial_window: bool = False
    seed: int = Field(default=0, ge=0)
    tuple_cost: float = Field(default=1.0, ge=0.0)
    #: GrubJoin on the wall budget: learn c_t from the timed runs instead (wall_fit.py)
    learn_tuple_cost: bool = False
    #: GrubJoin on the wall budget: c_t measured from the phase profile (phase_cost.py)
    measure_tuple_cost: bool = True
    #: GrubJoin on the wall budget: z measured every Δ (throttle.measured_level)
    measure_budget: bool = True
    #: GrubJoin: admitted fractions kept by time slices aligned across streams (slices.py)
    admit_slices: bool = True
    #: GrubJoin: scale harvested outputs by realized / modelled results (calibration.py)
    calibrate_output: bool = True
    #: GrubJoin on the wall budget: the full join's point left to the input queue
    full_by_queue: bool = True
    #: GrubJoin with shredding: harvests weighted by their measured capture (capture.py)
    check_capture: bool = True
    #: cost units of a tuple's probe itself, whatever it scans (ours; 0 = the paper's model)
    probe_cost: float = Field(default=0.0, ge=0.0)
    utilization: float = Field(default=0.8, gt=0.0, le=1.0)
    #: harvest-fraction solver: auto = exact Pareto DP for m ≤ 3, greedy above
    solver: Literal["auto", "greedy", "exact"] = "auto"
    #: taildrop / randomdrop-static on the wall budget: backlog bound (ms of stream time)
    queue_ms: int | None = Field(default=None, gt=0)
    #: the wall queue's service times stretched by the running batch's own lag too
    #: (measured not to pay on positions at 2×: docs/NOTES.md, session 27)
    batch_lag: bool = False
    #: GrubJoin's wall queue: a batch's time outside the join fills it as backlog
    queue_overhead: bool = True
    #: wall budget: µs of wall time charged per emitted result, for the work after the
    #: join that the clock does not see (Spark's encoding and Kafka write of the row)
    result_us: float = Field(default=0.0, ge=0.0)
    #: randomdrop-static: measuring span before the keep probabilities are fixed
    warmup_ms: int | None = Field(default=None, gt=0)
    # A virtual budget with shedding needs ``capacity``: checked when the engine config is
    # resolved (pipeline.runtime.resolve), not here, because one spec file serves both
    # ``harvest join`` ([shedding] budget) and ``harvest submit`` ([job] budget).


class MemorySpec(BaseModel):
    """``[memory]``: the join memory M and its eviction policy (Das, Gehrke, Riedewald):
    off | rand | prob | life | lagprob. ``max_tuples`` bounds the join windows of one
    operator instance (not the K-slack buffers); ``allocation`` fixed = ⌊M/m⌋ per stream,
    variable = one pool of M; ``stats_window_ms`` = the recent input the value
    frequencies use (0 = all input so far)."""

    model_config = _FROZEN

    mode: Literal["off", "rand", "prob", "life", "lagprob"] = "off"
    max_tuples: int | None = Field(default=None, gt=0, validate_default=True)
    allocation: Literal["fixed", "variable"] = "fixed"
    stats_window_ms: int = Field(default=0, ge=0)
    seed: int = Field(default=0, ge=0)

    @field_validator("max_tuples")
    @classmethod
    def _needed(cls, value: int | None, info: ValidationInfo) -> int | None:
        mode = info.data.get("mode", "off")
        if value is None and mode != "off":
            raise ValueError(f"required when mode is {mode!r}")
        return value


class JobSpec(BaseModel):
    """``[job]``: the Spark Structured Streaming job (routing, triggers, checkpoint)."""

    model_config = _FROZEN

    workload: Literal["sensors", "news", "equi", "positions", "overlap", "overlap-equi"] = (
        "sensors")
    routing: Literal["hash", "atr", "ctr"] = "atr"
    groups: int = Field(default=1, ge=1)
    segment_ms: int = Field(default=10_000, gt=0)
    master_stream: str | None = None
    #: adaptive ATR (Gu et al. §2.2, Eq. 1): which route key a new master segment goes to
    segment_keys: Literal["round-robin", "least-loaded"] = "round-robin"
    #: Eq. 1's [ω_cpu, ω_memory, ω_bandwidth]: each in [0, 1], summing to 1
    load_weights: tuple[float, float, float] = (1.0, 0.0, 0.0)
    #: Gu et al. §2.5: re-elect the master by Eq. 2 every ``adapt_interval_ms``
    adapt_master: bool = False
    adapt_interval_ms: int = Field(default=10_000, gt=0)
    #: the relative fall of Eq. 2's overhead a master switch needs
    switch_margin: float = Field(default=0.1, ge=0.0, lt=1.0)
    #: Gu et al. §2.6: hill climb on T within [segment_min_ms, segment_max_ms]
    adapt_segment: bool = False
    segment_min_ms: int = Field(default=500, gt=0)
    segment_max_ms: int = Field(default=60_000, gt=0)
    segment_step_ms: int = Field(default=1_000, gt=0)
    trigger_ms: int = Field(default=1_000, gt=0)
    checkpoint: str | None = None
    max_offsets_per_trigger: int | None = Field(default=None, gt=0)
    #: the Kafka source consumer's ``fetch.max.wait.ms``: how long the broker may hold a
    #: fetch that finds no new record (Kafka's default 500 ms; docs/NOTES.md, issue 29)
    fetch_max_wait_ms: int = Field(default=10, ge=0)
    speedup: float = Field(default=1.0, gt=0.0)
    budget: Literal["virtual", "wall"] = "wall"
    topic_prefix: str = Field(default="harvest", pattern=r"^[A-Za-z0-9._-]+$")
    #: ``spark.sql.shuffle.partitions``; None = ``groups`` (each route key runs in a
    #: partition of its own, ARCHITECTURE §6, and no task runs empty)
    shuffle_partitions: int | None = Field(default=None, ge=1)
    mode: Literal["join", "passthrough"] = "join"
    idle_flush_ms: int = Field(default=3_000, gt=0)
    #: bounded staleness at the source: a micro-batch drops, before decoding, every record
    #: whose Kafka timestamp is more than this older than the batch (ARCHITECTURE §5);
    #: None = keep everything. Must exceed ``trigger_ms``
    max_staleness_ms: int | None = Field(default=None, gt=0)
    #: graceful staleness: a record older than this (but within ``max_staleness_ms``) is
    #: kept only when its Kafka timestamp falls in an even ``thin_slice_ms`` slice, so a
    #: batch far behind drops half of its oldest records in slices shorter than a window
    #: instead of all of them (ARCHITECTURE §5); None = off. Must be below
    #: ``max_staleness_ms``
    thin_after_ms: int | None = Field(default=None, gt=0)
    thin_slice_ms: int = Field(default=2_000, gt=0)
    #: time each instance's micro-batch phases; the metrics rows' ``extra`` then carries
    #: ``profile_us_<phase>`` per admitted tuple (ARCHITECTURE §5)
    profile: bool = False

    @field_validator("load_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(not 0.0 <= w <= 1.0 for w in value) or abs(sum(value) - 1.0) > 1e-9:
            raise ValueError(f"each weight in [0, 1] and their sum 1, got {list(value)}")
        return value

    @property
    def adaptive(self) -> bool:
        """Whether any adaptive ATR key is on (least-loaded keys, master or T adaptation)."""
        return (self.segment_keys == "least-loaded" or self.adapt_master
                or self.adapt_segment)

    @model_validator(mode="after")
    def _check_adaptive(self) -> JobSpec:
        if self.segment_min_ms > self.segment_max_ms:
            raise ValueError(f"job.segment_min_ms: must be <= job.segment_max_ms = "
                             f"{self.segment_max_ms}, got {self.segment_min_ms}")
        if self.routing != "atr":
            for key in ("segment_keys", "adapt_master", "adapt_segment"):
                if key in self.model_fields_set and getattr(self, key) not in (
                        False, "round-robin"):
                    raise ValueError(f"job.{key}: only for routing 'atr', got routing "
                                     f"{self.routing!r}")
        if (self.adapt_segment and "segment_ms" in self.model_fields_set
                and not self.segment_min_ms <= self.segment_ms <= self.segment_max_ms):
            raise ValueError(f"job.segment_ms: must lie in [job.segment_min_ms, "
                             f"job.segment_max_ms] = [{self.segment_min_ms}, "
                             f"{self.segment_max_ms}] with adapt_segment, got "
                             f"{self.segment_ms}")
        return self

    @model_validator(mode="after")
    def _check_thinning(self) -> JobSpec:
        thin = self.thin_after_ms
        if thin is not None and (self.max_staleness_ms is None
                                 or thin >= self.max_staleness_ms):
            raise ValueError(f"job.thin_after_ms: must be below job.max_staleness_ms = "
                             f"{self.max_staleness_ms}, got {thin}")
        return self

    @model_validator(mode="after")
    def _check_staleness(self) -> JobSpec:
        bound = self.max_staleness_ms
        if bound is not None and bound <= self.trigger_ms:
            raise ValueError(
                f"job.max_staleness_ms: must exceed job.trigger_ms = {self.trigger_ms} (a "
                f"record read one trigger after it was written is not stale), got {bound}")
        return self

    @property
    def partitions(self) -> int:
        """The shuffle partitions the job runs with: ``shuffle_partitions``, else
        ``groups``."""
        return self.shuffle_partitions or self.groups


class Spec(BaseModel):
    """A whole job spec file."""

    model_config = _FROZEN

    join: JoinSpec
    disorder: DisorderSpec = DisorderSpec()
    shedding: SheddingSpec = SheddingSpec()
    job: JobSpec = JobSpec()
    memory: MemorySpec = MemorySpec()
    #: the user's own topics, one per stream (None: harvest's ``<prefix>.in.*`` topics)
    inputs: dict[str, InputSpec] | None = None
    output: OutputSpec = OutputSpec()

    @model_validator(mode="after")
    def _check(self) -> Spec:
        _check_inputs(self.join, self.inputs, self.output)
        if self.inputs is not None and self.job.mode == "passthrough":
            raise ValueError("job.mode: 'passthrough' re-encodes harvest's own input topics; "
                             "it does not apply to [inputs]")
        if self.job.routing == "hash" and self.join.predicate != "equi":
            raise ValueError(
                f"job.routing: 'hash' routing needs an equi-join, got predicate "
                f"{self.join.predicate!r}; use 'atr'"
            )
        if self.job.master_stream is not None and self.job.master_stream not in self.join.streams:
            raise ValueError(f"job.master_stream: {self.job.master_stream!r} is not a stream")
        if self.shedding.solver == "exact" and len(self.join.streams) > EXACT_SOLVER_MAX_M:
            raise ValueError(f"shedding.solver: 'exact' solves m <= {EXACT_SOLVER_MAX_M} "
                             f"streams, got {len(self.join.streams)}; use 'auto' or 'greedy'")
        mem, m = self.memory, len(self.join.streams)
        if mem.mode != "off" and mem.allocation == "fixed" and (mem.max_tuples or 0) < m:
            raise ValueError(f"memory.max_tuples: fixed allocation over {m} streams needs at "
                             f"least {m} tuples, got {mem.max_tuples}")
        return self


def _check_stream_names(streams: tuple[str, ...]) -> None:
    for name in streams:
        if not is_avro_name(name):
            raise ValueError(
                f"join.streams: {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*); "
                "stream names become result fields"
            )
        if name in RESULT_FIELDS:
            raise ValueError(
                f"join.streams: {name!r} equals a result field ({', '.join(RESULT_FIELDS)})"
            )


def _check_attribute_names(join: JoinSpec) -> None:
    names = [join.x, join.y] if join.predicate == "distance" else [join.attribute]
    for name in names:
        if name in DUMP_KEYS:
            key = "join.attribute" if join.predicate != "distance" else "join.x / join.y"
            raise ValueError(f"{key}: {name!r} is a reserved dump key ({', '.join(DUMP_KEYS)})")


def _check_inputs(join: JoinSpec, inputs: Mapping[str, InputSpec] | None,
                 output: OutputSpec) -> None:
    """Cross-section rules of ``[inputs]`` and ``[output]`` (``ValueError`` naming the key)."""
    if output.payload or inputs is not None:
        _check_stream_names(join.streams)
    if inputs is None:
        return
    for name in inputs:
        if name not in join.streams:
            raise ValueError(f"inputs.{name}: not a stream of join.streams {list(join.streams)}")
    missing = [s for s in join.streams if s not in inputs]
    if missing:
        raise ValueError(f"inputs: no [inputs.<stream>] table for stream(s) {missing}")
    if output.topic is None:
        raise ValueError("output.topic: required when [inputs] is given")
    _check_attribute_names(join)
    seen: dict[str, str] = {}
    outputs = set(output.topics("unused"))
    for name in join.streams:
        spec = inputs[name]
        if spec.topic in seen:
            raise ValueError(f"inputs.{name}.topic: {spec.topic!r} is also the topic of "
                             f"inputs.{seen[spec.topic]}")
        if spec.topic in outputs:
            raise ValueError(f"inputs.{name}.topic: {spec.topic!r} is an output topic")
        seen[spec.topic] = name
        if spec.attribute is not None and join.predicate == "distance":
            raise ValueError(f"inputs.{name}.attribute: the distance predicate reads x and y")
        for key in ("x", "y"):
            if getattr(spec, key) is not None and join.predicate != "distance":
                raise ValueError(f"inputs.{name}.{key}: only for the distance predicate, "
                                 f"not {join.predicate!r}")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not isinstance(p, int))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        got = err.get("input")
        suffix = "" if err["type"] in ("missing", "value_error") else f" (got {got!r})"
        parts.append(f"{loc}: {msg}{suffix}" if loc else f"{msg}{suffix}")
    return "; ".join(parts)


def parse_spec(data: dict[str, object]) -> Spec:
    """Validate a spec given as a dict (the parsed TOML)."""
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid spec: {_describe(exc)}") from exc


def _anchor_schema_paths(data: dict[str, object], folder: Path) -> None:
    """``[inputs.*] schema`` / ``reader_schema`` paths relative to the spec file's folder
    → absolute."""
    inputs = data.get("inputs")
    if not isinstance(inputs, dict):
        return
    for table in inputs.values():
        for key in ("schema", "reader_schema"):
            path = table.get(key) if isinstance(table, dict) else None
            if isinstance(path, str) and path and not Path(path).is_absolute():
                table[key] = str(folder.absolute() / path)


def load_spec(path: str | Path) -> Spec:
    """Read and validate a TOML spec file.

    Raises :class:`ConfigError` for a missing file, bad TOML, unknown keys or bad values.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"spec file not found: {p}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"spec {p}: not valid TOML: {exc}") from exc
    _anchor_schema_paths(data, p.parent)
    try:
        return parse_spec(data)
    except ConfigError as exc:
        raise ConfigError(f"spec {p}: {str(exc).removeprefix('invalid spec: ')}") from exc
