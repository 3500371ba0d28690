"""The one path from a job spec to the engine's frozen config (and the plug-ins' env).

:func:`resolve_engine` turns a validated :class:`~pipeline.spec.model.Spec` plus the
runtime's facts (budget source, custom predicate) into an
:class:`~pipeline.operators.config.EngineConfig`; ``harvest join``, the Spark job, the
capacity probe and the benchmarks all build their engines through it.
:func:`runtime_env` picks the plug-ins' clock at the edge, so no operator reads time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

from pipeline.core.errors import ConfigError
from pipeline.operators.config import DisorderConfig, EngineConfig, MemoryConfig, SheddingConfig
from pipeline.operators.contract import PluginEnv
from pipeline.operators.join.predicates import CustomFn, build_predicate
from pipeline.spec.model import Spec

Budget = Literal["virtual", "wall"]


def resolve_engine(
    spec: Spec,
    *,
    budget: Budget | None = None,
    custom: CustomFn | None = None,
    columns: Sequence[str] = (),
) -> EngineConfig:
    """The engine config of ``spec``.

    ``budget`` overrides ``[shedding] budget`` (inside Spark: ``[job] budget``, ARCHITECTURE §5);
    a virtual budget with shedding on needs ``[shedding] capacity`` (:class:`ConfigError`
    naming ``shedding.capacity``). ``[memory]`` becomes a
    :class:`MemoryConfig` as is. ``custom`` replaces the spec's predicate by a vectorized
    callable over ``columns``. Every other key of ``[disorder]``/``[shedding]`` is carried
    over unchanged.
    """
    sh = spec.shedding
    chosen: Budget = sh.budget if budget is None else budget
    if sh.mode != "off" and chosen == "virtual" and sh.capacity is None:
        raise ConfigError(
            "shedding.capacity: required when mode is not 'off' and the budget is 'virtual'"
        )
    j = spec.join
    predicate = build_predicate(
        j.predicate,
        attribute=j.attribute,
        x=j.x,
        y=j.y,
        epsilon=j.epsilon,
        fn=custom,
        columns=columns,
    )
    return EngineConfig(
        streams=tuple(j.streams),
        windows=tuple(int(w) for w in j.windows),
        predicate=predicate,
        disorder=DisorderConfig(**spec.disorder.model_dump()),
        shedding=SheddingConfig(**{**sh.model_dump(), "budget": chosen}),
        index=j.index,
        memory=MemoryConfig(**spec.memory.model_dump()),
    )


def runtime_env(
    *,
    clock: Callable[[], float] = time.perf_counter,
    speedup: float = 1.0,
    timer: Callable[[], float] | None = None,
) -> PluginEnv:
    """The plug-ins' environment of an in-process runtime: the wall budget times with
    ``clock`` (default: the process's monotonic perf counter)."""
    return PluginEnv(clock=clock, speedup=speedup, timer=timer)
