"""The engine's frozen configuration: plain dataclasses, no spec types.

A job spec becomes an :class:`EngineConfig` in one place only,
:func:`pipeline.runtime.resolve.resolve_engine`; the operators never see the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pipeline.operators.join.config import JoinConfig
from pipeline.operators.join.predicates import Predicate
from pipeline.operators.memory.config import MemoryConfig

__all__ = ["DisorderConfig", "EngineConfig", "SheddingConfig"]


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
    late_estimate: Literal["max", "mean"] = "mean"
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
    seed: int = 0
    tuple_cost: float = 1.0
    #: cost units of a tuple's probe itself, whatever it scans (ours; 0 = the paper's model)
    probe_cost: float = 0.0
    utilization: float = 0.8
    #: harvest-fraction solver: auto (exact Pareto DP for m ≤ 3, else greedy), greedy
    #: (the paper's greedy double-sided) or exact (m ≤ 3 only)
    solver: Literal["auto", "greedy", "exact"] = "auto"
    #: taildrop / randomdrop-static on the wall budget: the input queue's bound as a
    #: modelled backlog in ms of stream time (None: one adaptation interval Δ)
    queue_ms: int | None = None
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
