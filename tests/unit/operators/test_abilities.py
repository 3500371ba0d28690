"""The run abilities each registered plug-in declares (contract.py ABCs), and what the
engine makes of them once, when it is built: which K policies let K-slack run by
segments, which shedders let the join step take runs, and which joins can."""

from __future__ import annotations

import pytest

from pipeline.operators.contract import (
    AdmitsRuns,
    DropsFromRuns,
    NeverPlans,
    ObservesRuns,
    PlansRuns,
    PluginEnv,
    SteadyK,
)
from pipeline.operators.engine.engine import Engine
from pipeline.operators.registry import shedder_class, slack_policy_class
from pipeline.runtime.resolve import resolve_engine
from pipeline.testing.streams import make_spec

SLACK = {"none": {SteadyK, ObservesRuns}, "fixed": {SteadyK, ObservesRuns},
         "max": {ObservesRuns}, "quality": {SteadyK, ObservesRuns}}
SHEDDERS = {"off": {AdmitsRuns, NeverPlans}, "grubjoin": {DropsFromRuns, PlansRuns},
            "randomdrop": {DropsFromRuns}, "randomdrop-static": {DropsFromRuns},
            "taildrop": {DropsFromRuns}}
ALL = {SteadyK, ObservesRuns, AdmitsRuns, DropsFromRuns, PlansRuns, NeverPlans}


@pytest.mark.parametrize("mode", sorted(SLACK))
def test_slack_policies_declare_their_abilities(mode: str) -> None:
    cls = slack_policy_class(mode)
    assert {a for a in ALL if issubclass(cls, a)} == SLACK[mode]  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", sorted(SHEDDERS))
def test_shedders_declare_their_abilities(mode: str) -> None:
    cls = shedder_class(mode)
    assert {a for a in ALL if issubclass(cls, a)} == SHEDDERS[mode]  # type: ignore[arg-type]


@pytest.mark.parametrize(("predicate", "memory", "runs"), [
    ("band", None, True), ("equi", None, True), ("distance", None, True),
    ("cosine", None, False), ("band", {"mode": "rand", "max_tuples": 30}, False),
])
def test_the_engine_reads_the_abilities_once(predicate: str, memory: dict[str, object] | None,
                                             runs: bool) -> None:
    extra = {"memory": memory} if memory else {}
    for mode in SLACK:
        spec = make_spec(3, predicate, [400, 300, 500], disorder={"mode": mode}, **extra)
        eng = Engine(resolve_engine(spec), PluginEnv(clock=lambda: 0.0))
        assert eng.step.runs is runs  # the plain join, dense predicates, AdmitsRuns
        assert eng.process_many([]) == [] and eng.flush() == []
