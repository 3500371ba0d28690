"""Waiting for a streaming query's first micro-batch: it plans the query and starts the
Python workers, so a benchmark publishes its input only after it (the input's timing
then measures the join, not the start-up)."""

from __future__ import annotations

import time
from typing import Any


def wait_first_progress(query: Any, timeout_s: float = 300.0, poll_s: float = 0.5) -> None:
    """Until ``query`` reported its first progress, stopped, or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while not query.recentProgress and query.isActive and time.monotonic() < deadline:
        time.sleep(poll_s)
