"""What one chaos run runs: its length, the fault schedule, the workload, spec and the
`harvest produce` / `harvest submit` command lines."""

from __future__ import annotations

import json
import math
import statistics
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.kit.output import read_payload
from bench.pipeline.workload import sensor_produce, sensor_spec
from pipeline.core.settings import Settings

KINDS = ("input_leader", "results_leader", "python_worker", "driver")
DEFAULT_MINUTES = 10.0
QUICK_MINUTES = 3.0
#: the input rate against what the Spark job works off as the last chaos run measured it
#: (``capacity.job_rate_per_stream`` of ``chaos.json``: records per second of micro-batch
#: time while the producer ran, :mod:`bench.chaos.capacity`): the share of every trigger
#: the job is busy. The operator's capacity (``soak.json``) is the join instance's alone;
#: beside the producer and three brokers on two cores the job works off about a third of
#: it, and at 1× of its own rate every fault's stall leaves a backlog that the next
#: batches still carry (docs/NOTES.md, issue 33, session 15)
LOAD = 0.6
#: the ``at_capacity`` part: the issue's "1× capacity" read literally, 1× of the demo's
#: capacity (the full join's, ``soak.json``'s ``capacity_rate``, as the demo's probe
#: sizes its rate), else of what the job works off
AT_CAPACITY_LOAD = 1.0
#: the parts `--only` may name: the faulted run at :data:`LOAD` and the one at
#: :data:`AT_CAPACITY_LOAD` (``at_capacity`` in ``chaos.json``)
PARTS = ("faults", "at_capacity")
#: the job rates of this many last runs are kept (``job_rate_history``); the rate is
#: planned from their median, so one run slowed by other load does not set the next one's
HISTORY = 5
#: without a chaos run's measurement: this share of the full join's capacity as `harvest
#: bench soak` measured it (per stream; at a third the committed run of session 11 was
#: already busy all of every trigger)
OPERATOR_SHARE = 1 / 3
#: tuples/s per stream when no capacity was measured (no ``soak.json``)
RATE_PER_STREAM = 100.0
#: seconds a killed node stays down before `harvest kafka start-node`
NODE_DOWN_S = 5.0
#: the first fault, and the gap between faults, in seconds
FIRST_FAULT_S = 45.0
#: a micro-batch reads at most this many triggers' worth of the input (``[job]
#: max_offsets_per_trigger``): a restarted driver works its backlog off in bounded batches
#: that commit one after the other, instead of one batch over all of it during which
#: the next faults fire (docs/NOTES.md)
CATCH_UP_TRIGGERS = 2.0
NODES = 3
MASTER = "local[2,4]"
#: `harvest submit --until-idle`: the last run ends this long after the input stopped
UNTIL_IDLE_S = 30.0


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: its kind and when it fires (seconds after the input starts)."""

    kind: str
    at_s: float


def schedule(minutes: float) -> tuple[Fault, ...]:
    """Faults every ``(run − first − 30 s) / n`` seconds from :data:`FIRST_FAULT_S`, the
    kinds in turn: n = 8 (each kind twice) in runs of 6 minutes or more, else 4."""
    n = 2 * len(KINDS) if minutes >= 6 else len(KINDS)
    span = 60.0 * minutes - FIRST_FAULT_S - 30.0
    gap = span / n
    return tuple(Fault(KINDS[i % len(KINDS)], round(FIRST_FAULT_S + i * gap, 1))
                 for i in range(n))


@dataclass(frozen=True)
class Chaos:
    """One run: its length, rate, topics, files and schedule."""

    quick: bool
    minutes: float
    rate: float
    prefix: str
    workdir: Path
    spec: Any  # pipeline.spec.model.Spec
    faults: tuple[Fault, ...]

    @property
    def spec_path(self) -> Path:
        return self.workdir / "spec.toml"

    @property
    def checkpoint(self) -> Path:
        return self.workdir / "checkpoint"

    @property
    def dump(self) -> Path:
        return self.workdir / "input.jsonl"

    def producer_args(self) -> list[str]:
        """`harvest produce` for the whole run, paced in real time, dumping its records."""
        return ["produce", *sensor_produce(60.0 * self.minutes), "--rate", f"{self.rate:g}",
                "--speedup", "1", "--topic-prefix", self.prefix, "--dump", str(self.dump)]

    def submit_args(self) -> list[str]:
        """`harvest submit` on the run's checkpoint (the same for every restart)."""
        return ["submit", "--spec", str(self.spec_path), "--master", MASTER,
                "--topic-prefix", self.prefix, "--checkpoint", str(self.checkpoint),
                "--until-idle", f"{UNTIL_IDLE_S:g}", "--max-restarts", "3", "--no-ui"]


def soak_capacity(results_dir: Path) -> float | None:
    """Tuples/s per stream the full join sustains on this workload, as `harvest bench
    soak` last measured it (``capacity.capacity_rate`` of ``soak.json``), else None."""
    try:
        data = json.loads((results_dir / "soak.json").read_text())
        return float(data["capacity"]["capacity_rate"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def job_history(results_dir: Path) -> list[float]:
    """The job rates (tuples/s per stream) the last chaos runs measured, oldest first:
    ``job_rate_history`` of ``chaos.json`` (every part's run appends its own), else that
    run's ``capacity.job_rate_per_stream``; [] without a measurement."""
    data = read_payload("chaos", results_dir)
    kept = data.get("job_rate_history")
    if not isinstance(kept, list):
        capacity = data.get("capacity")
        kept = [capacity.get("job_rate_per_stream")] if isinstance(capacity, dict) else []
    return [float(v) for v in kept if isinstance(v, (int, float)) and v > 0][-HISTORY:]


def job_capacity(results_dir: Path) -> float | None:
    """Tuples/s per stream the Spark job works off: the median of :func:`job_history`
    (the last :data:`HISTORY` chaos runs), else None.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "chaos.json").write_text('{"job_rate_history": [300, 500, 900]}')
    >>> job_capacity(d)
    500.0
    """
    history = job_history(results_dir)
    return float(statistics.median(history)) if history else None


def rate_basis(results_dir: Path, load: float = LOAD) -> tuple[float, str]:
    """(tuples/s per stream, what it is based on): ``load`` × the job's measured rate
    (``"job"``, :func:`job_capacity`), else :data:`OPERATOR_SHARE` × ``load`` /
    :data:`LOAD` × the operator's capacity (``"operator"``), else
    :data:`RATE_PER_STREAM` (``"default"``)."""
    job = job_capacity(results_dir)
    if job:
        return round(load * job, 1), "job"
    operator = soak_capacity(results_dir)
    if operator:
        return round(OPERATOR_SHARE * load / LOAD * operator, 1), "operator"
    return RATE_PER_STREAM, "default"


def capacity_basis(results_dir: Path) -> tuple[float, str]:
    """(tuples/s per stream, basis) of the ``at_capacity`` part: :data:`AT_CAPACITY_LOAD`
    × the operator's capacity as `harvest bench soak` measured it (``"operator"``: the
    demo's own notion of capacity, fixed, not fed back), else × the job's rate."""
    operator = soak_capacity(results_dir)
    if operator:
        return round(AT_CAPACITY_LOAD * operator, 1), "operator"
    return rate_basis(results_dir, AT_CAPACITY_LOAD)


def rate_per_stream(results_dir: Path) -> float:
    """The run's input rate per stream (:func:`rate_basis`)."""
    return rate_basis(results_dir)[0]


def max_offsets(rate: float, streams: int, trigger_ms: int) -> int:
    """Records one micro-batch may read: :data:`CATCH_UP_TRIGGERS` triggers of input at
    ``rate`` tuples/s on each of ``streams`` streams.

    >>> max_offsets(100.0, 3, 8000)
    4800
    """
    return max(1, math.ceil(CATCH_UP_TRIGGERS * rate * streams * trigger_ms / 1000.0))


def plan(quick: bool, minutes: float | None, settings: Settings, slack_ms: int,
         rate: float = RATE_PER_STREAM) -> Chaos:
    """The run of ``minutes`` (default 10, quick 3) at ``rate`` tuples/s per stream with
    K = ``slack_ms``; writes its spec."""
    from pipeline.spec.toml import spec_to_toml, with_overrides

    length = minutes if minutes is not None else (QUICK_MINUTES if quick else DEFAULT_MINUTES)
    prefix = f"chaos{uuid.uuid4().hex[:8]}"
    workdir = settings.cache_dir / "bench-chaos" / prefix
    workdir.mkdir(parents=True, exist_ok=True)
    base = sensor_spec("off", settings)
    spec = with_overrides(
        base,
        disorder={"mode": "fixed", "slack_ms": slack_ms},
        job={"topic_prefix": prefix, "speedup": 1.0, "max_staleness_ms": None,
             "max_offsets_per_trigger": max_offsets(rate, len(base.join.streams),
                                                    base.job.trigger_ms)},
        output={"delivery": "exactly-once"},
    )
    chaos = Chaos(quick, length, rate, prefix, workdir, spec, schedule(length))
    chaos.spec_path.write_text(spec_to_toml(spec))
    return chaos
