"""`harvest evaluate`: recall, precision and recall per period of join results vs the truth."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline.cli.args import positive_int
from pipeline.core.jsonl import read_jsonl
from pipeline.core.settings import Settings
from pipeline.quality.evaluate import evaluate


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `evaluate` subcommand."""
    p = subparsers.add_parser(
        "evaluate",
        help="recall/precision of join results against the oracle",
        description="Compare RESULTS with TRUE (both JSON lines of join results, "
        "deduplicated by id): recall, precision and recall per period of result time.",
    )
    p.add_argument("--truth", type=Path, required=True, help="oracle output (JSON lines)")
    p.add_argument("--results", type=Path, required=True, help="join output (JSON lines)")
    p.add_argument(
        "--period-ms", type=positive_int, default=None, help="also report recall per period P"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Print the quality report."""
    q = evaluate(
        read_jsonl(args.truth, "--truth"), read_jsonl(args.results, "--results"), args.period_ms
    )
    if args.json:
        print(json.dumps(q.to_json(), indent=2))
        return 0
    print(
        f"recall={q.recall:.6f} precision={q.precision:.6f} true={q.true} "
        f"produced={q.produced} correct={q.correct} duplicates={q.duplicates}"
    )
    if q.periods:
        table = Table(title=f"recall per period P = {q.period_ms} ms")
        for col in ("start", "end", "true", "correct", "recall"):
            table.add_column(col, justify="right")
        for p in q.periods:
            table.add_row(
                str(p.start),
                str(p.start + (q.period_ms or 0)),
                str(p.true),
                str(p.correct),
                f"{p.recall:.4f}",
            )
        Console().print(table)
    return 0
