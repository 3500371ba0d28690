"""The engine's frozen configuration, built from a job spec (``EngineConfig.from_spec``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.operators.mjoin import JoinConfig
from pipeline.operators.predicates import CustomFn, Predicate, build_predicate
from pipeline.spec.model import DisorderSpec, SheddingSpec, Spec


@dataclass(frozen=True)
class EngineConfig:
    """Everything the engine and its plug-ins need; immutable, shared by runtimes.

    ``streams``/``windows`` follow ``[join]``; the basic window b and the per-tuple cost
    come from ``[shedding]`` (``basic_window_ms``, ``tuple_cost``).
    """

    streams: tuple[str, ...]
    windows: tuple[int, ...]
    predicate: Predicate
    disorder: DisorderSpec = field(default_factory=DisorderSpec)
    shedding: SheddingSpec = field(default_factory=SheddingSpec)
    #: per-basic-window sorted indexes (``[join] index``; band and equi predicates)
    index: bool = False

    @classmethod
    def from_spec(
        cls, spec: Spec, custom: CustomFn | None = None, columns: Sequence[str] = ()
    ) -> EngineConfig:
        """Config of a spec; ``custom`` replaces the spec's predicate by a vectorized callable."""
        j = spec.join
        pred = build_predicate(
            j.predicate,
            attribute=j.attribute,
            x=j.x,
            y=j.y,
            epsilon=j.epsilon,
            fn=custom,
            columns=columns,
        )
        return cls(
            j.streams, j.windows, pred, spec.disorder, spec.shedding.with_budget(), j.index
        )

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
