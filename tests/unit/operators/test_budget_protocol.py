"""The budget sources behind one protocol: the factory's sources say what they can do
(wall clock, a queue bounded in waiting time) and restore to the same state."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from pipeline.operators.budget.factory import make_budget, make_queue_budget, restore_budget
from pipeline.operators.budget.protocol import Budget


def _clock() -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: next(ticks) * 0.001


def _sources() -> dict[str, Budget]:
    return {
        "virtual": make_budget("virtual", 100.0, 10, 1.0, None, 1.0),
        "wall": make_budget("wall", None, 10, 0.8, _clock(), 1.0),
        "virtual-queue": make_queue_budget("virtual", 100.0, 10, 500.0, 1.0, None, 1.0),
        "wall-queue": make_queue_budget("wall", None, 10, 500.0, 0.8, _clock(), 1.0),
    }


@pytest.mark.parametrize(("name", "wall", "queue"), [
    ("virtual", False, False), ("wall", True, False),
    ("virtual-queue", False, False), ("wall-queue", True, True)])
def test_abilities(name: str, wall: bool, queue: bool) -> None:
    budget = _sources()[name]
    assert (budget.wall() is budget) is wall and (budget.wall() is None) is not wall
    assert (budget.queue() is budget) is queue and (budget.queue() is None) is not queue


@pytest.mark.parametrize("name", ["virtual", "wall", "virtual-queue", "wall-queue"])
def test_restored_keeps_kind_and_state(name: str) -> None:
    budget = _sources()[name]
    for now in range(0, 200, 3):
        if budget.admit(now):
            budget.charge(5.0, now)
    budget.measure(100, 100)
    for now in range(200, 260, 2):
        if budget.admit(now):
            budget.charge(7.0, now)
    snap = budget.snapshot()
    back = restore_budget(_sources()[name], snap)
    assert type(back) is type(budget)
    assert back.snapshot() == snap
    assert (back.wall() is None) == (budget.wall() is None)
    assert (back.queue() is None) == (budget.queue() is None)
