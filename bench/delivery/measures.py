"""One query's numbers in `harvest bench delivery` (a row of ``delivery.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Run:
    """One query's numbers (a row of ``delivery.json``)."""

    phase: str  # drain | paced
    delivery: str
    input_records: int
    results: int  # distinct result ids read back (read_committed)
    true_results: int
    equals_oracle: bool
    duplicates: int  # result records read back (read_committed) − distinct ids
    batches: int
    wall_s: float
    #: drain: input records per second of micro-batch wall time (batches that read input)
    throughput: float | None = None
    results_per_s: float | None = None
    batch_ms_p50: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    latencies: int = 0
    #: exactly-once: median seconds of a micro-batch's transaction and of its commit
    txn_ms_p50: float | None = None
    commit_ms_p50: float | None = None
    transactions: int = 0
    topic_prefix: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
