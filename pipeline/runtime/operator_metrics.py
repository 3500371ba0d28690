"""The join instance's ``operator_metrics`` rows: what its engine's disorder policy and
shedder reported since the last drain, merged per stream time, with the rates in and out
and the instance's own counters (memory, input validation, state bytes, record
accounting) in ``extra``; between two adaptation steps a micro-batch may get a row of
its own (:func:`between_steps`).

``rate_in``/``rate_out`` are tuples/results per second of stream time since the previous
drain (ARCHITECTURE §7); policy-specific numbers go to ``extra``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pipeline.core.profile import PhaseProfile
from pipeline.operators.engine.engine import Engine
from pipeline.runtime.frames import opt_float

#: the fields a drained row fills itself (the others of a row go to ``extra``)
_METRIC_KEYS = ("time", "z", "k_ms", "instant_recall_target", "estimated_recall",
                "measured_recall", "queue_drops")


#: the drained fields a row between two adaptation steps repeats (the shedder's state,
#: which holds until its next step), kept in the instance's ``meta`` under this key
_HELD_FIELDS = ("z", "harvest_fractions")
_LATEST = "latest_metrics"


def between_steps(drained: list[dict[str, Any]], meta: dict[str, Any], now_ms: int,
                  wanted: bool) -> list[dict[str, Any]]:
    """``drained``, or, when it is empty and a row is ``wanted``, one row at ``now_ms``
    repeating the latest drained z and harvest fractions (none before the engine drained
    its first row: then no row). Keeps those latest values in ``meta``."""
    if drained:
        latest = meta.setdefault(_LATEST, {})
        for row in drained:
            latest.update({k: row[k] for k in _HELD_FIELDS if k in row})
        return drained
    if not wanted or _LATEST not in meta:
        return []
    return [{**meta[_LATEST], "time": int(now_ms)}]


def state_size(engine: Engine) -> int:
    """Tuples held in the join windows, K-slack buffers and the Synchronizer."""
    return int(engine.join.state_size() + sum(len(k) for k in engine.kslacks)
               + len(engine.sync))


def memory_extra(engine: Engine) -> dict[str, float]:
    """With ``[memory]`` on, for ``extra``: the evictions so far, ``window_state`` (tuples in
    the join windows, at most ``memory_budget``) and ``kslack_tuples`` (K-slack and
    Synchronizer, outside the bound); nothing when it is off."""
    mem = engine.memory_metrics()
    if mem is None:
        return {}
    return {key: float(mem[key])
            for key in ("evictions", "window_state", "memory_budget", "kslack_tuples")}


def profile_extra(profile: PhaseProfile) -> dict[str, float]:
    """For ``extra``: µs per admitted tuple of each phase since the profile was attached
    (``profile_us_<phase>``), of all phases but probing (``profile_us_unsheddable``) and
    the tuples counted."""
    out = {f"profile_us_{r['phase']}": float(r["us_per_tuple"]) for r in profile.rows()}
    out["profile_us_unsheddable"] = round(profile.us_per_tuple(), 3)
    out["profile_tuples"] = float(profile.tuples)
    return out


def _rates(engine: Engine, meta: dict[str, Any]) -> tuple[float, float]:
    """Tuples in and results out per second of stream time since the previous drain.

    Counters are only known per micro-batch: they are averaged over the stream time since
    the previous drain; counters and the engine clock (arrival time) both stand at the
    end of the batch. Moves ``meta``'s marks to now."""
    stats = engine.stats
    last_t = meta.get("last_time")
    t_end = int(engine.clock)
    span_s = (t_end - last_t) / 1000.0 if last_t is not None and t_end > last_t else 0.0
    d_in = stats.inputs - int(meta.get("last_inputs", 0))
    d_out = stats.results - int(meta.get("last_results", 0))
    meta.update(last_time=t_end, last_inputs=stats.inputs, last_results=stats.results)
    if span_s <= 0:
        return 0.0, 0.0
    return d_in / span_s, d_out / span_s


def metric_rows(drained: list[dict[str, Any]], engine: Engine, meta: dict[str, Any], *,
                instance: str, wall_now: int, recall_target: float,
                extra: Mapping[str, float]) -> list[dict[str, Any]]:
    """``drained`` (``engine.drain_metrics()``) merged per stream time → ``operator_metrics``
    fields; ``extra`` (the instance's counters) joins each row's policy-specific numbers.
    ``meta`` keeps the previous drain's time and counters."""
    merged: dict[int, dict[str, Any]] = {}
    for row in drained:
        merged.setdefault(int(row["time"]), {}).update(row)
    if not merged:
        return []
    rate_in, rate_out = _rates(engine, meta)
    out: list[dict[str, Any]] = []
    for t in sorted(merged):
        row = merged[t]
        fractions = row.get("harvest_fractions") or []
        flat = [float(v) for r in fractions for v in (r if isinstance(r, list) else [r])]
        own = {k: float(v) for k, v in row.items()
               if k not in _METRIC_KEYS and isinstance(v, int | float)
               and not isinstance(v, bool) and math.isfinite(float(v))}
        own.update(extra)
        out.append({
            "kind": "metric", "instance": instance,
            "time": t, "wall_time": wall_now,
            "z": float(row.get("z", 1.0)),
            "harvest_fractions": json.dumps(flat),
            "k_ms": int(row.get("k_ms", engine.slack.current_k())),
            "recall_target": recall_target,
            "instant_recall_target": opt_float(row.get("instant_recall_target")),
            "estimated_recall": opt_float(row.get("estimated_recall")),
            "measured_recall": opt_float(row.get("measured_recall")),
            "rate_in": rate_in,
            "rate_out": rate_out,
            "queue_drops": int(row.get("queue_drops", engine.stats.dropped)),
            "state_size": state_size(engine),
            "extra": json.dumps(own),
        })
    return out
