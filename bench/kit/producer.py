"""The producer child of a benchmark: a `harvest produce` process publishing a generated
workload to the run's topics, paced, beside the query."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.core.procs import Child


def start_producer(args: Sequence[str], workdir: Path, bootstrap: str) -> Child:
    """`harvest produce <args>` against ``bootstrap``, its logs in ``workdir``."""
    return Child("produce", ["produce", *args], workdir,
                 {"HARVEST_BOOTSTRAP_SERVERS": bootstrap})
