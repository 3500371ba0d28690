"""`harvest bench <name> [--quick]`: run a benchmark from bench/ and write its results."""

from __future__ import annotations

import argparse
import importlib
import inspect
from pathlib import Path

from pipeline.core.errors import ConfigError
from pipeline.core.settings import Settings

# name -> module in bench/ exposing run(quick: bool, results_dir: Path, settings: Settings) -> int
BENCHMARKS: dict[str, str] = {
    "produce": "bench.produce.main",
    "workloads": "bench.workloads.main",
    "join": "bench.join.main",
    "disorder": "bench.disorder.main",
    "grubjoin": "bench.grubjoin.main",
    "pipeline": "bench.pipeline.main",
    "memory": "bench.memory.main",
    "state": "bench.state.main",
    "delivery": "bench.delivery.main",
    "peer": "bench.peer.main",
    "soak": "bench.soak.main",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `bench` subcommand."""
    p = subparsers.add_parser("bench", help="run a benchmark (JSON + PNG under bench/results/)")
    p.add_argument("name", choices=[*BENCHMARKS, "all"], help="which benchmark")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument(
        "--only", default=None,
        help="comma-separated parts to run, merged into the existing JSON "
             "(grubjoin: optimality,config_time,sweeps,index_effect; pipeline: remeasure; "
             "peer: drain,floor,overhead,streaming,scaling,cluster; default: all)",
    )
    p.add_argument(
        "--minutes", type=float, default=None,
        help="soak: how long to run at 2x capacity (default 20; --quick: 2)",
    )
    p.add_argument(
        "--results-dir", type=Path, default=None, help="where to write (default bench/results)"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch to the benchmark module(s)."""
    names = list(BENCHMARKS) if args.name == "all" else [args.name]
    code = 0
    for name in names:
        module = importlib.import_module(BENCHMARKS[name])
        kwargs = {}
        if getattr(args, "only", None):
            if "only" not in inspect.signature(module.run).parameters:
                raise ConfigError(f"--only: bench {name} does not take it, got {args.only!r}")
            kwargs["only"] = args.only
        if getattr(args, "minutes", None) is not None:
            if "minutes" not in inspect.signature(module.run).parameters:
                raise ConfigError(f"--minutes: bench {name} does not take it, "
                                  f"got {args.minutes!r}")
            kwargs["minutes"] = args.minutes
        results_dir = args.results_dir or settings.results_dir
        code = max(code, int(module.run(args.quick, results_dir, settings, **kwargs)))
    return code
