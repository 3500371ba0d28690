"""`harvest oracle`: the exact join answer of a dump (DuckDB SQL; NumPy brute force for
cosine)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.core.jsonl import read_jsonl, write_jsonl
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.quality.oracle import brute_force_oracle, duckdb_oracle, oracle
from pipeline.spec.model import load_spec

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `oracle` subcommand."""
    p = subparsers.add_parser(
        "oracle",
        help="compute the exact join result of a dump",
        description="Join the complete, sorted dump exactly: window condition and predicate "
        "for every pair of members. DuckDB SQL for equi/band/distance/overlap, NumPy for cosine.",
    )
    p.add_argument("--spec", type=Path, required=True, help="job spec (TOML)")
    p.add_argument("--input", type=Path, required=True, help="dump (JSON lines)")
    p.add_argument("--output", type=Path, required=True, help="true results (JSON lines)")
    p.add_argument(
        "--method",
        choices=["auto", "duckdb", "brute"],
        default="auto",
        help="auto (DuckDB unless cosine), duckdb, or brute (NumPy pair matrices)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Compute and write the true results, sorted by (result_time, id)."""
    spec = load_spec(args.spec)
    records = read_jsonl(args.input, "--input")
    log.info("oracle start", records=len(records), method=args.method)
    if args.method == "duckdb":
        results = duckdb_oracle(spec.join, records)
    elif args.method == "brute":
        results = brute_force_oracle(spec.join, records)
    else:
        results = oracle(spec.join, records)
    n = write_jsonl(args.output, (r.to_json() for r in results))
    print(f"true results: {n} -> {args.output}")
    return 0
