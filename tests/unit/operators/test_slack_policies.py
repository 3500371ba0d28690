"""Baseline slack policies: none / max / fixed (Ji et al. §V) and the off shedder."""

from __future__ import annotations

import pickle

import pytest

from pipeline.core.errors import OperatorStateError
from pipeline.operators.contract import PluginEnv
from pipeline.operators.events import Event
from pipeline.operators.registry import shedder_class, slack_policy_class
from pipeline.operators.shedding.noshed import NoShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec

DELAYS = [0, 30, 10, 80, 5]


@pytest.mark.parametrize(
    ("mode", "slack_ms", "ks"),
    [
        ("none", 0, [0, 0, 0, 0, 0]),
        ("fixed", 25, [25, 25, 25, 25, 25]),
        ("max", 0, [0, 30, 30, 80, 80]),
    ],
)
def test_k_after_each_arrival(mode: str, slack_ms: int, ks: list[int]) -> None:
    config = resolve_engine(
        make_spec(2, "equi", [10, 10], disorder={"mode": mode, "slack_ms": slack_ms})
    )
    policy = slack_policy_class(mode).create(config, PluginEnv())
    got = []
    for i, d in enumerate(DELAYS):
        policy.observe_arrival(i % 2, 100, d)
        policy.observe_join(i % 2, 100, d, 3, 9, False)
        got.append(policy.current_k())
    assert got == ks
    row = policy.maybe_adapt(1000)
    assert row == {"time": 1000, "k_ms": ks[-1], "policy": mode, "max_delay_ms": 80}
    again = slack_policy_class(mode).from_snapshot(
        config, pickle.loads(pickle.dumps(policy.snapshot())), PluginEnv()
    )
    assert again.current_k() == policy.current_k()
    other = "max" if mode != "max" else "none"
    with pytest.raises(OperatorStateError, match="mode"):
        slack_policy_class(other).from_snapshot(config, policy.snapshot(), PluginEnv())


def test_off_shedder_admits_everything_and_plans_full_scans() -> None:
    config = resolve_engine(make_spec(2, "equi", [10, 10]))
    shed = shedder_class("off").create(config, PluginEnv())
    assert isinstance(shed, NoShedder)
    assert shed.admit(Event(0, 1, 2, 3, {}), 3) is True
    assert shed.plan(0) is None
    assert shed.maybe_adapt(5000) is None
    back = shedder_class("off").from_snapshot(config, shed.snapshot(), PluginEnv())
    assert isinstance(back, NoShedder)
