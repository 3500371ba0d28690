"""The input validator's contract (ours; ARCHITECTURE §7): its configuration and default
bounds, and what one call returns — the accepted tuples, the rejected ones with their
reasons, the exact duplicates dropped. The rules and the state that applies them:
:class:`~pipeline.operators.validation.validator.InputValidator`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.errors import ConfigError
from pipeline.operators.events import Event

#: the default of ``[disorder] max_future_ms``
DEFAULT_MAX_FUTURE_MS = 60_000
#: the largest K Max-K-slack and quality-driven K may choose, for the default
#: ``max_late_ms``: both follow the observed delays, which nothing bounds, so a delay
#: beyond a minute counts as a fault (raise ``max_late_ms`` for slower feeds)
ADAPTIVE_K_BOUND_MS = 60_000
CLOCK_SIZE = 31
QUORUM = 7


def default_max_late_ms(mode: str, slack_ms: int, windows: Sequence[int]) -> int:
    """The largest window plus the largest K the policy may choose: 0 (``none``),
    ``slack_ms`` (``fixed``), :data:`ADAPTIVE_K_BOUND_MS` (``max``, ``quality``)."""
    k = {"none": 0, "fixed": int(slack_ms)}.get(mode, ADAPTIVE_K_BOUND_MS)
    return int(max(windows)) + k


@dataclass(frozen=True)
class ValidatorConfig:
    """Stream names (for reasons), the two bounds and the clock's size and quorum."""

    streams: tuple[str, ...]
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS
    max_late_ms: int = 120_000
    clock_size: int = CLOCK_SIZE
    quorum: int = QUORUM

    def __post_init__(self) -> None:
        if self.max_future_ms <= 0 or self.max_late_ms <= 0:
            raise ConfigError(f"disorder.max_future_ms/max_late_ms: must be > 0, got "
                              f"{self.max_future_ms}/{self.max_late_ms}")
        if not 1 <= self.quorum <= self.clock_size:
            raise ConfigError(f"validator quorum {self.quorum}: must be in [1, clock_size "
                              f"{self.clock_size}]")


@dataclass
class Rejected:
    """A tuple the validator refused, with the runtime's ``info`` and why."""

    event: Event
    info: Any
    reason: str


@dataclass
class Admission:
    """One call's outcome: the accepted tuples (arrival order, with their ``info``), the
    rejected ones and how many exact duplicates were dropped."""

    accepted: list[tuple[Event, Any]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    duplicates: int = 0


#: (stream, seq) → the engine's copy of that tuple: (event time, attributes or None when
#: only the join's features are known, then compared as ``features``)
Held = Mapping[tuple[int, int], tuple[int, Any]]
#: the engine's copies of some (stream, seq) keys: see
#: :func:`~pipeline.operators.validation.holds.engine_holds`
Lookup = Callable[[Sequence[Event]], Held]
