"""`harvest demo`: broker → producers → Spark job (quality K + GrubJoin) → consumer → oracle."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.cli.args import float_list, non_negative_int, positive_float, ui_flag
from pipeline.core.settings import Settings

#: the defaults of :class:`pipeline.app.demo.DemoConfig` (kept equal by a unit test; the demo
#: module is imported only when the command runs)
DEFAULT_DURATION_S = 150.0
DEFAULT_SPEEDUP = 1.0
DEFAULT_MAX_RATE = 2000.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `demo` subcommand."""
    p = subparsers.add_parser(
        "demo",
        help="run the end-to-end demo (broker, producers, Spark job, consumer, oracle)",
        description="Overload the join on purpose: nonaligned sensor streams at LOAD × the "
        "measured full-join capacity, quality-driven K and GrubJoin shedding in Spark; "
        "prints recall/precision vs the oracle, z and K over time, and writes a figure.",
    )
    p.add_argument("--duration", type=positive_float, default=DEFAULT_DURATION_S,
                   help=f"seconds of stream time (default {DEFAULT_DURATION_S:g})")
    p.add_argument("--speedup", type=positive_float, default=DEFAULT_SPEEDUP,
                   help=f"replay speed: X × real time (default {DEFAULT_SPEEDUP:g})")
    p.add_argument("--load", type=positive_float, default=2.0,
                   help="input rate as a multiple of the measured full-join capacity (2)")
    p.add_argument("--rate", type=positive_float, default=None,
                   help="tuples/s per stream (skips the capacity measurement)")
    p.add_argument("--max-rate", type=positive_float, default=DEFAULT_MAX_RATE,
                   help="upper bound on the derived rate, tuples/s per stream "
                   f"({DEFAULT_MAX_RATE:g})")
    p.add_argument("--disorder", default="zipf:max=3000,skew=2",
                   help="delay model (see `harvest produce --help`)")
    p.add_argument("--lags", type=float_list(), default=[0.0, 5.0, 15.0],
                   help="τ_i in seconds (0,5,15)")
    p.add_argument("--seed", type=non_negative_int, default=7)
    p.add_argument("--master", default="local[2]",
                   help="Spark master (default local[2]; e.g. spark://127.0.0.1:7077)")
    p.add_argument("--spec", type=Path, default=None,
                   help="job spec (default examples/specs/demo.toml)")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where demo.png/demo.json go (default HARVEST_RESULTS_DIR: "
                   "bench/results in a checkout, else HARVEST_CACHE_DIR/results)")
    p.add_argument("--ui", action=argparse.BooleanOptionalAction, default=None,
                   help="the job's Spark UI on 127.0.0.1 (port 4040 or the next free one), "
                   "its URL printed (default: HARVEST_SPARK_UI, on; --no-ui: off)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the demo and print its summary."""
    from rich.console import Console

    from pipeline.app.demo import DemoConfig, run_demo
    from pipeline.app.demo_report import plot, print_summary, summarize

    cfg = DemoConfig(
        spec_path=args.spec, duration_s=args.duration, speedup=args.speedup,
        load=args.load, rate=args.rate, max_rate=args.max_rate, disorder=args.disorder,
        lags_s=tuple(args.lags), seed=args.seed, master=args.master,
        ui=ui_flag(args.ui, settings.spark_ui),
    )
    demo = run_demo(cfg, settings)
    summary = summarize(demo, cfg.duration_s)
    console = Console()
    print_summary(summary, demo, console)
    results_dir = args.results_dir or settings.results_dir
    pngs = [results_dir / "demo.png", demo.workdir / "demo.png"]
    plot(demo, pngs)
    for path in (results_dir / "demo.json", demo.workdir / "summary.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=2, default=float) + "\n")
    console.print(f"figure: {pngs[0]}  (copy in {demo.workdir})")
    return 0 if summary["precision"] == 1.0 else 1
