"""Commit times of the job's micro-batches and each fault's ``recovered_s``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def commit_times(checkpoint: Path) -> dict[int, float]:
    """Batch id → when Spark committed it (epoch seconds: the mtime of
    ``<checkpoint>/commits/<id>``)."""
    out: dict[int, float] = {}
    commits = checkpoint / "commits"
    if not commits.is_dir():
        return out
    for path in commits.iterdir():
        if path.name.isdigit():
            out[int(path.name)] = path.stat().st_mtime
    return out


def recovered_s(at_epoch: float, commits: Sequence[float]) -> float | None:
    """Seconds from a fault at ``at_epoch`` to the first commit after it (None: none)."""
    later = [t for t in commits if t > at_epoch]
    return round(min(later) - at_epoch, 2) if later else None
