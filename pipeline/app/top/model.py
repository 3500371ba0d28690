"""The state behind `harvest top`: operator metrics, result counts and micro-batches folded
into one snapshot per refresh.

Per operator instance (route key): the latest ``operator_metrics`` row (z and the harvest
fractions z_ij, K, queue drops, validation rejects, estimated recall, state size, input
rate), the results it emitted over the last :attr:`TopModel.window_s` seconds of wall
time (``emit_time``), and a history of output rate and z in buckets of
:attr:`TopModel.bucket_s` over :attr:`TopModel.history_s`. Per query: the committed
micro-batches (duration, input rows/s) and the lag behind the input, end offsets minus
committed offsets. The clock is the caller's (wall ms); when the newest record is older
than :data:`STALE_S`, the snapshot is taken at that record (a finished run read with
``--from-beginning`` shows its end, not an empty now).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.app.top.checkpoint import Batch

#: no record for this long: the view shows the newest record's time (the run ended)
STALE_S = 10.0
#: the ``extra`` counters that are rejections of the input validator (its ``jumps`` are
#: clock jumps, not rejections)
REJECT_KEYS = ("validator_duplicates", "validator_future", "validator_late",
               "validator_conflicts")


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(float(value)) else None


def rejects(extra: Mapping[str, Any] | None) -> int | None:
    """Tuples the input validator rejected so far (None without a validator).

    >>> rejects({"validator_late": 2.0, "validator_jumps": 1.0, "validator_future": 1.0})
    3
    """
    if not extra or not any(k in extra for k in REJECT_KEYS):
        return None
    return int(sum(_float(extra.get(k)) or 0.0 for k in REJECT_KEYS))


@dataclass
class Instance:
    """What is known of one operator instance."""

    name: str
    metric: dict[str, Any] | None = None
    #: results per ``emit_time`` second
    emitted: dict[int, int] = field(default_factory=dict)
    #: ``(wall_ms, z)`` of each metrics row
    z_history: deque[tuple[int, float]] = field(default_factory=deque)


def _p50(values: list[float]) -> float | None:
    return sorted(values)[len(values) // 2] if values else None


class TopModel:
    """Folds records in; :meth:`snapshot` is the view's data (JSON-ready)."""

    def __init__(self, *, window_s: float = 5.0, history_s: float = 300.0,
                 bucket_s: float = 5.0) -> None:
        self.window_s = window_s
        self.history_s = history_s
        self.bucket_s = bucket_s
        self.instances: dict[str, Instance] = {}
        self.results = 0
        self.metrics = 0
        self.undecodable = 0
        self.newest_ms: int | None = None
        self.batches: list[Batch] = []
        self.lag: dict[str, int] | None = None

    def _instance(self, name: str) -> Instance:
        if name not in self.instances:
            self.instances[name] = Instance(name)
        return self.instances[name]

    def _seen(self, wall_ms: int) -> None:
        if wall_ms > 0:
            self.newest_ms = wall_ms if self.newest_ms is None else max(self.newest_ms, wall_ms)

    def add_metric(self, record: Mapping[str, Any]) -> None:
        """One ``operator_metrics`` record."""
        self.metrics += 1
        inst = self._instance(str(record.get("instance", "")))
        wall = int(record.get("wall_time") or 0)
        last = inst.metric
        if last is None or (wall, int(record.get("time") or 0)) >= (
                int(last.get("wall_time") or 0), int(last.get("time") or 0)):
            inst.metric = dict(record)
        z = _float(record.get("z"))
        if z is not None:
            inst.z_history.append((wall, z))
        self._seen(wall)

    def add_result(self, record: Mapping[str, Any] | None) -> None:
        """One result record (None: a record that did not decode; counted only)."""
        self.results += 1
        if record is None:
            self.undecodable += 1
            return
        emit = int(record.get("emit_time") or 0)
        inst = self._instance(str(record.get("instance", "")))
        second = emit // 1000
        inst.emitted[second] = inst.emitted.get(second, 0) + 1
        self._seen(emit)

    def set_batches(self, batches: list[Batch]) -> None:
        """The query's latest committed micro-batches (oldest first)."""
        self.batches = batches

    def set_lag(self, end: Mapping[tuple[str, int], int]) -> None:
        """Records behind per input topic: ``end`` offsets minus the last committed
        batch's (partitions without an end offset are left out)."""
        if not self.batches:
            self.lag = None
            return
        lag: dict[str, int] = {}
        for (topic, partition), committed in self.batches[-1].offsets.items():
            high = end.get((topic, partition))
            if high is not None:
                lag[topic] = lag.get(topic, 0) + max(0, high - committed)
        self.lag = lag

    def as_of(self, wall_ms: float) -> tuple[float, bool]:
        """The snapshot's time and whether the run is live (see :data:`STALE_S`)."""
        if self.newest_ms is not None and wall_ms - self.newest_ms > STALE_S * 1000:
            return float(self.newest_ms), False
        return wall_ms, True

    def _prune(self, now_ms: float) -> None:
        horizon = now_ms - self.history_s * 1000.0
        for inst in self.instances.values():
            while inst.z_history and inst.z_history[0][0] < horizon:
                inst.z_history.popleft()
            for second in [s for s in inst.emitted if s * 1000 < horizon]:
                del inst.emitted[second]

    def _out_rate(self, inst: Instance, end_ms: float, span_s: float) -> float:
        """Results per second over the ``span_s`` whole seconds before the one
        ``end_ms`` falls in (a second still running is not counted)."""
        hi = int(end_ms // 1000)
        span = max(1, round(span_s))
        return sum(c for s, c in inst.emitted.items() if hi - span <= s < hi) / span

    def _history(self, inst: Instance, now_ms: float) -> dict[str, list[float | None]]:
        """Output rate and mean z per bucket over the history, oldest first."""
        n = max(1, int(self.history_s / self.bucket_s))
        out: list[float | None] = []
        zs: list[float | None] = []
        for i in range(n):
            end = now_ms - (n - 1 - i) * self.bucket_s * 1000.0
            out.append(round(self._out_rate(inst, end, self.bucket_s), 3))
            inside = [z for t, z in inst.z_history if end - self.bucket_s * 1000.0 <= t < end]
            zs.append(round(sum(inside) / len(inside), 4) if inside else None)
        return {"out_per_s": out, "z": zs}

    def _row(self, inst: Instance, now_ms: float) -> dict[str, Any]:
        m = inst.metric or {}
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
        return {
            "instance": inst.name,
            "in_per_s": _float(m.get("rate_in")),
            "out_per_s": round(self._out_rate(inst, now_ms, self.window_s), 3),
            "out_per_s_stream": _float(m.get("rate_out")),
            "z": _float(m.get("z")),
            "harvest_fractions": [float(v) for v in m.get("harvest_fractions") or []],
            "k_ms": m.get("k_ms"),
            "queue_drops": m.get("queue_drops"),
            "rejects": rejects(extra),
            "estimated_recall": _float(m.get("estimated_recall")),
            "recall_target": _float(m.get("recall_target")),
            "state_size": m.get("state_size"),
            "stream_time": m.get("time"),
            "history": self._history(inst, now_ms),
        }

    def _job(self) -> dict[str, Any]:
        """The query's micro-batches: count, durations, input rows/s, lag."""
        b = self.batches
        rate = None
        if len(b) >= 2 and b[-1].commit_ms > b[0].commit_ms:
            rate = round((b[-1].total_offset - b[0].total_offset)
                         / ((b[-1].commit_ms - b[0].commit_ms) / 1000.0), 1)
        return {
            "batches": b[-1].batch_id + 1 if b else 0,
            "batch_ms_last": b[-1].duration_ms if b else None,
            "batch_ms_p50": _p50([float(x.duration_ms) for x in b[-20:]]),
            "input_rows_per_s": rate,
            "lag": None if self.lag is None else {"total": sum(self.lag.values()),
                                                  "topics": dict(sorted(self.lag.items()))},
        }

    def snapshot(self, wall_ms: float) -> dict[str, Any]:
        """The view's data at ``wall_ms`` (JSON-ready; one line of ``--json``)."""
        now, live = self.as_of(wall_ms)
        self._prune(now)
        return {
            "as_of_ms": int(now), "live": live,
            "job": self._job(),
            "totals": {"results": self.results, "metrics": self.metrics,
                       "undecodable_results": self.undecodable},
            "instances": [self._row(self.instances[k], now)
                          for k in sorted(self.instances, key=_instance_order)],
        }


def _instance_order(name: str) -> tuple[int, str]:
    """Route keys in numeric order ("2" before "10")."""
    return (int(name), "") if name.isdigit() else (1 << 62, name)
