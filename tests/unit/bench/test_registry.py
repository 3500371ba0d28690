"""bench/registry.py: every name `harvest bench` knows runs a module whose ``run`` takes
exactly the options the registry says it does."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from bench.registry import ALL, BENCHMARKS, Benchmark, names, run, selected
from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings

OPTIONS = {"only", "minutes", "repeats"}


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda b: b.name)
def test_each_module_runs_with_the_options_the_registry_names(bench: Benchmark) -> None:
    module = importlib.import_module(bench.module)
    params = inspect.signature(module.run).parameters
    assert list(params)[:3] == ["quick", "results_dir", "settings"]
    assert {p for p in params if p in OPTIONS} == set(bench.options)


def test_all_is_every_benchmark_in_order() -> None:
    assert selected(ALL) == BENCHMARKS
    assert names()[0] == "produce" and len(set(names())) == len(BENCHMARKS)


def test_an_option_a_benchmark_does_not_take_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--minutes: bench join does not take it, got 3\.0"):
        run("join", True, tmp_path, Settings(), minutes=3.0)
    with pytest.raises(ConfigError, match="no benchmark 'nope'"):
        run("nope", True, tmp_path, Settings())


def test_repeats_below_one_and_on_a_benchmark_without_it_are_config_errors(tmp_path: Path
                                                                          ) -> None:
    with pytest.raises(ConfigError, match=r"--repeats: must be >= 1, got 0"):
        run("pipeline", True, tmp_path, Settings(), repeats=0)
    with pytest.raises(ConfigError, match=r"--repeats: bench join does not take it, got 2"):
        run("join", True, tmp_path, Settings(), repeats=2)
