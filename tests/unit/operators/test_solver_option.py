"""``[shedding] solver``: auto (exact DP for m ≤ 3, greedy above), greedy (the paper's
greedy double-sided at every m) and exact (m ≤ 3 only: m > 3 exits 2 naming
``shedding.solver``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.errors import ConfigError
from pipeline.operators.contract import PluginEnv
from pipeline.operators.shedding.grubjoin.bruteforce import pareto_dp
from pipeline.operators.shedding.grubjoin.greedy import configure, greedy_double_sided
from pipeline.operators.shedding.grubjoin.shedder import GrubJoinShedder
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import parse_spec
from pipeline.testing.cli import Capture
from pipeline.testing.costmodel import random_model
from pipeline.testing.streams import make_spec


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), m=st.integers(2, 4), n=st.integers(1, 5),
       z=st.floats(0.01, 0.99))
def test_greedy_and_exact_run_what_they_name(seed: int, m: int, n: int, z: float) -> None:
    model = random_model(seed, m, n, 1.0)
    assert np.array_equal(configure(model, z, solver="greedy"),
                          greedy_double_sided(model, z))
    if m <= 3:
        exact = configure(model, z, solver="exact")
        assert np.array_equal(exact, pareto_dp(model, z)[0])
        assert np.array_equal(configure(model, z, solver="auto"), exact)  # auto = exact
    else:
        assert np.array_equal(configure(model, z, solver="auto"),
                              greedy_double_sided(model, z))


def test_exact_refuses_more_than_three_streams() -> None:
    with pytest.raises(ConfigError, match=r"shedding\.solver"):
        configure(random_model(1, 4, 3, 1.0), 0.5, solver="exact")
    with pytest.raises(ConfigError, match=r"shedding\.solver"):
        configure(random_model(1, 3, 3, 1.0), 0.5, solver="fastest")  # type: ignore[arg-type]


def _spec(m: int, solver: str) -> dict[str, object]:
    return {"join": {"streams": [f"s{i}" for i in range(m)], "window_ms": 1000,
                     "predicate": "band", "attribute": "value", "epsilon": 1.0},
            "shedding": {"mode": "grubjoin", "capacity": 1000.0, "solver": solver}}


def test_spec_names_shedding_solver_for_exact_above_three_streams() -> None:
    with pytest.raises(ConfigError, match=r"shedding\.solver: .exact. solves m <= 3"):
        parse_spec(_spec(4, "exact"))
    with pytest.raises(ConfigError, match=r"shedding\.solver"):
        parse_spec(_spec(3, "optimal"))
    for m, solver in ((3, "exact"), (4, "greedy"), (5, "auto")):
        assert parse_spec(_spec(m, solver)).shedding.solver == solver


def test_shedder_refuses_exact_above_three_streams_built_directly() -> None:
    spec = make_spec(4, "band", [400] * 4,
                     shedding={"mode": "grubjoin", "capacity": 1000.0, "solver": "greedy"})
    cfg = resolve_engine(spec)
    from dataclasses import replace

    bad = replace(cfg, shedding=replace(cfg.shedding, solver="exact"))
    with pytest.raises(ConfigError, match=r"shedding\.solver"):
        GrubJoinShedder.create(bad, PluginEnv())


def test_cli_exits_2_naming_shedding_solver(tmp_path: Path, capsys: Capture) -> None:
    spec = tmp_path / "exact4.toml"
    spec.write_text(
        '[join]\nstreams = ["a", "b", "c", "d"]\nwindow_ms = 1000\npredicate = "band"\n'
        'attribute = "value"\nepsilon = 1.0\n\n[shedding]\nmode = "grubjoin"\n'
        'capacity = 1000.0\nsolver = "exact"\n')
    inp = tmp_path / "in.jsonl"
    inp.write_text("")
    from pipeline.cli.main import main

    code = main(["join", "--spec", str(spec), "--input", str(inp),
                 "--output", str(tmp_path / "out.jsonl")])
    assert code == 2 and "shedding.solver" in capsys.readouterr().err
