"""`harvest spark-cluster up|down|status`: a standalone Spark master + workers on 127.0.0.1."""

from __future__ import annotations

import argparse

from pipeline.cli.args import positive_int
from pipeline.core.settings import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `spark-cluster` subcommand."""
    p = subparsers.add_parser(
        "spark-cluster",
        help="start/stop a Spark standalone master + workers (state under .cache/spark/)",
    )
    p.add_argument("action", choices=["up", "down", "status"])
    p.add_argument("--port", type=positive_int, default=7077, help="master port (default 7077; "
                   "a free port is used when taken)")
    p.add_argument("--webui-port", type=positive_int, default=8080, help="master web UI port")
    p.add_argument("--cores", type=positive_int, default=2,
                   help="cores of each worker (default 2)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="workers to start (default 1)")
    p.add_argument("--memory", default="2g", help="worker memory, e.g. 2g (default 2g)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch the action; prints the master URL on `up`/`status` (stdout), 1 when down."""
    from pipeline.spark.cluster import ClusterConfig, StandaloneCluster

    config = ClusterConfig(
        state_dir=settings.cache_dir / "spark",
        master_port=args.port,
        webui_port=args.webui_port,
        worker_cores=args.cores,
        worker_memory=args.memory,
        workers=args.workers,
        java_home=settings.java_home,
    )
    cluster = StandaloneCluster(config)
    if args.action == "up":
        status = cluster.up()
        print(status.master_url)
        return 0
    if args.action == "down":
        was_running = cluster.down()
        print("stopped" if was_running else "not running")
        return 0
    status = cluster.status()
    if status.running:
        print(
            f"running  master={status.master_url}  webui={status.webui_url}  "
            f"workers={status.workers_alive}  cores={status.cores}"
        )
        return 0
    print("not running")
    return 1
