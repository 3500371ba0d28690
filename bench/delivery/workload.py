"""The job and input of `harvest bench delivery`: the e2e tests' exact band join with
shedding off, the drain and paced inputs."""

from __future__ import annotations

from typing import Any

MODES = ("at-least-once", "exactly-once")
STREAMS = ("s1", "s2", "s3")
WINDOW_MS = 1500
EPSILON = 0.1
DISORDER = "exp:mean=150"
TRIGGER_MS = 1000
IDLE_FLUSH_MS = 2000
#: backlog drain: tuples/s per stream, stream seconds, offsets per micro-batch
DRAIN_RATE, DRAIN_S, DRAIN_OFFSETS = 200.0, 40.0, 6000
#: the unreported warm-up drain's stream seconds
WARMUP_S = 5.0
#: paced run: tuples/s per stream, stream seconds (published at real time)
PACED_RATE, PACED_S = 30.0, 45.0
#: the paced run's band width: results grow as rate³ · ε², so a wider band keeps enough
#: results for a p99 at the low rate
PACED_EPSILON = 0.4
#: the paced run's latencies count between these shares of the input span
STEADY = (0.2, 0.9)


def spec(delivery: str, prefix: str, slack_ms: int, max_offsets: int | None,
          epsilon: float = EPSILON) -> Any:
    from pipeline.spec.model import parse_spec

    job: dict[str, Any] = {
        "workload": "sensors", "routing": "atr", "groups": 2, "segment_ms": 2000,
        "trigger_ms": TRIGGER_MS, "idle_flush_ms": IDLE_FLUSH_MS, "shuffle_partitions": 2,
        "topic_prefix": prefix}
    if max_offsets is not None:
        job["max_offsets_per_trigger"] = max_offsets
    return parse_spec({
        "join": {"streams": list(STREAMS), "window_ms": WINDOW_MS, "predicate": "band",
                 "attribute": "value", "epsilon": epsilon},
        "disorder": {"mode": "fixed", "slack_ms": slack_ms},
        "job": job, "output": {"delivery": delivery},
    })


def records(rate: float, seconds: float, seed: int) -> list[dict[str, Any]]:
    from connectors.workloads import WorkloadSpec, generate, parse_model

    return generate(WorkloadSpec("sensors", streams=len(STREAMS), rates=(rate,),
                                 duration_s=seconds, disorder=(parse_model(DISORDER),),
                                 seed=seed))
