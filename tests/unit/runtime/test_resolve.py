"""The one resolution path: a spec (+ runtime facts) → the engine's frozen config."""

from __future__ import annotations

import pickle
from dataclasses import asdict, fields
from typing import Any

import numpy as np
import pytest

from pipeline.core.errors import ConfigError
from pipeline.operators.config import DisorderConfig, SheddingConfig
from pipeline.operators.join.predicates import DensePredicate
from pipeline.runtime.resolve import Budget, resolve_engine, runtime_env
from pipeline.spec.model import DisorderSpec, SheddingSpec, parse_spec

JOIN: dict[str, Any] = {"streams": ["s1", "s2", "s3"], "windows_ms": [300, 400, 500],
                        "predicate": "band", "attribute": "value", "epsilon": 0.5}
#: a value different from the default for every key of [disorder] and [shedding]
DISORDER = {"mode": "max", "slack_ms": 7, "recall": 0.9, "period_ms": 30_000,
            "interval_ms": 500, "granularity_ms": 5, "late_estimate": "max", "eq_sel": True,
            "model": "paper", "target_margin": -0.5, "target_headroom": 0.75,
            "stat_rate": 250.0, "max_future_ms": 5_000, "max_late_ms": 9_000}
SHEDDING = {"mode": "grubjoin", "basic_window_ms": 100, "adapt_interval_ms": 2_000,
            "boost": 1.5, "shred_rate": 0.2, "budget": "wall", "capacity": 123.0, "queue": 5,
            "heuristic": "bo", "learn": False, "join_direction": False,
            "partial_window": True, "seed": 3,
            "tuple_cost": 2.0, "learn_tuple_cost": True, "measure_tuple_cost": False,
            "measure_budget": False, "admit_slices": False,
            "calibrate_output": False, "full_by_queue": False, "check_capture": False,
            "probe_cost": 0.5,
            "utilization": 0.7, "solver": "greedy",
            "queue_ms": 900, "batch_lag": True, "queue_overhead": False, "result_us": 12.5,
            "warmup_ms": 4_000}


@pytest.mark.parametrize(("section", "spec_cls", "config_cls"), [
    ("disorder", DisorderSpec, DisorderConfig), ("shedding", SheddingSpec, SheddingConfig),
])
def test_dataclasses_have_the_spec_sections_fields_and_defaults(
    section: str, spec_cls: type[DisorderSpec | SheddingSpec],
    config_cls: type[DisorderConfig | SheddingConfig],
) -> None:
    assert [f.name for f in fields(config_cls)] == list(spec_cls.model_fields)
    assert asdict(config_cls()) == spec_cls().model_dump()
    assert getattr(resolve_engine(parse_spec({"join": JOIN})), section) == config_cls()


def test_every_key_of_every_section_is_carried_over() -> None:
    assert all(DisorderSpec().model_dump()[k] != v for k, v in DISORDER.items())
    assert all(SheddingSpec().model_dump()[k] != v for k, v in SHEDDING.items())
    spec = parse_spec({"join": {**JOIN, "index": True}, "disorder": DISORDER,
                       "shedding": SHEDDING})
    cfg = resolve_engine(spec)
    assert asdict(cfg.disorder) == spec.disorder.model_dump() == DISORDER
    assert asdict(cfg.shedding) == spec.shedding.model_dump() == SHEDDING
    assert cfg.streams == ("s1", "s2", "s3")
    assert cfg.windows == (300, 400, 500)
    assert cfg.predicate == DensePredicate("band", ("value",), 0.5)
    assert cfg.index is True and cfg.join_config().index is True
    assert (cfg.basic_window_ms, cfg.tuple_cost, cfg.probe_cost) == (100, 2.0, 0.5)
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # shipped to the Spark workers as is


@pytest.mark.parametrize(("index", "predicate"), [(False, "band"), (True, "band"),
                                                  (True, "equi")])
def test_index_follows_the_join_section(index: bool, predicate: str) -> None:
    spec = parse_spec({"join": {**JOIN, "predicate": predicate, "index": index}})
    assert resolve_engine(spec).index is index
    assert resolve_engine(spec, budget="wall").index is index


#: (mode, [shedding] budget, capacity, override) → the budget in force, or None = the
#: ConfigError naming shedding.capacity
BUDGETS: list[tuple[str, Budget, float | None, Budget | None, Budget | None]] = [
    ("off", "virtual", None, None, "virtual"),
    ("off", "wall", None, "virtual", "virtual"),
    ("grubjoin", "virtual", 50.0, None, "virtual"),
    ("grubjoin", "virtual", None, None, None),
    ("randomdrop", "virtual", None, None, None),
    ("grubjoin", "wall", None, None, "wall"),
    ("grubjoin", "virtual", None, "wall", "wall"),  # [job] budget = wall inside Spark
    ("grubjoin", "wall", None, "virtual", None),  # [job] budget = virtual, no capacity
    ("randomdrop", "wall", 50.0, "virtual", "virtual"),
]


@pytest.mark.parametrize(("mode", "budget", "capacity", "override", "want"), BUDGETS)
def test_budget_rule(mode: str, budget: Budget, capacity: float | None,
                     override: Budget | None, want: Budget | None) -> None:
    shedding: dict[str, Any] = {"mode": mode, "budget": budget}
    if capacity is not None:
        shedding["capacity"] = capacity
    spec = parse_spec({"join": JOIN, "shedding": shedding})
    if want is None:
        with pytest.raises(ConfigError, match=r"^shedding\.capacity: required"):
            resolve_engine(spec, budget=override)
        return
    cfg = resolve_engine(spec, budget=override)
    assert cfg.shedding.budget == want
    assert cfg.shedding.capacity == capacity
    assert asdict(cfg.shedding) == {**spec.shedding.model_dump(), "budget": want}


def test_custom_predicate_replaces_the_specs() -> None:
    def close(left: Any, right: Any) -> Any:
        return np.abs(left["value"] - right["value"]) < 1.0

    cfg = resolve_engine(parse_spec({"join": JOIN}), custom=close, columns=("value",))
    assert cfg.predicate.kind == "custom" and cfg.predicate.attributes == ("value",)
    with pytest.raises(ConfigError, match="column names"):
        resolve_engine(parse_spec({"join": JOIN}), custom=close)


def test_runtime_env_injects_the_clock_at_the_edge() -> None:
    env = runtime_env(speedup=2.0)
    assert env.clock is not None and env.speedup == 2.0 and env.timer is None
    clock = runtime_env(clock=lambda: 5.0).clock
    assert clock is not None and clock() == 5.0
