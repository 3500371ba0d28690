"""`harvest bench <name> [--quick]`: run a benchmark of :mod:`bench.registry` and write its
results."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.registry import ALL, names
from bench.registry import run as run_benchmark
from pipeline.core.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `bench` subcommand."""
    p = subparsers.add_parser("bench", help="run a benchmark (JSON + PNG under bench/results/)")
    p.add_argument("name", choices=[*names(), ALL], help="which benchmark")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument(
        "--only", default=None,
        help="comma-separated parts to run, merged into the existing JSON "
             "(grubjoin: optimality,config_time,sweeps,index_effect; disorder: methods,"
             "paper_strength; pipeline: remeasure, instance-profile, "
             "or points workload[:load[:method]], e.g. news-cosine:2; "
             "peer: drain,startup,overhead,latency,scaling,cluster; chaos: faults,at_capacity; "
             "default: all)",
    )
    p.add_argument(
        "--minutes", type=float, default=None,
        help="soak: how long to run at 2x capacity (default 20; --quick: 2); chaos: how long "
        "the faulted run lasts (default 10; --quick: 3)",
    )
    p.add_argument(
        "--repeats", type=int, default=None,
        help="pipeline: runs of each point, alternating between the points; the run with "
        "the median output is the point's row, every run's output in its 'runs' "
        "(default 1)",
    )
    p.add_argument(
        "--results-dir", type=Path, default=None, help="where to write (default bench/results)"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the named benchmark(s) (:func:`bench.registry.run`)."""
    return run_benchmark(args.name, args.quick, args.results_dir or settings.results_dir,
                         settings, only=getattr(args, "only", None),
                         minutes=getattr(args, "minutes", None),
                         repeats=getattr(args, "repeats", None))
