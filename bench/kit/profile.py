"""The join instances' phase profile read back from a run's metrics topic, and a run's
seconds per phase beside Spark's own durations (shared by `harvest bench pipeline`'s
``profile`` rows and `harvest bench peer`'s).

Python side: the join instances' phase profile (:mod:`pipeline.core.profile`), which
each metrics record carries in ``extra`` as ``profile_us_<phase>`` (µs per admitted
tuple since the profile was attached) and ``profile_tuples``; the last record of each
stretch of one live profile covers that stretch, and the stretches add up to the run.
JVM side: Spark's ``durationMs`` of the micro-batches that read input, summed.
``addBatch`` holds the whole execution — Kafka read, Avro decode, routing, shuffle,
Arrow to and from the Python worker, the join, the Kafka sink — so the JVM's own part of
it is ``addBatch`` less the Python side's profiled time (phase ``jvm_execution``); the
other durations (``latestOffset``, ``queryPlanning``, ``walCommit``, ``commitOffsets``,
…) are phases of their own, prefixed ``jvm_``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: the metrics ``extra`` key prefix of a phase's µs per admitted tuple
PREFIX = "profile_us_"
#: derived keys of that family that are not phases
NOT_PHASES = ("unsheddable",)
#: Spark's durations that are not a part of a batch (the total, the time between batches)
JVM_SKIPPED = ("triggerExecution",)


def _stretch_ends(metrics: Iterable[Mapping[str, Any]]) -> list[Mapping[str, float]]:
    """Of each instance's records in order, the last of every stretch of one live profile:
    a profile is cumulative while its instance stays live in a Python worker, and starts
    again at 0 when a worker loads the instance from the state store (another worker took
    the key, a restart, an idle flush), so a record with fewer tuples than the one before
    begins a new stretch."""
    ends: list[Mapping[str, float]] = []
    last: dict[str, Mapping[str, float]] = {}
    for rec in metrics:
        extra = rec.get("extra") or {}
        if "profile_tuples" not in extra:
            continue
        key = str(rec.get("instance", ""))
        prev = last.get(key)
        if prev is not None and float(extra["profile_tuples"]) < float(prev["profile_tuples"]):
            ends.append(prev)
        last[key] = extra
    return ends + list(last.values())


def python_profile(metrics: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``{"tuples": n, "seconds": {phase: s}}`` summed over the instances and over every
    stretch of each (:func:`_stretch_ends`), so the whole run is counted; None if no
    record carries a profile."""
    ends = _stretch_ends(metrics)
    if not ends:
        return None
    seconds: dict[str, float] = {}
    tuples = 0
    for extra in ends:
        n = int(extra["profile_tuples"])
        tuples += n
        for key, us in extra.items():
            phase = key[len(PREFIX):]
            if key.startswith(PREFIX) and phase not in NOT_PHASES:
                seconds[phase] = seconds.get(phase, 0.0) + float(us) * n / 1e6
    return {"tuples": tuples, "seconds": seconds}


def phase_seconds(python: Mapping[str, Any] | None, jvm_ms: Mapping[str, float]
                  ) -> dict[str, float]:
    """Seconds per phase of one run: the Python phases, ``jvm_execution`` = addBatch less
    the Python total (≥ 0), and the other JVM durations as ``jvm_<name>``."""
    out: dict[str, float] = dict((python or {}).get("seconds", {}))
    py_total = sum(out.values())
    for name, ms in jvm_ms.items():
        if name in JVM_SKIPPED:
            continue
        if name == "addBatch":
            out["jvm_execution"] = max(0.0, ms / 1000.0 - py_total)
        else:
            out[f"jvm_{name}"] = ms / 1000.0
    return out
