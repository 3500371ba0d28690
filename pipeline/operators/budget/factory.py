"""The budget source named by ``shedding.budget`` (ARCHITECTURE §5; GrubJoin §IV-A), and
a source restored from its snapshot (:func:`restore_budget`), and a shedder that owns one
restored from its snapshot (:func:`restore_shedder`).

* :func:`make_budget` — a throttled join: the virtual CPU (``virtual``: ``capacity``
  cost units per second of stream time behind ``queue`` tuples) or the wall clock
  (``wall``: nothing dropped);
* :func:`make_queue_budget` — a join behind a bounded input queue that drops arrivals
  (``taildrop``, ``randomdrop-static``, GrubJoin's input buffers): the virtual CPU, or on
  the wall clock a queue bounded in waiting time (``bound_ms`` of stream time).

This is the one place that names the concrete sources; everything else sees the
:class:`~pipeline.operators.budget.protocol.Budget` protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.operators.budget.protocol import Budget
from pipeline.operators.budget.virtual_cpu import VirtualCpu, VirtualCpuConfig
from pipeline.operators.budget.wall import (
    WallBudget,
    WallBudgetConfig,
    WallQueue,
    WallQueueConfig,
)

__all__ = ["make_budget", "make_queue_budget", "restore_budget", "restore_shedder"]


class OwnsBudget(Protocol):
    """A shedder that charges its join to a :class:`Budget` (``shedder.budget``)."""

    budget: Budget


S = TypeVar("S", bound=OwnsBudget)


def make_budget(
    budget: str,
    capacity: float | None,
    queue: int,
    utilization: float,
    clock: Callable[[], float] | None,
    speedup: float,
) -> Budget:
    """The budget source named by ``shedding.budget`` (virtual | wall)."""
    if budget == "virtual":
        if capacity is None:
            raise ConfigError("shedding.capacity: required when budget = 'virtual'")
        return VirtualCpu(VirtualCpuConfig(capacity, queue, utilization))
    if budget == "wall":
        return WallBudget(WallBudgetConfig(speedup, utilization), _clock(clock))
    raise ConfigError(f"shedding.budget: expected virtual|wall, got {budget!r}")


def make_queue_budget(
    budget: str,
    capacity: float | None,
    queue: int,
    bound_ms: float,
    utilization: float,
    clock: Callable[[], float] | None,
    speedup: float,
    batch_lag: bool = False,
    serve_overhead: bool = True,
) -> Budget:
    """A budget that drops arrivals from a bounded input queue (``taildrop``,
    ``randomdrop-static``): the virtual CPU with ``queue`` tuples, or the wall clock with
    a backlog bound of ``bound_ms`` of stream time (``batch_lag``: stretched by the
    running batch's lag too, :meth:`WallQueue.stretch_at`; ``serve_overhead``: a batch's
    time outside the join fills it too)."""
    if budget == "wall":
        return WallQueue(WallQueueConfig(speedup, utilization, bound_ms, batch_lag,
                                         serve_overhead), _clock(clock))
    return make_budget(budget, capacity, queue, utilization, clock, speedup)


def restore_budget(budget: Budget, snap: dict[str, Any]) -> Budget:
    """A budget of the same kind, config and clock as ``budget`` (made by
    :func:`make_budget` or :func:`make_queue_budget`) with the state of ``snap``."""
    return budget.restored(snap)


def restore_shedder(mode: str, snap: dict[str, Any], make: Callable[[], S],
                    load: Callable[[S], None]) -> S:
    """The shedder of ``mode`` in the state of ``snap``: a fresh one from ``make``, its
    budget restored from ``snap["budget"]`` (:func:`restore_budget`), then the rest of
    its state by ``load``. Raises :class:`~pipeline.core.errors.OperatorStateError` for
    another mode's snapshot or one it cannot read."""
    if snap.get("mode") != mode:
        raise OperatorStateError(f"not a {mode} shedder snapshot: {snap.get('mode')!r}")
    obj = make()
    try:
        obj.budget = restore_budget(obj.budget, snap["budget"])
        load(obj)
    except (KeyError, TypeError, ValueError) as exc:
        raise OperatorStateError(f"cannot restore {mode} shedder: {exc!r}") from exc
    return obj


def _clock(clock: Callable[[], float] | None) -> Callable[[], float]:
    if clock is None:
        raise ConfigError("shedding.budget: 'wall' needs a clock callable to be injected")
    return clock
