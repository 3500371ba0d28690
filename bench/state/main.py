"""The run of `harvest bench state` (the package docstring says what it measures): the parts
asked for, merged into the existing ``state.json``, the table and the PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from bench.kit.output import read_payload, write_json
from bench.kit.parts import only_parts
from bench.state.processor import run_processor
from bench.state.report import plot, print_table
from bench.state.spark import run_spark
from pipeline.core.settings import Settings

PARTS = ("processor", "spark")


def _parts(only: str | None) -> list[str]:
    """The parts ``--only`` names (all when empty); ConfigError naming an unknown one."""
    return only_parts(only, PARTS)


def _previous(path: Path, parts: list[str]) -> dict[str, Any]:
    """The existing JSON a partial run merges into (without its run metadata)."""
    if set(parts) == set(PARTS):
        return {}
    return read_payload(path.stem, path.parent)


def run(quick: bool, results_dir: Path, settings: Settings, only: str | None = None) -> int:
    """Run every part (or ``only`` = comma-separated subset of PARTS), print a table,
    write state.json + state.png; a partial run merges its keys into the existing JSON."""
    console = Console()
    parts = _parts(only)
    payload = _previous(results_dir / "state.json", parts)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn(
            "{task.completed}/{task.total}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        if "processor" in parts:
            payload.update(run_processor(quick, progress))
        if "spark" in parts:
            payload["spark"] = run_spark(quick, settings.cache_dir / "bench-state", progress)
    payload["parts_last_run"] = parts
    path = write_json("state", payload, results_dir)
    png = plot(payload, results_dir)
    print_table(payload, console)
    console.print(f"wrote {path} and {png}")
    return 0
