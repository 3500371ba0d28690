"""Adaptive ATR's per-micro-batch routing state, kept in the checkpoint (ARCHITECTURE §6).

Micro-batch b routes under state(b) (:class:`pipeline.diffusion.batches.BatchRouting`),
state(b + 1) = state(b).step(what batch b observed). The files, under
``<checkpoint>/harvest-route-epochs/``::

    state-<b>.json           state(b), written once by the first task that needs it
    obs-<b>/route-<p>.json   routing task p of batch b: tuples per stream and interval,
                             the largest and the median timestamp, the log's horizon
    obs-<b>/key-<k>.json     instance k after batch b: cost units, window tuples, received,
                             join time

No driver code runs between two micro-batches, so the tasks of batch b derive state(b)
themselves: the newest state file before b folded forward over the observations of the
batches in between. Batch b starts only once batch b − 1 is committed, so by then every
observation it folds is final, and every task computes the same state(b); the first one
writes it (a temporary file renamed into place: readers never see half a file, two
writers write the same bytes). A replayed batch finds state(b) and routes as before,
whatever its instances' timers did the first time. The routing tasks and the instances
read and write the files directly, so the checkpoint must be a directory every executor
sees at the same path (``harvest submit`` takes local paths: local mode, or a shared
mount on a cluster). Files more than :data:`KEEP_BATCHES` batches old are deleted.

Plain Python file I/O, run on the executors, in the Python workers (Spark only for the
running task's batch id, :func:`running_batch`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.core.errors import ConfigError, OperatorStateError
from pipeline.diffusion.batches import BatchConfig, BatchRouting, TaskObservation

ROUTE_DIR = "harvest-route-epochs"
#: the local property Spark sets to the running micro-batch's id
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: state and observation files kept behind the newest state (a replay needs the last one)
KEEP_BATCHES = 8
_STATE = re.compile(r"^state-(\d+)\.json$")
_OBS = re.compile(r"^obs-(\d+)$")


def running_batch() -> tuple[int, int]:
    """``(micro-batch id, partition)`` of the running task (Spark's local property
    :data:`BATCH_ID_PROPERTY` reaches the Python workers)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    raw = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    if ctx is None or raw is None:
        raise ConfigError("job.segment_keys: adaptive ATR routes inside a streaming "
                          "micro-batch only (no batch id in this task)")
    return int(raw), int(ctx.partitionId())


@dataclass(frozen=True)
class RouteStore:
    """The route state files of one checkpoint (pickled to the executors)."""

    checkpoint: str
    config: BatchConfig

    @property
    def folder(self) -> Path:
        return Path(self.checkpoint) / ROUTE_DIR

    # -- reading ----------------------------------------------------------------------------
    def _read(self, path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise OperatorStateError(f"{path}: unreadable routing state ({exc})") from exc

    def _batches(self, pattern: re.Pattern[str]) -> list[int]:
        if not self.folder.is_dir():
            return []
        found = (pattern.match(name) for name in os.listdir(self.folder))
        return sorted(int(m.group(1)) for m in found if m)

    def observations(self, batch: int) -> tuple[list[TaskObservation], dict[int, list[float]]]:
        """Batch ``batch``'s routing tasks' observations and its instances' usage."""
        tasks: list[TaskObservation] = []
        keys: dict[int, list[float]] = {}
        folder = self.folder / f"obs-{batch}"
        if not folder.is_dir():
            return tasks, keys
        for name in sorted(os.listdir(folder)):
            if name.startswith("route-") and name.endswith(".json"):
                tasks.append(TaskObservation.from_snapshot(self._read(folder / name)))
            elif name.startswith("key-") and name.endswith(".json"):
                keys[int(name[4:-5])] = [float(x) for x in self._read(folder / name)]
        return tasks, keys

    def state(self, batch: int) -> BatchRouting:
        """state(``batch``): its file, else derived from the newest earlier one (or the
        initial state) and the observations since, and written. A checkpoint whose state
        was written under another config (the spec's routing keys changed) starts over
        with static ATR from this batch."""
        path = self.folder / f"state-{batch}.json"
        mine = BatchRouting.initial(self.config)
        if path.exists():
            got = BatchRouting.from_snapshot(self._read(path))
            if got.config == self.config:
                return got
        earlier = [b for b in self._batches(_STATE) if b < batch]
        start, cur = batch, mine
        if earlier:
            prev = BatchRouting.from_snapshot(
                self._read(self.folder / f"state-{earlier[-1]}.json"))
            if prev.config == self.config:  # else the spec changed: start over
                start, cur = earlier[-1], prev
        else:
            seen = [b for b in self._batches(_OBS) if b < batch]
            start = seen[0] if seen else batch
        for b in range(start, batch):
            cur = cur.step(*self.observations(b))
        self._write(path, cur.snapshot())
        self._prune(batch)
        return cur

    # -- writing ----------------------------------------------------------------------------
    def _write(self, path: Path, content: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(content), encoding="utf-8")
        os.replace(tmp, path)

    def put_task(self, batch: int, partition: int, obs: TaskObservation) -> None:
        """Routing task ``partition`` of ``batch`` saw ``obs``."""
        self._write(self.folder / f"obs-{batch}" / f"route-{partition}.json", obs.snapshot())

    def put_key(self, batch: int, key: int, usage: Sequence[float]) -> None:
        """Instance ``key`` after ``batch``: [cost units, window tuples, tuples received,
        join time]."""
        self._write(self.folder / f"obs-{batch}" / f"key-{key}.json",
                    [float(x) for x in usage])

    def _prune(self, batch: int) -> None:
        """Delete the states and observations :data:`KEEP_BATCHES` before ``batch``."""
        limit = batch - KEEP_BATCHES
        for b in self._batches(_STATE):
            if b < limit:
                (self.folder / f"state-{b}.json").unlink(missing_ok=True)
        for b in self._batches(_OBS):
            if b < limit:
                shutil.rmtree(self.folder / f"obs-{b}", ignore_errors=True)


def read_states(checkpoint: str) -> Mapping[int, dict[str, Any]]:
    """Every state file kept in ``checkpoint`` (batch → snapshot): for tests and reports."""
    folder = Path(checkpoint) / ROUTE_DIR
    if not folder.is_dir():
        return {}
    out = {}
    for name in os.listdir(folder):
        m = _STATE.match(name)
        if m:
            out[int(m.group(1))] = json.loads((folder / name).read_text(encoding="utf-8"))
    return out
