"""`harvest produce <workload>`: generate a workload and publish it to Kafka as Avro.

Records go to ``<prefix>.in.<workload>.<stream>`` in arrival order (arrival_time, stream
number, seq), keyed by stream name (so each stream keeps its order within one partition),
paced to real time × ``--speedup`` or as fast as possible with ``--fast``. ``--dump`` writes
the generated records as JSON lines *before* publishing starts, so the ground truth exists
even if publishing fails halfway. Progress bar and summary go to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from connectors.io.topics import input_topic
from connectors.workloads import (
    WORKLOADS,
    DelayModel,
    NoDelay,
    Workload,
    WorkloadSpec,
    generate_workload,
    parse_model,
)
from connectors.workloads.params import WorkloadParams, params_from
from connectors.workloads.spec import PROFILES
from pipeline.cli.args import float_list, non_negative_int, positive_float, positive_int
from pipeline.core.errors import ConfigError, DeliveryError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

# WorkloadSpec field -> the flag that sets it (error messages name the flag)
_FLAGS = {
    "rates": "--rate",
    "lags_s": "--lags",
    "kappas": "--kappas",
    "disorder": "--disorder",
    "streams": "--streams",
    "duration_s": "--duration",
    "seed": "--seed",
    "start_ms": "--start-ms",
    "profile": "--profile",
}

_LOG_EVERY_S = 10.0

DISORDER_HELP = (
    "delay model for all streams, or one per stream separated by ';'. Models: none | "
    "exp:mean=MS | zipf:max=MS,skew=Z[,step=MS] (Ji et al.; step default 10) | "
    "bursty:mean=MS,gap=MS,length=MS,peak=MS. Example: 'zipf:max=20000,skew=2;"
    "zipf:max=20000,skew=3;none' (default: none)"
)


def disorder_arg(text: str) -> tuple[DelayModel, ...]:
    """argparse type of ``--disorder``: the models, checked one by one (count checked later)."""
    parts = [p for p in text.split(";") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError(f"empty disorder spec {text!r}")
    try:
        return tuple(parse_model(p) for p in parts)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def profile_arg(text: str) -> tuple[tuple[float, float], ...]:
    """argparse type of ``--profile``: a named profile (``paper``) or SECONDS:RATE
    segments separated by commas."""
    if text in PROFILES:
        return PROFILES[text]
    out = []
    for part in text.split(","):
        seconds, sep, rate = part.partition(":")
        try:
            seg = (float(seconds), float(rate))
        except ValueError:
            seg = (math.nan, math.nan)
        if not sep or not all(math.isfinite(v) and v > 0 for v in seg):
            raise argparse.ArgumentTypeError(
                f"expected {' or '.join(sorted(PROFILES))} or SECONDS:RATE[,SECONDS:RATE..] "
                f"with both > 0, got {part!r}")
        out.append(seg)
    return tuple(out)


def finite_float(text: str) -> float:
    """A finite float (a lag τ_i may be any real number of seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """A finite float >= 0 (a deviation κ_i)."""
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _workload_arguments(p: argparse.ArgumentParser) -> None:
    """What is generated: the workload, its streams, rates, duration, disorder, seed."""
    p.add_argument("workload", choices=WORKLOADS, help="which generator")
    p.add_argument("--streams", type=positive_int, default=3, help="number of streams M")
    p.add_argument(
        "--rate",
        type=float_list(positive_float),
        default=[100.0],
        help="tuples/s per stream: one value for all or R1,R2,..,RM (default 100)",
    )
    p.add_argument(
        "--duration", type=positive_float, default=60.0, help="seconds of stream time (60)"
    )
    p.add_argument(
        "--lags",
        type=float_list(finite_float),
        default=[],
        help="per-stream lags τ_i in seconds, comma-separated (sensors, news; overlap: the "
        "popularity shift, default i·shift_s)",
    )
    p.add_argument(
        "--profile",
        type=profile_arg,
        default=(),
        help="rates over time for every stream instead of --rate: 'paper' (Gedik et al. "
        "CIKM Fig. 3: 100/s 60 s, 500/s 15 s, 300/s 30 s, 100/s 45 s) or SECONDS:RATE "
        "segments, e.g. 60:100,15:500; the last rate holds to --duration",
    )
    p.add_argument(
        "--kappas",
        type=float_list(non_negative_float),
        default=[],
        help="per-stream deviations κ_i, comma-separated (sensors; default 2)",
    )
    p.add_argument("--disorder", type=disorder_arg, default=(NoDelay(),), help=DISORDER_HELP)
    p.add_argument(
        "--arrivals",
        choices=["even", "poisson"],
        default="even",
        help="event-time spacing: even (1/rate apart, default) or poisson",
    )
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed (0)")
    p.add_argument(
        "--start-ms", type=non_negative_int, default=0, help="event time of the start, ms (0)"
    )


def _publish_arguments(p: argparse.ArgumentParser) -> None:
    """How it is published: pacing, dump, topics and wire format."""
    pacing = p.add_mutually_exclusive_group()
    pacing.add_argument(
        "--speedup",
        type=positive_float,
        default=1.0,
        help="replay speed: X times real time by arrival_time (default 1)",
    )
    pacing.add_argument("--fast", action="store_true", help="publish as fast as possible")
    p.add_argument("--dump", type=Path, default=None, help="also write every record to FILE.jsonl")
    p.add_argument(
        "--dry-run", action="store_true", help="generate (and --dump) only; publish nothing"
    )
    p.add_argument("--topic-prefix", default=None, help="topic prefix (default: settings)")
    p.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE",
        help="a knob of the workload's generator (repeatable), e.g. news "
        "story_interval_s=0.5, overlap kappa=0.6 (connectors/workloads/params.py)",
    )
    p.add_argument(
        "--partitions", type=positive_int, default=1, help="partitions of new topics (1)"
    )
    p.add_argument(
        "--format",
        choices=["avro", "avro-confluent"],
        default="avro",
        help="wire format: avro (single-object encoding, default) or avro-confluent (the "
        "Schema Registry's: magic byte 0 + schema id + body; the schema is registered under "
        "<topic>-value in HARVEST_SCHEMA_REGISTRY_URL or the `harvest registry up` one)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `produce` subcommand."""
    p = subparsers.add_parser(
        "produce",
        help="generate a workload and publish it to Kafka (Avro, arrival order)",
        description="Generate WORKLOAD deterministically (--seed) with the chosen disorder "
        "and publish each stream s1..sM to <prefix>.in.<workload>.<stream>.",
    )
    _workload_arguments(p)
    _publish_arguments(p)
    p.set_defaults(handler=run)


def _params(args: argparse.Namespace) -> WorkloadParams | None:
    """The generator's knobs of ``--param KEY=VALUE`` flags (None: the defaults)."""
    given = getattr(args, "param", None) or []
    if not given:
        return None
    pairs: dict[str, str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param: expected KEY=VALUE, got {text!r}")
        pairs[key.strip()] = value.strip()
    return params_from(args.workload, pairs)


def spec_from_args(args: argparse.Namespace) -> WorkloadSpec:
    """The :class:`WorkloadSpec` of the parsed flags; :class:`ConfigError` names the flag."""
    try:
        return WorkloadSpec(
            workload=args.workload,
            streams=args.streams,
            rates=tuple(args.rate),
            duration_s=args.duration,
            lags_s=tuple(args.lags),
            kappas=tuple(args.kappas),
            disorder=tuple(args.disorder),
            arrivals=args.arrivals,
            seed=args.seed,
            start_ms=args.start_ms,
            params=_params(args),
            profile=tuple(getattr(args, "profile", ())),
        )
    except ConfigError as exc:
        field, sep, rest = str(exc).partition(":")
        if sep and field in _FLAGS:
            raise ConfigError(f"{_FLAGS[field]}:{rest}") from None
        raise


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]produce[/bold]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Generate, dump, publish, summarize. Exit 0 iff every record was delivered."""
    spec = spec_from_args(args)
    prefix = args.topic_prefix or settings.topic_prefix
    try:
        topics = {s: input_topic(prefix, spec.workload, s) for s in spec.stream_names}
    except ConfigError as exc:
        raise ConfigError(f"--topic-prefix: {str(exc).removeprefix('topic_prefix: ')}") from None
    console = Console(stderr=True)

    started = time.monotonic()
    workload = generate_workload(spec)
    log.info(
        "generated",
        workload=spec.workload,
        records=len(workload),
        per_stream=workload.stream_counts(),
        seconds=round(time.monotonic() - started, 3),
    )
    if args.dump is not None:
        written = workload.write_jsonl(args.dump)
        log.info("dump written", path=str(args.dump), records=written)
    if args.dry_run:
        _print_summary(console, workload, topics, None)
        return 0
    return _publish(args, settings, workload, topics, console)


def _publish(
    args: argparse.Namespace,
    settings: Settings,
    workload: Workload,
    topics: dict[str, str],
    console: Console,
) -> int:
    from connectors.io.producer import publish
    from connectors.io.producer_config import Pacing, ProducerConfig
    from connectors.io.serde import AvroSerde

    config = ProducerConfig.from_settings(settings, topic_partitions=args.partitions)
    serde = AvroSerde.from_dir(settings.schemas_dir)
    if args.format == "avro-confluent":
        serde = _confluent_serde(settings, serde, workload.schema, topics)
    pace = None if args.fast else Pacing(speedup=args.speedup)
    with _progress(console) as bar:
        task = bar.add_task("produce", total=len(workload), rate="")
        clock = time.monotonic
        t0 = clock()
        last_log = [t0]

        def advance(n: int) -> None:
            done = bar.tasks[task].completed + n
            now = clock()
            elapsed = now - t0
            rate = f"{done / elapsed:,.0f} rec/s" if elapsed > 0 else ""
            bar.update(task, advance=n, rate=rate)
            if not console.is_terminal and now - last_log[0] >= _LOG_EVERY_S:
                last_log[0] = now  # no live bar (CI, docker): a periodic log line instead
                log.info("producing", sent=int(done), total=len(workload), rate=rate)

        try:
            report = publish(
                workload.iter_records(),
                config=config,
                serde=serde,
                schema_name=workload.schema,
                topic_of=_topic_of(topics),
                key_of=_key_of,
                pace=pace,
                on_progress=advance,
            )
        except DeliveryError as exc:  # the producer failed outright: say what is lost
            partial = getattr(exc, "report", None)
            delivered = partial.delivered if partial is not None else 0
            raise DeliveryError(f"{len(workload) - delivered} of {len(workload)} records "
                                f"not delivered: {exc}") from exc
    _print_summary(console, workload, topics, report)
    if report.failed or report.delivered != len(workload):
        for err in report.errors[:5]:
            console.print(f"[red]delivery error:[/red] {err}")
        console.print(f"[red]{len(workload) - report.delivered} of {len(workload)} records "
                      "not delivered[/red]")
        return 1
    return 0


def _confluent_serde(settings: Settings, own: Any, schema_name: str,
                     topics: dict[str, str]) -> Any:
    """A serde writing the Confluent wire format, ``schema_name`` registered under every
    topic's ``<topic>-value`` subject."""
    from connectors.io.confluent import ConfluentSerde
    from connectors.io.registry_client import RegistryOptions, SchemaRegistry, value_subject

    serde = ConfluentSerde(SchemaRegistry(RegistryOptions.from_settings(settings)))
    entry = serde.register_writer(json.loads(own.schema_json(schema_name)),
                                  [value_subject(t) for t in topics.values()])
    log.info("schema registered", schema=schema_name, schema_id=entry.schema_id,
             subjects=[value_subject(t) for t in topics.values()])
    return serde


def _topic_of(topics: dict[str, str]) -> Callable[[Any], str]:
    def topic_of(record: Any) -> str:
        return topics[record["stream"]]

    return topic_of


def _key_of(record: Any) -> bytes:
    return str(record["stream"]).encode()


def _print_summary(
    console: Console, workload: Workload, topics: dict[str, str], report: Any | None
) -> None:
    """Records per stream and topic, rate achieved, failures (stderr)."""
    table = Table(title=f"harvest produce {workload.spec.workload}", title_justify="left")
    table.add_column("stream")
    table.add_column("topic")
    table.add_column("records", justify="right")
    for stream, count in workload.stream_counts().items():
        table.add_row(stream, topics[stream], f"{count:,}")
    console.print(table)
    if report is None:
        console.print(f"dry run: {len(workload):,} records generated, nothing published")
        return
    console.print(
        f"sent {report.sent:,}  delivered {report.delivered:,}  failed {report.failed:,}  "
        f"in {report.seconds:.2f} s  ({report.rate:,.0f} records/s)"
    )

