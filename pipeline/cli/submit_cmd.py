"""`harvest submit --spec S`: run the Spark Structured Streaming job (pipeline.spark).

Reads ``<prefix>.in.<workload>.<stream>`` for the spec's streams — or the ``[inputs]``
topics, which it never creates (a missing one fails it within 30 s) — and writes results
to ``<prefix>.results``, operator metrics to ``<prefix>.metrics`` and undecodable records
to ``<prefix>.deadletter`` (or the ``[output]`` topics). ``--passthrough`` (or
``[job] mode = "passthrough"``) re-encodes the decoded input to ``<prefix>.results``
instead of joining. Prints a JSON summary line (batches, input rows, results, metrics,
dead letters) on stdout when it stops. The Spark UI runs on 127.0.0.1 (port 4040 or the
next free one; a remote master: Spark's own address) and its URL is logged as
``spark ui``; the streaming query is named ``<spec>-<mode>-<prefix>`` (``--name``,
default the spec file's name). ``--no-ui`` turns the UI off (``HARVEST_SPARK_UI=false``:
off unless ``--ui``).
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from pipeline.cli.args import non_negative_int, positive_float, positive_int, ui_flag
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings
from pipeline.spec.model import load_spec

log = get_logger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `submit` subcommand."""
    p = subparsers.add_parser(
        "submit",
        help="run the Spark streaming join job (Kafka in, Kafka out)",
        description="Run the harvest Structured Streaming job on Spark: decode Avro input "
        "topics, K-slack + synchronize + m-way join per route key (transformWithStateInPandas "
        "on the RocksDB state store), results/metrics/dead letters back to Kafka.",
    )
    p.add_argument("--spec", required=True, help="job spec TOML ([join] [disorder] "
                   "[shedding] [job])")
    p.add_argument("--master", default="local[*]",
                   help="Spark master URL: local[*] (default), local[N], spark://host:7077")
    p.add_argument("--until-idle", type=positive_float, default=None, metavar="S",
                   help="stop after S seconds without new input (default: run until Ctrl-C)")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="checkpoint directory (default: [job] checkpoint, else "
                   "HARVEST_CACHE_DIR/checkpoints/<prefix>-<mode>)")
    p.add_argument("--passthrough", action="store_true",
                   help="decode and re-encode the input to <prefix>.results (no join)")
    p.add_argument("--topic-prefix", default=None,
                   help="topic prefix (default: [job] topic_prefix, else HARVEST_TOPIC_PREFIX)")
    p.add_argument("--workload", default=None,
                   choices=["sensors", "news", "equi", "positions"],
                   help="input workload (default: [job] workload)")
    p.add_argument("--driver-memory", default="1g", help="Spark driver memory (default 1g)")
    p.add_argument("--max-offsets-per-trigger", type=positive_int, default=None,
                   help="override [job] max_offsets_per_trigger")
    p.add_argument("--max-restarts", type=non_negative_int, default=0, metavar="N",
                   help="after a failure, restart the job from its checkpoint (backoff 2 s, "
                   "doubling up to 60 s; each restart is logged); exit 1 after N restarts "
                   "(default 0: fail at once)")
    p.add_argument("--ui", action=argparse.BooleanOptionalAction, default=None,
                   help="the Spark UI on 127.0.0.1, port 4040 or the next free one; its URL "
                   "is logged at start (default: HARVEST_SPARK_UI, on; --no-ui: off)")
    p.add_argument("--name", default=None,
                   help="names the streaming query <name>-<mode>-<prefix> in the Spark UI "
                   "(default: the spec file's name, e.g. sensors)")
    p.set_defaults(handler=run)


#: how long `harvest submit` waits for missing [inputs] topics before it fails
INPUTS_TIMEOUT_S = 30.0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM → KeyboardInterrupt, so the query stops cleanly (checkpoint consistent)."""
    raise KeyboardInterrupt


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of `harvest submit`."""
    # imported here so `harvest --help` and other subcommands never start a JVM
    from pipeline.spark.session import (
        SessionConfig,
        build_session,
        connector_jars,
        native_allocator,
        ui_url,
    )
    from pipeline.spark.submit import (
        check_spark_routing,
        check_until_idle,
        job_config,
        report_line,
        submit_supervised,
        wait_for_inputs,
    )

    spec = load_spec(args.spec)
    check_spark_routing(spec)  # before the jars: CTR exits 2 naming the key
    jars = connector_jars(settings)  # missing: exit 2, run `harvest setup`
    if args.max_offsets_per_trigger is not None:
        job = spec.job.model_copy(update={"max_offsets_per_trigger": args.max_offsets_per_trigger})
        spec = spec.model_copy(update={"job": job})
    cfg = job_config(spec, settings, mode="passthrough" if args.passthrough else None,
                     checkpoint=args.checkpoint, topic_prefix=args.topic_prefix,
                     workload=args.workload, name=args.name or Path(args.spec).stem)
    check_until_idle(cfg, args.until_idle)
    if cfg.foreign:  # the user's topics must exist (never created): fail before Spark starts
        wait_for_inputs(cfg, settings.kafka_client_config(), INPUTS_TIMEOUT_S)
    session = SessionConfig(master=args.master, app_name=f"harvest-{cfg.mode}",
                            jars=jars, ui=ui_flag(args.ui, settings.spark_ui),
                            shuffle_partitions=spec.job.partitions,
                            driver_memory=args.driver_memory,
                            state_memory_mb=settings.state_memory_mb,
                            preload=native_allocator(settings))
    spark = build_session(session)
    url = ui_url(spark, session)
    if url is not None:
        log.info("spark ui", url=url, query=cfg.query_name)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = submit_supervised(spark, cfg, settings, args.until_idle, args.max_restarts)
    finally:
        spark.stop()
    print(report_line(report), flush=True)
    return 0
