"""The engine's frozen configuration: plain dataclasses, no spec types.

A job spec becomes an :class:`EngineConfig` in one place only,
:func:`pipeline.runtime.resolve.resolve_engine`; the operators never see the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.core.errors import ConfigError
from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.predicates import Predicate

__all__ = ["DEFAULT_LATE_ESTIMATE", "DisorderConfig", "EngineConfig", "LateEstimate",
           "MemoryConfig", "SheddingConfig"]


#: ``[memory]``: the join memory M and the eviction policy (Das, Gehrke, Riedewald,
#: "Semantic Approximation of Data Stream Joins", TKDE — the fast-CPU model, §2.3)
MODES: tuple[str, ...] = ("off", "rand", "prob", "life", "lagprob")
ALLOCATIONS: tuple[str, ...] = ("fixed", "variable")


@dataclass(frozen=True)
class MemoryConfig:
    """The join memory of one operator instance.

    * ``mode``: ``off`` (unbounded windows, today's join) or the eviction policy;
    * ``max_tuples``: M, tuples over all the streams' join windows (not the K-slack
      buffers); required unless ``off``;
    * ``allocation``: ``fixed`` = ⌊M/m⌋ per stream (PROB, RAND, LIFE), ``variable`` =
      one pool of M shared by all streams (PROBV, RANDV);
    * ``stats_window_ms``: how much recent input (ms of event time) the value-frequency
      estimates use; 0 = all input so far;
    * ``seed``: the only source of randomness (RAND's choices).
    """

    mode: str = "off"
    max_tuples: int | None = None
    allocation: str = "fixed"
    stats_window_ms: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"memory.mode: unknown mode {self.mode!r} (choose from {MODES})")
        if self.allocation not in ALLOCATIONS:
            raise ConfigError(
                f"memory.allocation: must be 'fixed' or 'variable', got {self.allocation!r}"
            )
        if self.max_tuples is not None and self.max_tuples < 1:
            raise ConfigError(f"memory.max_tuples: must be >= 1, got {self.max_tuples}")
        if self.mode != "off" and self.max_tuples is None:
            raise ConfigError(f"memory.max_tuples: required when mode is {self.mode!r}")
        if self.stats_window_ms < 0:
            raise ConfigError(f"memory.stats_window_ms: must be >= 0, got {self.stats_window_ms}")
        if self.seed < 0:
            raise ConfigError(f"memory.seed: must be >= 0, got {self.seed}")

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def budgets(self, m: int) -> tuple[int, ...]:
        """Tuples per pool: m pools of ⌊M/m⌋ (fixed) or one pool of M (variable)."""
        assert self.max_tuples is not None
        if self.allocation == "variable":
            return (self.max_tuples,)
        per = self.max_tuples // m
        if per < 1:
            raise ConfigError(
                f"memory.max_tuples: fixed allocation over {m} streams needs at least {m} "
                f"tuples, got {self.max_tuples}"
            )
        return tuple(per for _ in range(m))

    def pool_of(self, stream: int) -> int:
        return 0 if self.allocation == "variable" else stream


#: how the quality policy estimates a late tuple's productivity: "max" (Ji et al. §IV-B,
#: the best in-order tuple's) or "mean" (the in-order tuples' average)
LateEstimate = Literal["max", "mean"]
#: the default of ``[disorder] late_estimate`` and of the quality policy
DEFAULT_LATE_ESTIMATE: LateEstimate = "mean"


@dataclass(frozen=True)
class DisorderConfig:
    """K-slack sizing (Ji et al.); the fields and defaults of ``[disorder]``.

    ``mode`` names a slack policy of :data:`pipeline.operators.registry.SLACK_POLICIES`.
    """

    mode: str = "quality"
    slack_ms: int = 0
    recall: float = 0.99
    period_ms: int = 60_000
    interval_ms: int = 1_000
    granularity_ms: int = 10
    #: quality mode: a late tuple's productivity = mean of in-order ones (default) or max (Ji)
    late_estimate: LateEstimate = DEFAULT_LATE_ESTIMATE
    #: quality mode: EqSel (sel^⋈(K) = sel^⋈) instead of NonEqSel (Eq. 6)
    eq_sel: bool = False
    #: quality mode: ``harvest`` (our deviations 1–3, policy.py) or ``paper`` (Ji et al.'s
    #: Γ' in [0, 1], b = g, one interval of DPcorr evidence)
    model: Literal["harvest", "paper"] = "harvest"
    #: quality mode, ``harvest`` model: Γ' clipped to Γ + (1 − Γ)·[target_margin,
    #: target_headroom] (policy.py, deviation 1)
    target_margin: float = 0.25
    target_headroom: float = 0.5
    #: quality mode: delays per second per stream the statistics see (0: all)
    stat_rate: float = 1_000.0
    #: input validation (:mod:`pipeline.operators.validation.validator`, applied by the Spark
    #: instance): how far ahead of / behind its stream's clock a tuple may be (None: the
    #: largest window + the largest K, ``validator.default_max_late_ms``)
    max_future_ms: int = 60_000
    max_late_ms: int | None = None


@dataclass(frozen=True)
class SheddingConfig:
    """GrubJoin window harvesting (Gedik et al.) or a baseline (random drop, adaptive or
    static; tail drop); the fields and defaults of
    ``[shedding]``, with ``budget`` already resolved (``[job] budget`` inside Spark).

    ``mode`` names a shedder of :data:`pipeline.operators.registry.SHEDDERS`.
    """

    mode: str = "off"
    basic_window_ms: int = 2_000
    adapt_interval_ms: int = 5_000
    boost: float = 1.2
    shred_rate: float = 0.1
    budget: Literal["virtual", "wall"] = "virtual"
    capacity: float | None = None
    queue: int = 10
    heuristic: Literal["bdopdc", "bo", "bopc"] = "bdopdc"
    learn: bool = True
    #: false: one harvest fraction r for every direction (samefraction.py)
    join_direction: bool = True
    #: true: continuous fractions r_i, the paper's Alg. 4 with ``join_direction``
    #: (directions.py; two-way joins only)
    partial_window: bool = False
    seed: int = 0
    tuple_cost: float = 1.0
    #: GrubJoin on the wall budget: c_t learned from the timed runs, ``tuple_cost`` its
    #: floor (ours, wall_fit.py)
    learn_tuple_cost: bool = False
    #: GrubJoin on the wall budget: c_t = the admitted tuples' own seconds per tuple over
    #: the probing seconds per comparison, from the phase profile (ours, phase_cost.py);
    #: ``tuple_cost`` its floor. ``learn_tuple_cost`` wins when both are on
    measure_tuple_cost: bool = True
    #: GrubJoin on the wall budget: z = headroom × (consumed / pushed) × C(in force) / C(1)
    #: every Δ instead of the paper's multiplicative cut and boost (ours,
    #: throttle.measured_level)
    measure_budget: bool = True
    #: GrubJoin: an admitted fraction a < 1 keeps whole slices of ``basic_window_ms`` of
    #: the engine clock, the same for every stream (ours, grubjoin/slices.py); false:
    #: each tuple at random
    admit_slices: bool = True
    #: GrubJoin: harvested outputs scaled by the realized / modelled results of each
    #: kind of configuration before the choice (ours, calibration.py)
    calibrate_output: bool = True
    #: GrubJoin on the wall budget: when the choice is the full join at an admitted
    #: fraction or probe share below 1 (tail drop's point), admit and probe everything and
    #: let the bounded input queue drop what does not fit, as tail drop does (ours)
    full_by_queue: bool = True
    #: GrubJoin with window shredding: harvested outputs weighted by the capture the
    #: next Δ's shredded probes measure for the harvest under test, instead of realized
    #: over modelled results (ours, capture.py)
    check_capture: bool = True
    #: cost units of a tuple's probe itself, whatever it scans (ours; 0 = the paper's model)
    probe_cost: float = 0.0
    utilization: float = 0.8
    #: harvest-fraction solver: auto (exact Pareto DP for m ≤ 3, else greedy), greedy
    #: (the paper's greedy double-sided) or exact (m ≤ 3 only)
    solver: Literal["auto", "greedy", "exact"] = "auto"
    #: taildrop / randomdrop-static on the wall budget: the input queue's bound as a
    #: modelled backlog in ms of stream time (None: one adaptation interval Δ)
    queue_ms: int | None = None
    #: wall queue: stretch service times by the running batch's lag (WallQueue.stretch_at)
    batch_lag: bool = False
    #: GrubJoin's wall queue: serve a batch's time outside the join as backlog
    queue_overhead: bool = True
    #: wall budget: µs of wall time charged per emitted result on top of the measured
    #: time (Spark's encoding and Kafka write of each result row, which happen after the
    #: processor returns and so off the clock; WallBudget.charge_results, ours)
    result_us: float = 0.0
    #: randomdrop-static: stream time (ms) over which rates, selectivities and the cost of
    #: a comparison are measured before the keep probabilities are fixed (None: Δ)
    warmup_ms: int | None = None

    @property
    def queue_bound_ms(self) -> int:
        """The wall queue's backlog bound: ``queue_ms`` or Δ."""
        return self.adapt_interval_ms if self.queue_ms is None else self.queue_ms

    @property
    def warmup_span_ms(self) -> int:
        """randomdrop-static's measuring span: ``warmup_ms`` or Δ."""
        return self.adapt_interval_ms if self.warmup_ms is None else self.warmup_ms


@dataclass(frozen=True)
class EngineConfig:
    """Everything the engine and its plug-ins need; immutable, picklable, shared by runtimes.

    ``streams``/``windows`` follow ``[join]``; the basic window b and the per-tuple cost
    come from ``shedding`` (``basic_window_ms``, ``tuple_cost``).
    """

    streams: tuple[str, ...]
    windows: tuple[int, ...]
    predicate: Predicate
    disorder: DisorderConfig = field(default_factory=DisorderConfig)
    shedding: SheddingConfig = field(default_factory=SheddingConfig)
    #: per-basic-window sorted indexes (``[join] index``; band and equi predicates)
    index: bool = False
    #: the join memory M and its eviction policy (``[memory]``; Das et al.); off = unbounded
    memory: MemoryConfig = field(default_factory=MemoryConfig)

    @property
    def m(self) -> int:
        return len(self.streams)

    @property
    def basic_window_ms(self) -> int:
        return self.shedding.basic_window_ms

    @property
    def tuple_cost(self) -> float:
        return self.shedding.tuple_cost

    @property
    def probe_cost(self) -> float:
        return self.shedding.probe_cost

    def join_config(self) -> JoinConfig:
        return JoinConfig(self.windows, self.basic_window_ms, self.predicate, self.index)
