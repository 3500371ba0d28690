"""The benchmarks `harvest bench <name>` knows: which module runs each, which options it
takes, and ``all`` (every one, in this order).

A benchmark's module defines ``run(quick, results_dir, settings, **options) -> int`` (the
exit code; the results go to ``<results_dir>/<name>.json`` and PNGs). Modules are
imported only when their benchmark runs, so listing the names loads none of them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings

ALL = "all"


@dataclass(frozen=True)
class Benchmark:
    """One `harvest bench` name: the module whose ``run`` it calls and the options
    (``only``: parts to run, ``minutes``: how long, ``repeats``: runs per point) that
    ``run`` accepts."""

    name: str
    module: str
    options: frozenset[str] = frozenset()


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("produce", "bench.produce.main"),
    Benchmark("workloads", "bench.workloads.main"),
    Benchmark("join", "bench.join.main"),
    Benchmark("disorder", "bench.disorder.main", frozenset({"only"})),
    Benchmark("grubjoin", "bench.grubjoin.main", frozenset({"only"})),
    Benchmark("selective", "bench.selective.main"),
    Benchmark("pipeline", "bench.pipeline.main", frozenset({"only", "repeats"})),
    Benchmark("memory", "bench.memory.main"),
    Benchmark("state", "bench.state.main", frozenset({"only"})),
    Benchmark("delivery", "bench.delivery.main"),
    Benchmark("peer", "bench.peer.main", frozenset({"only"})),
    Benchmark("diffusion", "bench.diffusion.main", frozenset({"only"})),
    Benchmark("soak", "bench.soak.main", frozenset({"minutes"})),
    Benchmark("chaos", "bench.chaos.main", frozenset({"minutes", "only"})),
)


def names() -> tuple[str, ...]:
    """Every benchmark name, in the order ``all`` runs them."""
    return tuple(b.name for b in BENCHMARKS)


def selected(name: str) -> tuple[Benchmark, ...]:
    """The benchmark called ``name``, or every one for ``all``; ConfigError otherwise."""
    if name == ALL:
        return BENCHMARKS
    found = tuple(b for b in BENCHMARKS if b.name == name)
    if not found:
        raise ConfigError(f"bench: no benchmark {name!r}; known: {', '.join(names())}, {ALL}")
    return found


def _options(bench: Benchmark, only: str | None, minutes: float | None,
             repeats: int | None = None) -> dict[str, Any]:
    """The options for ``bench``'s run; ConfigError naming one it does not take."""
    given: dict[str, Any] = {}
    if only:
        given["only"] = only
    if minutes is not None:
        given["minutes"] = minutes
    if repeats is not None:
        given["repeats"] = repeats
    for key, value in given.items():
        if key not in bench.options:
            raise ConfigError(f"--{key}: bench {bench.name} does not take it, got {value!r}")
    return given


def run(name: str, quick: bool, results_dir: Path, settings: Settings, *,
        only: str | None = None, minutes: float | None = None,
        repeats: int | None = None) -> int:
    """Run benchmark ``name`` (or ``all``, one after the other); the worst exit code."""
    code = 0
    for bench in selected(name):
        options = _options(bench, only, minutes, repeats)
        module = importlib.import_module(bench.module)
        code = max(code, int(module.run(quick, results_dir, settings, **options)))
    return code
