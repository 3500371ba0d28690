"""What a Structured Streaming checkpoint says about the query's micro-batches.

Spark writes ``offsets/<N>`` when micro-batch N is planned (line 1 ``v1``, line 2 its
metadata with ``batchTimestampMs``, then one JSON line per source: for the Kafka source
``{"topic": {"partition": next offset}}``) and ``commits/<N>`` when it has finished. So a
committed batch's duration is the commit file's time minus ``batchTimestampMs``, its
input the growth of the summed offsets, and ``end offset - committed offset`` per
partition the job's lag behind its input. Only a checkpoint on a local file system can
be read (``hdfs://`` and the like: :func:`read_batches` returns nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Batch:
    """One committed micro-batch."""

    batch_id: int
    #: when Spark planned it, epoch ms
    start_ms: int
    #: when its commit file was written, epoch ms
    commit_ms: int
    #: ``(topic, partition) -> next offset`` at its end (every Kafka source of the query)
    offsets: dict[tuple[str, int], int]

    @property
    def duration_ms(self) -> int:
        """Planning to commit, ms."""
        return max(0, self.commit_ms - self.start_ms)

    @property
    def total_offset(self) -> int:
        """The offsets summed over every partition (input rows so far, for differences)."""
        return sum(self.offsets.values())


def is_local(checkpoint: str) -> bool:
    """A path (or ``file:`` URL) this process can read.

    >>> [is_local(c) for c in ("/tmp/ck", "file:///tmp/ck", "hdfs://nn/ck")]
    [True, True, False]
    """
    return "://" not in checkpoint or checkpoint.startswith("file:")


def local_path(checkpoint: str) -> Path:
    """The folder of a local checkpoint (``file:`` URLs unwrapped)."""
    return Path(checkpoint.removeprefix("file://").removeprefix("file:"))


def parse_offsets(text: str) -> tuple[int, dict[tuple[str, int], int]]:
    """``(batchTimestampMs, offsets)`` of an ``offsets/<N>`` file; sources that are not
    Kafka offsets (or ``-``, a source that has no offsets yet) are skipped.

    >>> parse_offsets('v1\\n{"batchTimestampMs":5}\\n{"t":{"0":7,"1":3}}')
    (5, {('t', 0): 7, ('t', 1): 3})
    """
    lines = text.splitlines()
    meta = json.loads(lines[1]) if len(lines) > 1 else {}
    offsets: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        try:
            source = json.loads(line)
        except ValueError:
            continue
        if not isinstance(source, dict):
            continue
        for topic, parts in source.items():
            if isinstance(parts, dict):
                offsets.update({(str(topic), int(p)): int(o) for p, o in parts.items()})
    return int(meta.get("batchTimestampMs", 0)), offsets


def _numbered(folder: Path) -> dict[int, Path]:
    if not folder.is_dir():
        return {}
    return {int(p.name): p for p in folder.iterdir() if p.name.isdigit()}


def read_batches(checkpoint: str, last: int = 60) -> list[Batch]:
    """The last ``last`` committed micro-batches, oldest first (none for a checkpoint
    that is not local, does not exist yet, or is being written: a file that cannot be
    read yet is skipped until the next look)."""
    if not is_local(checkpoint):
        return []
    root = local_path(checkpoint)
    commits = _numbered(root / "commits")
    offsets = _numbered(root / "offsets")
    out = []
    for batch_id in sorted(set(commits) & set(offsets))[-last:]:
        try:
            start_ms, parts = parse_offsets(offsets[batch_id].read_text())
            commit_ms = int(commits[batch_id].stat().st_mtime * 1000)
        except (OSError, ValueError):
            continue
        out.append(Batch(batch_id, start_ms, commit_ms, parts))
    return out
