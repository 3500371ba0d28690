"""``[memory]``: the join memory M and the eviction policy (Das, Gehrke, Riedewald,
"Semantic Approximation of Data Stream Joins", TKDE — the fast-CPU model, §2.3).

Frozen and engine-agnostic (no spec import): the spec's ``MemorySpec`` maps onto it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.errors import ConfigError

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
