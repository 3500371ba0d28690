"""`harvest join`: replay a dump through the in-process engine (K-slack → sync → join)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from pipeline.core.jsonl import iter_jsonl
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.operators.events import JoinResult
from pipeline.runtime.replay import ReplaySummary, load_events, replay
from pipeline.runtime.resolve import resolve_engine
from pipeline.spec.model import load_spec

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `join` subcommand."""
    p = subparsers.add_parser(
        "join",
        help="replay a dump through the in-process join engine",
        description="Replay DUMP.jsonl in arrival order through K-slack, the Synchronizer "
        "and the m-way window join configured by the spec; write results as JSON lines.",
    )
    p.add_argument("--spec", type=Path, required=True, help="job spec (TOML)")
    p.add_argument("--input", type=Path, required=True, help="dump (JSON lines)")
    p.add_argument("--output", type=Path, required=True, help="results (JSON lines)")
    p.add_argument("--metrics", type=Path, default=None, help="operator metrics (JSON lines)")
    p.add_argument("--summary", type=Path, default=None, help="summary (JSON)")
    p.set_defaults(handler=run)


def _print_summary(s: ReplaySummary) -> None:
    print(
        f"inputs={s.inputs} results={s.results} dropped={s.dropped} late={s.late} "
        f"discarded={s.discarded} stream_seconds={s.stream_seconds:.3f} "
        f"cost_per_second={s.cost_per_second:.1f} cpu_seconds={s.cpu_seconds:.2f} "
        f"tuples_per_cpu_second={s.tuples_per_cpu_second:.0f}"
    )
    if s.memory is not None:
        print(f"memory: evictions={s.memory['evictions']} window_state={s.memory['window_state']} "
              f"budget={s.memory['memory_budget']} kslack_tuples={s.memory['kslack_tuples']}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Validate, replay, write results/metrics/summary."""
    spec = load_spec(args.spec)
    config = resolve_engine(spec)
    events = load_events(config, list(iter_jsonl(args.input, "--input")))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    err = Console(stderr=True)
    metrics_handle = None
    if args.metrics is not None:
        args.metrics.parent.mkdir(parents=True, exist_ok=True)
        metrics_handle = args.metrics.open("w", encoding="utf-8")
    try:
        with args.output.open("w", encoding="utf-8") as out:

            def on_results(rows: list[JoinResult]) -> None:
                for r in rows:
                    out.write(json.dumps(r.to_json(), separators=(",", ":")) + "\n")

            def on_metrics(rows: list[dict[str, Any]]) -> None:
                if metrics_handle is not None:
                    for row in rows:
                        metrics_handle.write(json.dumps(row, default=float) + "\n")

            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                disable=not err.is_terminal,
            ) as bar:
                task = bar.add_task("join", total=len(events))
                last_logged = [0]

                def progress(done: int, total: int) -> None:
                    bar.update(task, completed=done)
                    if not err.is_terminal and done - last_logged[0] >= max(1, total // 10):
                        last_logged[0] = done
                        log.info("join progress", done=done, total=total)

                summary = replay(config, events, on_results, on_metrics, progress)
    finally:
        if metrics_handle is not None:
            metrics_handle.close()
    if args.summary is not None:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    _print_summary(summary)
    return 0
