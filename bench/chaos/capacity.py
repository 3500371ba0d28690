"""What the Spark job sustained in a chaos run: records read per second of micro-batch
time while the producer ran, from the checkpoint's ``offsets/`` and ``commits/`` files.

A micro-batch's span runs from its offsets file (written when the batch is planned) to
its commit file; the records it read are the growth of the summed end offsets over the
batch before it. The job's rate is Σ records / Σ span over the batches that started after
the input did, committed before it ended, and had no fault fired inside their span, less
the first batch that read records (the PySpark workers start and import, the state is
created: 21.5 s for 11,323 records where the next took 14.5 s for 28,549) — the
tuples/s the whole job (decode, join, exactly-once output) works off on this machine
beside the producer and the brokers. A batch that read less than a backlog also spent its
fixed per-batch cost on fewer records, so the rate is a lower bound of what the job could
read: the bench's rate converges to where the job is busy :data:`~bench.chaos.plan.LOAD`
of every trigger (docs/NOTES.md, issue 33, session 15).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Batch:
    """One committed micro-batch: its id, span (epoch seconds) and records read."""

    batch: int
    started: float
    committed: float
    records: int

    @property
    def span_s(self) -> float:
        return self.committed - self.started


def _end_offset(path: Path) -> int:
    """The summed end offsets of every partition in an offsets file (its last line)."""
    sources = json.loads(path.read_text().splitlines()[-1])
    return sum(int(o) for source in sources.values() for o in source.values())


def batches(checkpoint: Path) -> list[Batch]:
    """The committed micro-batches of ``checkpoint``, in batch order."""
    offsets, commits = checkpoint / "offsets", checkpoint / "commits"
    if not commits.is_dir():
        return []
    done = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    out: list[Batch] = []
    before = 0
    for batch in done:
        planned = offsets / str(batch)
        if not planned.is_file():
            continue
        end = _end_offset(planned)
        out.append(Batch(batch, planned.stat().st_mtime, (commits / str(batch)).stat().st_mtime,
                         end - before))
        before = end
    return out


def job_rate(done: Sequence[Batch], input_span: tuple[float, float],
             faults: Sequence[float]) -> tuple[float, int] | None:
    """(records/s of batch time, batches counted) over the batches inside ``input_span``
    (epoch start, end) after the first that read records, with none of the ``faults``
    (epochs) in their span; None when no batch qualifies.

    >>> done = [Batch(0, 2.0, 9.0, 0), Batch(1, 10.0, 19.0, 100),
    ...         Batch(2, 20.0, 24.0, 400), Batch(3, 25.0, 27.0, 200),
    ...         Batch(4, 28.0, 38.0, 900), Batch(5, 40.0, 44.0, 300)]
    >>> job_rate(done, (1.0, 43.0), faults=[30.0])
    (100.0, 2)
    """
    lo, hi = input_span
    read = [b for b in done if b.records > 0]
    quiet = [b for b in read[1:] if b.started >= lo and b.committed <= hi
             and not any(b.started <= f <= b.committed for f in faults)]
    span = sum(b.span_s for b in quiet)
    if not quiet or span <= 0:
        return None
    return sum(b.records for b in quiet) / span, len(quiet)
