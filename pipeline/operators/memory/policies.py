"""The eviction policies of ``[memory] mode`` (Das et al. §4.2; ``lagprob`` is ours).

* ``rand`` — RAND/RANDV: the victim is uniform over the residents of the pool and the
  newcomer (a generator seeded by ``memory.seed``, its state in the snapshot);
* ``prob`` — PROB/PROBV (§4.2.1): evict the tuple least likely to produce future
  results, priority π_i(v) (``bound.py``: the partner streams' arrival rates near v);
* ``life`` — LIFE (§4.2.2): π_i(v) × the remaining lifetime ts + W_i − ⋈T + 1 (ms of
  event time in which it can still meet a partner);
* ``lagprob`` — π_i(v) × ḡ_i(age), the match intensity a tuple of this age can still
  expect, from match-lag hazards fed by every probe (``lags.py``).

Each class is a plug-in: ``build(config, windows, predicate)`` and
``from_snapshot(config, windows, predicate, snap)``; ``snapshot()`` is plain data.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.config import MemoryConfig
from pipeline.operators.join.predicates import Predicate
from pipeline.operators.memory.bound import F64, I64, BoundedMemory
from pipeline.operators.memory.lags import LagModel


class RandMemory(BoundedMemory):
    """RAND (fixed) / RANDV (variable): a uniformly random victim."""

    mode: ClassVar[str] = "rand"

    def __init__(self, config: MemoryConfig, windows_ms: tuple[int, ...],
                 predicate: Predicate) -> None:
        super().__init__(config, windows_ms, predicate)
        self.rng = np.random.default_rng(config.seed)

    def victim(self, pool: int, stream: int, ts: int, enc: Any,
               join_time: int) -> tuple[int, int] | None:
        sizes = [self.res[s].n for s in self.pools[pool]]
        k = int(self.rng.integers(sum(sizes) + 1))
        for s, n in zip(self.pools[pool], sizes, strict=True):
            if k < n:
                return s, k
            k -= n
        return None  # the newcomer

    def _extra_snapshot(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def _extra_restore(self, extra: dict[str, Any]) -> None:
        self.rng.bit_generator.state = extra["rng"]


class ProbMemory(BoundedMemory):
    """PROB (fixed) / PROBV (variable): evict the lowest partner-arrival rate."""

    mode: ClassVar[str] = "prob"

    def priority(self, stream: int, keys: Any, tss: I64, join_time: int) -> F64:
        return self.rates(stream, keys)


class LifeMemory(BoundedMemory):
    """LIFE: PROB's priority times the remaining lifetime."""

    mode: ClassVar[str] = "life"

    def priority(self, stream: int, keys: Any, tss: I64, join_time: int) -> F64:
        left = np.maximum(tss + self.windows_ms[stream] - join_time + 1, 0)
        return self.rates(stream, keys) * left


class LagProbMemory(BoundedMemory):
    """PROB weighted by the match intensity still ahead of a tuple of this age."""

    mode: ClassVar[str] = "lagprob"
    needs_probes: ClassVar[bool] = True

    def __init__(self, config: MemoryConfig, windows_ms: tuple[int, ...],
                 predicate: Predicate) -> None:
        super().__init__(config, windows_ms, predicate)
        self.lags = LagModel(self.windows_ms, config.stats_window_ms)

    def observe_probe(self, stream: int, ts: int, tss: I64) -> None:
        """Match ages of the results and the exposure of every other window's residents."""
        self.lags.tick(ts)
        for l in range(self.m):
            if l == stream:
                continue
            r = self.res[l]
            ages = ts - r.ts[: r.n]
            live = ages <= self.windows_ms[l]
            expected = self.expected_matches(l, r.key_view(), stream)
            self.lags.observe(l, ts - tss[:, l], ages[live], expected[live])

    def priority(self, stream: int, keys: Any, tss: I64, join_time: int) -> F64:
        return self.rates(stream, keys) * self.lags.factor(stream, join_time - tss)

    def _extra_snapshot(self) -> dict[str, Any]:
        return {"lags": self.lags.snapshot()}

    def _extra_restore(self, extra: dict[str, Any]) -> None:
        self.lags.restore(extra["lags"])


MEMORY_POLICIES: dict[str, type[BoundedMemory]] = {
    "rand": RandMemory,
    "prob": ProbMemory,
    "life": LifeMemory,
    "lagprob": LagProbMemory,
}


def memory_class(mode: str) -> type[BoundedMemory]:
    """The policy class of ``memory.mode`` (not ``off``: no bound at all)."""
    if mode not in MEMORY_POLICIES:
        raise ConfigError(
            f"memory.mode: no eviction policy {mode!r} (choose from {sorted(MEMORY_POLICIES)})")
    return MEMORY_POLICIES[mode]


def build_memory(config: MemoryConfig, windows_ms: tuple[int, ...],
                 predicate: Predicate) -> BoundedMemory | None:
    """The policy of ``config`` (None when ``off``)."""
    if not config.enabled:
        return None
    return memory_class(config.mode).build(config, windows_ms, predicate)


def restore_memory(config: MemoryConfig, windows_ms: tuple[int, ...], predicate: Predicate,
                   snap: dict[str, Any] | None) -> BoundedMemory | None:
    """Inverse of ``snapshot()`` (None when ``off``)."""
    if not config.enabled:
        return None
    if snap is None:
        raise OperatorStateError(f"memory: no snapshot for mode {config.mode!r}")
    return memory_class(config.mode).from_snapshot(config, windows_ms, predicate, snap)
