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

from collections.abc import Mapping
from typing import Any

from bench.kit.profile import phase_seconds


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
