"""Where an admitted tuple's time goes in a run of `harvest bench pipeline` (issue 28,
item 1): the ``profile`` rows ``{workload, method, load, phase, us_per_tuple, share}`` of
``pipeline.json``.

Python side: the join instances' phase profile (:mod:`pipeline.core.profile`), which
each metrics record carries in ``extra`` as ``profile_us_<phase>`` (µs per admitted
tuple since the profile was attached) and ``profile_tuples``; the last record of each
instance covers its run. JVM side: Spark's ``durationMs`` of the micro-batches that read
input, summed (``harvest submit``'s :class:`~pipeline.spark.submit.JobReport`), per input
row. ``addBatch`` holds the whole execution — Kafka read, Avro decode, routing, shuffle,
Arrow to and from the Python worker, the join, the Kafka sink — so the JVM's own part of
it is ``addBatch`` less the Python side's profiled time (phase ``jvm_execution``); the
other durations (``latestOffset``, ``queryPlanning``, ``walCommit``, ``commitOffsets``, …)
are rows of their own, prefixed ``jvm_``. ``share`` is each phase's part of all the
run's profiled time (Python and JVM), so the shares of a run sum to 1.
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


def python_profile(metrics: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``{"tuples": n, "seconds": {phase: s}}`` summed over the instances; of each, the
    metrics record with the most tuples profiled (the profile is cumulative while the
    instance stays live; a final flush after an idle spell may come from a fresh one
    with none); None if no record carries a profile."""
    last: dict[str, Mapping[str, float]] = {}
    for rec in metrics:
        extra = rec.get("extra") or {}
        key = str(rec.get("instance", ""))
        if "profile_tuples" in extra and float(extra["profile_tuples"]) >= float(
                last.get(key, {}).get("profile_tuples", -1.0)):
            last[key] = extra
    if not last:
        return None
    seconds: dict[str, float] = {}
    tuples = 0
    for extra in last.values():
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


def profile_rows(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``profile`` rows of one run's JSON ``row`` (its ``python_profile``,
    ``jvm_ms`` and ``jvm_rows``): µs per tuple — Python phases per admitted tuple, JVM
    phases per input row — and each phase's share of the run's profiled time."""
    python = row.get("python_profile")
    seconds = phase_seconds(python, row.get("jvm_ms") or {})
    total = sum(seconds.values())
    admitted = int(python["tuples"]) if python else 0
    rows_in = int(row.get("jvm_rows") or 0)
    out = []
    for phase, s in seconds.items():
        n = rows_in if phase.startswith("jvm_") else admitted
        out.append({"workload": row["workload"], "method": row["method"],
                    "load": row.get("load"), "phase": phase,
                    "us_per_tuple": round(s * 1e6 / n, 3) if n > 0 else None,
                    "share": round(s / total, 4) if total > 0 else 0.0})
    return out
